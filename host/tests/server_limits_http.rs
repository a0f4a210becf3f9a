//! The server's edge over real HTTP on loopback, against a whole harness: the rate limit keyed
//! by who is calling (this harness's own calls never limited, trusted delegators by id, anyone
//! else by address), stalled connections closed while ordinary clients are served, event
//! streams kept open past the idle timeout, and the cap on open connections.

mod delegation_support;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use delegation_support::{
    Answer, FnModel, answer, has_goal, last_note, last_tool_result, row_state, send_text,
    sub_tasks, text, tool,
};
use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;
use tiny_harness::base::model::{Model, ModelRequest};
use tiny_harness::base::protocol::types::{StreamResponse, TaskState};
use tiny_harness::state::records::extension::EXTENSION_URI;
use tiny_harness::work::agents::client::A2aClient;

/// The two trusted delegators every test harness knows, and their tokens.
const OPS: &str = "ops";
const OPS_TOKEN: &str = "server-limits-ops-token-0123456789";
const AUDIT_TOKEN: &str = "server-limits-audit-token-9876543210";
/// A bearer token that is nobody's.
const FORGED_TOKEN: &str = "server-limits-forged-token-000000000";
/// The longest any test waits for something that should happen: a hang guard, not a speed bound.
const HANG_GUARD: Duration = Duration::from_secs(30);
const CARD: &str = "/.well-known/agent-card.json";

struct Harness {
    addr: SocketAddr,
    url: String,
    stop: Option<oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Harness {
    /// A harness whose `[server]` also holds `settings`, with `ops` and `audit` as its trusted
    /// delegators, working every task with `model`.
    async fn start(settings: &str, model: Arc<dyn Model>) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "[server]\nbind = \"127.0.0.1:0\"\n{settings}\n\
             [[server.trusted_delegators]]\nid = \"{OPS}\"\ntoken_env = \"OPS_TOKEN\"\n\
             [[server.trusted_delegators]]\nid = \"audit\"\ntoken_env = \"AUDIT_TOKEN\"\n\
             [store]\npath = \"harness.db\"\n"
        );
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).unwrap();
        let config = Config::load(&path).unwrap();
        let env = |name: &str| match name {
            "OPS_TOKEN" => Some(OPS_TOKEN.to_string()),
            "AUDIT_TOKEN" => Some(AUDIT_TOKEN.to_string()),
            _ => None,
        };
        let runtime = Runtime::build_with_model_and_env(config, model, env)
            .await
            .unwrap();
        let addr = runtime.local_addr();
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
            addr,
            url: format!("http://{addr}"),
            stop: Some(stop),
            done,
            _dir: dir,
        }
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = self.done.await;
    }

    /// The status of `GET` the card, sent from `from` with `bearer`, if any.
    async fn card_status(&self, from: &reqwest::Client, bearer: Option<&str>) -> StatusCode {
        let mut request = from.get(format!("{}{CARD}", self.url));
        if let Some(token) = bearer {
            request = request.bearer_auth(token);
        }
        request.send().await.unwrap().status()
    }

    /// Requests the card as `bearer` until one is refused with 429; how many were served.
    async fn flood_until_refused(&self, from: &reqwest::Client, bearer: Option<&str>) -> usize {
        for served in 0..100 {
            match self.card_status(from, bearer).await {
                StatusCode::OK => {}
                StatusCode::TOO_MANY_REQUESTS => return served,
                other => panic!("unexpected {other}"),
            }
        }
        panic!("100 requests and no 429");
    }
}

/// An HTTP client whose connections come from `address` (any of 127.0.0.0/8 on Linux).
fn client_from(address: Ipv4Addr) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(IpAddr::V4(address))
        .build()
        .unwrap()
}

/// A model that answers every task at once.
fn answering() -> Arc<dyn Model> {
    FnModel::new(|_| Answer::Reply(text("ok")))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_anonymous_requests_does_not_fail_a_sub_task_on_self() {
    let model = FnModel::new(|request: &ModelRequest| {
        if has_goal(request, "Check the archive.") {
            return Answer::Reply(text("Archive checked."));
        }
        if let Some(note) = last_note(request) {
            return Answer::Reply(text(&note));
        }
        if last_tool_result(request).is_some() {
            return Answer::Reply(text("waiting"));
        }
        Answer::Reply(tool(
            "spawn_subtask",
            json!({"name": "Archive check", "goal": "Check the archive.", "agent": null}),
        ))
    });
    let harness = Harness::start("rate_limit_per_minute = 5\n", model).await;
    let flooder = reqwest::Client::new();
    harness.flood_until_refused(&flooder, None).await;

    // The flood goes on, from the same address the harness reaches itself from, while a
    // delegator's task delegates to self.
    let stop = Arc::new(AtomicBool::new(false));
    let refused = Arc::new(AtomicUsize::new(0));
    let flood = tokio::spawn({
        let (stop, refused, url) = (stop.clone(), refused.clone(), harness.url.clone());
        async move {
            while !stop.load(Ordering::Relaxed) {
                let response = flooder.get(format!("{url}{CARD}")).send().await.unwrap();
                if response.status() == StatusCode::TOO_MANY_REQUESTS {
                    refused.fetch_add(1, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
    });
    // It activates the task extension to read the parent's sub-task rows.
    let ops = A2aClient::new(harness.url.clone())
        .unwrap()
        .with_bearer(OPS_TOKEN)
        .with_extensions(vec![EXTENSION_URI.to_string()]);
    let parent = tokio::time::timeout(
        Duration::from_secs(60),
        send_text(&ops, "", "Tidy up the archive.", false),
    )
    .await
    .expect("the parent settles");
    let refused_meanwhile = refused.load(Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    flood.await.unwrap();

    assert!(refused_meanwhile > 0, "the flood was being refused");
    assert_eq!(parent.status.state, TaskState::Completed, "{parent:?}");
    let rows = sub_tasks(&parent);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["agent"]["id"], "self");
    assert_eq!(row_state(&rows[0]), Some(TaskState::Completed));
    assert!(answer(&parent).contains("Archive checked."), "{parent:?}");
    harness.stop().await;
}

#[tokio::test]
async fn a_trusted_delegator_is_limited_by_its_id_not_by_its_address() {
    let harness = Harness::start("rate_limit_per_minute = 5\n", answering()).await;
    let http = reqwest::Client::new();
    let served = harness.flood_until_refused(&http, Some(OPS_TOKEN)).await;
    assert_eq!(served, 5, "the burst is the per-minute quota");
    assert_eq!(
        harness.card_status(&http, Some(AUDIT_TOKEN)).await,
        StatusCode::OK,
        "another delegator has its own quota"
    );
    assert_eq!(
        harness.card_status(&http, None).await,
        StatusCode::OK,
        "anonymous callers from the same address have theirs"
    );
    assert_eq!(
        harness.card_status(&http, Some(OPS_TOKEN)).await,
        StatusCode::TOO_MANY_REQUESTS
    );
    harness.stop().await;
}

/// Other loopback addresses than 127.0.0.1 answer on Linux only.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn anonymous_callers_are_limited_by_address_and_a_forged_token_gets_no_pass() {
    let harness = Harness::start("rate_limit_per_minute = 5\n", answering()).await;
    let flooded = client_from(Ipv4Addr::new(127, 0, 0, 1));
    harness.flood_until_refused(&flooded, None).await;
    assert_eq!(
        harness.card_status(&flooded, Some(FORGED_TOKEN)).await,
        StatusCode::TOO_MANY_REQUESTS,
        "a token that is nobody's is limited by address"
    );
    assert_eq!(
        harness.card_status(&flooded, Some(AUDIT_TOKEN)).await,
        StatusCode::OK,
        "a delegator is not limited by the address it calls from"
    );
    let other = client_from(Ipv4Addr::new(127, 0, 0, 2));
    assert_eq!(harness.card_status(&other, None).await, StatusCode::OK);
    assert_eq!(
        harness.card_status(&other, Some(OPS_TOKEN)).await,
        StatusCode::OK
    );
    harness.flood_until_refused(&other, Some(OPS_TOKEN)).await;
    let third = client_from(Ipv4Addr::new(127, 0, 0, 3));
    assert_eq!(
        harness.card_status(&third, Some(OPS_TOKEN)).await,
        StatusCode::TOO_MANY_REQUESTS,
        "the delegator's quota follows its token to any address"
    );
    // Within its address's quota, a forged token is refused as it always was.
    let listed: Value = third
        .post(&harness.url)
        .bearer_auth(FORGED_TOKEN)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["error"]["code"], -32600, "{listed}");
    harness.stop().await;
}

/// A raw connection that has sent `bytes`.
async fn connection_sending(addr: SocketAddr, bytes: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(bytes.as_bytes()).await.unwrap();
    stream
}

/// Everything the server sends until it closes the connection (a reset counts as closed);
/// panics if it is still open after the hang guard.
async fn read_until_closed(stream: &mut TcpStream) -> String {
    let mut received = Vec::new();
    match tokio::time::timeout(HANG_GUARD, stream.read_to_end(&mut received)).await {
        Ok(_) => String::from_utf8_lossy(&received).into_owned(),
        Err(_) => panic!(
            "still open after {HANG_GUARD:?}; received {:?}",
            String::from_utf8_lossy(&received)
        ),
    }
}

/// One whole response (head and `Content-Length` body) read from a kept-alive connection.
async fn read_response(stream: &mut TcpStream) -> String {
    let mut received = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&received).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().unwrap())
                })
                .unwrap_or(0);
            if received.len() >= end + 4 + length {
                return text;
            }
        }
        let read = stream.read(&mut chunk).await.unwrap();
        assert!(read > 0, "closed mid-response: {text:?}");
        received.extend_from_slice(&chunk[..read]);
    }
}

fn get_card(addr: SocketAddr) -> String {
    format!("GET {CARD} HTTP/1.1\r\nHost: {addr}\r\n\r\n")
}

#[tokio::test]
async fn stalled_connections_are_closed_while_an_ordinary_client_is_served() {
    let settings =
        "header_read_timeout_secs = 1\nbody_read_timeout_secs = 1\nidle_timeout_secs = 60\n";
    let harness = Harness::start(settings, answering()).await;
    let addr = harness.addr;
    let mut half_header = connection_sending(
        addr,
        &format!("POST / HTTP/1.1\r\nHost: {addr}\r\nContent-Ty"),
    )
    .await;
    let mut half_body = connection_sending(
        addr,
        &format!(
            "POST / HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             A2A-Version: 1.0\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\": \"2.0\", "
        ),
    )
    .await;
    let mut silent = TcpStream::connect(addr).await.unwrap();

    let served = reqwest::get(format!("{}{CARD}", harness.url))
        .await
        .unwrap();
    assert_eq!(served.status(), StatusCode::OK);

    let (header, body, nothing) = tokio::join!(
        read_until_closed(&mut half_header),
        read_until_closed(&mut half_body),
        read_until_closed(&mut silent),
    );
    assert_eq!(header, "", "a half header gets no answer, only a close");
    assert!(body.starts_with("HTTP/1.1 408"), "{body}");
    assert!(
        body.contains("the request body did not arrive within 1 s"),
        "{body}"
    );
    assert_eq!(nothing, "");
    harness.stop().await;
}

#[tokio::test]
async fn a_kept_alive_connection_outlives_the_header_timeout_and_closes_when_idle() {
    // The idle timeout is far past the wait below, so a busy machine cannot close the connection
    // before the second request; the wait itself is a lower bound past the header timeout.
    let settings = "header_read_timeout_secs = 1\nidle_timeout_secs = 10\n";
    let harness = Harness::start(settings, answering()).await;
    let mut kept = connection_sending(harness.addr, &get_card(harness.addr)).await;
    assert!(read_response(&mut kept).await.starts_with("HTTP/1.1 200"));
    // Waiting for the next request is idleness, not a slow head.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    kept.write_all(get_card(harness.addr).as_bytes())
        .await
        .unwrap();
    assert!(read_response(&mut kept).await.starts_with("HTTP/1.1 200"));
    assert_eq!(read_until_closed(&mut kept).await, "", "closed once idle");
    harness.stop().await;
}

#[tokio::test]
async fn an_event_stream_stays_open_past_the_idle_timeout() {
    let settings = "header_read_timeout_secs = 1\nidle_timeout_secs = 1\n";
    let harness = Harness::start(settings, FnModel::new(|_| Answer::Hang)).await;
    let client = A2aClient::new(harness.url.clone()).unwrap();
    let task = send_text(&client, "", "Wait for me.", true).await;
    let mut events = client.subscribe(&task.id).await.unwrap();
    let first = tokio::time::timeout(HANG_GUARD, events.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(matches!(first, StreamResponse::Task(_)), "{first:?}");
    // Three idle timeouts pass with nothing sent on the stream.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let canceler = A2aClient::new(harness.url.clone()).unwrap();
    canceler.cancel_task(&task.id).await.unwrap();
    let mut last = None;
    while let Some(event) = tokio::time::timeout(HANG_GUARD, events.next())
        .await
        .expect("the stream ends once the task is canceled")
    {
        last = Some(event.unwrap());
    }
    let state = match last {
        Some(StreamResponse::StatusUpdate(update)) => update.status.state,
        Some(StreamResponse::Task(task)) => task.status.state,
        other => panic!("unexpected last event {other:?}"),
    };
    assert_eq!(state, TaskState::Canceled);
    harness.stop().await;
}

#[tokio::test]
async fn past_the_connection_cap_a_new_connection_waits_until_one_closes() {
    let settings = "max_connections = 2\nheader_read_timeout_secs = 30\nidle_timeout_secs = 60\n";
    let harness = Harness::start(settings, answering()).await;
    let addr = harness.addr;
    let mut first = connection_sending(addr, &get_card(addr)).await;
    assert!(read_response(&mut first).await.starts_with("HTTP/1.1 200"));
    let mut second = connection_sending(addr, &get_card(addr)).await;
    assert!(read_response(&mut second).await.starts_with("HTTP/1.1 200"));

    let mut third = connection_sending(addr, &get_card(addr)).await;
    let mut byte = [0u8; 1];
    let early = tokio::time::timeout(Duration::from_secs(1), third.read(&mut byte)).await;
    assert!(early.is_err(), "served past the cap: {early:?}");

    drop(first);
    let answered = tokio::time::timeout(HANG_GUARD, read_response(&mut third))
        .await
        .expect("served once a connection closed");
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");

    drop(second);
    let ordinary = tokio::time::timeout(HANG_GUARD, reqwest::get(format!("{}{CARD}", harness.url)))
        .await
        .expect("ordinary service resumes")
        .unwrap();
    assert_eq!(ordinary.status(), StatusCode::OK);
    drop(third);
    harness.stop().await;
}

#[tokio::test]
async fn shutdown_closes_idle_connections_at_once_and_cuts_open_streams_after_the_grace() {
    let mut harness = Harness::start("", FnModel::new(|_| Answer::Hang)).await;
    let client = A2aClient::new(harness.url.clone()).unwrap();
    let task = send_text(&client, "", "Wait for me.", true).await;
    let mut events = client.subscribe(&task.id).await.unwrap();
    let first = tokio::time::timeout(HANG_GUARD, events.next())
        .await
        .unwrap();
    assert!(
        matches!(first, Some(Ok(StreamResponse::Task(_)))),
        "{first:?}"
    );
    let mut idle = connection_sending(harness.addr, &get_card(harness.addr)).await;
    assert!(read_response(&mut idle).await.starts_with("HTTP/1.1 200"));

    let _ = harness.stop.take().unwrap().send(());
    assert_eq!(
        read_until_closed(&mut idle).await,
        "",
        "idle: closed at once"
    );
    assert!(
        !harness.done.is_finished(),
        "the open stream holds the server in its grace period"
    );
    tokio::time::timeout(Duration::from_secs(30), &mut harness.done)
        .await
        .expect("serving ends after the grace period")
        .unwrap();
    let cut = tokio::time::timeout(HANG_GUARD, async {
        while let Some(event) = events.next().await {
            if event.is_err() {
                break;
            }
        }
    })
    .await;
    assert!(cut.is_ok(), "the stream ended with the server");
}
