//! The first hour with the `harness` binary, run as a user runs it: `check` fails exactly where
//! `serve` would (every variable a configuration names), `check --probe` calls the model, a
//! command line clap cannot parse exits 64 where a configuration error exits 2, and a TOML
//! syntax error names its line and column.

mod support {
    pub mod harness_process;
}

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use axum::Json;
use axum::routing::post;
use serde_json::{Value, json};
use support::harness_process::HARNESS;

/// The variables these tests name; each is removed from the harness's environment.
const UNSET: [&str; 4] = [
    "FIRST_HOUR_AGENT_TOKEN",
    "FIRST_HOUR_AGENT_KEY",
    "FIRST_HOUR_CLIENT_SECRET",
    "FIRST_HOUR_CALLER_TOKEN",
];

/// How long one run may take: `serve` that should have refused its configuration would
/// otherwise serve until killed. A guard against a hang, not a measure.
const RUN_GUARD: Duration = Duration::from_secs(60);

fn run(args: &[&str], config_text: Option<&str>) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(HARNESS);
    command.args(args);
    if let Some(text) = config_text {
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).unwrap();
        command.arg("--config").arg(&path);
    }
    for name in UNSET.iter().chain(&["OPENAI_API_KEY", "OPENAI_BASE_URL"]) {
        command.env_remove(name);
    }
    let child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let Ok(output) = rx.recv_timeout(RUN_GUARD) else {
        let _ = Command::new("kill").arg(pid.to_string()).status();
        panic!("harness {args:?} still ran after {RUN_GUARD:?}");
    };
    let Output {
        status,
        stdout,
        stderr,
    } = output.unwrap();
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

/// The `error: ...` line a run ended with.
fn error_line(stderr: &str) -> &str {
    stderr
        .lines()
        .rev()
        .find(|line| line.starts_with("error: "))
        .unwrap_or("")
}

#[test]
fn check_fails_exactly_where_serve_does_for_every_variable_a_configuration_names() {
    let base = "[server]\nbind = \"127.0.0.1:0\"\n[store]\npath = \"harness.db\"\n";
    let cases = [
        (
            "[[agents]]\nid = \"ledger\"\nurl = \"http://127.0.0.1:9\"\ntoken_env = \"FIRST_HOUR_AGENT_TOKEN\"\n",
            "agents[0].token_env: environment variable FIRST_HOUR_AGENT_TOKEN is not set",
        ),
        (
            "[[agents]]\nid = \"ledger\"\nurl = \"http://127.0.0.1:9\"\napi_key_env = \"FIRST_HOUR_AGENT_KEY\"\n",
            "agents[0].api_key_env: environment variable FIRST_HOUR_AGENT_KEY is not set",
        ),
        (
            "[[agents]]\nid = \"ledger\"\nurl = \"http://127.0.0.1:9\"\n[agents.oauth2]\ntoken_url = \"http://127.0.0.1:9/token\"\nclient_id = \"desk\"\nclient_secret_env = \"FIRST_HOUR_CLIENT_SECRET\"\n",
            "agents[0].oauth2.client_secret_env: environment variable FIRST_HOUR_CLIENT_SECRET is not set",
        ),
        (
            "[[server.callers]]\nid = \"alice\"\ntoken_env = \"FIRST_HOUR_CALLER_TOKEN\"\n",
            "server.callers[0].token_env: environment variable FIRST_HOUR_CALLER_TOKEN is not set",
        ),
    ];
    for (extra, expected) in cases {
        // `[[server.callers]]` belongs under `[server]`; the agents after `[store]` are fine.
        let text = if extra.starts_with("[[server.") {
            base.replacen("[store]", &format!("{extra}[store]"), 1)
        } else {
            format!("{base}{extra}")
        };
        let (serve_code, _, serve_err) = run(&["serve"], Some(&text));
        let (check_code, check_out, check_err) = run(&["check"], Some(&text));
        assert_eq!(serve_code, 2, "{serve_err}");
        assert_eq!(
            check_code, 2,
            "check passed what serve refuses: {check_out}"
        );
        assert!(error_line(&serve_err).contains(expected), "{serve_err}");
        assert_eq!(
            error_line(&check_err),
            error_line(&serve_err),
            "the same error, word for word"
        );
    }
}

/// An OpenAI-compatible endpoint that answers every call with "OK" and counts them.
async fn stub_model() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = calls.clone();
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post(move |Json(body): Json<Value>| {
            let seen = seen.clone();
            async move {
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                assert_eq!(body["messages"].as_array().map(Vec::len), Some(2), "{body}");
                Json(
                    json!({"choices": [{"message": {"role": "assistant", "content": "OK"}}],
                    "usage": {"prompt_tokens": 21, "completion_tokens": 1}}),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, calls)
}

#[tokio::test]
async fn check_probe_calls_each_model_once_and_exits_1_when_one_does_not_answer() {
    let (url, calls) = stub_model().await;
    let text = format!(
        "[model]\nprovider = \"openai\"\nbase_url = \"{url}\"\nmodel = \"stub\"\n\
         [models.down]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"gone\"\nmax_retries = 0\n"
    );
    let (code, stdout, stderr) =
        tokio::task::spawn_blocking(move || run(&["check", "--probe"], Some(&text)))
            .await
            .unwrap();
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    let probe_lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("probe ")).collect();
    assert_eq!(probe_lines.len(), 2, "{stdout}");
    assert!(
        probe_lines[0].starts_with("probe model: ok, answered in ")
            && probe_lines[0].ends_with(" ms (21 input, 1 output tokens)"),
        "{stdout}"
    );
    assert!(
        probe_lines[1].starts_with("probe models.down: FAILED after "),
        "{stdout}"
    );
    assert!(
        error_line(&stderr) == "error: a model did not answer the probe",
        "{stderr}"
    );

    let (url, _) = stub_model().await;
    let text = format!("[model]\nprovider = \"openai\"\nbase_url = \"{url}\"\nmodel = \"stub\"\n");
    let (code, stdout, stderr) =
        tokio::task::spawn_blocking(move || run(&["check", "--probe"], Some(&text)))
            .await
            .unwrap();
    assert_eq!(code, 0, "{stdout}{stderr}");
    let (code, stdout, _) = {
        let text =
            format!("[model]\nprovider = \"openai\"\nbase_url = \"{url}\"\nmodel = \"stub\"\n");
        tokio::task::spawn_blocking(move || run(&["check"], Some(&text)))
            .await
            .unwrap()
    };
    assert_eq!(code, 0);
    assert!(
        !stdout.contains("probe "),
        "no call without --probe: {stdout}"
    );
}

#[test]
fn a_command_line_clap_cannot_parse_exits_64_and_a_configuration_error_exits_2() {
    let (code, _, stderr) = run(&["serv"], None);
    assert_eq!(code, 64, "{stderr}");
    assert!(stderr.contains("unrecognized subcommand"), "{stderr}");
    let (code, _, _) = run(&["check", "--frobnicate"], None);
    assert_eq!(code, 64);
    let (code, _, _) = run(&[], None);
    assert_eq!(code, 64, "no subcommand is a usage error");
    let (code, stdout, _) = run(&["--help"], None);
    assert_eq!(code, 0, "help is no error");
    assert!(stdout.contains("serve"), "{stdout}");
    let (code, _, stderr) = run(&["check"], Some("[limits]\nmax_turns = \"many\"\n"));
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn a_toml_syntax_error_names_its_line_and_column_and_exits_2() {
    let (code, _, stderr) = run(
        &["check"],
        Some("[server]\nbind = \"127.0.0.1:0\"\n\n[model]\nprovider = openai\n"),
    );
    assert_eq!(code, 2);
    let line = error_line(&stderr);
    assert!(
        line.contains("config.toml:5:12: TOML syntax error: "),
        "{stderr}"
    );
}
