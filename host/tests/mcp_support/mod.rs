//! Support for the MCP tests: the Python MCP server of `fixtures/mcp/server.py` (the official
//! `mcp` package, installed by interop/setup.sh into interop/python/.venv-mcp), over stdio or
//! streamable HTTP on 127.0.0.1:0, and a harness runtime built in this process around a played
//! model with `[[mcp]]` entries. Starting the Python server costs seconds of CPU, so a test file
//! shares one where its tests allow it: [`shared_http_server`] (one server process per test
//! binary) and [`SharedHarness`] (one harness and its stdio server per test binary, each test's
//! task played by its own model).
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;
use tiny_harness::base::model::{ChatMessage, Model, ModelError, ModelReply, ModelRequest};
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
        // The server exits when this pipe closes: with the test binary, for a shared server
        // that is never dropped.
        command
            .stdin(Stdio::piped())
            .env("MCP_FIXTURE_EXIT_WITH_PARENT", "1");
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

/// The token the shared HTTP server requires (`X-Fixture-Token`).
pub const SHARED_TOKEN: &str = "t0ken";

/// One fixture server over streamable HTTP for the whole test binary, requiring
/// [`SHARED_TOKEN`]; its notes go to a folder of its own. It exits with the test binary.
pub fn shared_http_server(python: &Path) -> &'static HttpServer {
    static SERVER: OnceLock<(tempfile::TempDir, HttpServer)> = OnceLock::new();
    &SERVER
        .get_or_init(|| {
            let notes = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
            let server = HttpServer::start(python, notes.path(), Some(SHARED_TOKEN));
            (notes, server)
        })
        .1
}

/// A model that hands each task to the model registered for its goal, so the tests sharing one
/// harness each play their own script.
#[derive(Default)]
pub struct RoutedModel {
    routes: Mutex<HashMap<String, Arc<dyn Model>>>,
}

impl RoutedModel {
    /// Tasks whose goal is `goal` are played by `model`.
    pub fn route(&self, goal: &str, model: Arc<dyn Model>) {
        self.routes.lock().unwrap().insert(goal.to_string(), model);
    }
}

#[async_trait]
impl Model for RoutedModel {
    fn describe(&self) -> String {
        "routed".into()
    }
    fn context_window(&self) -> Option<usize> {
        None
    }
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let goal = goal_of(request).unwrap_or_default();
        let model = self.routes.lock().unwrap().get(&goal).cloned();
        match model {
            Some(model) => model.complete(request).await,
            None => Err(ModelError::InvalidResponse(format!(
                "no model routed for the goal {goal:?}"
            ))),
        }
    }
}

/// The goal line of the request's task section (the first message holds the sections).
fn goal_of(request: &ModelRequest) -> Option<String> {
    let ChatMessage::User { content } = request.messages.first()? else {
        return None;
    };
    content
        .lines()
        .find_map(|line| line.strip_prefix("goal: "))
        .map(str::to_string)
}

/// One harness for the whole test binary, with the fixture over stdio as `[[mcp]] fx`, on a
/// runtime of its own (a test's runtime ends with the test). Each test routes its goal to its
/// own model and runs its body on [`SharedHarness::run`].
pub struct SharedHarness {
    pub harness: Arc<Runtime>,
    pub models: Arc<RoutedModel>,
    runtime: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
}

impl SharedHarness {
    /// The harness, built on first use.
    pub fn get(python: &Path) -> &'static SharedHarness {
        static SHARED: OnceLock<SharedHarness> = OnceLock::new();
        SHARED.get_or_init(|| {
            let python = python.to_path_buf();
            // Built on a thread of its own: this may run inside a test's runtime, which cannot
            // block on another.
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .unwrap();
                let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
                let models = Arc::new(RoutedModel::default());
                let mcp = stdio_entry("fx", &python, dir.path(), "");
                let harness = runtime.block_on(self::runtime(dir.path(), &mcp, models.clone()));
                SharedHarness {
                    harness: Arc::new(harness),
                    models,
                    runtime,
                    _dir: dir,
                }
            })
            .join()
            .expect("the shared harness started")
        })
    }

    /// Runs `body` on the shared harness's runtime, with the harness.
    pub async fn run<F, Fut>(&'static self, body: F)
    where
        F: FnOnce(&'static Runtime) -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let harness: &'static Runtime = &self.harness;
        let handle = self.runtime.spawn(body(harness));
        if let Err(err) = handle.await {
            std::panic::resume_unwind(err.into_panic());
        }
    }
}
