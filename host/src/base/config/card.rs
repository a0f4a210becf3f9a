//! `[card]` (how this harness describes itself on its agent card) and `[roster]` (how remote
//! agents' cards are fetched and how much of each the model reads), with their checks.

use std::collections::HashSet;
use std::time::Duration;

use serde::Deserialize;

use super::ConfigError;

/// How long one card may take to arrive, connection included, unless `[roster]
/// card_timeout_secs` says otherwise. Cards are small static documents: an agent that cannot
/// serve one in 5 s is treated as down rather than delaying start-up further.
pub const DEFAULT_CARD_TIMEOUT: Duration = Duration::from_secs(5);

/// How much of each card the roster keeps. Every request carries the roster in its cached
/// prefix, so these bound what a verbose or hostile card can cost each turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Characters kept of an agent's name.
    pub name: usize,
    /// Characters kept of an agent's description.
    pub description: usize,
    /// Characters kept of each listed skill's name.
    pub skill_name: usize,
    /// Characters kept of each listed skill's description.
    pub skill_description: usize,
    /// Skills listed per agent; the rest are counted.
    pub skills: usize,
}

impl Caps {
    /// The defaults of `[roster]`: a name is a short label, a description a paragraph, and eight
    /// skills are enough to tell what an agent is for. At the defaults one agent costs at most
    /// about 2 800 characters (~700 tokens).
    pub const DEFAULT: Caps = Caps {
        name: 64,
        description: 512,
        skill_name: 64,
        skill_description: 256,
        skills: 8,
    };
}

/// The longest card fetch timeout accepted: start-up waits this long for the slowest agent, so
/// a larger value would only hide a dead agent behind a slow start.
pub const MAX_CARD_TIMEOUT_SECS: u64 = 60;
/// The smallest character cap accepted: below it a cut field is little more than its `…`.
pub const MIN_FIELD_CHARS: usize = 8;
/// The largest character cap accepted: the roster is in every request's cached prefix, so one
/// card field must stay a small part of the turn budget (12 000 tokens by default).
pub const MAX_FIELD_CHARS: usize = 4096;
/// The most skills per agent that may be listed, for the same reason.
pub const MAX_SKILLS_LIMIT: usize = 64;

/// `[card]`: what this harness says about itself on its agent card. Every key is optional; an
/// absent one keeps the built-in default, so a configuration without `[card]` serves the same
/// card as before.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardConfig {
    /// The card's `name`; absent keeps the built-in name.
    #[serde(default)]
    pub name: Option<String>,
    /// The card's `description`; absent keeps the built-in description.
    #[serde(default)]
    pub description: Option<String>,
    /// The card's `version`; absent keeps the built-in version.
    #[serde(default)]
    pub version: Option<String>,
    /// `[[card.skills]]`; absent keeps the default skill (`agents::own_card::default_skill`),
    /// a list replaces it and must hold at least one skill.
    #[serde(default)]
    pub skills: Option<Vec<CardSkillConfig>>,
    /// `[card.extended]`: what the extended card adds, for authenticated callers only.
    #[serde(default)]
    pub extended: Option<ExtendedCardConfig>,
}

/// `[card.extended]`: what the extended agent card (`GetExtendedAgentCard`) adds to the public
/// one, for callers who proved who they are. Kept small on purpose: a fuller description and
/// skills the operator would rather not publish to anyone who asks.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtendedCardConfig {
    /// Replaces the public card's `description`; absent keeps it.
    #[serde(default)]
    pub description: Option<String>,
    /// `[[card.extended.skills]]`, listed after the public card's skills.
    #[serde(default)]
    pub skills: Vec<CardSkillConfig>,
}

/// `[[card.skills]]`: one thing this harness is good at, as other agents' models will read it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardSkillConfig {
    /// The skill's `id` on the card, unique within `[[card.skills]]`.
    pub id: String,
    /// The short label other agents' models read first.
    pub name: String,
    /// What the skill does, in a sentence or a paragraph.
    #[serde(default)]
    pub description: String,
    /// Keywords a caller may match on.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Sample requests that show how to ask for the skill.
    #[serde(default)]
    pub examples: Vec<String>,
}

/// `[roster]`: how remote cards are fetched at start-up and capped for the model.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RosterConfig {
    /// Seconds one agent's card may take to arrive; all cards are fetched at once.
    #[serde(default = "default_card_timeout_secs")]
    pub card_timeout_secs: u64,
    /// Characters kept of each agent's name in the roster.
    #[serde(default = "default_max_name_chars")]
    pub max_name_chars: usize,
    /// Characters kept of each agent's description in the roster.
    #[serde(default = "default_max_description_chars")]
    pub max_description_chars: usize,
    /// Characters kept of each skill's name in the roster.
    #[serde(default = "default_max_skill_name_chars")]
    pub max_skill_name_chars: usize,
    /// Characters kept of each skill's description in the roster.
    #[serde(default = "default_max_skill_description_chars")]
    pub max_skill_description_chars: usize,
    /// Skills listed per agent; the rest are counted, not listed.
    #[serde(default = "default_max_skills")]
    pub max_skills: usize,
}

impl Default for RosterConfig {
    fn default() -> Self {
        RosterConfig {
            card_timeout_secs: default_card_timeout_secs(),
            max_name_chars: default_max_name_chars(),
            max_description_chars: default_max_description_chars(),
            max_skill_name_chars: default_max_skill_name_chars(),
            max_skill_description_chars: default_max_skill_description_chars(),
            max_skills: default_max_skills(),
        }
    }
}

impl RosterConfig {
    /// The caps the roster applies.
    pub fn caps(&self) -> Caps {
        Caps {
            name: self.max_name_chars,
            description: self.max_description_chars,
            skill_name: self.max_skill_name_chars,
            skill_description: self.max_skill_description_chars,
            skills: self.max_skills,
        }
    }

    /// How long one card fetch may take.
    pub fn card_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.card_timeout_secs)
    }
}

fn default_card_timeout_secs() -> u64 {
    DEFAULT_CARD_TIMEOUT.as_secs()
}
fn default_max_name_chars() -> usize {
    Caps::DEFAULT.name
}
fn default_max_description_chars() -> usize {
    Caps::DEFAULT.description
}
fn default_max_skill_name_chars() -> usize {
    Caps::DEFAULT.skill_name
}
fn default_max_skill_description_chars() -> usize {
    Caps::DEFAULT.skill_description
}
fn default_max_skills() -> usize {
    Caps::DEFAULT.skills
}

/// `[card]`: a value that is set must say something, a skill list is not empty, and skill ids
/// must be unique.
pub(super) fn validate_card(card: &CardConfig) -> Result<(), ConfigError> {
    let set = [
        ("card.name", &card.name),
        ("card.description", &card.description),
        ("card.version", &card.version),
    ];
    for (setting, value) in set {
        if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
            return Err(ConfigError::invalid(
                setting,
                "must not be blank; remove the key to keep the default",
            ));
        }
    }
    if card.skills.as_ref().is_some_and(Vec::is_empty) {
        return Err(ConfigError::invalid(
            "card.skills",
            "must list at least one skill (A2A 1.0 cards need one); remove the key to keep the \
             default skill",
        ));
    }
    let mut seen = HashSet::new();
    for (index, skill) in card.skills.iter().flatten().enumerate() {
        if skill.id.trim().is_empty() {
            return Err(ConfigError::invalid(
                format!("card.skills[{index}].id"),
                "must not be blank",
            ));
        }
        if skill.name.trim().is_empty() {
            return Err(ConfigError::invalid(
                format!("card.skills[{index}].name"),
                "must not be blank",
            ));
        }
        if !seen.insert(skill.id.as_str()) {
            return Err(ConfigError::invalid(
                format!("card.skills[{index}].id"),
                format!(
                    "duplicate skill id `{}`; skill ids must be unique",
                    skill.id
                ),
            ));
        }
    }
    Ok(())
}

/// `[roster]`: every cap within its bounds, the timeout between 1 s and a minute.
pub(super) fn validate_roster(roster: &RosterConfig) -> Result<(), ConfigError> {
    if !(1..=MAX_CARD_TIMEOUT_SECS).contains(&roster.card_timeout_secs) {
        return Err(ConfigError::invalid(
            "roster.card_timeout_secs",
            format!("must be between 1 and {MAX_CARD_TIMEOUT_SECS} seconds"),
        ));
    }
    let fields = [
        ("roster.max_name_chars", roster.max_name_chars),
        ("roster.max_description_chars", roster.max_description_chars),
        ("roster.max_skill_name_chars", roster.max_skill_name_chars),
        (
            "roster.max_skill_description_chars",
            roster.max_skill_description_chars,
        ),
    ];
    for (setting, value) in fields {
        if !(MIN_FIELD_CHARS..=MAX_FIELD_CHARS).contains(&value) {
            return Err(ConfigError::invalid(
                setting,
                format!("must be between {MIN_FIELD_CHARS} and {MAX_FIELD_CHARS} characters"),
            ));
        }
    }
    if roster.max_skills > MAX_SKILLS_LIMIT {
        return Err(ConfigError::invalid(
            "roster.max_skills",
            format!("must be at most {MAX_SKILLS_LIMIT}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::Config;

    use crate::base::config::testing::error_of;

    #[test]
    fn no_card_or_roster_section_means_the_defaults() {
        let config = Config::parse("", Path::new("config.toml")).unwrap();
        assert!(config.card.name.is_none());
        assert!(config.card.skills.is_none());
        assert_eq!(config.roster.card_timeout_secs, 5);
        assert_eq!(
            config.roster.caps(),
            crate::work::agents::roster::Caps::DEFAULT
        );
    }

    #[test]
    fn a_blank_card_value_names_its_setting() {
        assert!(error_of("[card]\nname = \" \"\n").starts_with("card.name: must not be blank"));
        assert!(error_of("[card]\ndescription = \"\"\n").starts_with("card.description:"));
        assert!(error_of("[card]\nversion = \"\"\n").starts_with("card.version:"));
    }

    #[test]
    fn a_blank_skill_id_or_name_names_the_skill_by_index() {
        let skills =
            "[[card.skills]]\nid = \"a\"\nname = \"A\"\n[[card.skills]]\nid = \"\"\nname = \"B\"\n";
        assert!(error_of(skills).starts_with("card.skills[1].id: must not be blank"));
        let skills = "[[card.skills]]\nid = \"a\"\nname = \"\"\n";
        assert!(error_of(skills).starts_with("card.skills[0].name: must not be blank"));
    }

    #[test]
    fn an_empty_skill_list_is_refused_naming_the_default_it_would_replace() {
        let message = error_of("[card]\nskills = []\n");
        assert!(
            message.starts_with("card.skills: must list at least one skill"),
            "{message}"
        );
        assert!(message.contains("remove the key"), "{message}");
    }

    #[test]
    fn a_duplicate_skill_id_names_the_second_one() {
        let skills = "[[card.skills]]\nid = \"a\"\nname = \"A\"\n[[card.skills]]\nid = \"a\"\nname = \"B\"\n";
        let message = error_of(skills);
        assert!(
            message.starts_with("card.skills[1].id: duplicate"),
            "{message}"
        );
    }

    #[test]
    fn an_unknown_card_key_names_its_dotted_path() {
        let message = error_of("[card]\nnmae = \"x\"\n");
        assert!(
            message.starts_with("card.nmae: unknown setting"),
            "{message}"
        );
        let message = error_of("[[card.skills]]\nid = \"a\"\nname = \"A\"\nurl = \"x\"\n");
        assert!(
            message.starts_with("card.skills[0].url: unknown setting"),
            "{message}"
        );
    }

    #[test]
    fn roster_bounds_name_their_setting() {
        assert!(
            error_of("[roster]\ncard_timeout_secs = 0\n").starts_with("roster.card_timeout_secs:")
        );
        assert!(error_of("[roster]\nmax_name_chars = 2\n").starts_with("roster.max_name_chars:"));
        assert!(error_of("[roster]\nmax_skills = 1000\n").starts_with("roster.max_skills:"));
        assert!(error_of("[roster]\nmax_skils = 3\n").starts_with("roster.max_skils: unknown"));
    }
}
