//! Support for the MCP tests: the Python MCP server of `fixtures/mcp/server.py` (the official
//! `mcp` package, installed by interop/setup.sh into interop/python/.venv-mcp), over stdio or
//! streamable HTTP on 127.0.0.1:0, and a harness runtime built in this process around a played
//! model with `[[mcp]]` entries.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;
use tiny_harness::base::model::{ChatMessage, Model, ModelRequest};
use tiny_harness::base::protocol::requests::SendMessageRequest;
use tiny_harness::base::protocol::types::{Message, Part, Role, Task, TaskState};
use tiny_harness::state::tasks::{Caller, TaskService};

/// How long a test waits for something that must happen: a guard against a hang, not a measure.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

/// The Python of the MCP venv, or `None` (outside CI) when interop/setup.sh has not run. Under
/// CI a missing venv fails the test: a green run means the MCP tests ran.
pub fn python() -> Option<PathBuf> {
    let python =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../interop/python/.venv-mcp/bin/python");
    if python.exists() {
        return Some(python);
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "{} is missing: run interop/setup.sh (it installs the `mcp` package the MCP tests need)",
            python.display()
        );
    }
    eprintln!("skipped: run interop/setup.sh to install the `mcp` package the MCP tests need");
    None
}

/// The fixture server's script.
pub fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/server.py")
}

/// A TOML string literal of a path.
pub fn quoted(path: &Path) -> String {
    format!("{:?}", path.display().to_string())
}

/// An `[[mcp]]` entry that starts the fixture over stdio, noting into `notes`.
pub fn stdio_entry(name: &str, python: &Path, notes: &Path, extra: &str) -> String {
    format!(
        "[[mcp]]\nname = \"{name}\"\ncommand = [{}, {}, \"stdio\"]\nenv = {{ MCP_FIXTURE_DIR = {} }}\n{extra}\n",
        quoted(python),
        quoted(&fixture()),
        quoted(notes)
    )
}

/// The fixture served over streamable HTTP on 127.0.0.1:0 until dropped.
pub struct HttpServer {
    pub url: String,
    child: Child,
}

impl HttpServer {
    /// Starts it; with `token`, it refuses every request without `X-Fixture-Token: {token}`.
    pub fn start(python: &Path, notes: &Path, token: Option<&str>) -> HttpServer {
        let port_file = notes.join("port");
        let mut command = Command::new(python);
        command
            .arg(fixture())
            .arg("http")
            .arg(&port_file)
            .env("MCP_FIXTURE_DIR", notes)
            .stdout(Stdio::null());
        if let Some(token) = token {
            command.env("MCP_FIXTURE_TOKEN", token);
        }
        let child = command.spawn().unwrap();
        let deadline = std::time::Instant::now() + HANG_GUARD;
        let port = loop {
            if let Ok(port) = std::fs::read_to_string(&port_file) {
                break port;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the MCP server wrote its port"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        HttpServer {
            url: format!("http://127.0.0.1:{}/mcp", port.trim()),
            child,
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A harness built in this process on `dir/config.toml` holding `mcp` (and a store in `dir`),
/// its model `model`.
pub async fn runtime(dir: &Path, mcp: &str, model: Arc<dyn Model>) -> Runtime {
    runtime_with_env(dir, mcp, model, &[]).await
}

/// [`runtime`], with `env` as the environment variables it reads (`headers_env`).
pub async fn runtime_with_env(
    dir: &Path,
    mcp: &str,
    model: Arc<dyn Model>,
    env: &[(&str, &str)],
) -> Runtime {
    let text = format!("[server]\nbind = \"127.0.0.1:0\"\n[store]\npath = \"harness.db\"\n{mcp}");
    let path = dir.join("config.toml");
    std::fs::write(&path, text).unwrap();
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let lookup = move |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    Runtime::build_with_model_and_env(Config::load(&path).unwrap(), model, lookup)
        .await
        .unwrap()
}

pub fn caller() -> Caller {
    Caller::from_header(None)
}

pub fn user_message(text: &str) -> SendMessageRequest {
    SendMessageRequest {
        tenant: String::new(),
        message: Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            role: Role::User,
            parts: vec![Part::text(text)],
            ..Message::default()
        },
        configuration: None,
        metadata: None,
    }
}

/// Sends `text` as a new task; its id.
pub async fn start_task(runtime: &Runtime, text: &str) -> String {
    let sub = runtime
        .tasks
        .send_message(&caller(), user_message(text))
        .await
        .expect("message accepted");
    sub.snapshot.id.clone()
}

/// Waits until task `id` is in a terminal or waiting state; the task.
pub async fn settled(runtime: &Runtime, id: &str) -> Task {
    tokio::time::timeout(HANG_GUARD, async {
        loop {
            let task = runtime.tasks.get_task(&caller(), id, None).await.unwrap();
            let state = task.status.state;
            if state.is_settled() {
                return task;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the task settled in time")
}

/// Waits until `done` holds.
pub async fn until(what: &str, mut done: impl FnMut() -> bool) {
    tokio::time::timeout(HANG_GUARD, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what} in time"));
}

/// The content of every tool result the model was sent in `request`.
pub fn tool_results(request: &ModelRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .filter_map(|message| match message {
            ChatMessage::Tool { content, .. } => Some(content.clone()),
            _ => None,
        })
        .collect()
}

/// The lines of a note file of the fixture (`calls`, `cancelled`, `pids`); none when absent.
pub fn notes(dir: &Path, file: &str) -> Vec<String> {
    std::fs::read_to_string(dir.join(file))
        .map(|text| text.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

pub fn completed(task: &Task) -> bool {
    task.status.state == TaskState::Completed
}

/// A TCP gate on 127.0.0.1:0 for a server that starts later: it closes every connection until
/// [`Gate::open`] names where to forward them, as if nothing listened there yet.
pub struct Gate {
    pub address: std::net::SocketAddr,
    upstream: Arc<std::sync::Mutex<Option<String>>>,
    _task: tokio::task::JoinHandle<()>,
}

impl Gate {
    pub async fn start() -> Gate {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let upstream: Arc<std::sync::Mutex<Option<String>>> = Arc::default();
        let to = upstream.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let Some(target) = to.lock().unwrap().clone() else {
                    continue;
                };
                tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        });
        Gate {
            address,
            upstream,
            _task: task,
        }
    }

    /// Forwards every later connection to `url`'s host and port.
    pub fn open(&self, url: &str) {
        let authority = url
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap()
            .to_string();
        *self.upstream.lock().unwrap() = Some(authority);
    }
}
