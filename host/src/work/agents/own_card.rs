//! The card this harness serves: the built-in [`default_card`] with whatever `[card]` sets laid
//! on top, so an absent key keeps its default; without `[card.skills]` it lists the
//! [`default_skill`].

use crate::base::config::CardConfig;
use crate::base::protocol::card::default_card;
use crate::base::protocol::card::{AgentCard, AgentSkill};

/// The id of the skill a card lists when `[card]` configures none.
pub const DEFAULT_SKILL_ID: &str = "general";
const DEFAULT_SKILL_NAME: &str = "General tasks";
/// What any harness does before it is given a purpose. Another agent's model reads it in its
/// roster (cut at `roster.max_skill_description_chars`, 256 by default, which this stays under).
const DEFAULT_SKILL_DESCRIPTION: &str = "Works a task described in plain language with a \
language model and the tools its plugins provide: plans the work, asks the task's participants \
when it needs them, delegates sub-tasks to other A2A agents, and reports progress as it goes.";
const DEFAULT_SKILL_TAGS: [&str; 4] = ["general", "tasks", "tools", "delegation"];
const DEFAULT_SKILL_EXAMPLES: [&str; 2] = [
    "Summarise this report and list the questions it leaves open.",
    "Split this migration into steps and run each one as a sub-task.",
];

/// The skill of a harness whose `[card]` lists none. A2A 1.0 requires a card to have skills
/// (the SDKs warn that a card without one is not compliant), and a caller's model picks an agent
/// by its skills, so an unconfigured harness says what it does rather than nothing.
pub fn default_skill() -> AgentSkill {
    AgentSkill {
        id: DEFAULT_SKILL_ID.to_string(),
        name: DEFAULT_SKILL_NAME.to_string(),
        description: DEFAULT_SKILL_DESCRIPTION.to_string(),
        tags: DEFAULT_SKILL_TAGS.map(String::from).to_vec(),
        examples: DEFAULT_SKILL_EXAMPLES.map(String::from).to_vec(),
        ..AgentSkill::default()
    }
}

/// This harness's card, reachable at `base_url`. A configured `[card.skills]` list replaces the
/// default skill.
pub fn own_card(config: &CardConfig, base_url: &str) -> AgentCard {
    let mut card = default_card(base_url);
    if let Some(name) = &config.name {
        card.name = name.clone();
    }
    if let Some(description) = &config.description {
        card.description = description.clone();
    }
    if let Some(version) = &config.version {
        card.version = version.clone();
    }
    card.skills = match &config.skills {
        Some(skills) => skills
            .iter()
            .map(|skill| AgentSkill {
                id: skill.id.clone(),
                name: skill.name.clone(),
                description: skill.description.clone(),
                tags: skill.tags.clone(),
                examples: skill.examples.clone(),
                ..AgentSkill::default()
            })
            .collect(),
        None => vec![default_skill()],
    };
    card
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::config::CardSkillConfig;

    #[test]
    fn no_card_section_serves_the_default_card_with_the_default_skill() {
        let card = own_card(&CardConfig::default(), "http://x");
        assert_eq!(card.skills, [default_skill()]);
        let without_skills = AgentCard {
            skills: Vec::new(),
            ..card
        };
        assert_eq!(without_skills, default_card("http://x"));
    }

    #[test]
    fn the_default_skill_says_what_an_unconfigured_harness_does() {
        let skill = serde_json::to_value(default_skill()).unwrap();
        assert_eq!(
            skill,
            serde_json::json!({
                "id": "general",
                "name": "General tasks",
                "description": "Works a task described in plain language with a language model \
                    and the tools its plugins provide: plans the work, asks the task's \
                    participants when it needs them, delegates sub-tasks to other A2A agents, \
                    and reports progress as it goes.",
                "tags": ["general", "tasks", "tools", "delegation"],
                "examples": [
                    "Summarise this report and list the questions it leaves open.",
                    "Split this migration into steps and run each one as a sub-task."
                ]
            })
        );
        let cap = crate::work::agents::roster::Caps::DEFAULT.skill_description;
        assert!(DEFAULT_SKILL_DESCRIPTION.chars().count() <= cap);
    }

    #[test]
    fn set_keys_replace_their_defaults_and_the_rest_stay() {
        let config = CardConfig {
            name: Some("ledger".into()),
            skills: Some(vec![CardSkillConfig {
                id: "balances".into(),
                name: "Balances".into(),
                description: "The balance of an account.".into(),
                tags: vec!["accounts".into()],
                examples: vec!["What is the balance of 1001?".into()],
            }]),
            ..CardConfig::default()
        };
        let card = own_card(&config, "http://x");
        let default = default_card("http://x");
        assert_eq!(card.name, "ledger");
        assert_eq!(card.description, default.description);
        assert_eq!(card.version, default.version);
        assert_eq!(card.capabilities, default.capabilities);
        assert_eq!(
            card.skills.len(),
            1,
            "the configured skills replace the default one"
        );
        assert_eq!(card.skills[0].id, "balances");
        assert_eq!(card.skills[0].tags, ["accounts"]);
        assert_eq!(card.skills[0].examples, ["What is the balance of 1001?"]);
    }
}
