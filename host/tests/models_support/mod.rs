//! Test support for per-task models: stub model endpoints on 127.0.0.1 that speak the
//! OpenAI-compatible and the Anthropic wire formats and record every request, and a whole harness
//! (models and delegator tokens from an environment closure) served on loopback.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::Uri;
use serde_json::{Value, json};
use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;
use tokio::sync::oneshot;

/// The trusted delegator every harness here knows.
pub const DELEGATOR: &str = "front-desk";
/// The environment variable its token is read from.
pub const TOKEN_ENV: &str = "MODELS_FRONT_DESK_TOKEN";
/// Its token.
pub const TOKEN: &str = "models-front-desk-token-8f14e45fceea167a";
/// Where the task extension sits in a task's metadata.
pub const EXT: &str = "io.github.madarauchiha-314.tiny-harness/task";
const ENVELOPE: &str = "application/vnd.tiny-harness.event+json";

/// Tokens each stub reports per call.
pub const STUB_INPUT_TOKENS: u64 = 120;
pub const STUB_OUTPUT_TOKENS: u64 = 7;

/// A model endpoint answering every call with a final text naming the stub, in the shape the
/// path asks for (`…/chat/completions` or `…/messages`), and recording each request body.
#[derive(Clone)]
pub struct ModelStub {
    /// The API root, as `base_url` takes it.
    pub url: String,
    label: String,
    requests: Arc<Mutex<Vec<(String, Value)>>>,
}

async fn answer(State(stub): State<ModelStub>, uri: Uri, Json(body): Json<Value>) -> Json<Value> {
    let path = uri.path().to_string();
    stub.requests.lock().unwrap().push((path.clone(), body));
    let text = format!("answered by {}", stub.label);
    if path.ends_with("/messages") {
        Json(json!({
            "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": STUB_INPUT_TOKENS, "output_tokens": STUB_OUTPUT_TOKENS}
        }))
    } else {
        Json(json!({
            "choices": [{"message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": STUB_INPUT_TOKENS, "completion_tokens": STUB_OUTPUT_TOKENS}
        }))
    }
}

impl ModelStub {
    /// Starts a stub whose answers say `answered by {label}`.
    pub async fn start(label: &str) -> ModelStub {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let stub = ModelStub {
            url: format!("http://{}/v1", listener.local_addr().unwrap()),
            label: label.to_string(),
            requests: Arc::new(Mutex::new(Vec::new())),
        };
        let app = axum::Router::new()
            .fallback(axum::routing::post(answer))
            .with_state(stub.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        stub
    }

    /// Every request received: its path and its JSON body.
    pub fn requests(&self) -> Vec<(String, Value)> {
        self.requests.lock().unwrap().clone()
    }

    /// The body of the only request received, which must have gone to a path ending `suffix`.
    pub fn only_request(&self, suffix: &str) -> Value {
        let requests = self.requests();
        assert_eq!(requests.len(), 1, "{} got {requests:?}", self.label);
        let (path, body) = requests.into_iter().next().unwrap();
        assert!(path.ends_with(suffix), "{path}");
        body
    }
}

/// A harness served on loopback, with `DELEGATOR` trusted.
pub struct Harness {
    pub base_url: String,
    http: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Harness {
    /// A harness whose configuration is `extra` (its `[model]`, `[models.*]`, `[limits]`)
    /// below a server on port 0 that trusts `DELEGATOR`; every model is built from the
    /// configuration, as `harness serve` builds them.
    pub async fn start(extra: &str) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "[server]\nbind = \"127.0.0.1:0\"\n\
             [[server.trusted_delegators]]\nid = \"{DELEGATOR}\"\ntoken_env = \"{TOKEN_ENV}\"\n\
             [store]\npath = \"harness.db\"\n{extra}"
        );
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).unwrap();
        let config = Config::load(&path).unwrap();
        let env = |name: &str| (name == TOKEN_ENV).then(|| TOKEN.to_string());
        let runtime = Runtime::build_with_env(config, env).await.unwrap();
        let base_url = format!("http://{}", runtime.local_addr());
        let (stop, stopped) = oneshot::channel::<()>();
        let done = tokio::spawn(async move {
            runtime
                .serve(async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        Harness {
            base_url,
            http: reqwest::Client::new(),
            stop: Some(stop),
            done,
            _dir: dir,
        }
    }

    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = self.done.await;
    }

    /// One JSON-RPC call as the delegator (`trusted`) or as the participant `alice`, with the
    /// task extension activated so answers carry the brief and the usage.
    pub async fn rpc(&self, trusted: bool, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let request = self
            .http
            .post(format!("{}/", self.base_url))
            .header("A2A-Version", "1.0")
            .header(
                "A2A-Extensions",
                tiny_harness::state::records::extension::EXTENSION_URI,
            );
        let request = if trusted {
            request.bearer_auth(TOKEN)
        } else {
            request.header("X-Participant-Id", "alice")
        };
        let response = request.json(&body).send().await.unwrap();
        assert_eq!(response.status(), reqwest::StatusCode::OK);
        response.json().await.unwrap()
    }

    /// Creates a task from a brief; the task as created, or the JSON-RPC error.
    pub async fn create(&self, trusted: bool, brief: Value) -> Result<Value, Value> {
        let params = json!({
            "message": {
                "messageId": uuid::Uuid::new_v4().to_string(),
                "role": "ROLE_USER",
                "parts": [{"data": {"kind": "task", "payload": brief}, "mediaType": ENVELOPE}]
            },
            "configuration": {"returnImmediately": true}
        });
        let response = self.rpc(trusted, "SendMessage", params).await;
        match response.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(response["result"]["task"].clone()),
        }
    }

    /// How many tasks the caller sees.
    pub async fn task_count(&self, trusted: bool) -> u64 {
        let response = self.rpc(trusted, "ListTasks", json!({})).await;
        response["result"]["totalSize"].as_u64().unwrap()
    }

    /// Polls `GetTask` until the task is terminal (at most 30 s, a hang guard).
    pub async fn finished(&self, trusted: bool, id: &str) -> Value {
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let task = self.rpc(trusted, "GetTask", json!({"id": id})).await;
                let state = task["result"]["status"]["state"].as_str().unwrap_or("");
                if [
                    "TASK_STATE_COMPLETED",
                    "TASK_STATE_FAILED",
                    "TASK_STATE_CANCELED",
                    "TASK_STATE_REJECTED",
                ]
                .contains(&state)
                {
                    return task["result"].clone();
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("task {id} never finished"))
    }
}

/// The text of a task's status message: its answer, or why it failed.
pub fn status_text(task: &Value) -> String {
    task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}
