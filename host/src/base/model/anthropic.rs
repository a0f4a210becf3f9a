//! The Anthropic messages provider: the request mapping (content blocks, tool results folded
//! into user turns), the answer mapping and the call with retries.

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::build_error::ModelBuildError;
use super::http::{self, HttpSettings};
use super::{
    ChatMessage, Finish, FinishState, Model, ModelError, ModelReply, ModelRequest, ToolCall, Usage,
};

/// The API root of Anthropic's own service.
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";

/// Anthropic's own host, the only one where a missing key is certain to fail.
pub const ANTHROPIC_HOST: &str = "api.anthropic.com";

/// The API version the mapping below was written against; Anthropic requires the header and
/// keeps old versions working, so pinning it keeps the wire format stable.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A model behind Anthropic's `/messages` endpoint.
pub struct AnthropicModel {
    settings: HttpSettings,
    endpoint: String,
    /// `endpoint` as logs show it, without the credentials its URL may hold.
    shown: String,
    /// What [`Model::describe`] says, made once: each traced call asks for it.
    described: String,
    client: reqwest::Client,
}

impl AnthropicModel {
    /// A model calling `{base_url}/messages`. Fails only if the HTTP client cannot start.
    pub fn new(settings: HttpSettings) -> Result<AnthropicModel, ModelBuildError> {
        let client = http::client().map_err(ModelBuildError::Client)?;
        let endpoint = format!("{}/messages", settings.root());
        let described = format!(
            "anthropic {} at {}",
            settings.model,
            http::without_credentials(settings.root())
        );
        Ok(AnthropicModel {
            settings,
            shown: http::without_credentials(&endpoint),
            described,
            endpoint,
            client,
        })
    }

    /// The JSON body for one request, exactly as sent. The request's effort turns on extended thinking
    /// (`thinking: {type: "enabled", budget_tokens}`, the budget from
    /// [`Effort::anthropic_thinking_budget`]) on a request that starts a turn of the assistant.
    /// A request that carries tool results continues the turn whose reply called the tools; the
    /// API wants that reply's thinking blocks sent back when thinking is on, and a task's journal
    /// keeps a reply's text and tool calls only, so such a request goes without thinking, which
    /// the API accepts.
    pub fn request_body(&self, request: &ModelRequest) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.settings.model));
        // Required by the API, unlike OpenAI's.
        let limit = request
            .max_output_tokens
            .unwrap_or(self.settings.max_output_tokens);
        body.insert("max_tokens".into(), json!(limit));
        if !request.instructions.is_empty() {
            body.insert("system".into(), json!(request.instructions));
        }
        let turns = messages(&request.messages);
        let budget = request
            .effort
            .filter(|_| !continues_tool_use(&turns))
            .and_then(|effort| effort.anthropic_thinking_budget(limit));
        if let Some(budget) = budget {
            body.insert(
                "thinking".into(),
                json!({ "type": "enabled", "budget_tokens": budget }),
            );
        }
        body.insert("messages".into(), turns);
        if !request.tools.is_empty() {
            let tools = request
                .tools
                .iter()
                .map(|tool| {
                    json!({
                        "name": tool.name,
                        "description": tool.description,
                        "input_schema": tool.parameters,
                    })
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        Value::Object(body)
    }
}

/// The conversation as alternating `user` / `assistant` turns of content blocks.
///
/// Anthropic has no `tool` role: results go back as `tool_result` blocks in the next user turn,
/// all results of one assistant turn in one user message, ahead of any text. Adjacent user
/// messages are merged the same way, since the API wants the roles to alternate.
fn messages(history: &[ChatMessage]) -> Value {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in history {
        match message {
            ChatMessage::User { content } => {
                // The API refuses empty text blocks.
                if !content.is_empty() {
                    user_turn(&mut turns).push(json!({ "type": "text", "text": content }));
                }
            }
            ChatMessage::Tool {
                call_id, content, ..
            } => {
                let blocks = user_turn(&mut turns);
                let first_other = blocks
                    .iter()
                    .position(|block| block["type"] != "tool_result")
                    .unwrap_or(blocks.len());
                let result = json!({
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": content,
                });
                blocks.insert(first_other, result);
            }
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks = Vec::new();
                if !content.is_empty() {
                    blocks.push(json!({ "type": "text", "text": content }));
                }
                for call in tool_calls {
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": tool_input(&call.arguments),
                    }));
                }
                // A turn with neither text nor calls has nothing to send.
                if blocks.is_empty() {
                    continue;
                }
                match turns.last_mut() {
                    Some(("assistant", previous)) => previous.extend(blocks),
                    _ => turns.push(("assistant", blocks)),
                }
            }
        }
    }
    Value::Array(
        turns
            .into_iter()
            .map(|(role, content)| json!({ "role": role, "content": content }))
            .collect(),
    )
}

/// Whether the last turn hands tool results back: the request continues the assistant turn
/// whose reply called the tools.
fn continues_tool_use(turns: &Value) -> bool {
    let last = turns.as_array().and_then(|turns| turns.last());
    last.filter(|turn| turn["role"] == "user")
        .and_then(|turn| turn["content"].as_array())
        .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"))
}

/// The blocks of the user turn at the end, starting one if the last turn is the assistant's.
fn user_turn<'a>(turns: &'a mut Vec<(&'static str, Vec<Value>)>) -> &'a mut Vec<Value> {
    if !matches!(turns.last(), Some(("user", _))) {
        turns.push(("user", Vec::new()));
    }
    let last = turns.len() - 1;
    &mut turns[last].1
}

/// A tool call's arguments as the `input` object Anthropic wants. Arguments that are not a JSON
/// object (the model wrote broken JSON earlier) are kept as `{"_raw": text}` rather than dropped,
/// so the model sees what it wrote; empty arguments are the empty object.
fn tool_input(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return json!({});
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(object @ Value::Object(_)) => object,
        _ => json!({ "_raw": arguments }),
    }
}

/// The status message of a task whose model refused before writing any text.
pub const REFUSED_TEXT: &str = "The model declined the task.";

/// Reads the content blocks and usage of a messages answer.
pub fn parse_reply(body: &Value) -> Result<ModelReply, ModelError> {
    let blocks = body
        .get("content")
        .and_then(Value::as_array)
        // Quoted whole: `http::call` masks the key in it before it is cut for the log.
        .ok_or_else(|| {
            ModelError::InvalidResponse(format!("no content list in the answer: {body}"))
        })?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for (n, block) in blocks.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(part) = block.get("text").and_then(Value::as_str) {
                    text.push_str(part);
                }
            }
            Some("tool_use") => {
                let field = |key: &str| {
                    block.get(key).and_then(Value::as_str).ok_or_else(|| {
                        ModelError::InvalidResponse(format!("content[{n}] (tool_use) has no {key}"))
                    })
                };
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                tool_calls.push(ToolCall {
                    id: field("id")?.to_string(),
                    name: field("name")?.to_string(),
                    arguments: input.to_string(),
                });
            }
            // Thinking and other blocks are not part of the answer the engine acts on.
            _ => {}
        }
    }
    let usage = body.get("usage");
    let count = |key: &str| {
        usage
            .and_then(|u| u.get(key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    // The API stops with `refusal` when it declines to go on: the task is declined, with
    // whatever text came before the stop.
    let finish = match body.get("stop_reason").and_then(Value::as_str) {
        Some("refusal") if tool_calls.is_empty() => {
            if text.is_empty() {
                text.push_str(REFUSED_TEXT);
            }
            Finish {
                state: FinishState::Rejected,
                ..Finish::default()
            }
        }
        _ => Finish::default(),
    };
    Ok(ModelReply {
        text,
        tool_calls,
        usage: Usage {
            // Cached prompt tokens are reported apart; they are still input the call used.
            input_tokens: count("input_tokens")
                + count("cache_creation_input_tokens")
                + count("cache_read_input_tokens"),
            output_tokens: count("output_tokens"),
        },
        finish,
    })
}

#[async_trait]
impl Model for AnthropicModel {
    fn describe(&self) -> String {
        self.described.clone()
    }

    fn context_window(&self) -> Option<usize> {
        self.settings.context_window
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let body = self.request_body(request);
        let post = || {
            let post = self
                .client
                .post(&self.endpoint)
                .header("anthropic-version", ANTHROPIC_VERSION)
                .json(&body);
            match &self.settings.api_key {
                Some(key) => post.header("x-api-key", key),
                None => post,
            }
        };
        http::call(
            &self.settings,
            &self.shown,
            &request.origin,
            post,
            parse_reply,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::model::Effort;

    fn call(id: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "f".into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn broken_arguments_are_kept_raw() {
        assert_eq!(tool_input(r#"{"a":1}"#), json!({"a": 1}));
        assert_eq!(tool_input(""), json!({}));
        assert_eq!(tool_input("{oops"), json!({"_raw": "{oops"}));
        assert_eq!(tool_input("[1]"), json!({"_raw": "[1]"}));
    }

    #[test]
    fn tool_results_come_before_text_in_the_user_turn() {
        let history = vec![
            ChatMessage::User {
                content: "go".into(),
            },
            ChatMessage::Assistant {
                content: String::new(),
                tool_calls: vec![call("a", "{}"), call("b", "{}")],
            },
            ChatMessage::Tool {
                call_id: "a".into(),
                name: "f".into(),
                content: "1".into(),
            },
            ChatMessage::User {
                content: "also this".into(),
            },
            ChatMessage::Tool {
                call_id: "b".into(),
                name: "f".into(),
                content: "2".into(),
            },
        ];
        let turns = messages(&history);
        assert_eq!(turns.as_array().map(Vec::len), Some(3));
        let types: Vec<&str> = turns[2]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["tool_result", "tool_result", "text"]);
        assert_eq!(turns[1]["content"][0]["type"], "tool_use");
    }

    fn model(max_output_tokens: u32) -> AnthropicModel {
        AnthropicModel::new(HttpSettings {
            base_url: "http://127.0.0.1:9/v1".into(),
            model: "claude-test".into(),
            api_key: None,
            timeout_secs: 1,
            max_output_tokens,
            context_window: None,
            retry: crate::base::model::RetryPolicy::new(0),
        })
        .unwrap()
    }

    fn request(messages: Vec<ChatMessage>) -> ModelRequest {
        ModelRequest {
            instructions: "Be brief.".into(),
            messages,
            tools: Vec::new().into(),
            max_output_tokens: None,
            purpose: Default::default(),
            ..ModelRequest::default()
        }
    }

    /// The request at a reasoning effort.
    fn at(request: &ModelRequest, effort: Effort) -> ModelRequest {
        ModelRequest {
            effort: Some(effort),
            ..request.clone()
        }
    }

    #[test]
    fn an_effort_turns_on_thinking_with_its_budget_below_max_tokens_golden() {
        let ask = request(vec![ChatMessage::User {
            content: "go".into(),
        }]);
        let body = model(32_768).request_body(&at(&ask, Effort::Medium));
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 4096})
        );
        assert_eq!(body["max_tokens"], 32_768);
        let capped = model(4_096).request_body(&at(&ask, Effort::High));
        assert_eq!(capped["thinking"]["budget_tokens"], 2048);
        assert!(
            model(2_000)
                .request_body(&at(&ask, Effort::Low))
                .get("thinking")
                .is_none()
        );
        assert!(model(32_768).request_body(&ask).get("thinking").is_none());
    }

    #[test]
    fn a_request_handing_back_tool_results_goes_without_thinking() {
        let looping = request(vec![
            ChatMessage::User {
                content: "go".into(),
            },
            ChatMessage::Assistant {
                content: String::new(),
                tool_calls: vec![call("a", "{}")],
            },
            ChatMessage::Tool {
                call_id: "a".into(),
                name: "f".into(),
                content: "1".into(),
            },
        ]);
        let body = model(32_768).request_body(&at(&looping, Effort::High));
        assert!(body.get("thinking").is_none(), "{body}");
    }

    #[test]
    fn an_empty_assistant_turn_is_left_out() {
        let history = vec![
            ChatMessage::User {
                content: "a".into(),
            },
            ChatMessage::Assistant {
                content: String::new(),
                tool_calls: Vec::new(),
            },
            ChatMessage::User {
                content: "b".into(),
            },
        ];
        let turns = messages(&history);
        assert_eq!(turns.as_array().map(Vec::len), Some(1));
        assert_eq!(turns[0]["content"][1]["text"], "b");
    }
}
