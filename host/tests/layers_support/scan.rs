//! The text rules the import check reads a source file by: code before its tests, `use` paths and
//! inline paths, brace groups, `pub use` re-exports, child modules. Hand-written scanners over
//! characters rather than a parser, so the check reads exactly what a reviewer's grep would.

/// A word character, as `\w` reads one: a letter, a digit or `_`.
pub fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn at(s: &[char], i: usize) -> Option<char> {
    s.get(i).copied()
}

fn starts_with(s: &[char], i: usize, lit: &str) -> bool {
    lit.chars()
        .enumerate()
        .all(|(k, c)| at(s, i + k) == Some(c))
}

fn skip_ws(s: &[char], mut i: usize) -> usize {
    while at(s, i).is_some_and(char::is_whitespace) {
        i += 1;
    }
    i
}

fn word_end(s: &[char], mut i: usize) -> usize {
    while at(s, i).is_some_and(is_word) {
        i += 1;
    }
    i
}

/// A word boundary at `i`: a word character on exactly one side of it.
fn boundary(s: &[char], i: usize) -> bool {
    let before = i > 0 && at(s, i - 1).is_some_and(is_word);
    before != at(s, i).is_some_and(is_word)
}

fn text(s: &[char], from: usize, to: usize) -> String {
    s[from..to].iter().collect()
}

/// `pub` or `pub(crate)` and the whitespace after it, starting at `i`: where the item begins.
fn after_pub(s: &[char], i: usize) -> Option<usize> {
    if !starts_with(s, i, "pub") {
        return None;
    }
    let mut j = i + 3;
    if at(s, j) == Some('(') {
        let end = (j + 1..=s.len())
            .find(|&k| !at(s, k).is_some_and(|c| is_word(c) || c == ' '))
            .unwrap_or(s.len());
        if end > j + 1 && at(s, end) == Some(')') {
            j = end + 1;
        }
    }
    let k = skip_ws(s, j);
    (k > j).then_some(k)
}

/// `#[cfg(test)] mod name;` or `#[cfg(test)] mod name {` at `i`: its end and its last character.
fn cfg_test_mod(s: &[char], i: usize) -> Option<(usize, char)> {
    if !starts_with(s, i, "#[cfg(test)]") {
        return None;
    }
    let mut j = skip_ws(s, i + "#[cfg(test)]".len());
    if let Some(k) = after_pub(s, j) {
        j = k;
    }
    if !starts_with(s, j, "mod") {
        return None;
    }
    let name = skip_ws(s, j + 3);
    let name_end = word_end(s, name);
    if name == j + 3 || name_end == name {
        return None;
    }
    let end = skip_ws(s, name_end);
    match at(s, end) {
        Some(c @ (';' | '{')) => Some((end + 1, c)),
        _ => None,
    }
}

/// The code a file holds before its tests: `#[cfg(test)] mod x;` lines dropped, the text cut at the
/// first `#[cfg(test)] mod x {`, and every `//` comment (doc comments too) emptied. Newlines stay,
/// so the code's lines are counted by its `\n`s.
pub fn code_before_tests(raw: &str) -> String {
    let unix: Vec<char> = raw
        .replace("\r\n", "\n")
        .replace('\r', "\n")
        .chars()
        .collect();
    let mut kept = Vec::with_capacity(unix.len());
    let mut i = 0;
    while i < unix.len() {
        match cfg_test_mod(&unix, i) {
            Some((end, ';')) => i = end,
            _ => {
                kept.push(unix[i]);
                i += 1;
            }
        }
    }
    let cut = (0..kept.len())
        .find(|&i| matches!(cfg_test_mod(&kept, i), Some((_, '{'))))
        .unwrap_or(kept.len());
    let mut out = String::with_capacity(cut);
    let mut i = 0;
    while i < cut {
        if kept[i] == '/' && i + 1 < cut && kept[i + 1] == '/' {
            while i < cut && kept[i] != '\n' {
                i += 1;
            }
        } else {
            out.push(kept[i]);
            i += 1;
        }
    }
    out
}

fn split_path(path: &str) -> Vec<String> {
    path.split("::")
        .filter(|x| !x.is_empty())
        .map(String::from)
        .collect()
}

/// `use a::{b, c::{d, e}}` as the paths it names: `a::b`, `a::c::d`, `a::c::e` (`body` is what
/// the braces after `prefix` hold; a rename `b as x` names `b`).
pub fn expand(prefix: &[String], body: &str) -> Vec<Vec<String>> {
    let (mut parts, mut depth, mut cur) = (Vec::new(), 0i32, String::new());
    for ch in body.chars() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
        if ch == ',' && depth == 0 {
            parts.push(std::mem::take(&mut cur));
        } else {
            cur.push(ch);
        }
    }
    parts.push(cur);
    let mut out = Vec::new();
    for part in parts.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        let brace = part.find('{');
        let group = brace.filter(|&b| {
            let head = &part[..b];
            head.ends_with("::")
                && head.chars().all(|c| is_word(c) || c == ':')
                && part.ends_with('}')
                && part.len() - 1 > b
        });
        if let Some(b) = group {
            let inner = [prefix, &split_path(&part[..b - 2])].concat();
            out.extend(expand(&inner, &part[b + 1..part.len() - 1]));
        } else if part.starts_with('{') && part.ends_with('}') && part.len() >= 2 {
            out.extend(expand(prefix, &part[1..part.len() - 1]));
        } else {
            let named = part.split(" as ").next().unwrap_or(part);
            out.push([prefix, &split_path(named)].concat());
        }
    }
    out
}

/// The rest of a `use` item from its path at `i`: `a::b::c;` or `a::b::{...};`. Returns the path's
/// words, what the braces hold, and where the item ends. A rename (`use a::b as c;`) or a glob
/// (`use a::*;`) is not read here.
fn use_tail(s: &[char], i: usize) -> Option<(Vec<String>, Option<String>, usize)> {
    let word = word_end(s, i);
    if word == i {
        return None;
    }
    let end = path_end(s, word);
    let path = split_path(&text(s, i, end));
    if starts_with(s, end, "::{") {
        let close =
            (end + 3..s.len()).find(|&k| s[k] == '}' && at(s, skip_ws(s, k + 1)) == Some(';'));
        if let Some(k) = close {
            return Some((path, Some(text(s, end + 3, k)), skip_ws(s, k + 1) + 1));
        }
    }
    let semi = skip_ws(s, end);
    (at(s, semi) == Some(';')).then(|| (path, None, semi + 1))
}

/// The paths a `use` item names: its path alone, or its path with each brace entry.
fn named_paths(path: Vec<String>, braces: Option<String>) -> Vec<Vec<String>> {
    match braces {
        Some(body) if !body.is_empty() => expand(&path, &body),
        _ => vec![path],
    }
}

/// Each `use PATH;` or `use PATH::{...};` item (not `pub use`, which is read apart): the paths it
/// names, its path's first word deciding what it is relative to.
pub fn use_items(code: &str) -> Vec<Vec<String>> {
    let s: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if boundary(&s, i) && starts_with(&s, i, "use") {
            let from = skip_ws(&s, i + 3);
            if from > i + 3
                && let Some((path, braces, end)) = use_tail(&s, from)
            {
                out.extend(named_paths(path, braces));
                i = end;
                continue;
            }
        }
        i += 1;
    }
    out
}

fn path_end(s: &[char], word: usize) -> usize {
    let mut end = word;
    while starts_with(s, end, "::") && word_end(s, end + 2) > end + 2 {
        end = word_end(s, end + 2);
    }
    end
}

/// Paths written inline from the crate or a parent: `crate::a::b`, `super::super::x`.
pub fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let s: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if boundary(&s, i) && (starts_with(&s, i, "crate") || starts_with(&s, i, "super")) {
            let end = path_end(&s, i + 5);
            if end > i + 5 {
                out.push(split_path(&text(&s, i, end)));
                i = end;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// Paths written inline from a word no `::` or word precedes (`child::f()`, `card::Card`); the
/// caller keeps those whose first word is a child of the file. `Vec::<u8>` and `a::*` are not
/// paths here.
pub fn word_paths(code: &str) -> Vec<Vec<String>> {
    let s: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let free = i == 0 || !at(&s, i - 1).is_some_and(|c| is_word(c) || c == ':');
        let word = word_end(&s, i);
        if free && word > i {
            let end = path_end(&s, word);
            if end > word {
                out.push(split_path(&text(&s, i, end)));
                i = end;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// The `pub use` items of a file that re-export from one of its children: for each name, the
/// path below the file that defines it (`pub use card::{Card, Skill};` gives `Card` at
/// `card::Card`). A re-export of another module's name (`pub use crate::x::Y;`) is not a child's.
pub fn reexports(code: &str, kids: &[String]) -> Vec<(String, Vec<String>)> {
    let s: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if let Some(from) = pub_use_at(&s, i)
            && let Some((path, braces, end)) = use_tail(&s, from)
        {
            let parts: Vec<String> = path.into_iter().filter(|w| w != "self").collect();
            if parts.first().is_some_and(|first| kids.contains(first)) {
                for full in named_paths(parts, braces) {
                    let name = full.last().cloned().unwrap_or_default();
                    out.push((name, full));
                }
            }
            i = end;
            continue;
        }
        i += 1;
    }
    out
}

/// Where the path of a `pub use` (or `pub(crate) use`) item starting at `i` begins.
fn pub_use_at(s: &[char], i: usize) -> Option<usize> {
    if !boundary(s, i) {
        return None;
    }
    let j = after_pub(s, i)?;
    let from = skip_ws(s, j + 3);
    (starts_with(s, j, "use") && from > j + 3).then_some(from)
}

/// The code with every `pub use` item taken out: a re-export is not an import of the file that
/// writes it (a name it also uses itself is counted apart).
pub fn without_pub_uses(code: &str) -> String {
    let s: Vec<char> = code.chars().collect();
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    while i < s.len() {
        if let Some(from) = pub_use_at(&s, i)
            && let Some(semi) = (from..s.len()).find(|&k| s[k] == ';')
        {
            i = semi + 1;
            continue;
        }
        out.push(s[i]);
        i += 1;
    }
    out
}

/// The children a file declares: `mod name;` and `pub mod name;`.
pub fn child_modules(code: &str) -> Vec<String> {
    let s: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if boundary(&s, i) && starts_with(&s, i, "mod") {
            let name = skip_ws(&s, i + 3);
            let name_end = word_end(&s, name);
            let semi = skip_ws(&s, name_end);
            if name > i + 3 && name_end > name && at(&s, semi) == Some(';') {
                out.push(text(&s, name, name_end));
                i = semi + 1;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// Whether `name` stands in the code as a whole word.
pub fn uses_word(code: &str, name: &str) -> bool {
    let s: Vec<char> = code.chars().collect();
    let n: Vec<char> = name.chars().collect();
    (0..s.len().saturating_sub(n.len()) + 1)
        .any(|i| s[i..].starts_with(&n) && boundary(&s, i) && boundary(&s, i + n.len()))
}
