//! The static prefix is built once, at start-up, and never again per turn or per task: a whole
//! harness on loopback works several tasks of several turns each while the process-wide count of
//! prefix builds stays where start-up left it. One test in this binary, so no other test's
//! harness builds a prefix while it counts.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;
use tiny_harness::base::model::{
    ChatMessage, Model, ModelError, ModelReply, ModelRequest, ToolCall,
};
use tiny_harness::work::context::StaticPrefix;

/// Attaches a plan on a task's first turn, answers on its second; keeps every request's
/// instructions.
#[derive(Default)]
struct PlanThenAnswer {
    instructions: Mutex<Vec<String>>,
}

#[async_trait]
impl Model for PlanThenAnswer {
    fn describe(&self) -> String {
        "plan then answer".into()
    }
    fn context_window(&self) -> Option<usize> {
        None
    }
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        self.instructions
            .lock()
            .unwrap()
            .push(request.instructions.to_string());
        let planned = request
            .messages
            .iter()
            .any(|m| matches!(m, ChatMessage::Tool { .. }));
        if planned {
            return Ok(ModelReply {
                text: "done".into(),
                ..ModelReply::default()
            });
        }
        Ok(ModelReply {
            tool_calls: vec![ToolCall {
                id: "plan".into(),
                name: "create_plan".into(),
                arguments: json!({"steps": [{"name": "Only", "description": "d"}]}).to_string(),
            }],
            ..ModelReply::default()
        })
    }
}

#[tokio::test]
async fn the_static_prefix_is_built_once_at_start_up_and_never_per_turn() {
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("config.toml");
    std::fs::write(
        &config_path,
        "[server]\nbind = \"127.0.0.1:0\"\nrate_limit_per_minute = 0\n[store]\npath = \"prefix.db\"\n",
    )
    .unwrap();
    let model = Arc::new(PlanThenAnswer::default());
    let before_start = StaticPrefix::builds();
    let runtime = Runtime::build_with_model(Config::load(&config_path).unwrap(), model.clone())
        .await
        .unwrap();
    let after_start = StaticPrefix::builds();
    assert_eq!(
        after_start,
        before_start + 1,
        "start-up builds the prefix once"
    );
    let url = format!("http://{}/", runtime.local_addr());
    tokio::spawn(runtime.serve(std::future::pending()));

    let client = reqwest::Client::new();
    for n in 0..3 {
        let body = json!({"jsonrpc": "2.0", "id": n, "method": "SendMessage", "params": {
            "message": {"messageId": format!("m{n}"), "role": "ROLE_USER",
                        "parts": [{"text": "plan, then answer"}]}}});
        let reply: Value = client
            .post(&url)
            .header("A2A-Version", "1.0")
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            reply["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{reply}"
        );
    }

    let instructions = model.instructions.lock().unwrap().clone();
    assert_eq!(instructions.len(), 6, "three tasks of two turns each");
    assert!(instructions.iter().all(|i| i == &instructions[0]));
    assert_eq!(
        StaticPrefix::builds(),
        after_start,
        "no task and no turn built the prefix again"
    );
}
