//! The HTTP providers against a stub server on 127.0.0.1: what goes over the wire, how answers
//! are read, and how failures are retried, timed out and reported.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tiny_harness::base::config::{ModelConfig, Provider};
use tiny_harness::base::model::{
    AnthropicModel, ChatMessage, FinishState, HttpSettings, Model, ModelError, ModelRequest,
    OpenAiModel, Origin, Purpose, RetryPolicy, ToolCall, ToolSpec, build_model,
};

mod support {
    pub mod captured_logs;
}

/// How long a held answer waits for its release at most: a guard against a hung test, far
/// longer than any client timeout the tests set.
const HOLD_GUARD: Duration = Duration::from_secs(60);
/// How long a test waits for a call that must end on its own: a guard against a hang only.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// One request the stub received.
#[derive(Debug, Clone)]
struct Recorded {
    path: String,
    headers: HeaderMap,
    body: Value,
}

/// One answer the stub gives, in order.
#[derive(Debug, Clone)]
struct Answer {
    status: u16,
    body: Value,
    /// Held until the stub is released ([`Stub::release`]): an answer the client never gets
    /// unless it waits for the test.
    held: bool,
    retry_after: Option<&'static str>,
    /// Answer with every request header in the body, as a misconfigured proxy would.
    echo_headers: bool,
}

fn ok(body: Value) -> Answer {
    Answer {
        status: 200,
        body,
        held: false,
        retry_after: None,
        echo_headers: false,
    }
}

fn status(status: u16) -> Answer {
    Answer {
        status,
        body: json!({"error": {"message": format!("stub says {status}")}}),
        held: false,
        retry_after: None,
        echo_headers: false,
    }
}

#[derive(Default)]
struct Stub {
    requests: Mutex<Vec<Recorded>>,
    /// When each request arrived, in order.
    arrivals: Mutex<Vec<Instant>>,
    answers: Mutex<VecDeque<Answer>>,
    /// Answers sent so far (a held one counts once it is let go).
    answered: std::sync::atomic::AtomicUsize,
    release: tokio::sync::Notify,
}

impl Stub {
    fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    fn answered(&self) -> usize {
        self.answered.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Lets every held answer go.
    fn release(&self) {
        self.release.notify_waiters();
    }
}

async fn answer(
    State(stub): State<Arc<Stub>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    stub.arrivals.lock().unwrap().push(Instant::now());
    stub.requests.lock().unwrap().push(Recorded {
        path: uri.path().to_string(),
        headers,
        body,
    });
    let next = stub.answers.lock().unwrap().pop_front();
    let Some(answer) = next else {
        return (StatusCode::IM_A_TEAPOT, "the stub has no more answers").into_response();
    };
    if answer.held {
        // Registered before the answer is looked at again, so a release cannot be missed.
        let released = stub.release.notified();
        let _ = tokio::time::timeout(HOLD_GUARD, released).await;
    }
    stub.answered
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let code = StatusCode::from_u16(answer.status).unwrap();
    let body = if answer.echo_headers {
        let headers = stub
            .requests
            .lock()
            .unwrap()
            .last()
            .unwrap()
            .headers
            .clone();
        let echoed: serde_json::Map<String, Value> = headers
            .iter()
            .map(|(name, value)| (name.to_string(), json!(value.to_str().unwrap_or_default())))
            .collect();
        json!({ "error": "unauthorized", "headers": echoed })
    } else {
        answer.body
    };
    let mut response = (code, axum::Json(body)).into_response();
    if let Some(seconds) = answer.retry_after {
        response
            .headers_mut()
            .insert("retry-after", seconds.parse().unwrap());
    }
    response
}

/// Starts a stub answering `answers` in order; returns its `/v1` root and its record.
async fn start(answers: Vec<Answer>) -> (String, Arc<Stub>) {
    let stub = Arc::new(Stub {
        answers: Mutex::new(answers.into()),
        ..Stub::default()
    });
    let app = axum::Router::new()
        .fallback(answer)
        .with_state(stub.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{address}/v1/"), stub)
}

fn config(provider: Provider, base_url: &str) -> ModelConfig {
    ModelConfig {
        provider: Some(provider),
        base_url: Some(base_url.to_string()),
        model: Some("test-model".to_string()),
        api_key_env: Some("TEST_KEY".to_string()),
        timeout: 5,
        max_output_tokens: 321,
        context_window_tokens: None,
        max_retries: 0,
        script: None,
    }
}

/// A model built through `build_model`, with `key` as the value of `TEST_KEY`.
fn built(provider: Provider, base_url: &str, key: Option<&str>) -> Arc<dyn Model> {
    let key = key.map(str::to_string);
    build_model(
        &config(provider, base_url),
        |path| path.to_path_buf(),
        move |name| (name == "TEST_KEY").then(|| key.clone()).flatten(),
    )
    .unwrap()
}

fn fast_settings(base_url: &str, max_retries: u32, timeout_secs: u64) -> HttpSettings {
    HttpSettings {
        base_url: base_url.to_string(),
        model: "test-model".to_string(),
        api_key: None,
        timeout_secs,
        max_output_tokens: 100,
        context_window: None,
        retry: RetryPolicy {
            max_retries,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(20),
            max_retry_after: Duration::from_millis(200),
        },
    }
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        arguments: arguments.to_string(),
    }
}

/// A conversation with every kind of message: a turn that called two tools, both results, and
/// a later user message.
fn conversation() -> ModelRequest {
    ModelRequest {
        instructions: "You are a test.".into(),
        messages: vec![
            ChatMessage::User {
                content: "What is 6 x 7?".to_string(),
            },
            ChatMessage::Assistant {
                content: String::new(),
                tool_calls: vec![
                    call("c1", "multiply", r#"{"a":6,"b":7}"#),
                    call("c2", "note", r#"{"text":"hi"}"#),
                ],
            },
            ChatMessage::Tool {
                call_id: "c1".to_string(),
                name: "multiply".to_string(),
                content: "42".to_string(),
            },
            ChatMessage::Tool {
                call_id: "c2".to_string(),
                name: "note".to_string(),
                content: "noted".to_string(),
            },
            ChatMessage::User {
                content: "Thanks.".to_string(),
            },
        ],
        tools: vec![ToolSpec {
            name: "multiply".to_string(),
            description: "Multiplies two numbers.".to_string(),
            parameters: json!({"type": "object", "properties": {"a": {"type": "number"}}}),
        }]
        .into(),
        max_output_tokens: None,
        purpose: Purpose::Turn,
        ..ModelRequest::default()
    }
}

fn openai_answer() -> Value {
    json!({
        "choices": [{"message": {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [{"id": "call_9", "type": "function",
                "function": {"name": "multiply", "arguments": "{\"a\":1}"}}]
        }}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 8}
    })
}

fn anthropic_answer() -> Value {
    json!({
        "content": [
            {"type": "text", "text": "Let me "},
            {"type": "text", "text": "check."},
            {"type": "tool_use", "id": "toolu_1", "name": "multiply", "input": {"a": 1}}
        ],
        "usage": {"input_tokens": 90, "output_tokens": 11}
    })
}

mod openai_model {
    use super::*;

    #[tokio::test]
    async fn requests_carry_system_tools_calls_and_results() {
        let (base, stub) = start(vec![ok(openai_answer())]).await;
        let model = built(Provider::Openai, &base, Some("sk-test"));
        model.complete(&conversation()).await.unwrap();

        let requests = stub.requests();
        assert_eq!(requests.len(), 1);
        let sent = &requests[0];
        assert_eq!(sent.path, "/v1/chat/completions");
        assert_eq!(sent.headers["authorization"], "Bearer sk-test");
        let body = &sent.body;
        assert_eq!(body["model"], "test-model");
        assert_eq!(body["max_tokens"], 321);
        assert!(body.get("max_completion_tokens").is_none());
        let messages = body["messages"].as_array().unwrap();
        let roles: Vec<&str> = messages
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(
            roles,
            ["system", "user", "assistant", "tool", "tool", "user"]
        );
        assert_eq!(messages[0]["content"], "You are a test.");
        assert_eq!(messages[2]["content"], Value::Null);
        assert_eq!(
            messages[2]["tool_calls"][0],
            json!({"id": "c1", "type": "function",
               "function": {"name": "multiply", "arguments": "{\"a\":6,\"b\":7}"}})
        );
        assert_eq!(
            messages[3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "42"})
        );
        assert_eq!(
            body["tools"],
            json!([{"type": "function", "function": {
                "name": "multiply",
                "description": "Multiplies two numbers.",
                "parameters": {"type": "object", "properties": {"a": {"type": "number"}}}
            }}])
        );
    }

    #[tokio::test]
    async fn sends_no_authorization_without_a_key() {
        let (base, stub) = start(vec![ok(openai_answer())]).await;
        let model = built(Provider::Openai, &base, None);
        let mut request = conversation();
        request.tools = Vec::new().into();
        request.messages.truncate(1);
        model.complete(&request).await.unwrap();

        let sent = &stub.requests()[0];
        assert!(sent.headers.get("authorization").is_none());
        assert!(sent.body.get("tools").is_none());
    }

    #[tokio::test]
    async fn answers_map_to_text_tool_calls_and_usage() {
        let (base, _stub) = start(vec![ok(openai_answer())]).await;
        let model = built(Provider::Openai, &base, None);
        let reply = model.complete(&conversation()).await.unwrap();
        assert_eq!(reply.text, "Let me check.");
        assert_eq!(reply.tool_calls, [call("call_9", "multiply", r#"{"a":1}"#)]);
        assert_eq!(reply.usage.input_tokens, 120);
        assert_eq!(reply.usage.output_tokens, 8);
    }
}

mod anthropic_model {
    use super::*;

    #[tokio::test]
    async fn requests_carry_system_blocks_and_headers() {
        let (base, stub) = start(vec![ok(anthropic_answer())]).await;
        let model = built(Provider::Anthropic, &base, Some("ant-test"));
        model.complete(&conversation()).await.unwrap();

        let sent = &stub.requests()[0];
        assert_eq!(sent.path, "/v1/messages");
        assert_eq!(sent.headers["x-api-key"], "ant-test");
        assert_eq!(sent.headers["anthropic-version"], "2023-06-01");
        assert_eq!(sent.headers["content-type"], "application/json");
        assert!(sent.headers.get("authorization").is_none());
        let body = &sent.body;
        assert_eq!(body["system"], "You are a test.");
        assert_eq!(body["max_tokens"], 321);
        assert_eq!(
            body["tools"],
            json!([{"name": "multiply", "description": "Multiplies two numbers.",
                "input_schema": {"type": "object", "properties": {"a": {"type": "number"}}}}])
        );
        let assistant = &body["messages"][1];
        assert_eq!(assistant["role"], "assistant");
        assert_eq!(
            assistant["content"],
            json!([
                {"type": "tool_use", "id": "c1", "name": "multiply", "input": {"a": 6, "b": 7}},
                {"type": "tool_use", "id": "c2", "name": "note", "input": {"text": "hi"}}
            ])
        );
    }

    #[tokio::test]
    async fn merges_consecutive_tool_results_into_one_user_message() {
        let (base, stub) = start(vec![ok(anthropic_answer())]).await;
        let model = built(Provider::Anthropic, &base, Some("ant-test"));
        model.complete(&conversation()).await.unwrap();

        let messages = stub.requests()[0].body["messages"].clone();
        let roles: Vec<&str> = messages
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(
            messages[2]["content"],
            json!([
                {"type": "tool_result", "tool_use_id": "c1", "content": "42"},
                {"type": "tool_result", "tool_use_id": "c2", "content": "noted"},
                {"type": "text", "text": "Thanks."}
            ])
        );
    }

    #[tokio::test]
    async fn answers_map_to_text_tool_calls_and_usage() {
        let (base, _stub) = start(vec![ok(anthropic_answer())]).await;
        let model = built(Provider::Anthropic, &base, Some("ant-test"));
        let reply = model.complete(&conversation()).await.unwrap();
        assert_eq!(reply.text, "Let me check.");
        assert_eq!(
            reply.tool_calls,
            [call("toolu_1", "multiply", r#"{"a":1}"#)]
        );
        assert_eq!(reply.usage.input_tokens, 90);
        assert_eq!(reply.usage.output_tokens, 11);
    }
}

mod model_origin {
    use super::*;
    use support::captured_logs::CapturedLogs;

    fn from_a_task(message_id: &str) -> ModelRequest {
        ModelRequest {
            origin: Origin {
                task_id: "task-7".into(),
                message_id: Some(message_id.into()),
                turn: 3,
            },
            ..conversation()
        }
    }

    #[tokio::test]
    async fn a_retried_call_logs_inside_a_span_naming_its_task_message_and_turn() {
        for provider in [Provider::Openai, Provider::Anthropic] {
            let (logs, _guard) = CapturedLogs::on_this_thread();
            let answer = match provider {
                Provider::Anthropic => anthropic_answer(),
                _ => openai_answer(),
            };
            let (base, _stub) = start(vec![status(503), ok(answer)]).await;
            let model: Arc<dyn Model> = match provider {
                Provider::Anthropic => {
                    Arc::new(AnthropicModel::new(fast_settings(&base, 1, 5)).unwrap())
                }
                _ => Arc::new(OpenAiModel::new(fast_settings(&base, 1, 5)).unwrap()),
            };
            // A participant chose the message id: it reaches the log escaped.
            model.complete(&from_a_task("m-1\nforged")).await.unwrap();
            let text = logs.text();
            let retry = text
                .lines()
                .find(|line| line.contains("503"))
                .unwrap_or_else(|| panic!("{provider:?}: no retry line in {text}"));
            assert!(
                retry.contains(r"model_call{task=task-7 message_id=m-1\nforged turn=3}"),
                "{provider:?}: {retry}"
            );
        }
    }
}

mod model_refusals {
    use super::*;

    #[tokio::test]
    async fn an_openai_refusal_declines_the_task_with_its_text() {
        let refused = json!({
            "choices": [{"message": {"role": "assistant", "content": null,
                "refusal": "I can't help with that."}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 5}
        });
        let (base, _stub) = start(vec![ok(refused), ok(openai_answer())]).await;
        let model = OpenAiModel::new(fast_settings(&base, 0, 5)).unwrap();
        let reply = model.complete(&conversation()).await.unwrap();
        assert_eq!(reply.text, "I can't help with that.");
        assert_eq!(reply.finish.state, FinishState::Rejected);
        assert_eq!(reply.usage.output_tokens, 5);
        let answered = model.complete(&conversation()).await.unwrap();
        assert_eq!(answered.finish.state, FinishState::Completed);
    }

    #[tokio::test]
    async fn an_anthropic_refusal_stop_declines_the_task() {
        let refused = json!({
            "content": [], "stop_reason": "refusal",
            "usage": {"input_tokens": 9, "output_tokens": 0}
        });
        let (base, _stub) = start(vec![ok(refused), ok(anthropic_answer())]).await;
        let model = AnthropicModel::new(fast_settings(&base, 0, 5)).unwrap();
        let reply = model.complete(&conversation()).await.unwrap();
        assert_eq!(
            reply.text,
            tiny_harness::base::model::anthropic::REFUSED_TEXT
        );
        assert_eq!(reply.finish.state, FinishState::Rejected);
        let answered = model.complete(&conversation()).await.unwrap();
        assert_eq!(answered.finish.state, FinishState::Completed);
    }
}

mod model_retries {
    use super::*;

    #[tokio::test]
    async fn retries_a_429_then_succeeds() {
        let (base, stub) = start(vec![status(429), ok(openai_answer())]).await;
        let model = OpenAiModel::new(fast_settings(&base, 3, 5)).unwrap();
        let reply = model.complete(&conversation()).await.unwrap();
        assert_eq!(reply.text, "Let me check.");
        assert_eq!(stub.requests().len(), 2);
    }

    #[tokio::test]
    async fn gives_up_with_the_500_after_max_retries_plus_one_requests() {
        let max_retries = 2;
        let (base, stub) = start(vec![status(500); max_retries as usize + 1]).await;
        let model = OpenAiModel::new(fast_settings(&base, max_retries, 5)).unwrap();
        let err = model.complete(&conversation()).await.unwrap_err();
        match err {
            ModelError::Http {
                status,
                body,
                retries,
            } => {
                assert_eq!((status, retries), (500, max_retries));
                assert!(body.contains("stub says 500"), "{body}");
            }
            other => panic!("expected HTTP 500, got {other:?}"),
        }
        assert_eq!(stub.requests().len(), max_retries as usize + 1);
    }

    #[tokio::test]
    async fn does_not_retry_a_400() {
        let (base, stub) = start(vec![status(400), ok(openai_answer())]).await;
        let model = OpenAiModel::new(fast_settings(&base, 3, 5)).unwrap();
        let err = model.complete(&conversation()).await.unwrap_err();
        assert!(matches!(err, ModelError::Http { status: 400, .. }), "{err}");
        assert_eq!(stub.requests().len(), 1);
    }

    #[tokio::test]
    async fn anthropic_retries_an_overloaded_529_too() {
        let (base, stub) = start(vec![status(529), ok(anthropic_answer())]).await;
        let model = AnthropicModel::new(fast_settings(&base, 1, 5)).unwrap();
        model.complete(&conversation()).await.unwrap();
        assert_eq!(stub.requests().len(), 2);
    }

    #[tokio::test]
    async fn honours_retry_after_up_to_the_cap() {
        let mut limited = status(429);
        // An hour: a client that did not cap it would hang past the guard below.
        limited.retry_after = Some("3600");
        let (base, stub) = start(vec![limited, ok(openai_answer())]).await;
        let model = OpenAiModel::new(fast_settings(&base, 1, 5)).unwrap();
        tokio::time::timeout(HANG_GUARD, model.complete(&conversation()))
            .await
            .expect("the hour-long Retry-After was capped")
            .unwrap();
        assert_eq!(stub.requests().len(), 2);
        // How long the retry waited is printed, not asserted: the cap itself is checked by
        // `model::retry`'s unit test, and this test by the guard above.
        let arrivals = stub.arrivals.lock().unwrap().clone();
        eprintln!(
            "the retry waited {:?} (Retry-After 3600 s, capped at 200 ms)",
            arrivals[1] - arrivals[0]
        );
    }
}

mod model_failures {
    use super::*;

    #[tokio::test]
    async fn a_slow_endpoint_times_out_and_the_client_gives_up_before_the_answer() {
        let mut slow = ok(openai_answer());
        slow.held = true;
        let (base, stub) = start(vec![slow]).await;
        let model = OpenAiModel::new(fast_settings(&base, 0, 1)).unwrap();
        let err = tokio::time::timeout(HANG_GUARD, model.complete(&conversation()))
            .await
            .expect("the model's own timeout ended the call")
            .unwrap_err();
        assert!(matches!(err, ModelError::Timeout { secs: 1, .. }), "{err}");
        assert_eq!(err.to_string(), "model call timed out after 1 s");
        assert_eq!(err.public_reason(), "the model call timed out after 1 s");
        assert_eq!(stub.requests().len(), 1, "the server saw the request");
        assert_eq!(stub.answered(), 0, "the client gave up before the answer");
        stub.release();
    }

    #[tokio::test]
    async fn an_unreachable_endpoint_is_a_transport_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        drop(listener);
        let base = format!("http://{address}/v1");
        let model = OpenAiModel::new(fast_settings(&base, 0, 5)).unwrap();
        let err = model.complete(&conversation()).await.unwrap_err();
        assert!(matches!(err, ModelError::Transport { .. }), "{err}");
        assert!(!err.to_string().contains(&address.to_string()), "{err}");
    }

    #[tokio::test]
    async fn a_long_error_body_is_cut_to_500_characters_with_the_count_of_the_rest() {
        let mut verbose = status(400);
        verbose.body = json!({ "error": "x".repeat(5000) });
        let (base, _stub) = start(vec![verbose]).await;
        let model = OpenAiModel::new(fast_settings(&base, 0, 5)).unwrap();
        match model.complete(&conversation()).await.unwrap_err() {
            ModelError::Http { body, .. } => {
                let kept = format!("{{\"error\":\"{}", "x".repeat(490));
                assert_eq!(body, format!("{kept}… (4512 more characters)"));
            }
            other => panic!("expected HTTP 400, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn an_answer_without_choices_is_an_invalid_response() {
        let (base, _stub) = start(vec![ok(json!("just a string"))]).await;
        let model = OpenAiModel::new(fast_settings(&base, 0, 5)).unwrap();
        let err = model.complete(&conversation()).await.unwrap_err();
        assert!(matches!(err, ModelError::InvalidResponse(_)), "{err}");
    }
}

mod model_redaction {
    use super::*;

    const KEY: &str = "sk-model-key-canary-5f1c2e";

    fn keyed(base_url: &str, max_retries: u32) -> HttpSettings {
        HttpSettings {
            api_key: Some(KEY.to_string()),
            ..fast_settings(base_url, max_retries, 5)
        }
    }

    fn echoing(status_code: u16) -> Answer {
        let mut answer = status(status_code);
        answer.body = json!({"error": {
            "message": format!("Incorrect API key provided: {KEY}"),
            "authorization": format!("Bearer {KEY}"),
        }});
        answer
    }

    #[tokio::test]
    async fn a_401_that_echoes_the_key_keeps_only_the_masked_body_and_a_fixed_reason() {
        let (base, stub) = start(vec![echoing(401)]).await;
        let err = OpenAiModel::new(keyed(&base, 3))
            .unwrap()
            .complete(&conversation())
            .await
            .unwrap_err();
        assert_eq!(
            stub.requests()[0].headers["authorization"],
            format!("Bearer {KEY}")
        );
        assert_eq!(
            err.to_string(),
            "model endpoint answered HTTP 401: {\"error\":{\"authorization\":\"[redacted]\",\
             \"message\":\"Incorrect API key provided: [redacted]\"}}"
        );
        assert_eq!(
            err.public_reason(),
            "the model endpoint refused the API key (HTTP 401)"
        );
        assert_eq!(stub.requests().len(), 1);
    }

    #[tokio::test]
    async fn anthropic_masks_the_key_in_every_retried_5xx_and_counts_the_retries() {
        let (base, stub) = start(vec![echoing(503), echoing(500)]).await;
        let err = AnthropicModel::new(keyed(&base, 1))
            .unwrap()
            .complete(&conversation())
            .await
            .unwrap_err();
        assert_eq!(stub.requests()[0].headers["x-api-key"], KEY);
        assert!(!format!("{err} {err:?}").contains(KEY), "{err:?}");
        assert!(err.to_string().contains("[redacted]"), "{err}");
        assert_eq!(
            err.public_reason(),
            "the model endpoint answered HTTP 500 after 1 retry"
        );
    }

    #[tokio::test]
    async fn an_answer_that_quotes_the_key_where_choices_belong_is_masked_too() {
        let (base, _stub) = start(vec![ok(json!({"error": format!("key {KEY}")}))]).await;
        let err = OpenAiModel::new(keyed(&base, 0))
            .unwrap()
            .complete(&conversation())
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the model's answer could not be read: no choices[0].message in the answer: \
             {\"error\":\"key [redacted]\"}"
        );
        assert_eq!(err.public_reason(), "the model's answer could not be read");
    }

    #[tokio::test]
    async fn an_unreachable_endpoint_is_reported_without_its_url() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        drop(listener);
        let base = format!("http://{address}/internal-canary-path/v1");
        let err = OpenAiModel::new(keyed(&base, 0))
            .unwrap()
            .complete(&conversation())
            .await
            .unwrap_err();
        let detail = format!("{err} {err:?}");
        assert!(!detail.contains("internal-canary-path"), "{detail}");
        assert!(!detail.contains(&address.to_string()), "{detail}");
        assert_eq!(
            err.public_reason(),
            "the model endpoint could not be reached"
        );
    }

    #[tokio::test]
    async fn credentials_in_the_base_url_are_masked_in_the_echo_and_left_out_of_the_description() {
        let mut echo = status(407);
        echo.echo_headers = true;
        let (base, stub) = start(vec![echo]).await;
        let base = base.replace("http://", "http://proxy-user:pr0xy-s3cret@");
        let model = OpenAiModel::new(fast_settings(&base, 0, 5)).unwrap();
        let err = model.complete(&conversation()).await.unwrap_err();
        let sent = stub.requests()[0].headers["authorization"].clone();
        let sent = sent.to_str().unwrap();
        assert!(sent.starts_with("Basic "), "{sent}");
        let logged = err.to_string();
        assert!(!logged.contains(&sent[6..]), "{logged}");
        assert!(
            logged.contains("\"authorization\":\"[redacted]\""),
            "{logged}"
        );
        assert_eq!(err.public_reason(), "the model endpoint answered HTTP 407");
        let described = model.describe();
        assert!(
            !described.contains("s3cret") && !described.contains("proxy-user"),
            "{described}"
        );
        assert!(
            described.starts_with("openai test-model at http://127.0.0.1:"),
            "{described}"
        );
    }
}
