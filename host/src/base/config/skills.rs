//! `[skills]`: the folders skills are read from, and their checks. What a skill is and how its
//! files are checked is `crate::work::skills`; this is only where to look.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::ConfigError;

/// The most folders `skills.dirs` may name: each is read at every start-up, and skills are few
/// (`crate::work::skills::MAX_SKILLS` in all), so a longer list is a mistake, not a need.
pub const MAX_SKILL_DIRS: usize = 16;
/// The folder used when `skills.dirs` is not set, beside the configuration file.
pub const DEFAULT_SKILLS_DIR: &str = "skills";

/// `[skills]`: where skills are read from at start-up.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillsConfig {
    /// Folders holding one sub-folder per skill (`{dir}/{skill}/SKILL.md`), relative to the
    /// configuration file. When not set, `skills` beside the configuration file is used if it
    /// exists; a folder named here must exist. `[]` turns skills off.
    #[serde(default)]
    pub dirs: Option<Vec<PathBuf>>,
}

impl SkillsConfig {
    /// Each folder to read, resolved with `resolve`, with the setting that names it and whether
    /// it must exist: the operator's own folders must, the default need not.
    pub fn folders(&self, resolve: impl Fn(&Path) -> PathBuf) -> Vec<SkillFolder> {
        match &self.dirs {
            Some(dirs) => dirs
                .iter()
                .enumerate()
                .map(|(index, dir)| SkillFolder {
                    path: resolve(dir),
                    setting: format!("skills.dirs[{index}]"),
                    required: true,
                })
                .collect(),
            None => vec![SkillFolder {
                path: resolve(Path::new(DEFAULT_SKILLS_DIR)),
                setting: "skills.dirs".to_string(),
                required: false,
            }],
        }
    }
}

/// One folder of skills, as start-up reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFolder {
    /// The folder, already resolved (a configured one against the configuration file's folder).
    pub path: PathBuf,
    /// The setting that names it (`skills.dirs[1]`), for errors.
    pub setting: String,
    /// Whether a missing folder stops start-up.
    pub required: bool,
}

/// Checks `[skills]`: no blank entry, no folder named twice, not too many.
pub(super) fn validate_skills(skills: &SkillsConfig) -> Result<(), ConfigError> {
    let Some(dirs) = &skills.dirs else {
        return Ok(());
    };
    if dirs.len() > MAX_SKILL_DIRS {
        return Err(ConfigError::invalid(
            "skills.dirs",
            format!(
                "{} folders; at most {MAX_SKILL_DIRS}: put the skills in fewer folders",
                dirs.len()
            ),
        ));
    }
    let mut seen = HashSet::new();
    for (index, dir) in dirs.iter().enumerate() {
        let setting = format!("skills.dirs[{index}]");
        if dir.as_os_str().is_empty() || dir.to_string_lossy().trim().is_empty() {
            return Err(ConfigError::invalid(
                setting,
                "is blank; name a folder, or remove the entry",
            ));
        }
        if !seen.insert(dir) {
            return Err(ConfigError::invalid(
                setting,
                format!("{} is listed twice; remove one", dir.display()),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::config::Config;

    use crate::base::config::testing::error_of;

    #[test]
    fn without_the_setting_the_skills_folder_beside_the_configuration_is_optional() {
        let config = Config::parse("", Path::new("config.toml")).unwrap();
        let folders = config.skills.folders(|p| Path::new("/etc/harness").join(p));
        assert_eq!(
            folders,
            vec![SkillFolder {
                path: PathBuf::from("/etc/harness/skills"),
                setting: "skills.dirs".into(),
                required: false,
            }]
        );
    }

    #[test]
    fn named_folders_are_required_and_named_by_their_index() {
        let config = Config::parse(
            "[skills]\ndirs = [\"a\", \"/abs/b\"]\n",
            Path::new("config.toml"),
        )
        .unwrap();
        let folders = config.skills.folders(|p| Path::new("/cfg").join(p));
        assert_eq!(folders[0].path, PathBuf::from("/cfg/a"));
        assert_eq!(folders[1].path, PathBuf::from("/abs/b"));
        assert_eq!(folders[1].setting, "skills.dirs[1]");
        assert!(folders.iter().all(|f| f.required));
        let none = Config::parse("[skills]\ndirs = []\n", Path::new("config.toml")).unwrap();
        assert!(none.skills.folders(Path::to_path_buf).is_empty());
    }

    #[test]
    fn a_blank_or_repeated_folder_is_refused_naming_the_setting() {
        assert_eq!(
            error_of("[skills]\ndirs = [\"a\", \" \"]\n"),
            "skills.dirs[1]: is blank; name a folder, or remove the entry"
        );
        assert_eq!(
            error_of("[skills]\ndirs = [\"a\", \"b\", \"a\"]\n"),
            "skills.dirs[2]: a is listed twice; remove one"
        );
        assert!(
            error_of("[skills]\nfolders = []\n").starts_with("skills.folders: unknown setting")
        );
    }
}
