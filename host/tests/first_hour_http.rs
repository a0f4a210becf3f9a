//! The first hour with a served harness, over real HTTP on loopback and with its real log: a
//! repeated `(sender, messageId)` returns its task and says so at INFO, the `listening on` line
//! names the store and the plugins folder, and `bind = "localhost:0"` serves on loopback.

mod support {
    pub mod captured_logs;
    pub mod served;
}

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::captured_logs::CapturedLogs;
use support::served::Served;
use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;

/// A harness from `server` (the `[server]` table's lines) with its store in `dir`, no model.
async fn runtime(dir: &tempfile::TempDir, server: &str) -> Runtime {
    let text = format!("[server]\n{server}\n[store]\npath = \"harness.db\"\n");
    let path = dir.path().join("config.toml");
    std::fs::write(&path, text).unwrap();
    let config = Config::load(&path).unwrap();
    Runtime::build_with_env(config, |_| None).await.unwrap()
}

async fn send(base_url: &str, message_id: &str) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "What is 2+2?"}]}}});
    let response = reqwest::Client::new()
        .post(format!("{base_url}/"))
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.unwrap()
}

#[tokio::test]
async fn a_repeated_message_id_returns_the_task_it_created_and_says_so_at_info() {
    let logs = CapturedLogs::process_wide();
    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(runtime(&dir, "bind = \"127.0.0.1:0\"").await);
    let first = send(&served.base_url, "first-hour-m1").await;
    let task = first["result"]["task"]["id"].as_str().unwrap().to_string();
    let again = send(&served.base_url, "first-hour-m1").await;
    assert_eq!(again["result"]["task"]["id"], task.as_str(), "{again}");
    let fresh = send(&served.base_url, "first-hour-m2").await;
    assert_ne!(fresh["result"]["task"]["id"], task.as_str());
    served.stop().await;

    let text = logs.text();
    let said: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("messageId already created a task"))
        .filter(|line| line.contains(&format!("task={task}")))
        .collect();
    assert_eq!(said.len(), 1, "once, for the repeat: {text}");
    assert!(said[0].contains(" INFO "), "{}", said[0]);
    assert!(said[0].contains("message_id=first-hour-m1"), "{}", said[0]);
}

#[tokio::test]
async fn the_listening_line_names_the_store_and_the_plugins_folder() {
    let logs = CapturedLogs::process_wide();
    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(runtime(&dir, "bind = \"127.0.0.1:0\"").await);
    let store = dir.path().join("harness.db");
    let plugins = dir.path().join("plugins");
    let expected_address = format!("listening on {} ", served.base_url);
    served.stop().await;
    let text = logs.text();
    let line = text
        .lines()
        .find(|line| line.contains(&expected_address))
        .unwrap_or_else(|| panic!("no line with {expected_address:?}: {text}"));
    assert!(
        line.contains(&format!("store: {};", store.display())),
        "{line}"
    );
    assert!(
        line.contains(&format!(
            "plugins folder: {} (absent: builtin plugin only);",
            plugins.display()
        )),
        "{line}"
    );
}

#[tokio::test]
async fn bind_localhost_serves_on_the_loopback_address_and_serves_anonymous_callers() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(&dir, "bind = \"localhost:0\"").await;
    assert_eq!(runtime.local_addr().ip().to_string(), "127.0.0.1");
    assert!(
        runtime.config.server.anonymous_allowed(),
        "loopback default"
    );
    let served = Served::start(runtime);
    let answer = send(&served.base_url, "first-hour-localhost").await;
    assert!(answer["result"]["task"]["id"].is_string(), "{answer}");
    served.stop().await;
}
