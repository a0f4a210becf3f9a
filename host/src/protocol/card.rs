//! The agent card this harness serves at `/.well-known/agent-card.json`: who it is, where it
//! listens, and which optional A2A capabilities it has.

use crate::protocol::types::{AgentCapabilities, AgentCard, AgentExtension, AgentInterface};
use crate::protocol::extension::{ENVELOPE_MEDIA_TYPE, EXTENSION_URI};
use crate::protocol::headers::LEGACY_VERSION;

/// The agent's name on the card.
pub const AGENT_NAME: &str = "tiny-harness";
/// The card's version: the harness's own, so a new release reads as a new card.
pub const AGENT_VERSION: &str = env!("CARGO_PKG_VERSION");
/// The preferred protocol binding, listed first on the card.
pub const PROTOCOL_BINDING: &str = "JSONRPC";
/// The `protocolBinding` of the HTTP+JSON (REST) binding on the card.
pub const REST_PROTOCOL_BINDING: &str = "HTTP+JSON";
/// The protocol version served, `Major.Minor` as §3.6 asks.
pub const PROTOCOL_VERSION: &str = "1.0";
/// The path a card is published at, relative to an agent's base URL.
pub const CARD_PATH: &str = "/.well-known/agent-card.json";

const DESCRIPTION: &str = "An agent harness that takes tasks over A2A and works each one with a \
                           language model and tools, reporting progress as it goes.";
const EXTENSION_DESCRIPTION: &str = "Task name, goal, acceptance criteria, participants, plan and \
                                     links to parent and sub-tasks, carried in Task.metadata.";

/// The card for a harness reachable at `base_url`.
///
/// Every interface is served at the base URL: JSON-RPC 1.0 first (the preferred one, §8.3.1),
/// then HTTP+JSON 1.0, then JSON-RPC 0.3 (§3.6.2 lets an agent list one interface per version;
/// clients that speak 1.0 pick a 1.0 entry, as they must prefer it). Streaming is on; push
/// notifications and the extended card are off, so the server answers
/// those methods with the errors §3.3.4 prescribes. The task extension is optional: clients that
/// do not know it still get plain A2A tasks.
pub fn default_card(base_url: &str) -> AgentCard {
    AgentCard {
        name: AGENT_NAME.to_string(),
        description: DESCRIPTION.to_string(),
        supported_interfaces: [
            (PROTOCOL_BINDING, PROTOCOL_VERSION),
            (REST_PROTOCOL_BINDING, PROTOCOL_VERSION),
            (PROTOCOL_BINDING, LEGACY_VERSION),
        ]
        .into_iter()
        .map(|(binding, version)| AgentInterface {
            url: base_url.to_string(),
            protocol_binding: binding.to_string(),
            tenant: String::new(),
            protocol_version: version.to_string(),
        })
        .collect(),
        version: AGENT_VERSION.to_string(),
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            extensions: vec![AgentExtension {
                uri: EXTENSION_URI.to_string(),
                description: EXTENSION_DESCRIPTION.to_string(),
                required: false,
                params: None,
            }],
            extended_agent_card: None,
        },
        // What the engine reads: text, JSON data and task envelopes. A part of another media
        // type is refused with ContentTypeNotSupportedError rather than silently ignored.
        default_input_modes: vec![
            "text/plain".to_string(),
            "application/json".to_string(),
            ENVELOPE_MEDIA_TYPE.to_string(),
        ],
        default_output_modes: vec!["text/plain".to_string()],
        ..AgentCard::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn card_declares_jsonrpc_then_http_json_then_jsonrpc_0_3_at_the_base_url() {
        let card = serde_json::to_value(default_card("http://127.0.0.1:8080")).unwrap();
        assert_eq!(
            card["supportedInterfaces"],
            json!([
                {"url":"http://127.0.0.1:8080","protocolBinding":"JSONRPC","protocolVersion":"1.0"},
                {"url":"http://127.0.0.1:8080","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"},
                {"url":"http://127.0.0.1:8080","protocolBinding":"JSONRPC","protocolVersion":"0.3"}
            ])
        );
        assert_eq!(card["name"], "tiny-harness");
        assert_eq!(card["version"], "0.1.0");
        assert_eq!(card["skills"], json!([]));
    }

    #[test]
    fn card_offers_streaming_and_the_optional_task_extension_but_not_push() {
        let card = serde_json::to_value(default_card("http://x")).unwrap();
        let capabilities = &card["capabilities"];
        assert_eq!(capabilities["streaming"], true);
        assert_eq!(capabilities["pushNotifications"], false);
        assert_eq!(capabilities["extensions"][0]["uri"], EXTENSION_URI);
        assert_eq!(capabilities["extensions"][0]["required"], false);
        assert!(card.get("securitySchemes").is_none());
    }
}
