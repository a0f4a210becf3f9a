//! The `harness` binary as a user runs it: configuration errors and their exit status, `check`,
//! and a crash test that kills the process mid-task (SIGKILL) and shows the task finishing after
//! a restart without repeating a recorded model call.

mod support {
    pub mod harness_process;
}

use std::path::Path;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::routing::post;
use serde_json::{Value, json};

use support::harness_process::HARNESS;

fn write_config(dir: &Path, text: &str) -> std::path::PathBuf {
    let path = dir.join("config.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn check(config_text: &str) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), config_text);
    let output = Command::new(HARNESS)
        .args(["check", "--config"])
        .arg(&path)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_missing_key_names_the_setting_and_exits_2() {
    let (code, _, stderr) = check("[[agents]]\nid = \"ledger\"\n");
    assert_eq!(code, 2);
    assert!(
        stderr.contains("agents[0].url: is required but missing"),
        "{stderr}"
    );
}

#[test]
fn a_wrong_typed_key_names_the_setting_and_exits_2() {
    let (code, _, stderr) = check("[limits]\nmax_turns = \"many\"\n");
    assert_eq!(code, 2);
    assert!(stderr.contains("limits.max_turns:"), "{stderr}");
}

#[test]
fn an_unknown_key_names_the_setting_and_exits_2() {
    let (code, _, stderr) = check("[context]\nturn_budget = 5\n");
    assert_eq!(code, 2);
    assert!(
        stderr.contains("context.turn_budget: unknown setting"),
        "{stderr}"
    );
}

#[test]
fn a_missing_file_is_a_configuration_error() {
    let output = Command::new(HARNESS)
        .args(["serve", "--config", "/nonexistent/config.toml"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("/nonexistent/config.toml"));
}

#[test]
fn check_prints_what_would_run() {
    let (code, stdout, _) = check(
        "[server]\nbind = \"127.0.0.1:9999\"\n[[agents]]\nid = \"ledger\"\nurl = \"http://127.0.0.1:9\"\n",
    );
    assert_eq!(code, 0);
    assert!(stdout.contains("listen:        127.0.0.1:9999"), "{stdout}");
    assert!(stdout.contains("model:         none"), "{stdout}");
    assert!(
        stdout.contains("agent:         ledger at http://127.0.0.1:9"),
        "{stdout}"
    );
}

#[test]
fn a_trusted_delegator_without_its_token_stops_serve_and_check_with_exit_2() {
    let text = "[server]\nbind = \"127.0.0.1:0\"\n[[server.trusted_delegators]]\nid = \"ledger\"\ntoken_env = \"CLI_PROCESS_UNSET_TOKEN\"\n[store]\npath = \"harness.db\"\n";
    let expected = "server.trusted_delegators[0].token_env: environment variable CLI_PROCESS_UNSET_TOKEN is not set or is empty";
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), text);
    let output = Command::new(HARNESS)
        .args(["serve", "--config"])
        .arg(&path)
        .env_remove("CLI_PROCESS_UNSET_TOKEN")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(expected), "{stderr}");
    let (code, _, stderr) = check(text);
    assert_eq!(code, 2);
    assert!(stderr.contains(expected), "{stderr}");
}

#[test]
fn version_prints_the_crate_version() {
    let output = Command::new(HARNESS).arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&output.stdout).contains(env!("CARGO_PKG_VERSION")));
}

/// An OpenAI-compatible stub. It answers by how many assistant turns the request holds: the
/// first call gets a tool call, the second call hangs (the harness is killed during it) unless
/// `answer_second` is set, and then gets the final answer.
#[derive(Clone, Default)]
struct Stub {
    seen: Arc<Mutex<Vec<usize>>>,
    answer_second: Arc<Mutex<bool>>,
}

async fn chat(State(stub): State<Stub>, Json(body): Json<Value>) -> Json<Value> {
    let assistant_turns = body["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "assistant").count())
        .unwrap_or(0);
    stub.seen.lock().unwrap().push(assistant_turns);
    if assistant_turns == 0 {
        return Json(
            json!({"choices": [{"message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call-1", "type": "function", "function": {"name": "create_plan",
            "arguments": "{\"steps\":[{\"name\":\"Add\",\"description\":\"add\"}]}"}}]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}}),
        );
    }
    if !*stub.answer_second.lock().unwrap() {
        std::future::pending::<()>().await;
    }
    Json(
        json!({"choices": [{"message": {"role": "assistant", "content": "resumed: 4"}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3}}),
    )
}

fn spawn_harness(config: &Path) -> (Child, String) {
    support::harness_process::serve(config)
}

async fn rpc(base: &str, method: &str, params: Value) -> Value {
    rpc_as(base, None, method, params).await
}

/// The token of the token caller `operator`, which a test configures to list its tasks (a
/// caller that proves no identity lists none).
const OPERATOR_TOKEN: &str = "cli-process-operator-token-aab3238922bcc25a";

/// [`rpc`], presenting `token` when given.
async fn rpc_as(base: &str, token: Option<&str>, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = reqwest::Client::new().post(base);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_killed_mid_turn_finishes_after_restart_without_repeating_a_recorded_call() {
    let stub = Stub::default();
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(chat))
        .with_state(stub.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let model_url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "[server]\nbind = \"127.0.0.1:0\"\n[model]\nprovider = \"openai\"\nbase_url = \"{model_url}\"\nmodel = \"stub\"\n[store]\npath = \"harness.db\"\n"
        ),
    );

    let (mut first, base) = spawn_harness(&config);
    let sent = rpc(
        &base,
        "SendMessage",
        json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "add 2 and 2"}]},
               "configuration": {"returnImmediately": true}}),
    )
    .await;
    let task_id = sent["result"]["task"]["id"].as_str().unwrap().to_string();
    // Wait until the second model call is in flight: the first call and its tool result are
    // journaled by then.
    tokio::time::timeout(Duration::from_secs(30), async {
        while stub.seen.lock().unwrap().len() < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the second model call started");
    first.kill().unwrap(); // SIGKILL: no shutdown path runs.
    first.wait().unwrap();

    *stub.answer_second.lock().unwrap() = true;
    let (mut second, base) = spawn_harness(&config);
    let task = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let got = rpc(&base, "GetTask", json!({"id": task_id})).await;
            if got["result"]["status"]["state"] == "TASK_STATE_COMPLETED" {
                return got["result"].clone();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the task completed after the restart");
    second.kill().unwrap();
    second.wait().unwrap();

    assert_eq!(
        task["status"]["message"]["parts"][0]["text"], "resumed: 4",
        "{task}"
    );
    let seen = stub.seen.lock().unwrap().clone();
    assert_eq!(
        seen.iter().filter(|turns| **turns == 0).count(),
        1,
        "the recorded first call was not repeated: {seen:?}"
    );
    assert_eq!(
        seen,
        [0, 1, 1],
        "only the unrecorded second call was made again"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_lets_an_in_flight_request_finish_then_exits_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("script.toml"),
        "[[reply]]\ntext = \"finished after the signal\"\ndelay_ms = 1500\n",
    )
    .unwrap();
    let config = write_config(
        dir.path(),
        "[server]\nbind = \"127.0.0.1:0\"\n[[server.callers]]\nid = \"operator\"\ntoken_env = \"OPERATOR_TOKEN\"\n[model]\nprovider = \"scripted\"\nscript = \"script.toml\"\n[store]\npath = \"harness.db\"\n",
    );
    let (mut child, base) =
        support::harness_process::serve_with_env(&config, &[("OPERATOR_TOKEN", OPERATOR_TOKEN)]);
    let request = tokio::spawn({
        let base = base.clone();
        async move {
            rpc_as(
                &base,
                Some(OPERATOR_TOKEN),
                "SendMessage",
                json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "work"}]}}),
            )
            .await
        }
    });
    // Wait until the task is being worked, then ask the process to stop.
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let listed = rpc_as(&base, Some(OPERATOR_TOKEN), "ListTasks", json!({})).await;
            if listed["result"]["tasks"][0]["status"]["state"] == "TASK_STATE_WORKING" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the task started");
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let response = tokio::time::timeout(Duration::from_secs(30), request)
        .await
        .expect("the in-flight request finished")
        .unwrap();
    assert_eq!(
        response["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{response}"
    );
    let exit = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert!(exit.success(), "the harness exited with {exit}");
}

#[test]
fn context_prints_the_static_prefix_and_tool_definitions_as_the_model_receives_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(
        dir.path(),
        "[[participants]]\nid = \"alice\"\nkind = \"human\"\nrole = \"admin\"\ndisplay_name = \"Alice\"\n[plugins]\ncache_dir = \"cache\"\n\
         [models.fast]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\
         [models.deep]\nprovider = \"anthropic\"\nmodel = \"claude-test\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    );
    let output = Command::new(HARNESS)
        .args(["context", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed = String::from_utf8(output.stdout).unwrap();
    let golden = include_str!("golden/context.txt");
    if printed != golden && std::env::var_os("UPDATE_GOLDEN").is_some() {
        assert!(
            std::env::var_os("CI").is_none(),
            "UPDATE_GOLDEN is refused when CI is set: a golden file changes only in review"
        );
        std::fs::write(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/context.txt"),
            &printed,
        )
        .unwrap();
        return;
    }
    assert_eq!(
        printed, golden,
        "run with UPDATE_GOLDEN=1 to accept a deliberate change"
    );
}
