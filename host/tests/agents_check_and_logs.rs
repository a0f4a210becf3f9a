//! The operator's view, from the `harness` binary: `check` says which agents would be registered
//! and why the others would not; `serve` logs one WARNING per refused agent, one per cut field,
//! and one INFO line naming the ids in the roster.

mod agents_support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use agents_support::{Behaviour, CardServer, agents_config, card_json, closed_port_url};

const HARNESS: &str = env!("CARGO_BIN_EXE_harness");

/// Card servers in every state `check` and `serve` report on, and the `[[agents]]` listing them.
struct Agents {
    config: String,
    _servers: Vec<CardServer>,
}

async fn agents() -> Agents {
    let good =
        CardServer::card(|url| card_json(url, "Good", "Fine.", &[("One", "1"), ("Two", "2")]))
            .await;
    let secured = CardServer::card(|url| {
        let mut card = card_json(url, "Secured", "Needs a token.", &[]);
        card["securitySchemes"] =
            json!({"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}});
        card
    })
    .await;
    let slow = CardServer::start(Behaviour::Slow(
        Duration::from_secs(30),
        std::sync::Arc::new(|url: &str| card_json(url, "Slow", "Late.", &[])),
    ))
    .await;
    let big = CardServer::card(|url| {
        let skills: Vec<(String, String)> =
            (0..20).map(|i| (format!("S{i}"), String::new())).collect();
        let skills: Vec<(&str, &str)> = skills
            .iter()
            .map(|(n, d)| (n.as_str(), d.as_str()))
            .collect();
        card_json(url, "Big", &"B".repeat(1_000_000), &skills)
    })
    .await;
    let down = closed_port_url().await;
    let config = format!(
        "[roster]\ncard_timeout_secs = 1\n{}",
        agents_config(&[
            ("good", &good.url),
            ("secured", &secured.url),
            ("slow", &slow.url),
            ("big", &big.url),
            ("down", &down),
        ])
    );
    Agents {
        config,
        _servers: vec![good, secured, slow, big],
    }
}

fn write_config(dir: &tempfile::TempDir, text: &str) -> std::path::PathBuf {
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        format!("[server]\nbind = \"127.0.0.1:0\"\n[store]\npath = \"harness.db\"\n{text}"),
    )
    .unwrap();
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn check_lists_which_agents_would_be_registered_and_why_not() {
    let agents = agents().await;
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(&dir, &agents.config);
    let output = tokio::task::spawn_blocking(move || {
        Command::new(HARNESS)
            .args(["check", "--config"])
            .arg(&path)
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let line = |id: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("agent:         {id} at ")))
            .unwrap_or_else(|| panic!("no line for {id}: {stdout}"))
            .to_string()
    };
    assert!(line("good").ends_with(": registered as \"Good\" with 2 skills"));
    assert!(line("big").ends_with(": registered as \"Big\" with 20 skills"));
    assert!(line("secured").ends_with(
        ": not registered: the card requires authentication this harness is not configured for: scheme \"bearer\" (HTTP Bearer) needs a token: set agents[1].token_env"
    ));
    assert!(
        line("slow").ends_with(": not registered: no card within 1 s (roster.card_timeout_secs)")
    );
    assert!(
        line("down").contains(": not registered: cannot reach "),
        "{}",
        line("down")
    );
    assert!(stdout.contains("card:          tiny-harness (self: this harness)"));
}

/// Runs `harness serve` until it listens, then stops it; returns what it logged.
fn serve_log(path: &std::path::Path) -> String {
    let mut child = Command::new(HARNESS)
        .args(["serve", "--config"])
        .arg(path)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut log = String::new();
    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
        log.push_str(&line);
        log.push('\n');
        if line.contains("listening on ") {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    log
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_logs_each_refusal_and_each_cut_once_and_the_roster_ids_at_info() {
    let agents = agents().await;
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(&dir, &agents.config);
    let log = tokio::task::spawn_blocking(move || serve_log(&path))
        .await
        .unwrap();
    let lines_with = |needles: &[&str]| {
        log.lines()
            .filter(|l| needles.iter().all(|n| l.contains(n)))
            .count()
    };
    for id in ["secured", "slow", "down"] {
        assert_eq!(
            lines_with(&["WARN", "agents: not registered: ", &format!("agent={id}")]),
            1,
            "{id}: {log}"
        );
    }
    assert_eq!(lines_with(&["agents: not registered"]), 3, "{log}");
    assert_eq!(
        lines_with(&[
            "WARN",
            "agents: card field cut to 512 characters agent=big field=description"
        ]),
        1,
        "{log}"
    );
    assert_eq!(
        lines_with(&[
            "WARN",
            "agents: card lists 20 skills; only the first 8 are shown, 12 dropped",
            "agent=big"
        ]),
        1,
        "{log}"
    );
    assert_eq!(lines_with(&["card field cut"]), 1, "{log}");
    assert_eq!(
        lines_with(&["INFO", "agents: roster lists self, big, good"]),
        1,
        "{log}"
    );
    assert!(!log.contains(&"B".repeat(100)), "card text was logged");
}
