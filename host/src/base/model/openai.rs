//! The OpenAI-compatible chat-completions provider, which also covers Ollama, vLLM and the
//! llama.cpp server: the request mapping, the answer mapping and the call with retries.

use async_trait::async_trait;
use std::sync::Arc;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::build_error::ModelBuildError;
use super::http::{self, HttpSettings};
use super::shared_json::{SharedJson, Written};
use super::{
    ChatMessage, Effort, Finish, FinishState, Model, ModelError, ModelReply, ModelRequest,
    ToolCall, Usage,
};

/// The API root OpenAI's own clients use.
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// A small, cheap model that calls tools well; the default when `model.model` is not set.
pub const OPENAI_DEFAULT_MODEL: &str = "gpt-4o-mini";

/// OpenAI's own host: the only one that requires a key, and the only one that has renamed the
/// output limit to `max_completion_tokens` (compatible servers still read `max_tokens`).
pub const OPENAI_HOST: &str = "api.openai.com";

/// A model behind an OpenAI-compatible `/chat/completions` endpoint.
pub struct OpenAiModel {
    settings: HttpSettings,
    endpoint: String,
    /// `endpoint` as logs show it, without the credentials its URL may hold.
    shown: String,
    /// What [`Model::describe`] says, made once: each traced call asks for it.
    described: String,
    /// The instructions and tool definitions as written for the turns that share them.
    shared: SharedJson,
    client: reqwest::Client,
    /// Whether the base URL is OpenAI's own host (which names the output limit differently),
    /// decided once rather than by parsing the URL on every call.
    openai_host: bool,
}

impl OpenAiModel {
    /// A model calling `{base_url}/chat/completions`. Fails only if the HTTP client cannot start.
    pub fn new(settings: HttpSettings) -> Result<OpenAiModel, ModelBuildError> {
        let client = http::client().map_err(ModelBuildError::Client)?;
        let endpoint = format!("{}/chat/completions", settings.root());
        let described = format!(
            "openai {} at {}",
            settings.model,
            http::without_credentials(settings.root())
        );
        let openai_host = settings.host().as_deref() == Some(OPENAI_HOST);
        Ok(OpenAiModel {
            settings,
            shown: http::without_credentials(&endpoint),
            described,
            endpoint,
            shared: SharedJson::default(),
            client,
            openai_host,
        })
    }

    /// The JSON body for one request, exactly as sent: its effort goes in `reasoning_effort`,
    /// the field reasoning models read (and compatible servers without reasoning ignore).
    pub fn request_body(&self, request: &ModelRequest) -> Value {
        // A body of strings, numbers and JSON values only: it always converts.
        self.shared_parts(request)
            .and_then(|shared| serde_json::to_value(self.body(request, &shared)))
            .unwrap_or(Value::Null)
    }

    /// The instructions and the tools as JSON, written once for every turn that shares them.
    fn shared_parts(&self, request: &ModelRequest) -> serde_json::Result<Arc<Written>> {
        self.shared.written(request, |tools| {
            let listed: Vec<Tool<'_>> = tools
                .iter()
                .map(|tool| Tool {
                    kind: "function",
                    function: Function {
                        name: &tool.name,
                        description: &tool.description,
                        parameters: &tool.parameters,
                    },
                })
                .collect();
            serde_json::value::to_raw_value(&listed)
        })
    }

    /// The body, borrowing the request's text and the shared parts as written: the
    /// instructions (the whole static prefix) and the tools' schemas go into the bytes sent as
    /// they were written for the first turn, never escaped or copied again per call.
    fn body<'a>(&'a self, request: &'a ModelRequest, shared: &'a Written) -> Body<'a> {
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if !request.instructions.is_empty() {
            messages.push(Outgoing::System {
                role: "system",
                content: &shared.instructions_json,
            });
        }
        messages.extend(request.messages.iter().map(|m| Outgoing::Other(message(m))));
        let tools = shared.tools_json.as_deref();
        let limit = request
            .max_output_tokens
            .unwrap_or(self.settings.max_output_tokens);
        let (max_tokens, max_completion_tokens) = if self.openai_host {
            (None, Some(limit))
        } else {
            (Some(limit), None)
        };
        Body {
            model: &self.settings.model,
            messages,
            tools,
            max_tokens,
            max_completion_tokens,
            reasoning_effort: request.effort.map(Effort::as_str),
        }
    }
}

/// A chat-completions request body; see [`OpenAiModel::request_body`].
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<Outgoing<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Outgoing<'a> {
    System {
        role: &'static str,
        content: &'a RawValue,
    },
    Other(Value),
}

#[derive(Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// One conversation message in the chat-completions shape.
fn message(message: &ChatMessage) -> Value {
    match message {
        ChatMessage::User { content } => json!({ "role": "user", "content": content }),
        ChatMessage::Assistant {
            content,
            tool_calls,
        } => {
            if tool_calls.is_empty() {
                return json!({ "role": "assistant", "content": content });
            }
            let calls: Vec<Value> = tool_calls
                .iter()
                .map(|call| {
                    json!({
                        "id": call.id,
                        "type": "function",
                        "function": { "name": call.name, "arguments": call.arguments },
                    })
                })
                .collect();
            // A turn that only calls tools has no text; the API wants null rather than "".
            let content = if content.is_empty() {
                Value::Null
            } else {
                json!(content)
            };
            json!({ "role": "assistant", "content": content, "tool_calls": calls })
        }
        ChatMessage::Tool {
            call_id, content, ..
        } => json!({ "role": "tool", "tool_call_id": call_id, "content": content }),
    }
}

/// Reads `choices[0].message` and `usage` from a chat-completions answer.
pub fn parse_reply(body: &Value) -> Result<ModelReply, ModelError> {
    let message = body
        .pointer("/choices/0/message")
        .ok_or_else(|| missing("choices[0].message", body))?;
    let text = text_of(message.get("content").unwrap_or(&Value::Null))?;
    // A refusal comes in its own field, the content left empty: the task is declined, and the
    // refusal is what its requester reads.
    let refusal = message
        .get("refusal")
        .and_then(Value::as_str)
        .filter(|refusal| !refusal.is_empty());
    let mut tool_calls = Vec::new();
    if let Some(calls) = message.get("tool_calls").filter(|v| !v.is_null()) {
        let calls = calls
            .as_array()
            .ok_or_else(|| invalid("choices[0].message.tool_calls is not a list"))?;
        for (n, call) in calls.iter().enumerate() {
            tool_calls.push(tool_call(call, n)?);
        }
    }
    let usage = body.get("usage");
    let count = |key: &str| {
        usage
            .and_then(|u| u.get(key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let (text, finish) = match refusal {
        Some(refusal) if text.is_empty() && tool_calls.is_empty() => (
            refusal.to_string(),
            Finish {
                state: FinishState::Rejected,
                ..Finish::default()
            },
        ),
        _ => (text, Finish::default()),
    };
    Ok(ModelReply {
        text,
        tool_calls,
        usage: Usage {
            input_tokens: count("prompt_tokens"),
            output_tokens: count("completion_tokens"),
        },
        finish,
    })
}

/// `content` as text: a string, null, or (from some servers) a list of text parts.
fn text_of(content: &Value) -> Result<String, ModelError> {
    match content {
        Value::Null => Ok(String::new()),
        Value::String(text) => Ok(text.clone()),
        Value::Array(parts) => Ok(parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect()),
        _ => Err(invalid("choices[0].message.content is not text")),
    }
}

fn tool_call(call: &Value, n: usize) -> Result<ToolCall, ModelError> {
    let function = call
        .get("function")
        .ok_or_else(|| invalid(&format!("tool_calls[{n}] has no function")))?;
    let name = function
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(&format!("tool_calls[{n}].function has no name")))?;
    // The arguments are JSON text; some local servers send the object itself.
    let arguments = match function.get("arguments") {
        None | Some(Value::Null) => "{}".to_string(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    };
    // Some local servers leave out the id; the result must still be matched to its call.
    let id = match call.get("id").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => id.to_string(),
        _ => format!("call_{}", uuid::Uuid::new_v4().simple()),
    };
    Ok(ToolCall {
        id,
        name: name.to_string(),
        arguments,
    })
}

fn invalid(message: &str) -> ModelError {
    ModelError::InvalidResponse(message.to_string())
}

/// Quotes the answer whole: [`http::call`] masks the key in it before it is cut for the log.
fn missing(what: &str, body: &Value) -> ModelError {
    ModelError::InvalidResponse(format!("no {what} in the answer: {body}"))
}

#[async_trait]
impl Model for OpenAiModel {
    fn describe(&self) -> String {
        self.described.clone()
    }

    fn context_window(&self) -> Option<usize> {
        self.settings.context_window
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        // Written once, straight from the request; each attempt sends the same bytes.
        let body = self
            .shared_parts(request)
            .and_then(|shared| serde_json::to_vec(&self.body(request, &shared)))
            .map(bytes::Bytes::from)
            .map_err(|err| ModelError::Transport {
                detail: format!("the request could not be written as JSON: {err}"),
                retries: 0,
            })?;
        let post = || {
            let post = self
                .client
                .post(&self.endpoint)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone());
            match &self.settings.api_key {
                Some(key) => post.bearer_auth(key),
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
    use crate::base::model::retry::RetryPolicy;

    fn model(base_url: &str) -> OpenAiModel {
        OpenAiModel::new(HttpSettings {
            base_url: base_url.into(),
            model: "m".into(),
            api_key: None,
            timeout_secs: 1,
            max_output_tokens: 77,
            context_window: None,
            retry: RetryPolicy::new(0),
        })
        .unwrap()
    }

    fn request() -> ModelRequest {
        ModelRequest {
            instructions: "Be brief.".into(),
            messages: vec![ChatMessage::User {
                content: "hi".into(),
            }],
            tools: Vec::new().into(),
            max_output_tokens: None,
            purpose: Default::default(),
            ..ModelRequest::default()
        }
    }

    #[test]
    fn openai_itself_gets_max_completion_tokens() {
        let body = model("https://api.openai.com/v1/").request_body(&request());
        assert_eq!(body["max_completion_tokens"], 77);
        assert!(body.get("max_tokens").is_none());
    }

    #[test]
    fn other_servers_get_max_tokens_and_no_tools_key() {
        let body = model("http://127.0.0.1:11434/v1").request_body(&request());
        assert_eq!(body["max_tokens"], 77);
        assert!(body.get("tools").is_none());
        assert_eq!(body["messages"][0]["role"], "system");
    }

    #[test]
    fn an_effort_is_sent_as_reasoning_effort_and_none_sends_no_field() {
        let model = model("http://127.0.0.1:11434/v1");
        let body = model.request_body(&ModelRequest {
            effort: Some(Effort::High),
            ..request()
        });
        assert_eq!(body["reasoning_effort"], "high");
        assert!(
            model
                .request_body(&request())
                .get("reasoning_effort")
                .is_none()
        );
    }

    #[test]
    fn a_tool_call_without_an_id_gets_one() {
        let answer = json!({"choices": [{"message": {"content": null, "tool_calls": [
            {"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}
        ]}}]});
        let reply = parse_reply(&answer).unwrap();
        assert!(reply.tool_calls[0].id.starts_with("call_"));
        assert_eq!(reply.tool_calls[0].arguments, r#"{"a":1}"#);
        assert_eq!(reply.usage, Usage::default());
    }

    #[test]
    fn an_answer_without_choices_is_invalid() {
        let err = parse_reply(&json!({"error": "nope"})).unwrap_err();
        assert!(matches!(err, ModelError::InvalidResponse(_)));
    }
}
