//! Test support for the agents tests: real A2A card servers on loopback (well-behaved, slow,
//! down, hostile), an OpenAI-compatible stub model that records every request, and a harness
//! started in-process with a configuration that lists those agents.

#![allow(dead_code)] // Each test file uses a different part of this support.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;
use tiny_harness::base::protocol::requests::{SendMessageConfiguration, SendMessageRequest};
use tiny_harness::base::protocol::types::{Message, Part, Role, SendMessageResponse, Task};
use tiny_harness::state::records::extension::EXTENSION_URI;
use tiny_harness::work::agents::client::A2aClient;

/// What a card server does when asked for its card.
#[derive(Clone)]
pub enum Behaviour {
    /// Serves the card the closure builds from the server's own base URL.
    Card(Arc<dyn Fn(&str) -> Value + Send + Sync>),
    /// Waits, then serves the card.
    Slow(Duration, Arc<dyn Fn(&str) -> Value + Send + Sync>),
    /// Answers with this status and body.
    Raw(u16, String),
    /// Holds the answer until every request the gate expects is in flight, then serves the card.
    Gated(Arc<Gate>, Arc<dyn Fn(&str) -> Value + Send + Sync>),
}

/// Shared by several card servers: counts the card requests in flight across them and holds each
/// answer until `expected` are in flight at once (or until [`Gate::GIVE_UP`], so that fetches
/// made one after another fail the test instead of hanging it). Proves fetches run concurrently
/// by an event, not by how long they took.
pub struct Gate {
    expected: usize,
    /// Requests in flight now, and whether `expected` were ever in flight at once (then the
    /// gate stays open).
    state: tokio::sync::watch::Sender<(usize, bool)>,
    most_in_flight: AtomicUsize,
}

impl Gate {
    /// How long a held answer waits for the others: a guard against a hang, not a measure.
    pub const GIVE_UP: Duration = Duration::from_secs(15);

    pub fn new(expected: usize) -> Arc<Gate> {
        Arc::new(Gate {
            expected,
            state: tokio::sync::watch::Sender::new((0, false)),
            most_in_flight: AtomicUsize::new(0),
        })
    }

    /// The most requests that were in flight at once.
    pub fn most_in_flight(&self) -> usize {
        self.most_in_flight.load(Ordering::SeqCst)
    }

    async fn pass(&self) {
        let mut now = 0;
        self.state.send_modify(|(in_flight, open)| {
            *in_flight += 1;
            now = *in_flight;
            *open |= *in_flight >= self.expected;
        });
        self.most_in_flight.fetch_max(now, Ordering::SeqCst);
        let mut seen = self.state.subscribe();
        let opened = seen.wait_for(|(_, open)| *open);
        let _ = tokio::time::timeout(Gate::GIVE_UP, opened).await;
        self.state.send_modify(|(in_flight, _)| *in_flight -= 1);
    }
}

/// A card server on 127.0.0.1:0 that counts the requests it gets.
pub struct CardServer {
    pub url: String,
    pub port: u16,
    pub hits: Arc<AtomicUsize>,
}

#[derive(Clone)]
struct CardState {
    url: String,
    behaviour: Behaviour,
    hits: Arc<AtomicUsize>,
}

async fn serve_card(State(state): State<CardState>) -> Response {
    state.hits.fetch_add(1, Ordering::SeqCst);
    match &state.behaviour {
        Behaviour::Card(card) => Json(card(&state.url)).into_response(),
        Behaviour::Slow(delay, card) => {
            tokio::time::sleep(*delay).await;
            Json(card(&state.url)).into_response()
        }
        Behaviour::Gated(gate, card) => {
            gate.pass().await;
            Json(card(&state.url)).into_response()
        }
        Behaviour::Raw(status, body) => (
            StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            body.clone(),
        )
            .into_response(),
    }
}

impl CardServer {
    /// Starts a server that behaves as told.
    pub async fn start(behaviour: Behaviour) -> CardServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let url = format!("http://127.0.0.1:{port}");
        let hits = Arc::new(AtomicUsize::new(0));
        let state = CardState {
            url: url.clone(),
            behaviour,
            hits: hits.clone(),
        };
        let app = axum::Router::new()
            .route("/.well-known/agent-card.json", get(serve_card))
            .with_state(state);
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        CardServer { url, port, hits }
    }

    /// Serves the card `card` builds from the server's URL.
    pub async fn card(card: impl Fn(&str) -> Value + Send + Sync + 'static) -> CardServer {
        CardServer::start(Behaviour::Card(Arc::new(card))).await
    }

    /// How many times the card was asked for.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// A URL on which nothing listens: a port that was bound, then released.
pub async fn closed_port_url() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// A well-formed A2A 1.0 card at `url` with the given name, description and skills.
pub fn card_json(url: &str, name: &str, description: &str, skills: &[(&str, &str)]) -> Value {
    let skills: Vec<Value> = skills
        .iter()
        .enumerate()
        .map(|(i, (name, description))| {
            json!({"id": format!("skill-{i}"), "name": name, "description": description, "tags": []})
        })
        .collect();
    json!({
        "name": name,
        "description": description,
        "version": "7.7.7-card-version",
        "documentationUrl": format!("{url}/docs"),
        "provider": {"url": format!("{url}/about"), "organization": "Provider Org 42"},
        "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": true},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": skills,
    })
}

/// The stub model's next answer to a turn.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A `create_plan` tool call, so the task takes another turn.
    Plan,
    /// A final answer.
    Final(String),
    /// Calls the named tool with these JSON arguments.
    Tool(String, String),
}

/// An OpenAI-compatible model that records every request body. Turn requests get the queued
/// replies in order (a final "done" when the queue is empty); summary requests get a summary.
#[derive(Clone)]
pub struct StubModel {
    pub url: String,
    requests: Arc<Mutex<Vec<Value>>>,
}

#[derive(Clone)]
struct StubState {
    requests: Arc<Mutex<Vec<Value>>>,
    replies: Arc<Mutex<Vec<Reply>>>,
}

async fn chat(State(state): State<StubState>, Json(body): Json<Value>) -> Json<Value> {
    state.requests.lock().unwrap().push(body.clone());
    let usage = json!({"prompt_tokens": 10, "completion_tokens": 5});
    if is_summary(&body) {
        let message = json!({"role": "assistant", "content": "Summary: a plan was attached."});
        return Json(json!({"choices": [{"message": message}], "usage": usage}));
    }
    let reply = {
        let mut replies = state.replies.lock().unwrap();
        if replies.is_empty() {
            Reply::Final("done".into())
        } else {
            replies.remove(0)
        }
    };
    let message = match reply {
        Reply::Plan => json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": format!("call-{}", uuid::Uuid::new_v4()), "type": "function",
            "function": {"name": "create_plan",
                         "arguments": "{\"steps\":[{\"name\":\"Look\",\"description\":\"look\"}]}"}}]}),
        Reply::Final(text) => json!({"role": "assistant", "content": text}),
        Reply::Tool(name, arguments) => {
            json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": format!("call-{}", uuid::Uuid::new_v4()), "type": "function",
            "function": {"name": name, "arguments": arguments}}]})
        }
    };
    Json(json!({"choices": [{"message": message}], "usage": usage}))
}

fn is_summary(body: &Value) -> bool {
    body["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.starts_with("Summarise the conversation"))
}

impl StubModel {
    /// Starts the stub with the replies it gives to turn requests, in order.
    pub async fn start(replies: Vec<Reply>) -> StubModel {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let state = StubState {
            requests: requests.clone(),
            replies: Arc::new(Mutex::new(replies)),
        };
        let app = axum::Router::new()
            .route("/v1/chat/completions", post(chat))
            .with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        StubModel { url, requests }
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    /// The turn requests (not summaries), in order.
    pub fn turn_requests(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|body| !is_summary(body))
            .collect()
    }

    /// The `[model]` section that points a harness at this stub.
    pub fn config(&self) -> String {
        format!(
            "[model]\nprovider = \"openai\"\nbase_url = \"{}\"\nmodel = \"stub\"\n",
            self.url
        )
    }
}

/// The system message of a chat-completions request: the static prefix.
pub fn instructions(body: &Value) -> String {
    assert_eq!(body["messages"][0]["role"], "system", "{body}");
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The body of the `<agents>` section: the last section of the static prefix.
pub fn agents_section(instructions: &str) -> String {
    let start = instructions
        .rfind("\n<agents>\n")
        .expect("the prefix has an agents section");
    let body = &instructions[start + "\n<agents>\n".len()..];
    body.strip_suffix("\n</agents>")
        .expect("the agents section ends the prefix")
        .to_string()
}

/// A harness running in-process on 127.0.0.1:0.
pub struct Harness {
    pub client: A2aClient,
    pub base_url: String,
    stop: Option<oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Harness {
    /// Starts a harness with `extra` appended to a configuration that binds port 0 and keeps
    /// its store in a temporary folder.
    pub async fn start(extra: &str) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let text =
            format!("[server]\nbind = \"127.0.0.1:0\"\n[store]\npath = \"harness.db\"\n{extra}");
        let path = dir.path().join("config.toml");
        std::fs::write(&path, &text).unwrap();
        let config = Config::load(&path).unwrap();
        let runtime = Runtime::build(config).await.unwrap();
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
            // Activates the task extension, as a tiny-harness client does, so tests can read it.
            client: A2aClient::new(base_url.clone())
                .unwrap()
                .with_extensions(vec![EXTENSION_URI.to_string()]),
            base_url,
            stop: Some(stop),
            done,
            _dir: dir,
        }
    }

    /// How many tasks `participant` is on, read from the store: a caller that proves no
    /// identity lists nothing over A2A.
    pub fn stored_tasks_of(&self, participant: &str) -> usize {
        let store =
            tiny_harness::state::store::Store::open(&self._dir.path().join("harness.db")).unwrap();
        let filter = tiny_harness::state::store::TaskFilter {
            participant_id: participant.to_string(),
            context_id: None,
            state: None,
            updated_after: None,
            cursor: None,
            limit: 100,
        };
        store.list_tasks(&filter).unwrap().total
    }

    /// Sends a task and waits for it to settle.
    pub async fn run_task(&self, text: &str) -> Task {
        let request = SendMessageRequest {
            tenant: String::new(),
            message: Message {
                message_id: uuid::Uuid::new_v4().to_string(),
                role: Role::User,
                parts: vec![Part::text(text)],
                ..Message::default()
            },
            configuration: Some(SendMessageConfiguration::default()),
            metadata: None,
        };
        match self.client.send_message(request).await.unwrap() {
            SendMessageResponse::Task(task) => task,
            SendMessageResponse::Message(message) => panic!("expected a task, got {message:?}"),
        }
    }

    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = self.done.await;
    }
}

/// `[[agents]]` entries for `(id, url)` pairs.
pub fn agents_config(agents: &[(&str, &str)]) -> String {
    agents
        .iter()
        .map(|(id, url)| format!("[[agents]]\nid = \"{id}\"\nurl = \"{url}\"\n"))
        .collect()
}
