//! The catalog: every skill read and checked once at start-up, by name. Each body is held here
//! once, for the whole process; tasks and the journal name skills, never copy them.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::SkillError;
use super::front_matter::{self, FormatError};
use crate::base::config::SkillFolder;
use crate::base::text::untrusted::neutralise;
use crate::work::agents::clean::{clean, cut};
use crate::work::context::SkillEntry;

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";
/// The longest skill name. A name is part of the `skill:{name}` section tag and of the index
/// line, and the model types it; 64 is the length other agent tools allow.
pub const MAX_NAME_CHARS: usize = 64;
/// The longest description in the index, after cleaning; longer ones are cut and marked with
/// `…`. The index is in every model request, so this is the roster's cap for a card's skill.
pub const MAX_DESCRIPTION_CHARS: usize = 256;
/// The largest body. A loaded body is in every turn of its task and compaction never shrinks it:
/// 32 KiB is about 8,000 tokens, two thirds of the default turn budget (12,000), which leaves
/// room for the task and its history. Larger know-how belongs in several skills.
pub const MAX_BODY_BYTES: usize = 32 * 1024;
/// Skills one harness may have: the index lists them all in every request, and at the caps above
/// 32 lines stay under 11 KiB (about 2,600 tokens).
pub const MAX_SKILLS: usize = 32;
/// The largest `SKILL.md` read: front matter and body at their caps, with their fences.
const MAX_FILE_BYTES: usize = front_matter::MAX_FRONT_MATTER_BYTES + MAX_BODY_BYTES + 64;

/// One skill, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// A plain id: see [`check_name`].
    pub name: String,
    /// Cleaned to one line and cut to [`MAX_DESCRIPTION_CHARS`].
    pub description: String,
    /// The instructions, trimmed, with every host tag disarmed (`text::untrusted::neutralise`)
    /// and invisible characters removed: as the model reads them.
    pub body: String,
    /// Where it was read from.
    pub file: PathBuf,
}

/// Every skill of this harness, by name.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    skills: BTreeMap<String, Skill>,
}

impl Catalog {
    /// Reads every folder in order, each `{folder}/{skill}/SKILL.md` in file-name order, and
    /// checks every skill. Any bad skill stops start-up with an error naming its file and the
    /// field; a description that had to be cut is logged once at WARN.
    pub fn load(folders: &[SkillFolder]) -> Result<Catalog, SkillError> {
        let mut skills: BTreeMap<String, Skill> = BTreeMap::new();
        for folder in folders {
            for file in skill_files(folder)? {
                let skill = read_skill(&file)?;
                if let Some(first) = skills.get(&skill.name) {
                    return Err(SkillError::invalid(
                        &file,
                        "name",
                        format!(
                            "\"{}\" is already the name of {}; skill names must be unique",
                            skill.name,
                            first.file.display()
                        ),
                    ));
                }
                if skills.len() == MAX_SKILLS {
                    return Err(SkillError::TooMany);
                }
                skills.insert(skill.name.clone(), skill);
            }
        }
        let catalog = Catalog { skills };
        if !catalog.is_empty() {
            let names: Vec<&str> = catalog.names().collect();
            tracing::info!("skills: index lists {}", names.join(", "));
        }
        Ok(catalog)
    }

    /// A catalog of the given skills (tests, and harnesses built in code).
    pub fn from_skills(skills: impl IntoIterator<Item = Skill>) -> Catalog {
        Catalog {
            skills: skills.into_iter().map(|s| (s.name.clone(), s)).collect(),
        }
    }

    /// The skill of that name.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.get(name)
    }

    /// Every name, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.skills.keys().map(String::as_str)
    }

    /// Every skill, sorted by name.
    pub fn skills(&self) -> impl Iterator<Item = &Skill> {
        self.skills.values()
    }

    /// How many skills were loaded.
    pub fn len(&self) -> usize {
        self.skills.len()
    }

    /// Whether no skill was loaded (start-up then logs no index).
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The index entries, sorted by name, for the `skills_index` section.
    pub fn entries(&self) -> Vec<SkillEntry> {
        self.skills()
            .map(|s| SkillEntry {
                name: s.name.clone(),
                description: s.description.clone(),
            })
            .collect()
    }

    /// The `skill:{name}` sections' `(name, body)` of the loaded skills, in the order given. A
    /// name this catalog no longer has (its file was removed before a restart) has no section.
    pub fn sections<'a>(&'a self, loaded: &[String]) -> Vec<(&'a str, &'a str)> {
        loaded
            .iter()
            .filter_map(|name| self.skills.get(name))
            .map(|s| (s.name.as_str(), s.body.as_str()))
            .collect()
    }
}

/// The `SKILL.md` of each sub-folder, in file-name order. A missing folder is an error only when
/// the operator named it; a sub-folder without `SKILL.md` is skipped with a warning.
fn skill_files(folder: &SkillFolder) -> Result<Vec<PathBuf>, SkillError> {
    let dir_error = |message: String| SkillError::Dir {
        setting: folder.setting.clone(),
        message,
    };
    let entries = match std::fs::read_dir(&folder.path) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound && !folder.required => {
            return Ok(Vec::new());
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(dir_error(format!(
                "{} does not exist; create it or remove it from skills.dirs",
                folder.path.display()
            )));
        }
        Err(err) => {
            return Err(dir_error(format!(
                "cannot read {}: {err}",
                folder.path.display()
            )));
        }
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let mut files = Vec::new();
    for dir in dirs {
        let file = dir.join(SKILL_FILE);
        if file.is_file() {
            files.push(file);
        } else {
            tracing::warn!(
                folder = %dir.display(),
                "skills: no {SKILL_FILE} in this folder; it is not a skill and is skipped"
            );
        }
    }
    Ok(files)
}

/// Reads and checks one `SKILL.md`.
fn read_skill(file: &Path) -> Result<Skill, SkillError> {
    let invalid = |field: &'static str, message: String| SkillError::invalid(file, field, message);
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(MAX_FILE_BYTES as u64 + 1).read_to_end(&mut bytes))
        .map_err(|err| invalid("file", format!("cannot be read: {err}")))?;
    if bytes.len() > MAX_FILE_BYTES {
        return Err(invalid(
            "file",
            format!("larger than {MAX_FILE_BYTES} bytes; a skill's body may hold {MAX_BODY_BYTES}"),
        ));
    }
    let text = String::from_utf8(bytes).map_err(|err| {
        invalid(
            "file",
            format!(
                "is not UTF-8 text (invalid byte at offset {}); save it as UTF-8",
                err.utf8_error().valid_up_to()
            ),
        )
    })?;
    let parsed = front_matter::parse(&text)
        .map_err(|FormatError { field, message }| invalid(field, message))?;
    let name = parsed.name.unwrap_or_default();
    check_name(&name).map_err(|message| invalid("name", message))?;
    let description = clean(parsed.description.as_deref().unwrap_or_default());
    if description.is_empty() {
        return Err(invalid(
            "description",
            "missing or blank; say in one line what the skill is for and when to load it".into(),
        ));
    }
    let description = match cut(&description, MAX_DESCRIPTION_CHARS) {
        Some(shorter) => {
            tracing::warn!(
                skill = %name,
                file = %file.display(),
                "skills: description cut to {MAX_DESCRIPTION_CHARS} characters"
            );
            shorter
        }
        None => description,
    };
    // Measured as the model reads it: disarming a host tag makes it a few bytes longer.
    let body = neutralise(parsed.body.trim()).trim().to_string();
    if body.is_empty() {
        return Err(invalid(
            "body",
            "empty; write the skill's instructions after the closing `---` line".into(),
        ));
    }
    if body.len() > MAX_BODY_BYTES {
        return Err(invalid(
            "body",
            format!(
                "{} bytes; at most {MAX_BODY_BYTES} (a loaded body is in every turn of its task): split it into several skills",
                body.len()
            ),
        ));
    }
    Ok(Skill {
        name,
        description,
        body,
        file: file.to_path_buf(),
    })
}

/// A skill name is a plain id: 1 to [`MAX_NAME_CHARS`] lowercase ASCII letters, digits, `-`, `_`
/// and `.`, beginning with a letter or a digit. It becomes part of the `skill:{name}` tag, so
/// nothing in it may end or open a tag, break a line or hide.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("missing or blank; add `name:` to the front matter".into());
    }
    let plain = name.len() <= MAX_NAME_CHARS
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'));
    if plain {
        Ok(())
    } else {
        let shown = cut(name, MAX_NAME_CHARS + 1).unwrap_or_else(|| name.to_string());
        Err(format!(
            "\"{}\" is not a skill name: use 1 to {MAX_NAME_CHARS} lowercase letters, digits, -, _ and ., beginning with a letter or a digit",
            shown.escape_debug()
        ))
    }
}

#[cfg(test)]
#[path = "catalog_tests.rs"]
mod tests;
