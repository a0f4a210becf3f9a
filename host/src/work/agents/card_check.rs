//! Whether a fetched card describes an agent this harness can delegate to: an A2A 1.0 JSON-RPC
//! agent that requires no extension we do not implement. What it asks of its callers is matched
//! against the configured credentials by [`super::security`].

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
    #[error("the card requires the extension {0}, which this harness does not implement")]
    /// The URI of a required extension: a request without it would be refused.
    RequiredExtension(String),
}

/// Checks a card and returns the URL of its JSON-RPC 1.0 interface: where a later call to the
/// agent goes.
pub fn check_card(card: &AgentCard) -> Result<String, CardProblem> {
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
    use crate::base::protocol::card::AgentExtension;
    use crate::base::protocol::card::default_card;

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
