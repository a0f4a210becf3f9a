//! Push notifications end to end: a real `harness serve` process with `[push] allowed_hosts`
//! naming a webhook this test serves on loopback. The webhook hears every change of a task in
//! order with the client's token, also when the harness is killed (SIGKILL) mid-task while the
//! webhook is down and started again; configs survive a restart and are seen by the task's
//! participants only; a repeated message that now carries a config sets it on the task the
//! first sending made; a webhook outside the allowed hosts, on a private address a name resolves
//! to, or redirecting elsewhere is refused.

mod support {
    pub mod harness_process;
}

use std::path::Path;
use std::process::Child;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{Value, json};
use support::harness_process::serve;

/// A2A `PushNotificationNotSupportedError`.
const PUSH_NOT_SUPPORTED: i64 = -32003;
/// JSON-RPC invalid params.
const INVALID_PARAMS: i64 = -32602;
/// A2A `TaskNotFoundError`.
const TASK_NOT_FOUND: i64 = -32001;
/// How long a push may take to arrive: a guard against a hang, not a measure.
const HANG_GUARD: Duration = Duration::from_secs(60);
/// The token the client registers, to be echoed in `X-A2A-Notification-Token`.
const TOKEN: &str = "client-token-7c1e";

/// Two turns: a plan (a tool call), then the answer, each a little slow so that a harness can
/// be killed while the task works.
const SCRIPT: &str = r#"
[[reply]]
text = "Let me plan."
delay_ms = 1500
[[reply.tool_calls]]
name = "create_plan"
arguments = { steps = [{ name = "Add", description = "add the numbers" }] }

[[reply]]
text = "2 + 2 = 4"
delay_ms = 500
"#;

/// One POST the webhook got: the status it answered, the token and authorization headers,
/// and the body.
type Received = (u16, String, String, Value);

/// What the webhook was sent, one entry per POST, and what it answers.
#[derive(Clone, Default)]
struct Webhook {
    /// Every POST, in arrival order.
    received: Arc<Mutex<Vec<Received>>>,
    /// The status the next POST gets: 200 unless a test takes the webhook down.
    answer: Arc<AtomicU16>,
}

impl Webhook {
    /// Serves `/hook`, `/redirect` (307 to `target`) on 127.0.0.1:0; returns its port.
    async fn start(&self, target: Option<String>) -> u16 {
        self.answer.store(200, Ordering::SeqCst);
        let app = axum::Router::new()
            .route("/hook", post(hook))
            .route(
                "/redirect",
                post(move || {
                    let location = target.clone().unwrap_or_default();
                    async move { (StatusCode::TEMPORARY_REDIRECT, [("location", location)]) }
                }),
            )
            .with_state(self.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        port
    }

    /// The bodies it accepted (answered 2xx), in order.
    fn accepted(&self) -> Vec<Value> {
        let received = self.received.lock().unwrap();
        received
            .iter()
            .filter(|(status, ..)| *status == 200)
            .map(|(.., body)| body.clone())
            .collect()
    }

    /// Waits until an accepted body satisfies `done`.
    async fn wait_for(&self, done: impl Fn(&Value) -> bool) {
        tokio::time::timeout(HANG_GUARD, async {
            while !self.accepted().iter().any(&done) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no such push within {HANG_GUARD:?}: {:?}", self.accepted()));
    }
}

async fn hook(State(webhook): State<Webhook>, headers: HeaderMap, body: String) -> StatusCode {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let status = webhook.answer.load(Ordering::SeqCst);
    let body = serde_json::from_str(&body).unwrap_or(Value::Null);
    webhook.received.lock().unwrap().push((
        status,
        header("x-a2a-notification-token"),
        header("authorization"),
        body,
    ));
    StatusCode::from_u16(status).unwrap()
}

/// A harness process, killed (SIGKILL) when dropped.
struct Harness {
    child: Child,
    url: String,
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes the configuration (`push` is the `[push]` table's body) and starts the harness.
fn start(dir: &Path, push: &str) -> Harness {
    std::fs::write(dir.join("script.toml"), SCRIPT).unwrap();
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nbind = \"127.0.0.1:0\"\n[model]\nprovider = \"scripted\"\n\
             script = \"script.toml\"\n[store]\npath = \"harness.db\"\n[push]\n{push}\n"
        ),
    )
    .unwrap();
    let (child, url) = serve(&config);
    Harness { child, url }
}

/// A webhook on loopback and a harness allowed to reach it (and no other host); the harness's
/// folder lives as long as the returned `TempDir`.
async fn serve_with_webhook() -> (Webhook, u16, tempfile::TempDir, Harness) {
    let webhook = Webhook::default();
    let port = webhook.start(None).await;
    let dir = tempfile::tempdir().unwrap();
    let harness = start(
        dir.path(),
        &format!("allowed_hosts = [\"127.0.0.1:{port}\"]"),
    );
    (webhook, port, dir, harness)
}

/// A JSON-RPC call as `participant`; the whole response.
async fn rpc(harness: &Harness, participant: &str, method: &str, params: Value) -> Value {
    // A 0.3 method name goes with the 0.3 version header.
    let version = if method.contains('/') { "0.3" } else { "1.0" };
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    reqwest::Client::new()
        .post(&harness.url)
        .header("A2A-Version", version)
        .header("X-Participant-Id", participant)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Sends a message that creates a task, with `config` as its push config; the task's id.
async fn send(harness: &Harness, participant: &str, text: &str, config: Option<Value>) -> String {
    let mut configuration = json!({"returnImmediately": true});
    if let Some(config) = config {
        configuration["taskPushNotificationConfig"] = config;
    }
    let params = json!({
        "message": {"messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{"text": text}]},
        "configuration": configuration,
    });
    let response = rpc(harness, participant, "SendMessage", params).await;
    response["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {response}"))
        .to_string()
}

fn error_code(response: &Value) -> i64 {
    response["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {response}"))
}

/// The state a push tells of, when it is a status update.
fn state_of(push: &Value) -> Option<&str> {
    push["statusUpdate"]["status"]["state"].as_str()
}

fn is_completed(push: &Value) -> bool {
    state_of(push) == Some("TASK_STATE_COMPLETED")
}

/// Checks that `pushes` tell a task's life in order: all of `task`, starting WORKING, each
/// change once (a repeat only right after itself: the one push in flight at a kill), ending
/// COMPLETED with nothing after it, and one artifact update per artifact the task has.
fn assert_told_in_order(pushes: &[Value], task: &Value) {
    let id = task["id"].as_str().unwrap();
    assert!(!pushes.is_empty());
    for push in pushes {
        let told = push["statusUpdate"]["taskId"]
            .as_str()
            .or(push["artifactUpdate"]["taskId"].as_str());
        assert_eq!(told, Some(id), "{push}");
    }
    let mut distinct: Vec<&Value> = Vec::new();
    for push in pushes {
        if distinct.last() != Some(&push) {
            distinct.push(push);
        }
    }
    assert_eq!(
        state_of(distinct[0]),
        Some("TASK_STATE_WORKING"),
        "{pushes:?}"
    );
    assert!(is_completed(distinct.last().unwrap()), "{pushes:?}");
    let terminal = distinct.iter().filter(|p| is_completed(p)).count();
    assert_eq!(terminal, 1, "one completion, last: {pushes:?}");
    for (i, push) in distinct.iter().enumerate() {
        assert!(
            !distinct[..i].contains(push),
            "a change told twice, not in a row: {push}"
        );
    }
    let artifacts: Vec<&Value> = distinct
        .iter()
        .filter_map(|p| p.get("artifactUpdate"))
        .map(|update| &update["artifact"]["artifactId"])
        .collect();
    let kept: Vec<&Value> = task["artifacts"]
        .as_array()
        .map(|list| list.iter().map(|a| &a["artifactId"]).collect())
        .unwrap_or_default();
    assert_eq!(artifacts, kept, "every artifact pushed once, in order");
}

async fn get_task(harness: &Harness, participant: &str, id: &str) -> Value {
    rpc(harness, participant, "GetTask", json!({"id": id})).await["result"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_webhook_hears_every_change_of_a_task_in_order_with_the_clients_token() {
    let (webhook, port, _dir, harness) = serve_with_webhook().await;
    let card: Value = reqwest::get(format!("{}/.well-known/agent-card.json", harness.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["capabilities"]["pushNotifications"], true);

    let config = json!({
        "url": format!("http://127.0.0.1:{port}/hook"),
        "token": TOKEN,
        "authentication": {"scheme": "Bearer", "credentials": "receiver-secret"},
    });
    let id = send(&harness, "alice", "add two and two", Some(config)).await;
    webhook.wait_for(is_completed).await;

    let task = get_task(&harness, "alice", &id).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_told_in_order(&webhook.accepted(), &task);
    for (_, token, authorization, _) in webhook.received.lock().unwrap().iter() {
        assert_eq!(token, TOKEN);
        assert_eq!(authorization, "Bearer receiver-secret");
    }
    let listed = rpc(
        &harness,
        "alice",
        "ListTaskPushNotificationConfigs",
        json!({"taskId": id}),
    )
    .await;
    let configs = listed["result"]["configs"].as_array().unwrap().clone();
    assert_eq!(configs.len(), 1, "{listed}");
    assert!(
        !configs[0]["id"].as_str().unwrap().is_empty(),
        "an id was minted"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_repeated_message_carrying_a_push_config_sets_it_on_the_task_it_made() {
    let (webhook, port, _dir, harness) = serve_with_webhook().await;
    let first = send(&harness, "alice", "add two and two", None).await;
    // The same sender and message id again, now asking for pushes: the task the first sending
    // made, which from now on pushes its changes.
    let config = json!({"url": format!("http://127.0.0.1:{port}/hook"), "token": TOKEN});
    let again = send(&harness, "alice", "add two and two", Some(config)).await;
    assert_eq!(again, first);
    webhook.wait_for(is_completed).await;
    for (_, token, ..) in webhook.received.lock().unwrap().iter() {
        assert_eq!(token, TOKEN);
    }
    let listed = rpc(
        &harness,
        "alice",
        "ListTaskPushNotificationConfigs",
        json!({"taskId": first}),
    )
    .await;
    assert_eq!(
        listed["result"]["configs"].as_array().unwrap().len(),
        1,
        "{listed}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn pushes_queued_before_a_sigkill_mid_task_arrive_in_order_after_the_restart() {
    let webhook = Webhook::default();
    let port = webhook.start(None).await;
    let dir = tempfile::tempdir().unwrap();
    let push = format!("allowed_hosts = [\"127.0.0.1:{port}\"]");
    let harness = start(dir.path(), &push);
    // The webhook is down: the first pushes fail and wait in the outbox.
    webhook.answer.store(503, Ordering::SeqCst);
    let config = json!({"url": format!("http://127.0.0.1:{port}/hook"), "token": TOKEN});
    let id = send(&harness, "alice", "add two and two", Some(config)).await;
    tokio::time::timeout(HANG_GUARD, async {
        while webhook.received.lock().unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("a first delivery was tried");
    // Mid-task: the first model turn takes 1.5 s, and its push has not been delivered.
    let working = get_task(&harness, "alice", &id).await;
    assert_eq!(working["status"]["state"], "TASK_STATE_WORKING");
    drop(harness);
    assert!(webhook.accepted().is_empty());

    webhook.answer.store(200, Ordering::SeqCst);
    let harness = start(dir.path(), &push);
    webhook.wait_for(is_completed).await;
    let task = get_task(&harness, "alice", &id).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_told_in_order(&webhook.accepted(), &task);
    let refused = webhook
        .received
        .lock()
        .unwrap()
        .iter()
        .filter(|(status, ..)| *status == 503)
        .count();
    assert!(refused >= 1, "the webhook was down at first");
}

#[tokio::test(flavor = "multi_thread")]
async fn configs_survive_a_restart_and_only_the_tasks_participants_reach_them() {
    let webhook = Webhook::default();
    let port = webhook.start(None).await;
    let dir = tempfile::tempdir().unwrap();
    let push = format!("allowed_hosts = [\"127.0.0.1:{port}\"]");
    let harness = start(dir.path(), &push);
    let id = send(&harness, "alice", "a task of alice's", None).await;
    let url = format!("http://127.0.0.1:{port}/hook");

    // REST create with a chosen id, JSON-RPC get, 0.3 list.
    let created: Value = reqwest::Client::new()
        .post(format!(
            "{}/tasks/{id}/pushNotificationConfigs",
            harness.url
        ))
        .header("A2A-Version", "1.0")
        .header("X-Participant-Id", "alice")
        .json(&json!({"id": "mine", "url": url, "token": TOKEN}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(created["id"], "mine", "{created}");
    assert_eq!(created["taskId"], id.as_str());
    let bob = rpc(
        &harness,
        "bob",
        "GetTaskPushNotificationConfig",
        json!({"taskId": id, "id": "mine"}),
    )
    .await;
    assert_eq!(error_code(&bob), TASK_NOT_FOUND, "{bob}");
    let bob_deletes = rpc(
        &harness,
        "bob",
        "DeleteTaskPushNotificationConfig",
        json!({"taskId": id, "id": "mine"}),
    )
    .await;
    assert_eq!(error_code(&bob_deletes), TASK_NOT_FOUND);

    drop(harness);
    let harness = start(dir.path(), &push);
    let got = rpc(
        &harness,
        "alice",
        "GetTaskPushNotificationConfig",
        json!({"taskId": id, "id": "mine"}),
    )
    .await;
    assert_eq!(got["result"]["url"], url.as_str(), "{got}");
    assert_eq!(got["result"]["token"], TOKEN);
    let legacy = rpc(
        &harness,
        "alice",
        "tasks/pushNotificationConfig/list",
        json!({"id": id}),
    )
    .await;
    assert_eq!(
        legacy["result"][0]["pushNotificationConfig"]["id"], "mine",
        "{legacy}"
    );
    let bob_lists = reqwest::Client::new()
        .get(format!(
            "{}/tasks/{id}/pushNotificationConfigs",
            harness.url
        ))
        .header("A2A-Version", "1.0")
        .header("X-Participant-Id", "bob")
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(bob_lists, 404);

    for _ in 0..2 {
        let deleted = rpc(
            &harness,
            "alice",
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": id, "id": "mine"}),
        )
        .await;
        assert!(deleted.get("error").is_none(), "idempotent: {deleted}");
    }
    let gone = rpc(
        &harness,
        "alice",
        "GetTaskPushNotificationConfig",
        json!({"taskId": id, "id": "mine"}),
    )
    .await;
    assert_eq!(error_code(&gone), TASK_NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread")]
async fn webhooks_outside_the_allowed_hosts_or_on_a_private_address_are_refused_naming_the_setting()
{
    let webhook = Webhook::default();
    let port = webhook.start(None).await;
    let dir = tempfile::tempdir().unwrap();
    // `localhost` is allowed by name, which never reaches a loopback address.
    let harness = start(
        dir.path(),
        &format!("allowed_hosts = [\"127.0.0.1:{port}\", \"localhost:{port}\"]"),
    );
    let id = send(&harness, "alice", "a task of alice's", None).await;
    let create = |url: String| {
        rpc(
            &harness,
            "alice",
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": url}),
        )
    };
    for url in [
        format!("http://127.0.0.2:{port}/hook"),
        format!("http://127.0.0.1:{}/hook", port.wrapping_add(1).max(1)),
        format!("http://localhost:{port}/hook"),
        "http://169.254.169.254/latest/meta-data".to_string(),
        format!("ftp://127.0.0.1:{port}/hook"),
    ] {
        let refused = create(url.clone()).await;
        assert_eq!(error_code(&refused), INVALID_PARAMS, "{url}: {refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        if !url.starts_with("ftp") {
            assert!(message.contains("push.allowed_hosts"), "{message}");
        }
    }
    let sent = rpc(
        &harness,
        "alice",
        "SendMessage",
        json!({
            "message": {"messageId": "m-private", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
            "configuration": {"taskPushNotificationConfig": {"url": format!("http://localhost:{port}/hook")}},
        }),
    )
    .await;
    assert_eq!(error_code(&sent), INVALID_PARAMS, "{sent}");
    assert!(
        sent["error"]["message"]
            .as_str()
            .unwrap()
            .contains("configuration.taskPushNotificationConfig.url"),
        "{sent}"
    );
    assert!(webhook.received.lock().unwrap().is_empty());

    // With no `[push]` hosts, push is not offered at all.
    let off_dir = tempfile::tempdir().unwrap();
    let off = start(off_dir.path(), "");
    let card: Value = reqwest::get(format!("{}/.well-known/agent-card.json", off.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["capabilities"]["pushNotifications"], false);
    let refused = rpc(
        &off,
        "alice",
        "CreateTaskPushNotificationConfig",
        json!({"taskId": id, "url": format!("http://127.0.0.1:{port}/hook")}),
    )
    .await;
    assert_eq!(error_code(&refused), PUSH_NOT_SUPPORTED);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("push.allowed_hosts")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_webhook_that_redirects_is_not_followed_and_its_push_is_dropped() {
    // The redirect's target: a second listener the harness must never reach.
    let target = Webhook::default();
    let target_port = target.start(None).await;
    let webhook = Webhook::default();
    let port = webhook
        .start(Some(format!("http://127.0.0.1:{target_port}/hook")))
        .await;
    let dir = tempfile::tempdir().unwrap();
    let harness = start(
        dir.path(),
        &format!("allowed_hosts = [\"127.0.0.1:{port}\", \"127.0.0.1:{target_port}\"]"),
    );
    let config = json!({"url": format!("http://127.0.0.1:{port}/redirect")});
    send(&harness, "alice", "redirected", Some(config)).await;
    let metrics = || async {
        reqwest::get(format!("{}/metrics", harness.url))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };
    tokio::time::timeout(HANG_GUARD, async {
        while !metrics()
            .await
            .contains("tiny_harness_push_deliveries_total{outcome=\"refused\"}")
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the redirect was refused");
    assert!(target.received.lock().unwrap().is_empty());
    assert!(webhook.accepted().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_config_sent_with_a_message_to_a_working_task_hears_the_rest_of_it() {
    let (webhook, port, _dir, harness) = serve_with_webhook().await;
    let id = send(&harness, "alice", "add two and two", None).await;
    let params = json!({
        "message": {"messageId": "m-more", "role": "ROLE_USER", "taskId": id,
                    "parts": [{"text": "and show your work"}]},
        "configuration": {"returnImmediately": true, "taskPushNotificationConfig": {
            "url": format!("http://127.0.0.1:{port}/hook"), "token": TOKEN}},
    });
    let bob = rpc(&harness, "bob", "SendMessage", params.clone()).await;
    assert_eq!(error_code(&bob), TASK_NOT_FOUND, "{bob}");
    let sent = rpc(&harness, "alice", "SendMessage", params).await;
    assert!(sent.get("error").is_none(), "{sent}");

    let ended = |push: &Value| {
        state_of(push).is_some_and(|s| {
            ["COMPLETED", "FAILED", "CANCELED"]
                .iter()
                .any(|end| s.ends_with(end))
        })
    };
    webhook.wait_for(ended).await;
    let task = get_task(&harness, "alice", &id).await;
    let pushes = webhook.accepted();
    assert_eq!(
        state_of(pushes.last().unwrap()),
        task["status"]["state"].as_str()
    );
    for push in &pushes {
        let told = push["statusUpdate"]["taskId"]
            .as_str()
            .or(push["artifactUpdate"]["taskId"].as_str());
        assert_eq!(told, Some(id.as_str()), "{push}");
    }
    let listed = rpc(
        &harness,
        "alice",
        "ListTaskPushNotificationConfigs",
        json!({"taskId": id}),
    )
    .await;
    assert_eq!(listed["result"]["configs"].as_array().unwrap().len(), 1);
}
