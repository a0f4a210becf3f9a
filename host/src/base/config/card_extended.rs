//! The checks of `[card.extended]` ([`super::ExtendedCardConfig`]), which need `[server]` too:
//! the extended card is served only to callers who proved who they are.

use std::collections::HashSet;

use super::{CardConfig, ConfigError, ServerConfig};

/// `[card.extended]` is read only by authenticated callers, so it needs a way to authenticate
/// ([`ServerConfig::authenticates_callers`]); its description must say something, and its
/// skills follow the rules of `[[card.skills]]`, their ids unique across both lists.
pub(super) fn validate_extended_card(
    card: &CardConfig,
    server: &ServerConfig,
) -> Result<(), ConfigError> {
    let Some(extended) = &card.extended else {
        return Ok(());
    };
    if !server.authenticates_callers() {
        return Err(ConfigError::invalid(
            "card.extended",
            "is served only to authenticated callers, and none can authenticate; configure \
             server.trusted_delegators or server.oidc, or remove card.extended",
        ));
    }
    if extended
        .description
        .as_deref()
        .is_some_and(|d| d.trim().is_empty())
    {
        return Err(ConfigError::invalid(
            "card.extended.description",
            "must not be blank; remove the key to keep the public description",
        ));
    }
    let mut seen: HashSet<&str> = card
        .skills
        .iter()
        .flatten()
        .map(|skill| skill.id.as_str())
        .collect();
    for (index, skill) in extended.skills.iter().enumerate() {
        let setting = |key: &str| format!("card.extended.skills[{index}].{key}");
        if skill.id.trim().is_empty() {
            return Err(ConfigError::invalid(setting("id"), "must not be blank"));
        }
        if skill.name.trim().is_empty() {
            return Err(ConfigError::invalid(setting("name"), "must not be blank"));
        }
        if !seen.insert(skill.id.as_str()) {
            return Err(ConfigError::invalid(
                setting("id"),
                format!(
                    "duplicate skill id `{}`; ids must be unique across card.skills and card.extended.skills",
                    skill.id
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::base::config::testing::error_of;

    const DELEGATOR: &str = "[[server.trusted_delegators]]\nid = \"desk\"\ntoken_env = \"T\"\n";

    #[test]
    fn an_extended_card_without_any_way_to_authenticate_is_refused() {
        let err = error_of("[card.extended]\ndescription = \"more\"\n");
        assert!(err.starts_with("card.extended: "), "{err}");
        assert!(err.contains("server.oidc"), "{err}");
    }

    #[test]
    fn extended_skills_are_checked_like_public_ones() {
        let text = format!(
            "{DELEGATOR}[[card.skills]]\nid = \"a\"\nname = \"A\"\n\
             [[card.extended.skills]]\nid = \"a\"\nname = \"Again\"\n"
        );
        let err = error_of(&text);
        assert!(err.starts_with("card.extended.skills[0].id: "), "{err}");
        let err = error_of(&format!(
            "{DELEGATOR}[card.extended]\ndescription = \" \"\n"
        ));
        assert!(err.starts_with("card.extended.description: "), "{err}");
    }
}
