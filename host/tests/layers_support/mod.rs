//! The import graph of a crate's source folder, read from its `use` paths as text: which file
//! imports which, resolved through `pub use` re-exports to the file that defines the name.
//!
//! The rules, so a reader can predict every edge:
//! - a file is read up to its first `#[cfg(test)] mod x {` (test code may import anything), with
//!   `#[cfg(test)] mod x;` lines dropped and `//` comments emptied;
//! - an import is a `use crate::`, `use super::` or `use self::` path (brace groups expanded), a
//!   path written inline from `crate::` or `super::`, or a path from one of the file's own child
//!   modules (`use card::X;`, `card::f()`);
//! - a path names the file of its longest module prefix; when the next name is one that file
//!   re-exports from a child (`pub use child::Name;`), the path names the child's file instead;
//! - a `pub use` is not an import of the file that writes it, but a re-exported name the file
//!   also uses itself is an import of the file that defines it;
//! - a file naming itself or one of its ancestors (`super::Error` from a child) is not an import.

pub mod checks;
mod scan;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Paths re-exported through more facades than this are taken to name the last facade reached.
const MAX_REEXPORT_HOPS: usize = 8;

/// One `.rs` file of the source folder.
pub struct SourceFile {
    /// Its path under the source folder, `/`-separated: `engine/turn.rs`.
    pub rel: String,
    /// The module it is: `["engine", "turn"]`; a `mod.rs`, `lib.rs` or `main.rs` is its folder's
    /// (the crate root's is empty).
    pub module: Vec<String>,
    /// Its lines before its tests.
    pub lines: usize,
    /// The module of the layers it belongs to: its top-level module (`store`), or, under a
    /// folder that only groups modules, the grouped one (`work::engine`); `None` for the crate
    /// root and for a grouping folder's own `mod.rs`.
    pub unit: Option<String>,
}

impl SourceFile {
    /// The module of the layers it belongs to; see [`SourceFile::unit`].
    pub fn unit(&self) -> Option<&str> {
        self.unit.as_deref()
    }
}

/// The files of a source folder and the imports between them.
pub struct Graph {
    /// Every `.rs` file, sorted by path.
    pub files: Vec<SourceFile>,
    /// For each file (same index), the files it imports, each with the first path naming it.
    pub imports: Vec<BTreeMap<usize, String>>,
}

impl Graph {
    /// Reads every `.rs` file under `src`, a flat tree of modules.
    pub fn load(src: &Path) -> Graph {
        Graph::load_grouped(src, &[])
    }

    /// Reads every `.rs` file under `src`, whose top-level folders named in `groups` only group
    /// the modules of a run of layers (`work/engine` is the module `work::engine`).
    pub fn load_grouped(src: &Path, groups: &[&str]) -> Graph {
        let mut found = Vec::new();
        walk(src, &mut Vec::new(), &mut found);
        found.sort();
        let mut files = Vec::new();
        let mut codes = Vec::new();
        for parts in found {
            let path = parts.iter().fold(src.to_path_buf(), |p, part| p.join(part));
            let raw = std::fs::read(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            let code = scan::code_before_tests(&String::from_utf8_lossy(&raw));
            let mut module: Vec<String> = parts.clone();
            let last = module.pop().unwrap_or_default();
            let stem = last.trim_end_matches(".rs");
            if !matches!(stem, "mod" | "lib" | "main") {
                module.push(stem.to_string());
            }
            let lines = code.matches('\n').count();
            files.push(SourceFile {
                rel: parts.join("/"),
                module,
                lines,
                unit: None,
            });
            codes.push(code);
        }
        let grouping = |name: &String| groups.contains(&name.as_str());
        for file in &mut files {
            file.unit = match file.module.as_slice() {
                [] => None,
                [group] if grouping(group) => None,
                [group, grouped, ..] if grouping(group) => Some(format!("{group}::{grouped}")),
                [top, ..] => Some(top.clone()),
            };
        }
        let by_module: HashMap<Vec<String>, usize> = files
            .iter()
            .enumerate()
            .filter(|(_, f)| !f.module.is_empty())
            .map(|(i, f)| (f.module.clone(), i))
            .collect();
        let reexports = files
            .iter()
            .zip(&codes)
            .map(|(f, code)| {
                let kids = scan::child_modules(code);
                let names = scan::reexports(code, &kids).into_iter();
                names
                    .map(|(name, path)| (name, [f.module.clone(), path].concat()))
                    .collect()
            })
            .collect();
        let resolver = Resolver {
            by_module,
            reexports,
        };
        let imports = (0..files.len())
            .map(|i| resolver.imports(&files, i, &codes[i]))
            .collect();
        Graph { files, imports }
    }

    /// The index of the file at `rel` (`engine/turn.rs`).
    pub fn index(&self, rel: &str) -> Option<usize> {
        self.files.iter().position(|f| f.rel == rel)
    }

    /// The paths of the files the file at `rel` imports, sorted.
    pub fn imports_of(&self, rel: &str) -> Vec<&str> {
        let Some(i) = self.index(rel) else {
            panic!("no file {rel} in the tree")
        };
        let mut out: Vec<&str> = self.imports[i]
            .keys()
            .map(|&j| self.files[j].rel.as_str())
            .collect();
        out.sort();
        out
    }
}

/// Collects the `.rs` files under `dir` as path parts below the source folder.
fn walk(dir: &Path, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let entry = entry.unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry
            .file_type()
            .unwrap_or_else(|e| panic!("cannot stat {name}: {e}"));
        prefix.push(name.clone());
        if kind.is_dir() {
            walk(&entry.path(), prefix, out);
        } else if name.ends_with(".rs") {
            out.push(prefix.clone());
        }
        prefix.pop();
    }
}

/// Finds the file a module path names.
struct Resolver {
    by_module: HashMap<Vec<String>, usize>,
    /// For each file, the names it re-exports from its children, with the full path of each.
    reexports: Vec<HashMap<String, Vec<String>>>,
}

impl Resolver {
    /// The file defining what `path` (from the crate root) names: the file of its longest module
    /// prefix, or through that file's re-export of the next name, the file defining that.
    fn resolve(&self, path: &[String], hops: usize) -> Option<usize> {
        for k in (1..=path.len()).rev() {
            if let Some(&file) = self.by_module.get(&path[..k]) {
                if k < path.len()
                    && hops < MAX_REEXPORT_HOPS
                    && let Some(target) = self.reexports[file].get(&path[k])
                {
                    return self.resolve(target, hops + 1);
                }
                return Some(file);
            }
        }
        None
    }

    /// The files the file `i` imports, each with the first path (as written) naming it.
    fn imports(&self, files: &[SourceFile], i: usize, code: &str) -> BTreeMap<usize, String> {
        let text = scan::without_pub_uses(code);
        let kids = scan::child_modules(&text);
        let is_kid = |p: &[String]| p.first().is_some_and(|w| kids.contains(w));
        let relative = |p: &[String]| {
            p.first()
                .is_some_and(|w| matches!(w.as_str(), "crate" | "super" | "self"))
        };
        let mut paths = Vec::new();
        for path in scan::use_items(&text) {
            if relative(&path) {
                paths.push(path);
            } else if is_kid(&path) {
                paths.push([vec!["self".to_string()], path].concat());
            }
        }
        paths.extend(scan::crate_paths(&text));
        for path in scan::word_paths(&text).into_iter().filter(|p| is_kid(p)) {
            paths.push([vec!["self".to_string()], path].concat());
        }
        let mut names: Vec<_> = self.reexports[i].iter().collect();
        names.sort();
        for (name, target) in names {
            if scan::uses_word(&text, name) {
                paths.push([vec!["crate".to_string()], target.clone()].concat());
            }
        }
        let module = &files[i].module;
        let mut out = BTreeMap::new();
        for path in paths {
            let full = if path.first().is_some_and(|w| w == "crate") {
                path[1..].to_vec()
            } else {
                let mut base = module.clone();
                let mut rest = &path[..];
                while let Some(head) = rest.first().filter(|w| *w == "super" || *w == "self") {
                    if head == "super" {
                        base.pop();
                    }
                    rest = &rest[1..];
                }
                [base, rest.to_vec()].concat()
            };
            let Some(target) = self.resolve(&full, 0) else {
                continue;
            };
            // Itself, or an ancestor a child names (its errors, its re-exports): not a circle.
            if module.starts_with(&files[target].module) {
                continue;
            }
            let written = path.join("::");
            let written = written.strip_suffix("::self").unwrap_or(&written);
            out.entry(target).or_insert_with(|| written.to_string());
        }
        out
    }
}
