//! What one self-delegated sub-task adds to a task beyond model time: a harness on loopback with
//! an instant model answers N tasks directly, then N tasks that each hand their work to a
//! sub-task on `self` (over HTTP, followed by a stand-in, answered back), one task at a time.
//! Prints the mean and median latency of each and the difference.
//!
//! `cargo run --release -p tiny-harness --example delegation_overhead -- [tasks]`

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Value, json};
use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;
use tiny_harness::base::model::{
    ChatMessage, Model, ModelError, ModelReply, ModelRequest, ToolCall,
};

const DEFAULT_TASKS: usize = 200;
const CHILD_GOAL: &str = "Answer the question in a clean context.";

/// Answers at once: a direct task answers; a delegating task spawns a child on `self`, waits,
/// then answers with the child's note; the child answers.
struct InstantModel;

#[async_trait]
impl Model for InstantModel {
    fn describe(&self) -> String {
        "instant".into()
    }
    fn context_window(&self) -> Option<usize> {
        None
    }
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let first = match request.messages.first() {
            Some(ChatMessage::User { content }) => content.as_str(),
            _ => "",
        };
        let answer = |text: &str| ModelReply {
            text: text.to_string(),
            ..ModelReply::default()
        };
        if first.contains(&format!("goal: {CHILD_GOAL}")) || first.contains("goal: direct") {
            return Ok(answer("42"));
        }
        let later = request.messages.iter().skip(1);
        let noted = later
            .clone()
            .any(|m| matches!(m, ChatMessage::User { content } if content.contains("Sub-task ")));
        let called = later.clone().any(|m| matches!(m, ChatMessage::Tool { .. }));
        Ok(match (noted, called) {
            (true, _) => answer("42, from the sub-task"),
            (false, true) => answer("waiting"),
            (false, false) => ModelReply {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "spawn".into(),
                    name: "spawn_subtask".into(),
                    arguments: json!({"name": "child", "goal": CHILD_GOAL, "agent": null})
                        .to_string(),
                }],
                ..ModelReply::default()
            },
        })
    }
}

async fn run(client: &reqwest::Client, url: &str, text: &str) -> Duration {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                    "parts": [{"text": text}]}}});
    let started = Instant::now();
    let reply: Value = client
        .post(url)
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .expect("request sent")
        .json()
        .await
        .expect("JSON reply");
    let state = &reply["result"]["task"]["status"]["state"];
    assert_eq!(state, "TASK_STATE_COMPLETED", "{reply}");
    started.elapsed()
}

fn summary(label: &str, mut times: Vec<Duration>) -> f64 {
    times.sort();
    let mean = times.iter().sum::<Duration>().as_secs_f64() * 1000.0 / times.len() as f64;
    let median = times[times.len() / 2].as_secs_f64() * 1000.0;
    let p95 = times[times.len() * 95 / 100].as_secs_f64() * 1000.0;
    println!("{label:<28} mean {mean:7.2} ms   median {median:7.2} ms   p95 {p95:7.2} ms");
    median
}

#[tokio::main]
async fn main() {
    let tasks: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(DEFAULT_TASKS);
    let dir = tempfile::tempdir().expect("temporary folder");
    let config_path = dir.path().join("config.toml");
    std::fs::write(
        &config_path,
        "[server]\nbind = \"127.0.0.1:0\"\nrate_limit_per_minute = 0\n[store]\npath = \"bench.db\"\n",
    )
    .expect("config written");
    let config = Config::load(&config_path).expect("config");
    let runtime = Runtime::build_with_model(config, Arc::new(InstantModel))
        .await
        .expect("runtime");
    let url = format!("http://{}/", runtime.local_addr());
    tokio::spawn(runtime.serve(std::future::pending()));
    let client = reqwest::Client::new();

    // Warm up both paths (connections, plugin instances, SQLite pages).
    for _ in 0..10 {
        run(&client, &url, "direct").await;
        run(&client, &url, "delegate").await;
    }
    let mut direct = Vec::with_capacity(tasks);
    let mut delegated = Vec::with_capacity(tasks);
    for _ in 0..tasks {
        direct.push(run(&client, &url, "direct").await);
        delegated.push(run(&client, &url, "delegate").await);
    }
    println!("{tasks} tasks each, one at a time, model time zero");
    let a = summary("answered directly", direct);
    let b = summary("with one self sub-task", delegated);
    println!("overhead of one self sub-task (median): {:.2} ms", b - a);
}
