//! What a task costs on each engine beyond model time: a harness on loopback with a model that
//! answers at once, tasks sent one at a time with a blocking `SendMessage` over HTTP, and the
//! median and p99 of their latency — for a one-turn task (one model call) and a three-step task
//! (a model call, a tool call, a model call). The embedded engine always; the Temporal engine too
//! in a build with `--features temporal` when `TINY_HARNESS_TEMPORAL_ADDRESS` names a server.
//!
//! `cargo run --release -p tiny-harness --features temporal --example engine_overhead -- [tasks]`

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

/// Answers at once: a plan first when the message asks for one, else the answer.
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
        let wants_plan = request
            .messages
            .iter()
            .any(|m| matches!(m, ChatMessage::User { content } if content.contains("with a plan")));
        let planned = request
            .messages
            .iter()
            .any(|m| matches!(m, ChatMessage::Tool { .. }));
        if wants_plan && !planned {
            return Ok(ModelReply {
                tool_calls: vec![ToolCall {
                    id: "plan".into(),
                    name: "create_plan".into(),
                    arguments: json!({"steps": [{"name": "Answer", "description": "answer"}]})
                        .to_string(),
                }],
                ..ModelReply::default()
            });
        }
        Ok(ModelReply {
            text: "42".into(),
            ..ModelReply::default()
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

fn summary(label: &str, mut times: Vec<Duration>) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let median = ms(times[times.len() / 2]);
    let p99 = ms(times[(times.len() * 99 / 100).min(times.len() - 1)]);
    println!("{label:<40} median {median:8.2} ms   p99 {p99:8.2} ms");
}

async fn measure(engine: &str, engine_config: &str, tasks: usize) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let config_path = dir.path().join("config.toml");
    std::fs::write(
        &config_path,
        format!(
            "[server]\nbind = \"127.0.0.1:0\"\nrate_limit_per_minute = 0\n[store]\npath = \"bench.db\"\n{engine_config}"
        ),
    )
    .expect("config written");
    let config = Config::load(&config_path).expect("config");
    let runtime = Runtime::build_with_model(config, Arc::new(InstantModel))
        .await
        .expect("runtime");
    let url = format!("http://{}/", runtime.local_addr());
    tokio::spawn(runtime.serve(std::future::pending()));
    let client = reqwest::Client::new();
    for _ in 0..10 {
        run(&client, &url, "warm up").await;
        run(&client, &url, "warm up with a plan").await;
    }
    let mut one_turn = Vec::with_capacity(tasks);
    let mut three_steps = Vec::with_capacity(tasks);
    for _ in 0..tasks {
        one_turn.push(run(&client, &url, "answer").await);
        three_steps.push(run(&client, &url, "answer with a plan").await);
    }
    summary(&format!("{engine}: one model call"), one_turn);
    summary(
        &format!("{engine}: model call, tool call, model call"),
        three_steps,
    );
}

#[tokio::main]
async fn main() {
    let tasks: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(DEFAULT_TASKS);
    println!("{tasks} tasks of each kind, one at a time, model time zero");
    measure("embedded", "", tasks).await;
    match std::env::var("TINY_HARNESS_TEMPORAL_ADDRESS") {
        Ok(address) if cfg!(feature = "temporal") => {
            let config = format!(
                "[engine]\nkind = \"temporal\"\n[engine.temporal]\naddress = \"{address}\"\ntask_queue = \"overhead-{}\"\n",
                uuid::Uuid::new_v4()
            );
            measure("temporal", &config, tasks).await;
        }
        _ => println!(
            "temporal: not measured (build with --features temporal and set TINY_HARNESS_TEMPORAL_ADDRESS)"
        ),
    }
}
