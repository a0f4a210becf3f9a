//! The model the load runs against, written once and served two ways: in-process (a `Model`
//! that answers at once) or as an OpenAI-compatible chat-completions stub on loopback, so the
//! harness pays for a real HTTP model call as it would in production.

use std::borrow::Cow;
use std::net::SocketAddr;

use async_trait::async_trait;
use axum::Json;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::Deserialize;
use serde_json::{Value, json};
use tiny_harness::base::model::{
    ChatMessage, Model, ModelError, ModelReply, ModelRequest, ToolCall,
};

/// The text a one-turn task is sent: its model answers at once.
pub const ONE_TURN_TEXT: &str = "direct: what is the answer?";
/// The text a task with a tool call and a sub-task is sent.
pub const DELEGATING_TEXT: &str = "delegate: plan, then ask a sub-task";
/// A child's goal: the model answers a task with this goal at once.
const CHILD_GOAL: &str = "Answer the question in a clean context.";

/// What the model does next.
enum Move {
    Answer(&'static str),
    Call(&'static str, Value),
}

/// Decides the next move from the conversation, given as `(role, content)` pairs after the
/// system prompt. A task whose brief is the one-turn text, or a child, answers at once. A
/// delegating task attaches a plan, then spawns a child on `self`, says it waits, and answers
/// once the child's note arrived.
fn decide<'a>(messages: impl Iterator<Item = (&'a str, &'a str)> + Clone) -> Move {
    let first = messages
        .clone()
        .find(|(role, _)| *role == "user")
        .map_or("", |(_, content)| content);
    if !first.contains("delegate:") || first.contains(&format!("goal: {CHILD_GOAL}")) {
        return Move::Answer("42");
    }
    let later = messages.skip(1);
    let noted = later
        .clone()
        .any(|(role, content)| role == "user" && content.contains("Sub-task "));
    let tool_results = later.filter(|(role, _)| *role == "tool").count();
    match (noted, tool_results) {
        (true, _) => Move::Answer("42, from the sub-task"),
        (false, 0) => Move::Call(
            "create_plan",
            json!({"steps": [{"name": "Delegate", "description": "ask a sub-task"}]}),
        ),
        (false, 1) => Move::Call(
            "spawn_subtask",
            json!({"name": "child", "goal": CHILD_GOAL, "agent": null}),
        ),
        (false, _) => Move::Answer("waiting for the sub-task"),
    }
}

/// Answers at once, in-process: the harness's cost with model time zero and no model HTTP.
pub struct InstantModel;

#[async_trait]
impl Model for InstantModel {
    fn describe(&self) -> String {
        "instant (in-process)".into()
    }
    fn context_window(&self) -> Option<usize> {
        None
    }
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let pairs = request.messages.iter().map(|m| match m {
            ChatMessage::User { content } => ("user", content.as_str()),
            ChatMessage::Assistant { content, .. } => ("assistant", content.as_str()),
            ChatMessage::Tool { content, .. } => ("tool", content.as_str()),
        });
        Ok(match decide(pairs) {
            Move::Answer(text) => ModelReply {
                text: text.into(),
                ..ModelReply::default()
            },
            Move::Call(name, arguments) => ModelReply {
                tool_calls: vec![ToolCall {
                    id: format!("call_{name}"),
                    name: name.into(),
                    arguments: arguments.to_string(),
                }],
                ..ModelReply::default()
            },
        })
    }
}

/// The part of a chat-completions request the stub reads: each message's role and text,
/// borrowed from the body. The rest (the system prompt's text aside, the tools' schemas) is
/// skipped unparsed into values: the stub stands in for a model on another machine, so it
/// should take as little of the shared CPU as it can.
#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow)]
    messages: Vec<Said<'a>>,
}

#[derive(Deserialize)]
struct Said<'a> {
    #[serde(borrow)]
    role: Cow<'a, str>,
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
}

/// One chat-completions answer in OpenAI's shape.
async fn chat_completions(body: Bytes) -> Response {
    let Ok(request) = serde_json::from_slice::<Request<'_>>(&body) else {
        return (StatusCode::BAD_REQUEST, "not a chat-completions request").into_response();
    };
    let pairs = request
        .messages
        .iter()
        .filter(|m| m.role != "system")
        .map(|m| (m.role.as_ref(), m.content.as_deref().unwrap_or("")));
    let message = match decide(pairs) {
        Move::Answer(text) => json!({"role": "assistant", "content": text}),
        Move::Call(name, arguments) => json!({"role": "assistant", "content": null,
            "tool_calls": [{"id": format!("call_{name}"), "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()}}]}),
    };
    Json(json!({
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105},
    }))
    .into_response()
}

/// Binds the stub on `bind` and serves it on this runtime; returns the address it listens on.
pub async fn start_stub(bind: &str) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .expect("the stub model binds its address");
    let addr = listener.local_addr().expect("local address");
    let app = axum::Router::new().route("/v1/chat/completions", post(chat_completions));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}
