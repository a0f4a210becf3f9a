//! The client's side of A2A 0.3: telling a 0.3 card from a 1.0 one, and reading 0.3 results
//! back into the 1.0 types (the requests are converted by [`crate::base::protocol::v03::convert`]).

use serde_json::Value;

use super::{ClientError, Dialect, invalid};
use crate::base::protocol::card::PROTOCOL_BINDING;
use crate::base::protocol::types::{SendMessageResponse, StreamResponse, Task};
use crate::base::protocol::v03::{convert, wire};

/// The dialect a card asks for and the JSON-RPC endpoint it names, if any.
///
/// A 0.3 card has `protocolVersion` (`0.3.0`) and `url` at its top level and no
/// `supportedInterfaces`; its `url` is the JSON-RPC endpoint. A 1.0 card lists interfaces: the
/// first JSON-RPC one whose version is 1.x is used, else the first 0.3 one (1.0 preferred, as
/// §3.6.3 asks of tooling).
pub fn card_dialect(card: &Value) -> (Dialect, Option<String>) {
    let text =
        |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    let interfaces = card
        .get("supportedInterfaces")
        .and_then(Value::as_array)
        .filter(|list| !list.is_empty());
    let Some(interfaces) = interfaces else {
        let legacy = text(card, "protocolVersion").is_some_and(|v| v.starts_with("0."));
        return match legacy {
            true => (Dialect::V0_3, text(card, "url")),
            false => (Dialect::V1_0, None),
        };
    };
    let jsonrpc = |major: &str| {
        interfaces.iter().find(|interface| {
            text(interface, "protocolBinding").as_deref() == Some(PROTOCOL_BINDING)
                && text(interface, "protocolVersion").is_some_and(|v| v.starts_with(major))
        })
    };
    if let Some(interface) = jsonrpc("1.") {
        return (Dialect::V1_0, text(interface, "url"));
    }
    if let Some(interface) = jsonrpc("0.3") {
        return (Dialect::V0_3, text(interface, "url"));
    }
    (Dialect::V1_0, None)
}

fn read<T: serde::de::DeserializeOwned>(
    url: &str,
    what: &str,
    value: Value,
) -> Result<T, ClientError> {
    serde_json::from_value(value).map_err(|err| invalid(url, format!("0.3 {what}: {err}")))
}

fn converted<'a>(url: &'a str, what: &str) -> impl FnOnce((String, String)) -> ClientError + 'a {
    let what = what.to_string();
    move |(field, why)| invalid(url, format!("0.3 {what}: {field}: {why}"))
}

/// A `message/send` result.
pub(super) fn send_result(url: &str, value: Value) -> Result<SendMessageResponse, ClientError> {
    let event =
        wire::Event::from_value(value).map_err(|why| invalid(url, format!("0.3 result: {why}")))?;
    convert::send_result_to_v10(event).map_err(converted(url, "result"))
}

/// A `tasks/get` or `tasks/cancel` result.
pub(super) fn task(url: &str, value: Value) -> Result<Task, ClientError> {
    let task: wire::Task = read(url, "task", value)?;
    convert::task_to_v10(task).map_err(converted(url, "task"))
}

/// One event of a `message/stream` or `tasks/resubscribe` stream.
pub(super) fn event(url: &str, value: Value) -> Result<StreamResponse, ClientError> {
    let event =
        wire::Event::from_value(value).map_err(|why| invalid(url, format!("0.3 event: {why}")))?;
    convert::event_to_v10(event).map_err(converted(url, "event"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_card_with_a_top_level_0_3_version_and_url_is_a_0_3_card() {
        let card = json!({"name": "old", "protocolVersion": "0.3.0", "url": "http://a/rpc"});
        assert_eq!(
            card_dialect(&card),
            (Dialect::V0_3, Some("http://a/rpc".into()))
        );
    }

    #[test]
    fn a_card_with_a_1_0_jsonrpc_interface_is_a_1_0_card() {
        let card = json!({"supportedInterfaces": [
            {"url": "http://a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
            {"url": "http://a/old", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
            {"url": "http://a/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ]});
        assert_eq!(
            card_dialect(&card),
            (Dialect::V1_0, Some("http://a/".into()))
        );
        let only_old = json!({"supportedInterfaces": [
            {"url": "http://a/old", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}
        ]});
        assert_eq!(card_dialect(&only_old).0, Dialect::V0_3);
        assert_eq!(
            card_dialect(&json!({"name": "bare"})),
            (Dialect::V1_0, None)
        );
    }

    #[test]
    fn a_0_3_result_reads_as_a_1_0_task_or_message() {
        let task = json!({"kind": "task", "id": "t", "contextId": "c",
                          "status": {"state": "completed"}});
        match send_result("u", task).unwrap() {
            SendMessageResponse::Task(task) => assert!(task.status.state.is_terminal()),
            other => panic!("a task, not {other:?}"),
        }
        let message = json!({"kind": "message", "messageId": "m", "role": "agent",
                             "parts": [{"kind": "text", "text": "hi"}]});
        assert!(matches!(
            send_result("u", message).unwrap(),
            SendMessageResponse::Message(_)
        ));
        let update = json!({"kind": "status-update", "taskId": "t", "contextId": "c", "final": true,
                            "status": {"state": "completed"}});
        assert!(send_result("u", update).is_err());
    }
}
