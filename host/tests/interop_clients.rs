//! The official A2A clients against the `harness` binary: the Python SDK 1.x over JSON-RPC,
//! HTTP+JSON and gRPC, the Python SDK 0.3 over the 0.3 JSON-RPC dialect, and the JavaScript SDK
//! over all four. Each test starts `harness serve` with the scripted model of
//! `interop/script.toml` on a free loopback port (gRPC on a second one, `server.grpc_bind`) and
//! runs one script of `interop/` against it, as a token caller of
//! `[[server.callers]]` (its token in `A2A_BEARER_TOKEN`): only a caller that proves who it is
//! lists its tasks.
//!
//! Push configs too: each test serves a webhook on loopback that `[push] allowed_hosts` lists,
//! and gives its URL to the script (`A2A_WEBHOOK_URL`). A script that sets configs prints
//! `push-token: TOKEN` for each config it leaves on a task; the test then waits until the
//! webhook has heard, with that token in `X-A2A-Notification-Token`, the task complete.
//!
//! The clients are installed by `interop/setup.sh`. A test whose client is not installed says
//! so and passes, so `cargo test` works on a machine without Python or Node; CI runs the setup
//! first and the tests then hold the harness to every client.

mod support {
    pub mod harness_process;
}

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::Value;

/// The interop clients' caller id and bearer token.
const CALLER_ID: &str = "interop-client";
const CALLER_TOKEN: &str = "interop-client-token-8f14e45fceea167a5a36";

/// How long one client script may run before the test fails.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(180);

/// How long the webhook may take to hear a task's end after its script finished.
const PUSH_TIMEOUT: Duration = Duration::from_secs(30);

/// What the webhook heard: the `X-A2A-Notification-Token` and the body of each POST.
type Heard = Arc<Mutex<Vec<(String, Value)>>>;

/// A webhook on 127.0.0.1:0 that answers 200 to every POST under `/hook` and records it.
async fn webhook() -> (u16, Heard) {
    async fn hook(State(heard): State<Heard>, headers: HeaderMap, body: String) -> StatusCode {
        let token = headers
            .get("x-a2a-notification-token")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let body = serde_json::from_str(&body).unwrap_or(Value::Null);
        heard.lock().unwrap().push((token, body));
        StatusCode::OK
    }
    let heard = Heard::default();
    let app = axum::Router::new()
        .route("/hook/{*rest}", post(hook))
        .with_state(heard.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (port, heard)
}

/// Whether the webhook heard, with `token`, a task complete.
fn heard_completed(heard: &Heard, token: &str) -> bool {
    heard.lock().unwrap().iter().any(|(t, body)| {
        t == token && body["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    })
}

/// `interop/` at the root of the repository.
fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../interop")
}

/// A running `harness serve`, killed when dropped.
struct Serving {
    child: Child,
    base_url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the harness binary on `127.0.0.1:0` with the interop script, webhooks allowed on
/// `127.0.0.1:webhook_port`, and reads its address from the `listening on http://…` line it logs.
fn serve(webhook_port: u16) -> Serving {
    let dir = tempfile::tempdir().unwrap();
    let script = interop_dir().join("script.toml");
    let config = format!(
        "[server]\nbind = \"127.0.0.1:0\"\ngrpc_bind = \"127.0.0.1:0\"\nrate_limit_per_minute = 0\n\
         [[server.callers]]\nid = \"{CALLER_ID}\"\ntoken_env = \"INTEROP_CALLER_TOKEN\"\n\
         [push]\nallowed_hosts = [\"127.0.0.1:{webhook_port}\"]\n\
         [store]\npath = \"harness.db\"\n\
         [model]\nprovider = \"scripted\"\nscript = {:?}\n",
        script.canonicalize().unwrap().display().to_string()
    );
    let path = dir.path().join("config.toml");
    std::fs::write(&path, config).unwrap();
    let env = [("INTEROP_CALLER_TOKEN", CALLER_TOKEN)];
    let (child, base_url) = support::harness_process::serve_with_env(&path, &env);
    Serving {
        child,
        base_url,
        _dir: dir,
    }
}

/// Runs `program args… BASE_URL` against a fresh harness and fails with its output unless it
/// exits 0 within [`CLIENT_TIMEOUT`] and the webhook hears every task it set a push config on
/// complete, with that config's token. Returns the tokens.
async fn run_client(program: &Path, args: &[&Path]) -> Vec<String> {
    let (webhook_port, heard) = webhook().await;
    let serving = serve(webhook_port);
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .arg(&serving.base_url)
        .env("A2A_BEARER_TOKEN", CALLER_TOKEN)
        .env(
            "A2A_WEBHOOK_URL",
            format!("http://127.0.0.1:{webhook_port}/hook"),
        )
        .current_dir(interop_dir())
        .kill_on_drop(true);
    let output = tokio::time::timeout(CLIENT_TIMEOUT, command.output())
        .await
        .unwrap_or_else(|_| panic!("{} did not finish in {CLIENT_TIMEOUT:?}", program.display()))
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    print!("{stdout}");
    assert!(
        output.status.success(),
        "{} failed ({}):\n{stdout}\n{stderr}",
        program.display(),
        output.status
    );
    let tokens: Vec<String> = stdout
        .lines()
        .filter_map(|line| line.strip_prefix("push-token: "))
        .map(str::to_string)
        .collect();
    tokio::time::timeout(PUSH_TIMEOUT, async {
        while !tokens.iter().all(|token| heard_completed(&heard, token)) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .unwrap_or_else(|_| {
        let heard: Vec<String> = heard
            .lock()
            .unwrap()
            .iter()
            .map(|(t, b)| format!("{t}: {b}"))
            .collect();
        panic!(
            "the webhook did not hear every pushed task complete ({tokens:?}); it heard {heard:#?}"
        )
    });
    tokens
}

/// The interpreter of a venv, or `None` (after saying why) when it is not installed.
fn installed_python(venv: &str) -> Option<PathBuf> {
    let python = interop_dir().join("python").join(venv).join("bin/python");
    if python.exists() {
        return Some(python);
    }
    skip(&format!(
        "{} is not installed; run interop/setup.sh to test against this client",
        python.display()
    ));
    None
}

/// Says why a client test cannot run. Under CI (`CI` set) that is a failure: a green run there
/// must mean every client was driven.
fn skip(why: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("{why} (CI is set, so a missing client fails the test)");
    }
    eprintln!("SKIPPED: {why}");
}

#[tokio::test]
async fn the_official_python_sdk_1_x_drives_the_harness_over_both_bindings() {
    let Some(python) = installed_python(".venv") else {
        return;
    };
    let script = interop_dir().join("python/client_v1.py");
    let pushed = run_client(&python, &[&script]).await;
    assert_eq!(pushed.len(), 3, "a push config on each binding: {pushed:?}");
}

#[tokio::test]
async fn the_python_sdk_0_3_drives_the_harness_over_the_0_3_dialect() {
    let Some(python) = installed_python(".venv03") else {
        return;
    };
    let script = interop_dir().join("python/client_v03.py");
    run_client(&python, &[&script]).await;
}

#[tokio::test]
async fn the_official_javascript_sdk_drives_the_harness_over_every_interface() {
    let modules = interop_dir().join("js/node_modules/@a2a-js/sdk");
    let node = Command::new("node").arg("--version").output();
    if !modules.exists() || node.is_err() {
        skip(&format!(
            "node or {} is missing; run interop/setup.sh to test against this client",
            modules.display()
        ));
        return;
    }
    let script = interop_dir().join("js/client.mjs");
    let pushed = run_client(Path::new("node"), &[&script]).await;
    assert_eq!(
        pushed.len(),
        3,
        "a push config on each 1.0 binding: {pushed:?}"
    );
}
