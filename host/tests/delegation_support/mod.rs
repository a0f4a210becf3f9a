//! Test support for delegation: harness nodes served in-process on 127.0.0.1:0 (each with its own
//! store and configuration, restartable on the same store), a model whose every reply is decided
//! by the test from the request it gets, and small readers of what the model was sent.

#![allow(dead_code)] // Each test file uses a different part of this support.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;
use tiny_harness::base::model::{
    ChatMessage, Model, ModelError, ModelReply, ModelRequest, Purpose, ToolCall,
};
use tiny_harness::base::protocol::requests::{SendMessageConfiguration, SendMessageRequest};
use tiny_harness::base::protocol::types::{
    Message, Part, Role, SendMessageResponse, Task, TaskState,
};
use tiny_harness::state::records::extension::{EXTENSION_URI, METADATA_KEY};
use tiny_harness::work::agents::client::A2aClient;

/// What the test's closure answers: a reply, or no answer ever (a call that hangs until the
/// task is canceled or the harness stops).
pub enum Answer {
    Reply(ModelReply),
    /// The reply, after a wait.
    After(Duration, ModelReply),
    Hang,
}

type Decide = dyn Fn(&ModelRequest) -> Answer + Send + Sync;

/// A model that answers each turn with what `decide` makes of the request, and records every
/// request. Summary requests get a fixed summary.
pub struct FnModel {
    decide: Box<Decide>,
    requests: Mutex<Vec<ModelRequest>>,
}

impl FnModel {
    pub fn new(decide: impl Fn(&ModelRequest) -> Answer + Send + Sync + 'static) -> Arc<FnModel> {
        Arc::new(FnModel {
            decide: Box::new(decide),
            requests: Mutex::new(Vec::new()),
        })
    }

    /// Every turn request so far.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap().clone()
    }

    /// The turn requests of the task whose `<task>` section has this goal.
    pub fn requests_for_goal(&self, goal: &str) -> Vec<ModelRequest> {
        self.requests()
            .into_iter()
            .filter(|r| task_section(r).contains(&format!("goal: {goal}")))
            .collect()
    }
}

#[async_trait]
impl Model for FnModel {
    fn describe(&self) -> String {
        "test model".into()
    }
    fn context_window(&self) -> Option<usize> {
        None
    }
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        if request.purpose == Purpose::Summary {
            return Ok(text("SUMMARY"));
        }
        self.requests.lock().unwrap().push(request.clone());
        match (self.decide)(request) {
            Answer::Reply(reply) => Ok(reply),
            Answer::After(wait, reply) => {
                tokio::time::sleep(wait).await;
                Ok(reply)
            }
            Answer::Hang => std::future::pending().await,
        }
    }
}

/// A final answer.
pub fn text(text: &str) -> ModelReply {
    ModelReply {
        text: text.to_string(),
        ..ModelReply::default()
    }
}

/// One tool call.
pub fn tool(name: &str, arguments: Value) -> ModelReply {
    ModelReply {
        text: String::new(),
        tool_calls: vec![ToolCall {
            id: format!("call-{name}"),
            name: name.to_string(),
            arguments: arguments.to_string(),
        }],
        ..ModelReply::default()
    }
}

/// The `<task>` section of a turn request (the first user message holds it).
pub fn task_section(request: &ModelRequest) -> String {
    let Some(ChatMessage::User { content }) = request.messages.first() else {
        return String::new();
    };
    content
        .split("<task>\n")
        .nth(1)
        .and_then(|rest| rest.split("\n</task>").next())
        .unwrap_or("")
        .to_string()
}

/// Whether the task in the request has this goal.
pub fn has_goal(request: &ModelRequest, goal: &str) -> bool {
    task_section(request).contains(&format!("goal: {goal}"))
}

/// The user messages of the history after the first (notes, participants' messages).
pub fn later_user_messages(request: &ModelRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .skip(1)
        .filter_map(|m| match m {
            ChatMessage::User { content } => Some(content.clone()),
            _ => None,
        })
        .collect()
}

/// The newest tool result in the request, if any.
pub fn last_tool_result(request: &ModelRequest) -> Option<String> {
    request.messages.iter().rev().find_map(|m| match m {
        ChatMessage::Tool { content, .. } => Some(content.clone()),
        _ => None,
    })
}

/// The text of the newest note (`Sub-task … is …`) in the request, without its block.
pub fn last_note(request: &ModelRequest) -> Option<String> {
    later_user_messages(request)
        .into_iter()
        .rev()
        .find_map(|m| {
            m.lines()
                .find(|line| line.starts_with("Sub-task "))
                .map(str::to_string)
                .map(|first| {
                    let start = m.find(&first).unwrap();
                    let body = &m[start..];
                    body.trim_end_matches("\n</untrusted>").to_string()
                })
        })
}

/// The bearer token of the token caller `operator` of [`Node::start_as_caller`].
pub const OPERATOR_TOKEN: &str = "delegation-support-operator-token-6512bd43d9";

/// A harness node: a configuration and a store in its own folder, served in-process.
pub struct Node {
    pub url: String,
    pub client: A2aClient,
    dir: Arc<tempfile::TempDir>,
    config_path: PathBuf,
    stop: Option<oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<()>>,
}

impl Node {
    /// Starts a node whose configuration is `extra` below a server bound to 127.0.0.1:0 and a
    /// store in a fresh folder.
    pub async fn start(extra: &str, model: Arc<dyn Model>) -> Node {
        let dir = Arc::new(tempfile::tempdir().unwrap());
        let config_path = dir.path().join("config.toml");
        let text =
            format!("[server]\nbind = \"127.0.0.1:0\"\n[store]\npath = \"harness.db\"\n{extra}");
        std::fs::write(&config_path, text).unwrap();
        Node::serve(dir, config_path, model, Vec::new()).await
    }

    /// [`Node::start`] with the token caller `operator` (`[[server.callers]]`), whose token its
    /// `client` presents: tests that list tasks call as a caller that proves who it is (one that
    /// proves nothing lists nothing).
    pub async fn start_as_caller(extra: &str, model: Arc<dyn Model>) -> Node {
        let extra = format!(
            "{extra}\n[[server.callers]]\nid = \"operator\"\ntoken_env = \"OPERATOR_TOKEN\"\n"
        );
        let env = vec![("OPERATOR_TOKEN".to_string(), OPERATOR_TOKEN.to_string())];
        let mut node = Node::start_with_env(&extra, model, env).await;
        node.client = extension_client(&node.url).with_bearer(OPERATOR_TOKEN);
        node
    }

    /// [`Node::start`], the environment variables `env` (name, value) standing in for the
    /// process's own (for `token_env` settings).
    pub async fn start_with_env(
        extra: &str,
        model: Arc<dyn Model>,
        env: Vec<(String, String)>,
    ) -> Node {
        let dir = Arc::new(tempfile::tempdir().unwrap());
        let config_path = dir.path().join("config.toml");
        let text =
            format!("[server]\nbind = \"127.0.0.1:0\"\n[store]\npath = \"harness.db\"\n{extra}");
        std::fs::write(&config_path, text).unwrap();
        Node::serve(dir, config_path, model, env).await
    }

    async fn serve(
        dir: Arc<tempfile::TempDir>,
        config_path: PathBuf,
        model: Arc<dyn Model>,
        env: Vec<(String, String)>,
    ) -> Node {
        let config = Config::load(&config_path).unwrap();
        let runtime = Runtime::build_with_model_and_env(config, model, move |name: &str| {
            env.iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
        })
        .await
        .unwrap();
        let url = format!("http://{}", runtime.local_addr());
        let (stop, stopped) = oneshot::channel::<()>();
        let done = tokio::spawn(async move {
            runtime
                .serve(async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        Node {
            client: extension_client(&url),
            url,
            dir,
            config_path,
            stop: Some(stop),
            done: Some(done),
        }
    }

    /// Stops the node gracefully and starts it again on the same configuration and store, with
    /// a new model (and a new port).
    pub async fn restart(mut self, model: Arc<dyn Model>) -> Node {
        self.shutdown().await;
        Node::serve(
            self.dir.clone(),
            self.config_path.clone(),
            model,
            Vec::new(),
        )
        .await
    }

    pub async fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(done) = self.done.take() {
            let _ = done.await;
        }
    }

    /// The folder holding the node's configuration and store.
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// How many tasks `participant` is on, read from the node's store: a caller that proves no
    /// identity lists nothing over A2A.
    pub fn stored_tasks_of(&self, participant: &str) -> usize {
        let store =
            tiny_harness::state::store::Store::open(&self.dir().join("harness.db")).unwrap();
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

    /// A client calling as this participant.
    pub fn client_as(&self, participant: &str) -> A2aClient {
        extension_client(&self.url).with_participant(participant)
    }

    /// Sends `text` as a new task; blocking unless `immediately`.
    pub async fn send(&self, text: &str, immediately: bool) -> Task {
        send_text(&self.client, "", text, immediately).await
    }
}

/// Sends a text message (to an existing task when `task_id` is not empty).
pub async fn send_text(client: &A2aClient, task_id: &str, text: &str, immediately: bool) -> Task {
    let request = SendMessageRequest {
        tenant: String::new(),
        message: Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            task_id: task_id.to_string(),
            role: Role::User,
            parts: vec![Part::text(text)],
            ..Message::default()
        },
        configuration: Some(SendMessageConfiguration {
            return_immediately: immediately,
            ..SendMessageConfiguration::default()
        }),
        metadata: None,
    };
    match client.send_message(request).await.unwrap() {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(message) => panic!("expected a task, got {message:?}"),
    }
}

/// A client of the node at `url` that activates the task extension, as the harness's own
/// clients do, so the tests can read each task's brief and sub-task rows.
fn extension_client(url: &str) -> A2aClient {
    A2aClient::new(url.to_string())
        .unwrap()
        .with_extensions(vec![EXTENSION_URI.to_string()])
}

/// The task extension of a task.
pub fn extension(task: &Task) -> Value {
    task.metadata
        .as_ref()
        .and_then(|m| m.get(METADATA_KEY))
        .cloned()
        .unwrap_or(Value::Null)
}

/// The sub-task rows of a task.
pub fn sub_tasks(task: &Task) -> Vec<Value> {
    extension(task)["sub_tasks"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Polls `GetTask` until `done` holds (at most 30 s).
pub async fn wait_for(client: &A2aClient, id: &str, done: impl Fn(&Task) -> bool) -> Task {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let task = client.get_task(id, None).await.unwrap();
        if done(&task) {
            return task;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "task {id} did not get there: {}",
            serde_json::to_string_pretty(&task).unwrap()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Whether a task has ended.
pub fn is_terminal(task: &Task) -> bool {
    task.status.state.is_terminal()
}

/// The task's final answer (its status message).
pub fn answer(task: &Task) -> String {
    task.status
        .message
        .as_ref()
        .map(Message::text)
        .unwrap_or_default()
}

/// The state of a sub-task row.
pub fn row_state(row: &Value) -> Option<TaskState> {
    row["state"].as_str().and_then(TaskState::from_wire)
}

/// A card for a stub agent at `url`, with or without the task extension.
pub fn stub_card(url: &str, name: &str, extensions: bool) -> Value {
    let mut card = json!({
        "name": name,
        "description": format!("{name}, a stub agent"),
        "version": "1.0.0",
        "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": false, "pushNotifications": false},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "stub work", "description": "does stub work", "tags": ["stub"]}]
    });
    if extensions {
        card["capabilities"]["extensions"] = json!([{
            "uri": tiny_harness::state::records::extension::EXTENSION_URI, "required": false
        }]);
    }
    card
}

/// Serves a stub A2A agent on 127.0.0.1:0: the card `card` makes of its URL at the well-known
/// path, and `rpc` (a handler with its state already given) for every request to `/`. Returns
/// its URL.
pub async fn serve_stub_agent(
    card: impl FnOnce(&str) -> Value,
    rpc: axum::routing::MethodRouter,
) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let card = card(&url);
    let app = axum::Router::new()
        .route(
            "/.well-known/agent-card.json",
            axum::routing::get(move || {
                let card = card.clone();
                async move { axum::Json(card) }
            }),
        )
        .route("/", rpc);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}
