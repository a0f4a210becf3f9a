//! What this harness's card says about authentication, and the extended card: an HTTP bearer
//! scheme when callers present tokens this server knows (`[[server.trusted_delegators]]`), an
//! OpenID Connect scheme naming the issuer's discovery document when `[server.oidc]` is set,
//! either one enough (each is its own security requirement); with any of them,
//! `capabilities.extendedAgentCard` is on and the extended card is the public one with
//! `[card.extended]` on top. With none, the card declares nothing and offers no extended card.

use serde_json::{Value, json};

use crate::base::config::{Config, ServerConfig};
use crate::base::protocol::card::{AgentCard, AgentSkill};
use crate::work::agents::own_card;

/// The card's name for the HTTP bearer scheme.
pub const BEARER_SCHEME: &str = "bearer";
/// The card's name for the OpenID Connect scheme.
pub const OIDC_SCHEME: &str = "oidc";

/// The cards this harness serves, reachable at `base_url`: the public card (security declared)
/// and, when any caller can authenticate, the extended card.
pub fn served_cards(config: &Config, base_url: &str) -> (AgentCard, Option<AgentCard>) {
    let mut card = own_card(&config.card, base_url);
    declare_security(&mut card, &config.server);
    if card.capabilities.extended_agent_card != Some(true) {
        return (card, None);
    }
    let mut extended = card.clone();
    if let Some(more) = &config.card.extended {
        if let Some(description) = &more.description {
            extended.description = description.clone();
        }
        extended
            .skills
            .extend(more.skills.iter().map(|skill| AgentSkill {
                id: skill.id.clone(),
                name: skill.name.clone(),
                description: skill.description.clone(),
                tags: skill.tags.clone(),
                examples: skill.examples.clone(),
                ..AgentSkill::default()
            }));
    }
    (card, Some(extended))
}

/// Sets `securitySchemes`, `securityRequirements` and `capabilities.extendedAgentCard` from
/// what `[server]` configures (A2A 1.0 protobuf-JSON shapes: a `SecurityScheme` is a oneof, a
/// `SecurityRequirement` maps scheme names to a `StringList` of scopes).
pub fn declare_security(card: &mut AgentCard, server: &ServerConfig) {
    let mut requirements = Vec::new();
    if server.has_bearer_callers() {
        card.security_schemes.insert(
            BEARER_SCHEME.to_string(),
            json!({"httpAuthSecurityScheme": {"scheme": "Bearer"}}),
        );
        requirements.push(requirement(BEARER_SCHEME, &[]));
    }
    if let Some(oidc) = &server.oidc {
        card.security_schemes.insert(
            OIDC_SCHEME.to_string(),
            json!({"openIdConnectSecurityScheme": {"openIdConnectUrl": oidc.discovery_url()}}),
        );
        requirements.push(requirement(OIDC_SCHEME, &oidc.required_scopes));
    }
    if !requirements.is_empty() {
        card.security_requirements = requirements;
        card.capabilities.extended_agent_card = Some(true);
    }
}

fn requirement(scheme: &str, scopes: &[String]) -> Value {
    json!({"schemes": {scheme: {"list": scopes}}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::config::{OidcConfig, TrustedDelegatorConfig};

    fn security(server: &ServerConfig) -> Value {
        let mut card = AgentCard::default();
        declare_security(&mut card, server);
        let card = serde_json::to_value(card).unwrap();
        json!({
            "securitySchemes": card.get("securitySchemes"),
            "securityRequirements": card.get("securityRequirements"),
            "extendedAgentCard": card["capabilities"].get("extendedAgentCard"),
        })
    }

    #[test]
    fn no_method_configured_declares_nothing() {
        assert_eq!(
            security(&ServerConfig::default()),
            json!({"securitySchemes": null, "securityRequirements": null, "extendedAgentCard": null})
        );
    }

    #[test]
    fn delegators_and_an_issuer_declare_a_bearer_and_an_openid_connect_scheme() {
        let server = ServerConfig {
            trusted_delegators: vec![TrustedDelegatorConfig {
                id: "desk".into(),
                token_env: "T".into(),
            }],
            oidc: Some(OidcConfig {
                issuer: "https://id.example/realms/a/".into(),
                jwks_url: None,
                audience: "harness".into(),
                participant_claim: "sub".into(),
                required_scopes: vec!["a2a:tasks".into()],
            }),
            ..ServerConfig::default()
        };
        assert_eq!(
            security(&server),
            json!({
                "securitySchemes": {
                    "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}},
                    "oidc": {"openIdConnectSecurityScheme": {
                        "openIdConnectUrl": "https://id.example/realms/a/.well-known/openid-configuration"
                    }}
                },
                "securityRequirements": [
                    {"schemes": {"bearer": {"list": []}}},
                    {"schemes": {"oidc": {"list": ["a2a:tasks"]}}}
                ],
                "extendedAgentCard": true
            })
        );
    }
}
