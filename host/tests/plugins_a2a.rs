//! Plugins end to end over A2A: a plugin's tool called by the model through the real server,
//! engine and wasmtime; failing plugins become `[plugin.failed]` results while another task on
//! the same server completes.

mod support {
    pub mod fixtures;
}

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use support::fixtures;
use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;
use tiny_harness::base::model::{
    ChatMessage, Model, ModelError, ModelReply, ModelRequest, ToolCall,
};

/// Calls the zoo tool named in the task's text (`zoo_spin`, `zoo_echo`, …), then answers with
/// what the tool returned.
#[derive(Default)]
struct ZooModel {
    requests: Mutex<Vec<ModelRequest>>,
}

#[async_trait]
impl Model for ZooModel {
    fn describe(&self) -> String {
        "zoo model".into()
    }
    fn context_window(&self) -> Option<usize> {
        None
    }
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        self.requests.lock().unwrap().push(request.clone());
        // The first turn: no tool has answered yet.
        if !request
            .messages
            .iter()
            .any(|m| matches!(m, ChatMessage::Tool { .. }))
        {
            // The task's text is its goal, which the model reads once: in the task section.
            let Some(content) = goal_of(request) else {
                return Err(ModelError::InvalidResponse(
                    "no goal in the task section".into(),
                ));
            };
            let content = content.as_str();
            return Ok(ModelReply {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "call-1".into(),
                    name: content.trim().to_string(),
                    arguments: "{}".into(),
                }],
                usage: Default::default(),
                ..ModelReply::default()
            });
        }
        let result = request
            .messages
            .iter()
            .rev()
            .find_map(|m| match m {
                ChatMessage::Tool { content, .. } => Some(content.clone()),
                _ => None,
            })
            .unwrap_or_default();
        Ok(ModelReply {
            text: format!("tool said: {result}"),
            ..ModelReply::default()
        })
    }
}

async fn start(
    model: Arc<ZooModel>,
) -> (String, tempfile::TempDir, tokio::sync::oneshot::Sender<()>) {
    let dir = fixtures::folder(&[("zoo", "zoo.wasm")]);
    let config_path = dir.path().join("config.toml");
    std::fs::write(
        &config_path,
        "[server]\nbind = \"127.0.0.1:0\"\n[store]\npath = \"h.db\"\n[plugins]\ndir = \".\"\ncall_timeout_ms = 600000\n",
    )
    .unwrap();
    let runtime = Runtime::build_with_model(Config::load(&config_path).unwrap(), model)
        .await
        .unwrap();
    let url = format!("http://{}/", runtime.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(runtime.serve(async {
        let _ = stopped.await;
    }));
    (url, dir, stop)
}

async fn send(url: &str, text: &str, return_immediately: bool) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                    "parts": [{"text": text}]},
        "configuration": {"returnImmediately": return_immediately}}});
    let response: Value = reqwest::Client::new()
        .post(url)
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    response["result"]["task"].clone()
}

async fn get(url: &str, id: &str) -> Value {
    rpc(url, "GetTask", json!({"id": id})).await
}

/// A JSON-RPC call; its result.
async fn rpc(url: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let response: Value = reqwest::Client::new()
        .post(url)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    response["result"].clone()
}

fn answer(task: &Value) -> String {
    task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_tool_is_called_by_the_model_end_to_end_over_a2a() {
    let model = Arc::new(ZooModel::default());
    let (url, _dir, _stop) = start(model.clone()).await;
    let task = send(&url, "zoo_echo", false).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    assert!(answer(&task).contains("echo: {}"), "{}", answer(&task));
    let requests = model.requests.lock().unwrap().clone();
    assert!(requests[0].tools.iter().any(|t| t.name == "zoo_echo"));
    let ChatMessage::Tool { content, .. } = requests[1].messages.last().unwrap() else {
        panic!("the tool result is not the last message");
    };
    assert!(
        content.starts_with("<untrusted source=\"tool\">"),
        "{content}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_plugins_give_plugin_failed_while_another_task_completes() {
    let model = Arc::new(ZooModel::default());
    let (url, _dir, _stop) = start(model.clone()).await;
    let spinning = send(&url, "zoo_spin", true).await;
    let spin_id = spinning["id"].as_str().unwrap().to_string();
    // The model has asked for the spin: the call is under way. Its deadline (the longest there
    // is) is far off however busy the machine; the test ends it by canceling its task.
    let guard = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while model.requests.lock().unwrap().is_empty() {
        assert!(
            std::time::Instant::now() < guard,
            "the model was never asked"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    // While the spinning call runs, a normal task on the same server completes.
    let normal = send(&url, "zoo_echo", false).await;
    assert_eq!(normal["status"]["state"], "TASK_STATE_COMPLETED");
    let meanwhile = get(&url, &spin_id).await;
    assert_eq!(
        meanwhile["status"]["state"], "TASK_STATE_WORKING",
        "the normal task finished while the plugin was still spinning"
    );
    for (tool, reason) in [
        ("zoo_trap", "it trapped"),
        ("zoo_hog", "more than 64 MiB of memory"),
    ] {
        let task = send(&url, tool, false).await;
        let text = answer(&task);
        assert!(
            text.contains(&format!(
                "[plugin.failed] plugin zoo.wasm failed in {tool}: "
            )),
            "{text}"
        );
        assert!(text.contains(reason), "{text}");
    }
    let canceled = rpc(&url, "CancelTask", json!({"id": spin_id})).await;
    assert_eq!(
        canceled["status"]["state"], "TASK_STATE_CANCELED",
        "{canceled}"
    );
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
