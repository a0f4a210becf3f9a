//! Whether a fetched card describes an agent this harness can delegate to: an A2A 1.0 JSON-RPC
//! agent that needs no authentication and requires no extension we do not implement.

use crate::base::protocol::card::AgentCard;
use crate::base::protocol::card::{PROTOCOL_BINDING, PROTOCOL_VERSION};
use crate::base::text::cut::cut;
use crate::state::records::extension::EXTENSION_URI;

use super::clean::clean;

/// How much of a card-supplied string (an extension URI, a URL) a refusal quotes: enough to
/// recognise it in the log, not enough for a hostile card to flood it.
const MAX_QUOTED_CHARS: usize = 120;

/// Why a card was refused. The text goes to the operator's log and to `harness check`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CardProblem {
    #[error(
        "the card has no {PROTOCOL_BINDING} interface with protocolVersion {PROTOCOL_VERSION} in supportedInterfaces (an A2A 1.0 card is required)"
    )]
    /// No JSON-RPC interface speaks 1.0: the client has no binding to reach the agent with.
    NotVersion1,
    #[error("the card's {PROTOCOL_BINDING} interface URL {0} is not an http:// or https:// URL")]
    /// The 1.0 interface's URL (quoted), which the client could not call.
    BadInterfaceUrl(String),
    #[error("the card declares securitySchemes; agents that need authentication are not supported")]
    /// The agent wants credentials this harness cannot present.
    SecuritySchemes,
    #[error(
        "the card declares securityRequirements; agents that need authentication are not supported"
    )]
    /// The agent requires credentials this harness cannot present.
    SecurityRequirements,
    #[error("the card requires the extension {0}, which this harness does not implement")]
    /// The URI of a required extension: a request without it would be refused.
    RequiredExtension(String),
}

/// Checks a card and returns the URL of its JSON-RPC 1.0 interface: where a later call to the
/// agent goes. Security comes first, so an agent that wants credentials is named as such even
/// when its card has other faults too.
pub fn check_card(card: &AgentCard) -> Result<String, CardProblem> {
    if !card.security_schemes.is_empty() {
        return Err(CardProblem::SecuritySchemes);
    }
    if !card.security_requirements.is_empty()
        || card
            .skills
            .iter()
            .any(|skill| !skill.security_requirements.is_empty())
    {
        return Err(CardProblem::SecurityRequirements);
    }
    if let Some(extension) = card
        .capabilities
        .extensions
        .iter()
        .find(|ext| ext.required && ext.uri != EXTENSION_URI)
    {
        return Err(CardProblem::RequiredExtension(quote(&extension.uri)));
    }
    let interface = card
        .supported_interfaces
        .iter()
        .find(|i| i.protocol_binding == PROTOCOL_BINDING && i.protocol_version == PROTOCOL_VERSION)
        .ok_or(CardProblem::NotVersion1)?;
    let is_http = reqwest::Url::parse(&interface.url)
        .is_ok_and(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some());
    if !is_http {
        return Err(CardProblem::BadInterfaceUrl(quote(&interface.url)));
    }
    Ok(interface.url.clone())
}

/// Card text for a log line: cleaned (no control characters that could forge log lines or
/// drive a terminal) and cut.
pub(super) fn quote(text: &str) -> String {
    format!("\"{}\"", cut(&clean(text), MAX_QUOTED_CHARS))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::card::default_card;
    use crate::base::protocol::card::{AgentExtension, AgentSkill};
    use serde_json::json;

    #[test]
    fn our_own_default_card_passes() {
        let card = default_card("http://127.0.0.1:8080");
        assert_eq!(check_card(&card).unwrap(), "http://127.0.0.1:8080");
    }

    #[test]
    fn a_card_without_a_jsonrpc_1_0_interface_is_refused() {
        let mut card = default_card("http://x");
        card.supported_interfaces[0].protocol_version = "0.3".into();
        assert_eq!(check_card(&card), Err(CardProblem::NotVersion1));
        card.supported_interfaces.clear();
        assert_eq!(check_card(&card), Err(CardProblem::NotVersion1));
        let mut card = default_card("http://x");
        card.supported_interfaces[0].protocol_binding = "GRPC".into();
        assert_eq!(check_card(&card), Err(CardProblem::NotVersion1));
    }

    #[test]
    fn a_card_that_asks_for_authentication_is_refused() {
        let mut card = default_card("http://x");
        card.security_schemes.insert(
            "bearer".into(),
            json!({"httpAuthSecurityScheme": {"scheme": "Bearer"}}),
        );
        assert_eq!(check_card(&card), Err(CardProblem::SecuritySchemes));
        let mut card = default_card("http://x");
        card.security_requirements = vec![json!({"schemes": {"bearer": {"list": []}}})];
        assert_eq!(check_card(&card), Err(CardProblem::SecurityRequirements));
        let mut card = default_card("http://x");
        card.skills = vec![AgentSkill {
            id: "s".into(),
            name: "S".into(),
            security_requirements: vec![json!({})],
            ..AgentSkill::default()
        }];
        assert_eq!(check_card(&card), Err(CardProblem::SecurityRequirements));
    }

    #[test]
    fn only_our_task_extension_may_be_required() {
        let mut card = default_card("http://x");
        card.capabilities.extensions[0].required = true;
        assert!(check_card(&card).is_ok());
        card.capabilities.extensions.push(AgentExtension {
            uri: "https://example.com/ext/payments/v1".into(),
            required: true,
            ..AgentExtension::default()
        });
        assert_eq!(
            check_card(&card),
            Err(CardProblem::RequiredExtension(
                "\"https://example.com/ext/payments/v1\"".into()
            ))
        );
    }

    #[test]
    fn an_optional_unknown_extension_is_fine() {
        let mut card = default_card("http://x");
        card.capabilities.extensions.push(AgentExtension {
            uri: "https://example.com/ext/other".into(),
            required: false,
            ..AgentExtension::default()
        });
        assert!(check_card(&card).is_ok());
    }

    #[test]
    fn an_interface_url_that_is_not_http_is_refused_and_quoted_cleanly() {
        let card = default_card("file:///etc/passwd\n\u{1b}[31m");
        assert_eq!(
            check_card(&card),
            Err(CardProblem::BadInterfaceUrl(
                "\"file:///etc/passwd [31m\"".into()
            ))
        );
    }
}
