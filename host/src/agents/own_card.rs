//! The card this harness serves: the built-in [`default_card`] with whatever `[card]` sets laid
//! on top, so an absent key keeps its default and an existing configuration serves the same card.

use crate::a2a::card::default_card;
use crate::a2a::types::{AgentCard, AgentSkill};
use crate::config::CardConfig;

/// This harness's card, reachable at `base_url`.
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
    if let Some(skills) = &config.skills {
        card.skills = skills
            .iter()
            .map(|skill| AgentSkill {
                id: skill.id.clone(),
                name: skill.name.clone(),
                description: skill.description.clone(),
                tags: skill.tags.clone(),
                examples: skill.examples.clone(),
                ..AgentSkill::default()
            })
            .collect();
    }
    card
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::CardSkillConfig;

    #[test]
    fn no_card_section_serves_the_default_card() {
        assert_eq!(
            own_card(&CardConfig::default(), "http://x"),
            default_card("http://x")
        );
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
        assert_eq!(card.skills[0].id, "balances");
        assert_eq!(card.skills[0].tags, ["accounts"]);
        assert_eq!(card.skills[0].examples, ["What is the balance of 1001?"]);
    }
}
