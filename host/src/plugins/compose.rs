//! How plugins' section edits compose into the system prompt: in plugin order (builtin first,
//! then the plugins folder by file name), each edit defining, overriding or extending one
//! section, or replacing the whole prompt. Naming a section that does not exist is an error.

use super::bindings::types::{EditKind, SectionEdit};

/// A section body longer than this is refused: the prompt must leave room for the task.
pub const MAX_SECTION_CHARS: usize = 16_000;
/// The whole prompt may not grow past this.
pub const MAX_PROMPT_CHARS: usize = 64_000;
/// Section names are short identifiers.
pub const MAX_SECTION_NAME_CHARS: usize = 64;

/// Why a plugin's edits were refused; shown as `prompt.invalid`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("prompt.invalid: plugin {plugin}: {message}")]
pub struct PromptError {
    pub plugin: String,
    pub message: String,
}

/// The system prompt's sections, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prompt {
    sections: Vec<(String, String)>,
}

impl Prompt {
    /// The sections as `(name, body)`.
    pub fn sections(&self) -> &[(String, String)] {
        &self.sections
    }

    /// The rendered prompt: each section under its `## ` heading, separated by a blank line.
    pub fn render(&self) -> String {
        self.sections
            .iter()
            .map(|(name, body)| format!("## {name}\n{}", body.trim_end()))
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// Applies one plugin's edits, all or none.
    pub fn apply(&mut self, plugin: &str, edits: &[SectionEdit]) -> Result<(), PromptError> {
        let fail = |message: String| PromptError {
            plugin: plugin.to_string(),
            message,
        };
        let mut next = self.clone();
        for edit in edits {
            if edit.body.chars().count() > MAX_SECTION_CHARS {
                return Err(fail(format!(
                    "section \"{}\" is longer than {MAX_SECTION_CHARS} characters",
                    edit.name
                )));
            }
            if !matches!(edit.kind, EditKind::Replace) {
                check_name(&edit.name).map_err(&fail)?;
            }
            let position = next.sections.iter().position(|(n, _)| n == &edit.name);
            match (edit.kind, position) {
                (EditKind::Define, None) => {
                    next.sections.push((edit.name.clone(), edit.body.clone()))
                }
                (EditKind::Define, Some(_)) => {
                    return Err(fail(format!(
                        "section \"{}\" already exists; override or extend it instead",
                        edit.name
                    )));
                }
                (EditKind::Override, Some(i)) => next.sections[i].1 = edit.body.clone(),
                (EditKind::Extend, Some(i)) => {
                    let body = &mut next.sections[i].1;
                    *body = format!("{}\n\n{}", body.trim_end(), edit.body);
                }
                (EditKind::Override | EditKind::Extend, None) => {
                    return Err(fail(format!(
                        "there is no section \"{}\" to {}; sections: {}",
                        edit.name,
                        if matches!(edit.kind, EditKind::Override) {
                            "override"
                        } else {
                            "extend"
                        },
                        next.names().join(", ")
                    )));
                }
                (EditKind::Replace, _) => next = Prompt::parse(&edit.body),
            }
        }
        let rendered = next.render();
        if rendered.chars().count() > MAX_PROMPT_CHARS {
            return Err(fail(format!(
                "the prompt would be longer than {MAX_PROMPT_CHARS} characters"
            )));
        }
        *self = next;
        Ok(())
    }

    fn names(&self) -> Vec<&str> {
        self.sections.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// Reads a whole prompt from Markdown: each `## name` heading starts a section. Text before
    /// the first heading becomes a section named `preamble`.
    fn parse(text: &str) -> Prompt {
        let mut sections: Vec<(String, String)> = Vec::new();
        for line in text.lines() {
            if let Some(name) = line.strip_prefix("## ") {
                sections.push((name.trim().to_string(), String::new()));
                continue;
            }
            if sections.is_empty() {
                sections.push(("preamble".to_string(), String::new()));
            }
            if let Some((_, body)) = sections.last_mut() {
                if !body.is_empty() {
                    body.push('\n');
                }
                body.push_str(line);
            }
        }
        for (_, body) in &mut sections {
            *body = body.trim().to_string();
        }
        Prompt { sections }
    }
}

fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.chars().count() <= MAX_SECTION_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':' | '.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "\"{name}\" is not a section name (letters, digits, _ - : ., at most {MAX_SECTION_NAME_CHARS})"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(kind: EditKind, name: &str, body: &str) -> SectionEdit {
        SectionEdit {
            kind,
            name: name.into(),
            body: body.into(),
        }
    }

    fn base() -> Prompt {
        let mut prompt = Prompt::default();
        prompt
            .apply(
                "builtin",
                &[
                    edit(EditKind::Define, "role", "R"),
                    edit(EditKind::Define, "rules", "- a"),
                ],
            )
            .unwrap();
        prompt
    }

    #[test]
    fn edits_override_extend_and_define_in_order() {
        let mut prompt = base();
        prompt
            .apply(
                "10-house.wasm",
                &[
                    edit(EditKind::Override, "role", "You are the ledger."),
                    edit(EditKind::Extend, "rules", "- b"),
                    edit(EditKind::Define, "house", "H"),
                ],
            )
            .unwrap();
        assert_eq!(
            prompt.render(),
            "## role\nYou are the ledger.\n\n## rules\n- a\n\n- b\n\n## house\nH"
        );
    }

    #[test]
    fn naming_a_missing_section_is_prompt_invalid_naming_the_plugin() {
        let mut prompt = base();
        let err = prompt
            .apply("20-bad.wasm", &[edit(EditKind::Extend, "tone", "x")])
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "prompt.invalid: plugin 20-bad.wasm: there is no section \"tone\" to extend; sections: role, rules"
        );
        assert_eq!(prompt, base(), "a refused plugin changes nothing");
    }

    #[test]
    fn replace_swaps_the_whole_prompt_and_later_edits_see_its_sections() {
        let mut prompt = base();
        prompt
            .apply(
                "30-replace.wasm",
                &[
                    edit(EditKind::Replace, "", "## who\nA bot.\n\n## how\nBriefly."),
                    edit(EditKind::Extend, "how", "Politely."),
                ],
            )
            .unwrap();
        assert_eq!(
            prompt.render(),
            "## who\nA bot.\n\n## how\nBriefly.\n\nPolitely."
        );
    }

    #[test]
    fn oversized_and_badly_named_sections_are_refused() {
        let mut prompt = base();
        let long = "x".repeat(MAX_SECTION_CHARS + 1);
        assert!(
            prompt
                .apply("p", &[edit(EditKind::Define, "big", &long)])
                .is_err()
        );
        assert!(
            prompt
                .apply("p", &[edit(EditKind::Define, "two words", "x")])
                .is_err()
        );
        assert!(
            prompt
                .apply("p", &[edit(EditKind::Define, "role", "x")])
                .is_err()
        );
    }
}
