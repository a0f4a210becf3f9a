//! The `SKILL.md` format, shared with other agent tools: YAML front matter between two `---`
//! lines, then the Markdown body. Only `name` and `description` are read; any other key
//! (`license`, `allowed-tools`, `metadata`, …) is parsed as YAML and ignored.
//!
//! The YAML is read by `serde_norway`, which bounds nesting depth and alias expansion, and is
//! given at most [`MAX_FRONT_MATTER_BYTES`].

use serde::Deserialize;

/// Front matter longer than this is refused: two short keys need far less, and the YAML parser
/// is never handed more than this from one file.
pub const MAX_FRONT_MATTER_BYTES: usize = 8 * 1024;
/// The line that opens and closes the front matter.
const FENCE: &str = "---";

/// A `SKILL.md` split into what the host reads: the two keys, as written, and the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile<'a> {
    /// The `name` key, as written; checked by the loader, which also refuses a duplicate.
    pub name: Option<String>,
    /// The `description` key, as written; the skills index shows it to the model.
    pub description: Option<String>,
    /// Everything after the closing `---` line, untouched.
    pub body: &'a str,
}

/// What is wrong with a file: the field (`front matter`, `name`, …) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError {
    /// The field at fault: `front matter`, `name`, `description`, ….
    pub field: &'static str,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl FormatError {
    fn front_matter(message: impl Into<String>) -> FormatError {
        FormatError {
            field: "front matter",
            message: message.into(),
        }
    }
}

/// The keys the host reads. Unknown keys are ignored: the format's other keys belong to other
/// tools.
#[derive(Debug, Default, Deserialize)]
struct Keys {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

/// Splits `text` into front matter and body and reads the front matter's keys.
pub fn parse(text: &str) -> Result<SkillFile<'_>, FormatError> {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if !is_fence(first) {
        return Err(FormatError::front_matter(
            "missing: the file must begin with a `---` line, then `name:` and `description:`, then a closing `---` line",
        ));
    }
    let start = first.len();
    let mut at = start;
    let mut end = None;
    for line in lines {
        if is_fence(line) {
            end = Some((at, at + line.len()));
            break;
        }
        at += line.len();
        if at - start > MAX_FRONT_MATTER_BYTES {
            break;
        }
    }
    let Some((yaml_end, body_start)) = end else {
        return Err(if at - start > MAX_FRONT_MATTER_BYTES {
            FormatError::front_matter(format!(
                "longer than {MAX_FRONT_MATTER_BYTES} bytes, or not closed by a `---` line"
            ))
        } else {
            FormatError::front_matter("not closed: add a `---` line after the last key")
        });
    };
    let yaml = &text[start..yaml_end];
    let keys: Keys = if yaml.trim().is_empty() {
        Keys::default()
    } else {
        serde_norway::from_str(yaml).map_err(|err| {
            FormatError::front_matter(format!("is not a YAML mapping of keys: {err}"))
        })?
    };
    Ok(SkillFile {
        name: keys.name,
        description: keys.description,
        body: &text[body_start..],
    })
}

/// Whether a line (with its line break) is `---`, trailing spaces allowed.
fn is_fence(line: &str) -> bool {
    line.trim_end() == FENCE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_keys_and_the_body_are_read_and_other_keys_ignored() {
        let text = "---\nname: bookkeeping\ndescription: >\n  Rules for the books,\n  folded.\nlicense: Apache-2.0\nallowed-tools: [account_balance, list_invoices]\nmetadata:\n  author: finance\n  version: \"1.2\"\n---\n# Rules\n\nDebits left.\n";
        let file = parse(text).unwrap();
        assert_eq!(file.name.as_deref(), Some("bookkeeping"));
        assert_eq!(
            file.description.as_deref(),
            Some("Rules for the books, folded.\n")
        );
        assert_eq!(file.body, "# Rules\n\nDebits left.\n");
    }

    #[test]
    fn windows_line_breaks_and_a_byte_order_mark_are_accepted() {
        let file = parse("\u{FEFF}---\r\nname: a\r\ndescription: b\r\n---  \r\nbody\r\n").unwrap();
        assert_eq!(file.name.as_deref(), Some("a"));
        assert_eq!(file.description.as_deref(), Some("b"));
        assert_eq!(file.body, "body\r\n");
    }

    #[test]
    fn absent_keys_are_none_and_an_empty_front_matter_is_no_keys() {
        let file = parse("---\n---\nbody").unwrap();
        assert_eq!((file.name, file.description), (None, None));
        let file = parse("---\nlicense: MIT\n---\nbody").unwrap();
        assert_eq!((file.name, file.description), (None, None));
    }

    #[test]
    fn a_file_without_front_matter_is_refused_golden() {
        assert_eq!(
            parse("# Just Markdown\n").unwrap_err(),
            FormatError {
                field: "front matter",
                message: "missing: the file must begin with a `---` line, then `name:` and `description:`, then a closing `---` line".into(),
            }
        );
        assert_eq!(
            parse("---\nname: a\ndescription: b\n").unwrap_err().message,
            "not closed: add a `---` line after the last key"
        );
    }

    #[test]
    fn front_matter_that_is_not_a_yaml_mapping_is_refused_with_the_parsers_reason() {
        let err = parse("---\nname: [unclosed\n---\nbody").unwrap_err();
        assert_eq!(err.field, "front matter");
        assert!(
            err.message.starts_with("is not a YAML mapping of keys: "),
            "{}",
            err.message
        );
        let err = parse("---\n- a list\n- not keys\n---\nbody").unwrap_err();
        assert!(
            err.message.contains("invalid type: sequence"),
            "{}",
            err.message
        );
        let err = parse("---\nname: {nested: map}\n---\nbody").unwrap_err();
        assert!(err.message.contains("name"), "{}", err.message);
        let err = parse("---\nname: a\nname: b\n---\nbody").unwrap_err();
        assert!(err.message.contains("duplicate"), "{}", err.message);
    }

    #[test]
    fn oversize_front_matter_is_refused_before_the_yaml_parser_sees_it() {
        let long = format!(
            "---\nname: a\nnotes: {}\n---\nbody",
            "x".repeat(MAX_FRONT_MATTER_BYTES)
        );
        assert_eq!(
            parse(&long).unwrap_err().message,
            format!("longer than {MAX_FRONT_MATTER_BYTES} bytes, or not closed by a `---` line")
        );
    }

    #[test]
    fn an_alias_bomb_is_never_expanded() {
        // Nine levels of ten aliases each: a billion strings if anything expanded them.
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            let prev = format!("*a{}", i - 1);
            bomb.push_str(&format!("a{i}: &a{i} [{}]\n", vec![prev; 10].join(", ")));
        }
        // Under an ignored key it is skipped, not built.
        let text = format!("---\n{bomb}name: a\ndescription: b\n---\nbody");
        let file = parse(&text).unwrap();
        assert_eq!(file.name.as_deref(), Some("a"));
        // As a key the host reads, it is a type error at once.
        let err = parse(&format!("---\n{bomb}name: a\ndescription: *a8\n---\nbody")).unwrap_err();
        assert!(err.message.contains("invalid type"), "{}", err.message);
    }
}
