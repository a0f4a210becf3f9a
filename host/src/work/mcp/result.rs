//! What the model reads of an MCP call: the result's text and structured content as one text,
//! capped by the cap every tool result has (the context fences it as untrusted, like every
//! tool's), and the stable `[code] message` errors of a call that did not return.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

use super::server::CallFailure;
use crate::work::plugins::cut_result;
use crate::work::tools::ToolOutcome;

/// The code of a result the server marked `isError`.
pub const CODE_TOOL_ERROR: &str = "tool.error";
/// The code of a call past its deadline.
pub const CODE_TIMEOUT: &str = "tool.timeout";
/// The code of a call on a server that is not connected.
pub const CODE_UNAVAILABLE: &str = "tool.unavailable";
/// The code of a call the server refused at the protocol level.
pub const CODE_FAILED: &str = "tool.failed";

/// The outcome of `tool` (the model's name for it) on `server`.
pub fn outcome(
    tool: &str,
    server: &str,
    result: Result<CallToolResult, CallFailure>,
) -> ToolOutcome {
    match result {
        Ok(result) => {
            let text = cut_result(text_of(&result));
            if result.is_error == Some(true) {
                ToolOutcome::error(CODE_TOOL_ERROR, format!("{tool}: {text}"))
            } else {
                ToolOutcome {
                    result: Ok(text),
                    effects: Vec::new(),
                }
            }
        }
        Err(CallFailure::Unavailable) => unavailable(tool, server),
        Err(CallFailure::Timeout(after)) => ToolOutcome::error(
            CODE_TIMEOUT,
            format!(
                "{tool}: no answer within {} s, so the call was cancelled; try again later or go on without it",
                after.as_secs()
            ),
        ),
        Err(CallFailure::Refused(why)) => {
            ToolOutcome::error(CODE_FAILED, cut_result(format!("{tool}: {why}")))
        }
    }
}

/// The answer of every call on a server that is not connected.
pub fn unavailable(tool: &str, server: &str) -> ToolOutcome {
    ToolOutcome::error(
        CODE_UNAVAILABLE,
        format!(
            "{tool}: the MCP server {server} is not running just now; try again later or go on without it"
        ),
    )
}

/// The result's blocks in order, one per paragraph (text as it is, other kinds named), then its
/// structured content as JSON unless the text already says it (servers are asked to send both).
fn text_of(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = result.content.iter().map(block_text).collect();
    if let Some(structured) = &result.structured_content
        && !said_by_text(structured, &result.content)
    {
        parts.push(structured.to_string());
    }
    parts.join("\n")
}

/// Whether a text block holds `structured`: the same JSON, or, for an object of one field (as
/// SDKs wrap a plain return value: `{"result": 3}`), that field's value.
fn said_by_text(structured: &Value, content: &[ContentBlock]) -> bool {
    let wrapped = structured
        .as_object()
        .filter(|object| object.len() == 1)
        .and_then(|object| object.values().next());
    content
        .iter()
        .filter_map(ContentBlock::as_text)
        .any(|text| {
            let parsed = serde_json::from_str::<Value>(&text.text).ok();
            parsed.as_ref() == Some(structured)
                || wrapped.is_some_and(|value| {
                    parsed.as_ref() == Some(value) || value.as_str() == Some(text.text.as_str())
                })
        })
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => format!("(an image, {})", image.mime_type),
        ContentBlock::Audio(audio) => format!("(audio, {})", audio.mime_type),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => format!("({uri})\n{text}"),
            ResourceContents::BlobResourceContents { uri, .. } => {
                format!("(binary resource {uri})")
            }
            _ => "(a resource of a kind this harness does not read)".to_string(),
        },
        ContentBlock::ResourceLink(link) => format!("(resource link {})", link.uri),
        _ => "(content of a kind this harness does not read)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn text(outcome: &ToolOutcome) -> String {
        outcome.text()
    }

    #[test]
    fn errors_the_model_reads_are_stable() {
        let tool = "mcp__files__read";
        assert_eq!(
            text(&outcome(
                tool,
                "files",
                Err(CallFailure::Timeout(Duration::from_secs(2)))
            )),
            "[tool.timeout] mcp__files__read: no answer within 2 s, so the call was cancelled; try again later or go on without it"
        );
        assert_eq!(
            text(&outcome(tool, "files", Err(CallFailure::Unavailable))),
            "[tool.unavailable] mcp__files__read: the MCP server files is not running just now; try again later or go on without it"
        );
        assert_eq!(
            text(&outcome(
                tool,
                "files",
                Err(CallFailure::Refused("the call failed: x".into()))
            )),
            "[tool.failed] mcp__files__read: the call failed: x"
        );
    }

    #[test]
    fn an_error_result_is_a_tool_error_with_its_text() {
        let result: CallToolResult = serde_json::from_value(serde_json::json!({
            "content": [{"type": "text", "text": "no such file"}],
            "isError": true
        }))
        .unwrap();
        assert_eq!(
            text(&outcome("mcp__f__read", "f", Ok(result))),
            "[tool.error] mcp__f__read: no such file"
        );
    }

    #[test]
    fn structured_content_is_added_once() {
        let both: CallToolResult = serde_json::from_value(serde_json::json!({
            "content": [{"type": "text", "text": "{\"n\": 3}"}],
            "structuredContent": {"n": 3}
        }))
        .unwrap();
        assert_eq!(text(&outcome("t", "s", Ok(both))), "{\"n\": 3}");
        let only: CallToolResult = serde_json::from_value(serde_json::json!({
            "content": [{"type": "text", "text": "three"}],
            "structuredContent": {"n": 3}
        }))
        .unwrap();
        assert_eq!(text(&outcome("t", "s", Ok(only))), "three\n{\"n\":3}");
        let wrapped: CallToolResult = serde_json::from_value(serde_json::json!({
            "content": [{"type": "text", "text": "hi"}],
            "structuredContent": {"result": "hi"}
        }))
        .unwrap();
        assert_eq!(text(&outcome("t", "s", Ok(wrapped))), "hi");
    }
}
