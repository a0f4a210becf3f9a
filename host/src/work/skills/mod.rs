//! Skills: bodies of know-how the model may load into a task. Each is a folder with a `SKILL.md`
//! (YAML front matter with `name` and `description`, then Markdown instructions), read from
//! `[skills] dirs` and checked once at start-up into the [`Catalog`]. The index of every skill
//! (`- {name}: {description}`) is in the static prefix; `load_skill` puts a body in its task's
//! `skill:{name}` section, a task effect the host checks ([`loading`]) and the journal keeps.

mod catalog;
pub mod front_matter;
pub mod loading;

use std::path::{Path, PathBuf};

pub use catalog::{
    Catalog, MAX_BODY_BYTES, MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, MAX_SKILLS, SKILL_FILE, Skill,
    check_name,
};

/// Why the skills could not be read. Each stops start-up.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    /// A folder of `skills.dirs` that is missing or cannot be read.
    #[error("{setting}: {message}")]
    Dir {
        /// The dotted setting that names the folder (`skills.dirs[1]`).
        setting: String,
        /// What is wrong with the folder.
        message: String,
    },
    /// A `SKILL.md` that does not pass its checks: the file, the field and why.
    #[error("skill {}: {field}: {message}", file.display())]
    Invalid {
        /// The `SKILL.md` at fault.
        file: PathBuf,
        /// The field at fault: `name`, `description`, `file`, ….
        field: &'static str,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// More skills than the index may list.
    #[error(
        "skills.dirs: more than {MAX_SKILLS} skills; the index of them all is in every model request, so at most {MAX_SKILLS} are allowed: remove some"
    )]
    TooMany,
}

impl SkillError {
    /// A bad file's error.
    pub fn invalid(file: &Path, field: &'static str, message: impl Into<String>) -> SkillError {
        SkillError::Invalid {
            file: file.to_path_buf(),
            field,
            message: message.into(),
        }
    }
}
