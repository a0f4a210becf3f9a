//! A task's story, told by a real `harness serve` process: progress notes on the event stream
//! while it works (`SendStreamingMessage` and `SubscribeToTask`), and a log in `[log] format =
//! "json"` whose every line is one JSON object, where the task's creation, its model and tool
//! calls and its end name its id, and no prompt text appears. The text format writes no colour
//! codes to a pipe.

mod support {
    pub mod harness_process;
}

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use support::harness_process::{HARNESS, STARTUP_TIMEOUT};
use tiny_harness::base::protocol::requests::{SendMessageConfiguration, SendMessageRequest};
use tiny_harness::base::protocol::types::{Message, Part, Role, StreamResponse};
use tiny_harness::work::agents::client::A2aClient;

/// Text the user sends, which must never reach the log.
const PROMPT_CANARY: &str = "prompt-canary-7f3a: add two and two";

/// A script of two replies: a plan (an in-process tool call), then the answer. The first reply
/// takes a while, so that a follower that comes late still sees the rest of the work.
const SCRIPT: &str = r#"
[[reply]]
text = "Let me plan."
delay_ms = 800
usage = { input_tokens = 120, output_tokens = 7 }
[[reply.tool_calls]]
name = "create_plan"
arguments = { steps = [{ name = "Add", description = "add the numbers" }] }

[[reply]]
text = "2 + 2 = 4"
usage = { input_tokens = 150, output_tokens = 5 }
"#;

/// A harness process and every line it has written to stderr.
struct Harness {
    child: Child,
    url: String,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(dir: &Path, format: &str) -> Harness {
    std::fs::write(dir.join("script.toml"), SCRIPT).unwrap();
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nbind = \"127.0.0.1:0\"\n[model]\nprovider = \"scripted\"\nscript = \"script.toml\"\n\
             [store]\npath = \"harness.db\"\n[log]\nformat = \"{format}\"\n"
        ),
    )
    .unwrap();
    let mut child = Command::new(HARNESS)
        .args(["serve", "--config"])
        .arg(&config)
        .env("RUST_LOG", "info,tiny_harness=debug")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn({
        let lines = lines.clone();
        move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("listening on ").nth(1) {
                    let url: String = rest
                        .chars()
                        .take_while(|c| !c.is_whitespace() && *c != '"')
                        .collect();
                    let _ = tx.send(url);
                }
                lines.lock().unwrap().push(line);
            }
        }
    });
    let url = rx
        .recv_timeout(STARTUP_TIMEOUT)
        .expect("the harness logged its address");
    Harness { child, url, lines }
}

fn request(message_id: &str, return_immediately: bool) -> SendMessageRequest {
    SendMessageRequest {
        tenant: String::new(),
        message: Message {
            message_id: message_id.to_string(),
            role: Role::User,
            parts: vec![Part::text(PROMPT_CANARY)],
            ..Message::default()
        },
        configuration: Some(SendMessageConfiguration {
            return_immediately,
            ..SendMessageConfiguration::default()
        }),
        metadata: None,
    }
}

/// The progress notes among a stream's events, in order, and the states the stream saw.
async fn read_stream(
    mut events: tiny_harness::work::agents::client::EventStream,
) -> (Vec<String>, Vec<String>, String) {
    let mut notes = Vec::new();
    let mut states = Vec::new();
    let mut task_id = String::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(event) = events.next().await {
            match event.unwrap() {
                StreamResponse::Task(task) => task_id = task.id,
                StreamResponse::StatusUpdate(update) => {
                    task_id = update.task_id.clone();
                    states.push(update.status.state.wire_name().to_string());
                    if let Some(message) = &update.status.message
                        && message.metadata.as_ref().and_then(|m| m.get("progress"))
                            == Some(&Value::Bool(true))
                    {
                        notes.push(message.text());
                    }
                }
                _ => {}
            }
        }
    })
    .await
    .expect("the stream ended within 30 s");
    (notes, states, task_id)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_streamed_task_tells_its_progress_and_its_json_log_tells_its_story() {
    let dir = tempfile::tempdir().unwrap();
    let harness = start(dir.path(), "json");
    let client = A2aClient::new(harness.url.clone()).unwrap();

    let stream = client
        .send_streaming_message(request("story-1", false))
        .await
        .unwrap();
    let (notes, states, task_id) = read_stream(stream).await;

    assert_eq!(
        notes,
        [
            "Calling the model",
            "Running tool `create_plan`",
            "Calling the model"
        ],
        "{states:?}"
    );
    assert_eq!(
        states.last().map(String::as_str),
        Some("TASK_STATE_COMPLETED")
    );
    let task = client.get_task(&task_id, None).await.unwrap();
    assert!(task.status.message.unwrap().text().contains("2 + 2 = 4"));

    // The story lines are written as they happen; the end line is the last one to wait for.
    let story = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let lines = harness.lines.lock().unwrap().clone();
            if lines.iter().any(|l| l.contains("task ended")) {
                return lines;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the task's end was logged");
    let parsed: Vec<Value> = story
        .iter()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let of_task = |message: &str| -> Vec<&Value> {
        parsed
            .iter()
            .filter(|l| l["fields"]["message"] == message && l["fields"]["task"] == task_id)
            .collect()
    };
    let created = of_task("task created");
    assert_eq!(created.len(), 1, "{story:#?}");
    assert_eq!(created[0]["level"], "INFO");
    assert_eq!(created[0]["fields"]["creator"], "user");
    assert_eq!(created[0]["fields"]["context"], task.context_id);
    let models = of_task("model call");
    assert_eq!(models.len(), 2, "{story:#?}");
    assert_eq!(models[0]["level"], "DEBUG");
    assert_eq!(models[0]["fields"]["input_tokens"], 120);
    let tools = of_task("tool call");
    assert_eq!(tools.len(), 1, "{story:#?}");
    assert_eq!(tools[0]["fields"]["tool"], "create_plan");
    assert_eq!(tools[0]["fields"]["outcome"], "ok");
    let ended = of_task("task ended");
    assert_eq!(ended.len(), 1, "{story:#?}");
    assert_eq!(ended[0]["level"], "INFO");
    assert_eq!(ended[0]["fields"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(ended[0]["fields"]["turns"], 2);
    assert_eq!(ended[0]["fields"]["input_tokens"], 270);
    assert!(ended[0]["fields"]["duration_ms"].as_u64().unwrap() >= 800);
    for line in &story {
        assert!(
            !line.contains("prompt-canary"),
            "prompt text in the log: {line}"
        );
        assert!(!line.contains('\u{1b}'), "a colour code in the log: {line}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_follower_that_subscribes_while_the_task_works_gets_the_notes_from_then_on() {
    let dir = tempfile::tempdir().unwrap();
    let harness = start(dir.path(), "text");
    let client = A2aClient::new(harness.url.clone()).unwrap();

    let created = client.send_message(request("story-2", true)).await.unwrap();
    let task_id = match created {
        tiny_harness::base::protocol::types::SendMessageResponse::Task(task) => task.id,
        other => panic!("{other:?}"),
    };
    // The first model call takes 800 ms: the subscription starts before it ends.
    let stream = client.subscribe(&task_id).await.unwrap();
    let (notes, states, _) = read_stream(stream).await;

    // Whether it came before the first model call's note depends on the race with the loop's
    // start; what follows is told in order either way.
    let from_tool: Vec<&str> = notes
        .iter()
        .map(String::as_str)
        .skip_while(|n| *n == "Calling the model")
        .collect();
    assert_eq!(
        from_tool,
        ["Running tool `create_plan`", "Calling the model"],
        "{notes:?} {states:?}"
    );
    assert!(notes.len() <= 3, "{notes:?}");
    assert_eq!(
        states.last().map(String::as_str),
        Some("TASK_STATE_COMPLETED")
    );
    // The text format on a pipe: no colour codes.
    let lines = harness.lines.lock().unwrap().clone();
    assert!(
        lines.iter().any(|l| l.contains("task created")),
        "{lines:#?}"
    );
    assert!(lines.iter().all(|l| !l.contains('\u{1b}')), "{lines:#?}");
}
