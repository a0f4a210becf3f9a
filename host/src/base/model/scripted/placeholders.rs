//! The placeholders a scripted reply's text may hold, filled from the request it answers, so an
//! offline demo repeats what a tool or another agent really returned instead of a fixed figure.

use crate::base::model::{ChatMessage, ModelRequest};
use crate::base::text::untrusted::UNTRUSTED_PREAMBLE;

/// Replaced by the text of the most recent tool result in the request.
pub const LAST_TOOL_RESULT: &str = "{{last_tool_result}}";
/// Replaced by the text of the most recent untrusted block from source `agent` in the request
/// (a sub-task's answer, a message from an agent participant).
pub const LAST_NOTE: &str = "{{last_note}}";
/// Every placeholder, as a script writes it.
pub const KNOWN: [&str; 2] = [LAST_TOOL_RESULT, LAST_NOTE];

/// What a placeholder becomes when the request holds nothing for it. Visible rather than empty,
/// so a script that runs ahead of its data says so instead of answering with a blank.
pub const NO_TOOL_RESULT: &str = "(no tool result yet)";
/// See [`NO_TOOL_RESULT`].
pub const NO_NOTE: &str = "(no note yet)";

/// `text` with every placeholder replaced. One pass, left to right: text a placeholder brings in
/// (another agent's answer) is never itself read for placeholders.
pub fn fill(text: &str, request: &ModelRequest) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        let filled = if tail.starts_with(LAST_TOOL_RESULT) {
            let value = last_tool_result(&request.messages).unwrap_or(NO_TOOL_RESULT);
            Some((LAST_TOOL_RESULT, value))
        } else if tail.starts_with(LAST_NOTE) {
            Some((LAST_NOTE, last_note(&request.messages).unwrap_or(NO_NOTE)))
        } else {
            None
        };
        match filled {
            Some((token, value)) => {
                out.push_str(value);
                rest = &tail[token.len()..];
            }
            None => {
                out.push_str("{{");
                rest = &tail[2..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The first `{{name}}` in `text` that is not a known placeholder: most likely a typo, which
/// would otherwise reach the demo's answer verbatim. Braces around anything but a plain name
/// (`{{ }}`, `{{a b}}`) are text, not a placeholder.
pub fn unknown(text: &str) -> Option<&str> {
    let mut from = 0;
    while let Some(start) = text[from..].find("{{").map(|at| from + at) {
        let inner = &text[start + 2..];
        let end = inner.find("}}");
        let name = end.map(|end| &inner[..end]).unwrap_or_default();
        let is_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if let Some(end) = end.filter(|_| is_name) {
            let token = &text[start..start + 2 + end + 2];
            if !KNOWN.contains(&token) {
                return Some(token);
            }
        }
        from = start + 2;
    }
    None
}

/// The most recent tool result's text, out of its untrusted block: the data the tool returned,
/// not the wrapping the model reads it in.
fn last_tool_result(messages: &[ChatMessage]) -> Option<&str> {
    messages.iter().rev().find_map(|message| match message {
        ChatMessage::Tool { content, .. } => Some(
            open_untrusted(content)
                .map(|(_, text)| text)
                .unwrap_or(content),
        ),
        _ => None,
    })
}

/// The text of the most recent user message that is an untrusted block from source `agent`.
fn last_note(messages: &[ChatMessage]) -> Option<&str> {
    messages.iter().rev().find_map(|message| match message {
        ChatMessage::User { content } => open_untrusted(content)
            .filter(|(source, _)| *source == "agent")
            .map(|(_, text)| text),
        _ => None,
    })
}

/// The source and text of `content` when it is exactly one untrusted block as
/// [`crate::base::text::untrusted`] writes it: tag, preamble, text, closing tag.
fn open_untrusted(content: &str) -> Option<(&str, &str)> {
    let rest = content.strip_prefix("<untrusted source=\"")?;
    let (source, rest) = rest.split_once("\">\n")?;
    let rest = rest.strip_prefix(UNTRUSTED_PREAMBLE)?.strip_prefix('\n')?;
    let text = rest.strip_suffix("\n</untrusted>")?;
    Some((source, text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::model::Purpose;
    use crate::base::text::untrusted::untrusted;

    fn request(messages: Vec<ChatMessage>) -> ModelRequest {
        ModelRequest {
            instructions: "".into(),
            messages,
            tools: Vec::new().into(),
            max_output_tokens: None,
            purpose: Purpose::Turn,
            ..ModelRequest::default()
        }
    }

    fn user(content: &str) -> ChatMessage {
        ChatMessage::User {
            content: content.into(),
        }
    }

    fn tool(content: &str) -> ChatMessage {
        ChatMessage::Tool {
            call_id: "c".into(),
            name: "t".into(),
            content: content.into(),
        }
    }

    #[test]
    fn last_tool_result_is_the_newest_tool_text_without_its_untrusted_block() {
        let request = request(vec![
            user("question"),
            tool(&untrusted("tool", "old")),
            tool(&untrusted("tool", "Acme: 12480.50 EUR")),
            user("later"),
        ]);
        assert_eq!(
            fill("Balance: {{last_tool_result}}.", &request),
            "Balance: Acme: 12480.50 EUR."
        );
    }

    #[test]
    fn a_tool_result_outside_an_untrusted_block_is_taken_whole() {
        let request = request(vec![tool("plain")]);
        assert_eq!(fill("{{last_tool_result}}", &request), "plain");
    }

    #[test]
    fn last_note_is_the_newest_agent_block_without_tags_or_preamble() {
        let note = "Sub-task t-1 on ledger is COMPLETED: 12480.50 EUR";
        let request = request(vec![
            user(&untrusted(
                "agent",
                "Sub-task t-0 on ledger is FAILED: gone",
            )),
            user(&untrusted("agent", note)),
            user(&untrusted("other", "not a note")),
            tool(&untrusted("tool", "not a note either")),
            user("plain text from a person"),
        ]);
        assert_eq!(
            fill("The ledger says: {{last_note}}", &request),
            format!("The ledger says: {note}")
        );
    }

    #[test]
    fn a_multi_line_note_keeps_its_lines() {
        let request = request(vec![user(&untrusted("agent", "one\ntwo\n"))]);
        assert_eq!(fill("{{last_note}}", &request), "one\ntwo\n");
    }

    #[test]
    fn a_placeholder_with_nothing_to_show_says_so() {
        let request = request(vec![user("question")]);
        assert_eq!(
            fill("{{last_tool_result}} / {{last_note}}", &request),
            format!("{NO_TOOL_RESULT} / {NO_NOTE}")
        );
    }

    #[test]
    fn text_brought_in_by_a_placeholder_is_not_filled_again() {
        let request = request(vec![
            tool(&untrusted("tool", "says {{last_note}}")),
            user(&untrusted("agent", "note")),
        ]);
        assert_eq!(
            fill("{{last_tool_result}} and {{last_note}}", &request),
            "says {{last_note}} and note"
        );
    }

    #[test]
    fn text_without_placeholders_and_stray_braces_stay_as_written() {
        let request = request(vec![tool("x")]);
        assert_eq!(fill("no placeholders", &request), "no placeholders");
        assert_eq!(fill("{{ and }} and {{", &request), "{{ and }} and {{");
    }

    #[test]
    fn an_unknown_placeholder_is_found_and_known_ones_and_plain_braces_are_not() {
        assert_eq!(
            unknown("a {{last_tool_result}} {{last_notes}}"),
            Some("{{last_notes}}")
        );
        assert_eq!(unknown("{{last_tool_result}}{{last_note}}"), None);
        assert_eq!(unknown("{{ a b }} {{}} {{ and }}"), None);
        assert_eq!(unknown("unclosed {{last"), None);
    }
}
