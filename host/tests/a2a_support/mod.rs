//! Test support for the A2A server tests: an in-memory task service and a server on loopback.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::{broadcast, oneshot};

use tiny_harness::app::server::identity::Credentials;
use tiny_harness::app::server::router::{ConnectionLimits, ServerState, router, serve};
use tiny_harness::base::protocol::card::default_card;
use tiny_harness::base::protocol::requests::{
    ListTasksRequest, ListTasksResponse, SendMessageConfiguration, SendMessageRequest,
};
use tiny_harness::base::protocol::types::{
    Message, Part, Role, SendMessageResponse, StreamResponse, Task, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};
use tiny_harness::state::tasks::events::{TaskEvent, TaskEvents};
use tiny_harness::state::tasks::{Caller, Subscription, TaskError, TaskService};
use tiny_harness::work::agents::client::A2aClient;

/// A message with this text leaves its task WORKING until it is canceled.
pub const HOLD: &str = "hold";
/// A `GetTask` for this id makes the fake service panic.
pub const PANIC_ID: &str = "panic";

struct Entry {
    task: Task,
    owner: String,
    events: broadcast::Sender<TaskEvent>,
}

/// Creates each task SUBMITTED, then a worker moves it to WORKING and, ~50 ms later, COMPLETED
/// with an agent reply (unless the message said [`HOLD`]).
#[derive(Clone, Default)]
pub struct FakeTasks {
    tasks: Arc<Mutex<HashMap<String, Entry>>>,
}

impl FakeTasks {
    /// Sets a task's state (and optional agent message) and tells its subscribers, unless the
    /// task is already terminal.
    fn transition(&self, id: &str, state: TaskState, reply: Option<&str>) {
        let mut tasks = self.tasks.lock().unwrap();
        let Some(entry) = tasks.get_mut(id) else {
            return;
        };
        if entry.task.status.state.is_terminal() {
            return;
        }
        let message = reply.map(|text| Message::agent_text(id, &entry.task.context_id, text));
        if let Some(message) = &message {
            entry
                .task
                .history
                .get_or_insert_with(Vec::new)
                .push(message.clone());
        }
        entry.task.status = TaskStatus {
            state,
            message,
            timestamp: None,
        };
        let _ = entry.events.send(Arc::new(StreamResponse::StatusUpdate(
            TaskStatusUpdateEvent {
                task_id: id.to_string(),
                context_id: entry.task.context_id.clone(),
                status: entry.task.status.clone(),
                metadata: None,
            },
        )));
    }

    fn visible(&self, caller: &Caller, id: &str) -> Result<Task, TaskError> {
        if id == PANIC_ID {
            panic!("the fake service was asked to panic");
        }
        let tasks = self.tasks.lock().unwrap();
        match tasks.get(id) {
            Some(entry) if entry.owner == caller.participant_id => Ok(entry.task.clone()),
            _ => Err(TaskError::NotFound(id.to_string())),
        }
    }
}

#[async_trait]
impl TaskService for FakeTasks {
    async fn send_message(
        &self,
        caller: &Caller,
        request: SendMessageRequest,
    ) -> Result<Subscription, TaskError> {
        let id = uuid::Uuid::new_v4().to_string();
        let task = Task {
            id: id.clone(),
            context_id: format!("ctx-{id}"),
            status: TaskStatus {
                state: TaskState::Submitted,
                ..TaskStatus::default()
            },
            history: Some(vec![request.message.clone()]),
            ..Task::default()
        };
        let (events, receiver) = broadcast::channel(16);
        let entry = Entry {
            task: task.clone(),
            owner: caller.participant_id.clone(),
            events,
        };
        self.tasks.lock().unwrap().insert(id.clone(), entry);
        let hold = request.message.text() == HOLD;
        let service = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            service.transition(&id, TaskState::Working, None);
            if !hold {
                tokio::time::sleep(Duration::from_millis(40)).await;
                service.transition(&id, TaskState::Completed, Some("done"));
            }
        });
        Ok(Subscription {
            snapshot: task,
            events: TaskEvents::from_receiver(receiver),
        })
    }

    async fn get_task(
        &self,
        caller: &Caller,
        id: &str,
        history_length: Option<i32>,
    ) -> Result<Task, TaskError> {
        let mut task = self.visible(caller, id)?;
        if history_length == Some(0) {
            task.history = None;
        }
        Ok(task)
    }

    async fn list_tasks(
        &self,
        caller: &Caller,
        request: ListTasksRequest,
    ) -> Result<ListTasksResponse, TaskError> {
        let tasks = self.tasks.lock().unwrap();
        let mine: Vec<Task> = tasks
            .values()
            .filter(|entry| entry.owner == caller.participant_id)
            .map(|entry| entry.task.clone())
            .collect();
        let page_size = request.page_size.unwrap_or(50);
        Ok(ListTasksResponse {
            total_size: mine.len() as i32,
            tasks: mine.into_iter().take(page_size as usize).collect(),
            next_page_token: String::new(),
            page_size,
        })
    }

    async fn cancel_task(&self, caller: &Caller, id: &str) -> Result<Task, TaskError> {
        let task = self.visible(caller, id)?;
        if task.status.state.is_terminal() {
            return Err(TaskError::NotCancelable {
                id: id.to_string(),
                state: task.status.state,
            });
        }
        self.transition(id, TaskState::Canceled, None);
        self.visible(caller, id)
    }

    async fn subscribe(&self, caller: &Caller, id: &str) -> Result<Subscription, TaskError> {
        let tasks = self.tasks.lock().unwrap();
        match tasks.get(id) {
            Some(entry) if entry.owner == caller.participant_id => {
                if entry.task.status.state.is_terminal() {
                    return Err(TaskError::Terminal {
                        id: id.to_string(),
                        state: entry.task.status.state,
                    });
                }
                Ok(Subscription {
                    snapshot: entry.task.clone(),
                    events: TaskEvents::from_receiver(entry.events.subscribe()),
                })
            }
            _ => Err(TaskError::NotFound(id.to_string())),
        }
    }
}

/// A server on a loopback port; it shuts down when dropped.
pub struct Server {
    pub base: String,
    _stop: oneshot::Sender<()>,
}

impl Server {
    pub async fn start() -> Server {
        Server::with_limits(64 * 1024, 0).await
    }

    /// A server that hands bearer tokens it does not know to `verifier` (the JWT seam).
    pub async fn with_verifier(
        verifier: Arc<dyn tiny_harness::app::server::identity::BearerVerifier>,
    ) -> Server {
        Server::build(64 * 1024, 0, Some(verifier)).await
    }

    pub async fn with_limits(max_request_bytes: usize, rate_limit_per_minute: u32) -> Server {
        Server::build(max_request_bytes, rate_limit_per_minute, None).await
    }

    async fn build(
        max_request_bytes: usize,
        rate_limit_per_minute: u32,
        verifier: Option<Arc<dyn tiny_harness::app::server::identity::BearerVerifier>>,
    ) -> Server {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let state = ServerState {
            service: Arc::new(FakeTasks::default()),
            card: default_card(&base),
            credentials: Arc::new(Credentials::none()),
            verifier,
            allow_anonymous: true,
            extended_card: None,
            max_request_bytes,
            rate_limit_per_minute,
            stream_keep_alive: Duration::from_secs(
                tiny_harness::base::config::ServerConfig::default().stream_keep_alive_secs,
            ),
            health: Default::default(),
            metrics: false,
            push: None,
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let limits = ConnectionLimits::default();
        tokio::spawn(serve(listener, router(state), limits, async move {
            let _ = stopped.await;
        }));
        Server { base, _stop: stop }
    }

    pub fn client(&self) -> A2aClient {
        A2aClient::new(&self.base).unwrap()
    }

    /// Posts a raw body with extra headers; asserts the JSON-RPC rule that answers are HTTP 200.
    pub async fn post(&self, body: impl Into<reqwest::Body>, headers: &[(&str, &str)]) -> Value {
        let mut request = reqwest::Client::new().post(&self.base).body(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response.json().await.unwrap()
    }

    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc":"2.0","id":1,"method":method,"params":params});
        self.post(body.to_string(), &[]).await
    }
}

pub fn user_message(text: &str) -> Message {
    Message {
        message_id: uuid::Uuid::new_v4().to_string(),
        role: Role::User,
        parts: vec![Part::text(text)],
        ..Message::default()
    }
}

pub fn send_request(text: &str, return_immediately: bool) -> SendMessageRequest {
    SendMessageRequest {
        tenant: String::new(),
        message: user_message(text),
        configuration: Some(SendMessageConfiguration {
            return_immediately,
            ..SendMessageConfiguration::default()
        }),
        metadata: None,
    }
}

pub fn task_of(response: SendMessageResponse) -> Task {
    match response {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(message) => panic!("expected a task, got {message:?}"),
    }
}

pub fn error_code(response: &Value) -> i64 {
    response["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no error in {response}"))
}

pub fn error_message(response: &Value) -> String {
    response["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}
