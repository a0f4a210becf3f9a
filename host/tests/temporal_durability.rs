//! Durability the Temporal engine gives, with real `harness serve` processes built with the
//! `temporal` feature, one Temporal dev server (`TINY_HARNESS_TEMPORAL_ADDRESS`) and one SQLite
//! store they share: a harness killed with SIGKILL in the middle of a model call leaves its task
//! to finish on another harness serving the same task queue, or on itself once it is started
//! again; no model call whose result was recorded is made twice (the stub model counts them).
#![cfg(feature = "temporal")]

mod support {
    pub mod harness_process;
}

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::State;
use axum::routing::post;
use serde_json::{Value, json};
use support::harness_process::serve_with_env;
use tiny_harness::base::protocol::requests::{SendMessageConfiguration, SendMessageRequest};
use tiny_harness::base::protocol::types::{Message, Part, Role, SendMessageResponse, TaskState};
use tiny_harness::work::agents::client::A2aClient;

const TEMPORAL_ADDRESS_VAR: &str = "TINY_HARNESS_TEMPORAL_ADDRESS";
/// How long the first call of the second turn takes: long enough to kill its harness in it.
const SLOW_CALL: Duration = Duration::from_secs(5);

fn temporal_address() -> String {
    match std::env::var(TEMPORAL_ADDRESS_VAR) {
        Ok(address) if !address.is_empty() => address,
        _ => panic!(
            "{TEMPORAL_ADDRESS_VAR} is not set: start a dev server with scripts/temporal-dev start \
             (these tests run only in a build with --features temporal)"
        ),
    }
}

/// Model calls the stub received, by turn (the number of assistant messages in the request).
#[derive(Default)]
struct Calls {
    by_turn: Mutex<HashMap<usize, usize>>,
}

impl Calls {
    fn count(&self, turn: usize) -> usize {
        self.by_turn
            .lock()
            .unwrap()
            .get(&turn)
            .copied()
            .unwrap_or(0)
    }
}

/// An OpenAI-compatible stub on loopback: turn 0 makes a plan (a tool call), turn 1 answers —
/// its first call slowly, so that a harness can be killed in the middle of it.
async fn stub_model() -> (String, Arc<Calls>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let calls = Arc::new(Calls::default());
    async fn chat(State(calls): State<Arc<Calls>>, Json(body): Json<Value>) -> Json<Value> {
        let turn = body["messages"]
            .as_array()
            .map(|m| m.iter().filter(|m| m["role"] == "assistant").count())
            .unwrap_or(0);
        let seen = {
            let mut by_turn = calls.by_turn.lock().unwrap();
            let n = by_turn.entry(turn).or_default();
            *n += 1;
            *n
        };
        let message = if turn == 0 {
            json!({"role": "assistant", "content": null, "tool_calls": [{
                "id": "call-plan", "type": "function",
                "function": {"name": "create_plan",
                    "arguments": "{\"steps\":[{\"name\":\"Answer\",\"description\":\"answer\"}]}"}}]})
        } else {
            if seen == 1 {
                tokio::time::sleep(SLOW_CALL).await;
            }
            json!({"role": "assistant", "content": "The books are closed."})
        };
        Json(json!({
            "id": "stub", "object": "chat.completion", "model": "stub",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
        }))
    }
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(chat))
        .with_state(calls.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, calls)
}

/// One configuration for every harness of a test: the same store and task queue.
fn config(dir: &std::path::Path, model_url: &str) -> std::path::PathBuf {
    let text = format!(
        "[server]\nbind = \"127.0.0.1:0\"\n\
         [store]\npath = \"shared.db\"\n\
         [model]\nprovider = \"openai\"\nbase_url = \"{model_url}\"\nmodel = \"stub\"\n\
         api_key_env = \"DURABILITY_MODEL_KEY\"\ntimeout = 30\nmax_retries = 0\n\
         [engine]\nkind = \"temporal\"\n\
         [engine.temporal]\naddress = \"{}\"\ntask_queue = \"durability-{}\"\n",
        temporal_address(),
        uuid::Uuid::new_v4()
    );
    let path = dir.join("config.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn serve(config: &std::path::Path) -> (std::process::Child, String) {
    serve_with_env(config, &[("DURABILITY_MODEL_KEY", "stub-key")])
}

async fn send(url: &str, text: &str) -> String {
    let request = SendMessageRequest {
        tenant: String::new(),
        message: Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            role: Role::User,
            parts: vec![Part::text(text)],
            ..Message::default()
        },
        configuration: Some(SendMessageConfiguration {
            return_immediately: true,
            ..SendMessageConfiguration::default()
        }),
        metadata: None,
    };
    match A2aClient::new(url)
        .unwrap()
        .send_message(request)
        .await
        .unwrap()
    {
        SendMessageResponse::Task(task) => task.id,
        other => panic!("expected a task, got {other:?}"),
    }
}

async fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "{what} did not happen in {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Polls `GetTask` at `url` until the task has ended; returns its state and answer.
async fn settled(url: &str, id: &str) -> (TaskState, String) {
    let client = A2aClient::new(url).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(task) = client.get_task(id, Some(0)).await
            && task.status.state.is_terminal()
        {
            let answer = task.status.message.map(|m| m.text()).unwrap_or_default();
            return (task.status.state, answer);
        }
        assert!(Instant::now() < deadline, "task {id} did not end");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn kill(child: &mut std::process::Child) {
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_whose_harness_is_killed_mid_call_finishes_on_another_without_repeating_a_recorded_call()
 {
    let dir = tempfile::tempdir().unwrap();
    let (model_url, calls) = stub_model().await;
    let config = config(dir.path(), &model_url);
    let (mut first, first_url) = serve(&config);
    let id = send(&first_url, "Close the books.").await;
    // The plan was made and recorded; the second turn's call is in flight on the first harness.
    wait_until("the slow call", Duration::from_secs(30), || {
        calls.count(1) == 1
    })
    .await;
    let (mut second, second_url) = serve(&config);
    let killed = Instant::now();
    kill(&mut first);
    let (state, answer) = settled(&second_url, &id).await;
    let took = killed.elapsed();
    assert_eq!(state, TaskState::Completed);
    assert_eq!(answer, "The books are closed.");
    assert_eq!(
        calls.count(0),
        1,
        "the recorded first call was not made again"
    );
    assert_eq!(
        calls.count(1),
        2,
        "only the call in flight at the kill was made again"
    );
    println!("from SIGKILL to the task completed on the other harness: {took:?}");
    kill(&mut second);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_harness_started_again_alone_picks_its_task_up() {
    let dir = tempfile::tempdir().unwrap();
    let (model_url, calls) = stub_model().await;
    let config = config(dir.path(), &model_url);
    let (mut first, first_url) = serve(&config);
    let id = send(&first_url, "Close the books.").await;
    wait_until("the slow call", Duration::from_secs(30), || {
        calls.count(1) == 1
    })
    .await;
    let killed = Instant::now();
    kill(&mut first);
    let (mut again, again_url) = serve(&config);
    let (state, answer) = settled(&again_url, &id).await;
    assert_eq!(state, TaskState::Completed);
    assert_eq!(answer, "The books are closed.");
    assert_eq!(calls.count(0), 1);
    assert_eq!(calls.count(1), 2);
    println!(
        "from SIGKILL to the task completed on the restarted harness: {:?}",
        killed.elapsed()
    );
    kill(&mut again);
}
