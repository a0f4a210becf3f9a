//! The first hour with the `harness` binary, run as a user runs it: `check` fails exactly where
//! `serve` would (every variable a configuration names), `check --probe` calls the model, a
//! command line clap cannot parse exits 64 where a configuration error exits 2, and a TOML
//! syntax error names its line and column.

mod support {
    pub mod harness_process;
}

use std::process::{Command, Output, Stdio};
use std::time::Duration;

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




