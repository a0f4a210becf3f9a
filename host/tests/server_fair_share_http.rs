//! Each caller's fair share of the open connections, over real HTTP on loopback against a whole
//! harness: one caller holding its whole share of event streams leaves everyone else served and
//! has its next connection refused with 503 and `Retry-After`; this harness's own sub-tasks on
//! `self` are never held back by it; an idle stream sends keep-alive comments; a stream closes
//! when its task ends.

mod delegation_support;
mod support {
    pub mod captured_logs;
}

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{Semaphore, oneshot};

use delegation_support::{
    Answer, FnModel, has_goal, last_note, last_tool_result, row_state, send_text, sub_tasks, text,
};
use support::captured_logs::CapturedLogs;
use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;
use tiny_harness::base::model::{Model, ModelError, ModelReply, ModelRequest, Purpose, ToolCall};
use tiny_harness::base::protocol::types::TaskState;
use tiny_harness::state::records::extension::EXTENSION_URI;
use tiny_harness::work::agents::client::A2aClient;

/// The longest any test waits for something that should happen: a hang guard, not a speed bound.
const HANG_GUARD: Duration = Duration::from_secs(30);
const CARD: &str = "/.well-known/agent-card.json";
/// The share a test harness gives a caller, of 16 connections.
const SHARE: usize = 4;
/// A trusted delegator every test harness knows, and its token.
const OPS_TOKEN: &str = "fair-share-ops-token-0123456789abcdef";
const FLOODER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
const OTHER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);
/// The goal of a task that waits until the test opens its gate.
const GATED_GOAL: &str = "Wait for the gate.";

struct Harness {
    url: String,
    stop: Option<oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Harness {
    /// A harness of 16 connections with a share of `share` each, keep-alive comments every
    /// second, the longest header timeout (so that only a crowded connection is closed soon), no
    /// rate limit, and `ops` as a trusted delegator.
    async fn start(share: usize, model: Arc<dyn Model>) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "[server]\nbind = \"127.0.0.1:0\"\nmax_connections = 16\n\
             max_connections_per_caller = {share}\nstream_keep_alive_secs = 1\n\
             header_read_timeout_secs = 300\n\
             rate_limit_per_minute = 0\n\
             [[server.trusted_delegators]]\nid = \"ops\"\ntoken_env = \"OPS_TOKEN\"\n\
             [store]\npath = \"harness.db\"\n"
        );
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).unwrap();
        let config = Config::load(&path).unwrap();
        let env = |name: &str| (name == "OPS_TOKEN").then(|| OPS_TOKEN.to_string());
        let runtime = Runtime::build_with_model_and_env(config, model, env)
            .await
            .unwrap();
        let url = format!("http://{}", runtime.local_addr());
        let (stop, stopped) = oneshot::channel::<()>();
        let done = tokio::spawn(async move {
            runtime
                .serve(async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        Harness {
            url,
            stop: Some(stop),
            done,
            _dir: dir,
        }
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.done.abort();
        let _ = self.done.await;
    }

    /// A task of `participant` whose model hangs (or waits for the gate), created from
    /// 127.0.0.1 without waiting for it.
    async fn open_task(&self, participant: &str, goal: &str) -> String {
        let creator = A2aClient::new(self.url.clone())
            .unwrap()
            .with_participant(participant);
        send_text(&creator, "", goal, true).await.id
    }
}

/// An HTTP client whose connections come from `address`, keeping none idle: each request is a
/// connection of its own unless one is in flight.
fn client_from(address: Ipv4Addr) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(IpAddr::V4(address))
        .pool_max_idle_per_host(0)
        .build()
        .unwrap()
}

/// `SubscribeToTask` on the JSON-RPC binding as `participant`, open once its first event (the
/// task's snapshot) has arrived; returns the response still streaming and what it sent so far.
async fn subscribe(
    client: &reqwest::Client,
    url: &str,
    participant: &str,
    task: &str,
) -> (reqwest::Response, String) {
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task}});
    let mut response = client
        .post(url)
        .header("A2A-Version", "1.0")
        .header("X-Participant-Id", participant)
        .header("Accept", "text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut seen = String::new();
    while !seen.contains("data:") {
        let chunk = tokio::time::timeout(HANG_GUARD, response.chunk())
            .await
            .expect("the snapshot arrives")
            .unwrap()
            .expect("the stream stays open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    (response, seen)
}

/// Reads the stream until `wanted` appears in it; everything read.
async fn read_until(response: &mut reqwest::Response, mut seen: String, wanted: &str) -> String {
    while !seen.contains(wanted) {
        let chunk = tokio::time::timeout(HANG_GUARD, response.chunk())
            .await
            .unwrap_or_else(|_| panic!("{wanted:?} within the hang guard; read: {seen}"))
            .unwrap()
            .unwrap_or_else(|| panic!("the stream ended before {wanted:?}; read: {seen}"));
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    seen
}

/// A `SendMessage` of a new task, returning at once, from `client` as `participant`.
async fn send_message(client: &reqwest::Client, url: &str, participant: &str) -> reqwest::Response {
    let body = json!({
        "jsonrpc": "2.0", "id": 2, "method": "SendMessage",
        "params": {
            "message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                        "parts": [{"text": "Hello."}]},
            "configuration": {"returnImmediately": true}
        }
    });
    client
        .post(url)
        .header("A2A-Version", "1.0")
        .header("X-Participant-Id", participant)
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// A model that never answers, except for a task whose goal is [`GATED_GOAL`], which it answers
/// once the gate lets it.
struct GatedModel {
    gate: Arc<Semaphore>,
}

#[async_trait]
impl Model for GatedModel {
    fn describe(&self) -> String {
        "gated test model".into()
    }
    fn context_window(&self) -> Option<usize> {
        None
    }
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        if request.purpose == Purpose::Summary {
            return Ok(text("SUMMARY"));
        }
        if has_goal(request, GATED_GOAL) {
            let _permit = self.gate.acquire().await;
            return Ok(text("Through the gate."));
        }
        std::future::pending().await
    }
}

fn hanging() -> Arc<dyn Model> {
    FnModel::new(|_| Answer::Hang)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_caller_holding_its_whole_share_of_streams_leaves_others_served_and_is_refused_more() {
    let harness = Harness::start(SHARE, hanging()).await;
    let flooder = client_from(FLOODER);
    let mut streams = Vec::new();
    for _ in 0..SHARE {
        let task = harness.open_task("flooder", "Think for ever.").await;
        streams.push(subscribe(&flooder, &harness.url, "flooder", &task).await.0);
    }

    let other = client_from(OTHER);
    let started = Instant::now();
    let card = tokio::time::timeout(
        HANG_GUARD,
        other.get(format!("{}{CARD}", harness.url)).send(),
    )
    .await
    .expect("another caller's card fetch is answered while the flooder holds its share")
    .unwrap();
    assert_eq!(card.status(), StatusCode::OK);
    let sent = tokio::time::timeout(HANG_GUARD, send_message(&other, &harness.url, "other"))
        .await
        .expect("another caller's SendMessage is answered while the flooder holds its share");
    assert_eq!(sent.status(), StatusCode::OK);
    let answer: Value = sent.json().await.unwrap();
    assert!(answer["result"]["task"]["id"].is_string(), "{answer}");
    let local = A2aClient::new(harness.url.clone()).unwrap();
    tokio::time::timeout(HANG_GUARD, local.fetch_card())
        .await
        .expect("a caller on 127.0.0.1 is answered while the flooder holds its share")
        .unwrap();
    let served_others = started.elapsed();

    let started = Instant::now();
    let refused = flooder
        .get(format!("{}{CARD}", harness.url))
        .send()
        .await
        .unwrap();
    let time_to_refuse = started.elapsed();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.headers()["retry-after"], "2");
    assert_eq!(refused.headers()["connection"], "close");
    let said = refused.text().await.unwrap();
    assert_eq!(
        said,
        format!(
            "address 127.0.0.2 already holds {SHARE} open connections, its whole share of this server; close one, or retry after 2 s\n"
        )
    );
    let refused_send = send_message(&flooder, &harness.url, "flooder").await;
    assert_eq!(refused_send.status(), StatusCode::SERVICE_UNAVAILABLE);
    eprintln!(
        "others served in {served_others:?} while 127.0.0.2 held {SHARE} streams; its next connection refused in {time_to_refuse:?}"
    );

    // One stream closed gives its place back: the caller is served again.
    drop(streams.pop());
    let deadline = Instant::now() + HANG_GUARD;
    loop {
        let status = flooder
            .get(format!("{}{CARD}", harness.url))
            .send()
            .await
            .unwrap()
            .status();
        if status == StatusCode::OK {
            break;
        }
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(
            Instant::now() < deadline,
            "a closed stream never gave its place back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(streams);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sub_tasks_on_self_finish_beyond_any_share_while_another_caller_holds_its_whole_share() {
    // More children on self than a caller's share, each followed over a stream of its own from
    // 127.0.0.1, while 127.0.0.2 holds its whole share.
    const CHILDREN: usize = 3;
    const CHILD_GOAL: &str = "Count to three.";
    let logs = CapturedLogs::process_wide();
    let model = FnModel::new(|request: &ModelRequest| {
        if has_goal(request, CHILD_GOAL) {
            return Answer::After(Duration::from_millis(500), text("One, two, three."));
        }
        if last_note(request).is_some() || last_tool_result(request).is_some() {
            return Answer::Reply(text("Counted."));
        }
        let mut spawn = ModelReply::default();
        for n in 0..CHILDREN {
            let arguments =
                json!({"name": format!("Count {n}"), "goal": CHILD_GOAL, "agent": null});
            spawn.tool_calls.push(ToolCall {
                id: format!("call-{n}"),
                name: "spawn_subtask".into(),
                arguments: arguments.to_string(),
            });
        }
        Answer::Reply(spawn)
    });
    let harness = Harness::start(2, model).await;
    let flooder = client_from(FLOODER);
    let mut streams = Vec::new();
    for _ in 0..2 {
        let task = harness.open_task("flooder", "Think for ever.").await;
        streams.push(subscribe(&flooder, &harness.url, "flooder", &task).await.0);
    }
    let ops = A2aClient::new(harness.url.clone())
        .unwrap()
        .with_bearer(OPS_TOKEN)
        .with_extensions(vec![EXTENSION_URI.to_string()]);
    let parent = tokio::time::timeout(
        Duration::from_secs(60),
        send_text(&ops, "", "Count, three times over.", false),
    )
    .await
    .expect("the parent settles");
    assert_eq!(parent.status.state, TaskState::Completed, "{parent:?}");
    let rows = sub_tasks(&parent);
    assert_eq!(rows.len(), CHILDREN, "{rows:?}");
    for row in &rows {
        assert_eq!(row["agent"]["id"], "self");
        assert_eq!(row_state(row), Some(TaskState::Completed), "{row}");
    }
    let log = logs.text();
    assert!(
        !log.lines()
            .any(|line| line.contains("fair share: refused")
                && line.contains("from address 127.0.0.1")),
        "nothing of this harness's own was refused: {log}"
    );
    drop(streams);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_silent_connection_past_its_address_share_is_closed_soon_while_the_others_may_still_ask()
{
    let harness = Harness::start(SHARE, hanging()).await;
    let addr: std::net::SocketAddr = harness.url.trim_start_matches("http://").parse().unwrap();
    let connect = || async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket
            .bind(std::net::SocketAddr::new(IpAddr::V4(FLOODER), 0))
            .unwrap();
        socket.connect(addr).await.unwrap()
    };
    let mut silent = Vec::new();
    for _ in 0..SHARE {
        silent.push(connect().await);
    }
    let mut crowded = connect().await;
    let started = Instant::now();
    let mut byte = [0u8; 1];
    // The test harness's header timeout is the longest there is (300 s), far past the guard:
    // only a crowded connection is closed before the guard.
    let read = tokio::time::timeout(HANG_GUARD, crowded.read(&mut byte))
        .await
        .expect("the crowded connection is closed long before the header timeout");
    assert_eq!(read.unwrap(), 0, "closed without an answer");
    eprintln!(
        "a crowded silent connection closed after {:?}",
        started.elapsed()
    );

    let mut first = silent.remove(0);
    let head = format!("GET {CARD} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    first.write_all(head.as_bytes()).await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(HANG_GUARD, first.read_to_string(&mut answer))
        .await
        .expect("answered")
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    drop(silent);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_idle_stream_sends_keep_alive_comments_on_both_bindings() {
    let harness = Harness::start(SHARE, hanging()).await;
    let task = harness.open_task("watcher", "Think for ever.").await;
    let client = client_from(OTHER);
    let (mut stream, seen) = subscribe(&client, &harness.url, "watcher", &task).await;
    let seen = read_until(&mut stream, seen, ": keep-alive").await;
    assert!(
        seen.contains("TASK_STATE_WORKING") || seen.contains("TASK_STATE_SUBMITTED"),
        "{seen}"
    );

    let mut rest = client
        .get(format!("{}/tasks/{task}:subscribe", harness.url))
        .header("A2A-Version", "1.0")
        .header("X-Participant-Id", "watcher")
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status(), StatusCode::OK);
    read_until(&mut rest, String::new(), ": keep-alive").await;
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_closes_when_its_task_completes() {
    let gate = Arc::new(Semaphore::new(0));
    let model = Arc::new(GatedModel { gate: gate.clone() });
    let harness = Harness::start(SHARE, model).await;
    let task = harness.open_task("watcher", GATED_GOAL).await;
    let client = client_from(OTHER);
    let (mut stream, mut seen) = subscribe(&client, &harness.url, "watcher", &task).await;
    gate.add_permits(1);
    let ended = tokio::time::timeout(HANG_GUARD, async {
        while let Some(chunk) = stream.chunk().await.unwrap() {
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
        seen
    })
    .await
    .expect("the stream ends once its task has completed");
    assert!(ended.contains("TASK_STATE_COMPLETED"), "{ended}");
    harness.stop().await;
}
