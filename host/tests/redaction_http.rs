//! What a client can read of a harness whose model endpoint misbehaves. Every secret the harness
//! holds is a canary (the model's API key, a trusted delegator's token, an agent's token), and so
//! is the model URL's path; the model endpoint refuses the key and echoes it, fails with the key
//! in its body, or is down. Tasks are driven to FAILED over every binding, then every answer a
//! client can get (both bindings, streams, the card, errors to bad requests) is searched for the
//! canaries, and the failure reason is checked word for word. The harness is the real binary with
//! the secrets in its environment; its log is read too, where the endpoint's words may appear
//! but never a secret.

mod support {
    pub mod harness_process;
}

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use support::harness_process::{HARNESS, STARTUP_TIMEOUT};

const MODEL_KEY: &str = "sk-CANARY-model-key-7d41a9e0";
const DELEGATOR_TOKEN: &str = "CANARY-delegator-token-52be07f1";
const AGENT_TOKEN: &str = "CANARY-agent-token-c3f18e44";
const MODEL_PATH: &str = "canary-model-path-9e2d";

/// How long one request, or one whole stream, may take before the test fails instead of hanging.
const DEADLINE: Duration = Duration::from_secs(60);

/// How the stub model endpoint misbehaves.
#[derive(Clone, Copy)]
enum Endpoint {
    /// HTTP 401, the body quoting the key and the whole `Authorization` header it received.
    RefusesTheKey,
    /// HTTP 500, the key in the body.
    FailsWithTheKey,
    /// Nothing listens: the port is closed.
    Down,
}

#[derive(Default)]
struct Stub {
    authorizations: Mutex<Vec<String>>,
}

async fn answer(State((stub, status)): State<(Arc<Stub>, u16)>, headers: HeaderMap) -> Response {
    let authorization = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_string();
    stub.authorizations
        .lock()
        .unwrap()
        .push(authorization.clone());
    let key = authorization.trim_start_matches("Bearer ");
    let body = if status == 401 {
        json!({"error": {
            "message": format!("Incorrect API key provided: {key}."),
            "received": {"authorization": authorization},
        }})
    } else {
        json!({"error": format!("upstream failure while serving key {key}\n at /srv/{MODEL_PATH}")})
    };
    let code = StatusCode::from_u16(status).unwrap();
    (code, axum::Json(body)).into_response()
}

/// Starts the stub for `endpoint`; returns the model's base URL (its path a canary) and the stub.
async fn model_endpoint(endpoint: Endpoint) -> (String, Option<Arc<Stub>>) {
    let status = match endpoint {
        Endpoint::RefusesTheKey => 401,
        Endpoint::FailsWithTheKey => 500,
        Endpoint::Down => {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let address = listener.local_addr().unwrap();
            drop(listener);
            return (format!("http://{address}/{MODEL_PATH}/v1"), None);
        }
    };
    let stub = Arc::new(Stub::default());
    let app = axum::Router::new()
        .fallback(answer)
        .with_state((stub.clone(), status));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{address}/{MODEL_PATH}/v1"), Some(stub))
}

/// `harness serve` as a child process, its log collected line by line.
struct Harness {
    child: Child,
    base: String,
    log: Arc<Mutex<Vec<String>>>,
    http: reqwest::Client,
    /// The canaries: every secret, the model URL's path and its host and port.
    canaries: Vec<String>,
    _dir: tempfile::TempDir,
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Harness {
    async fn start(endpoint: Endpoint) -> (Harness, Option<Arc<Stub>>) {
        let (model_url, stub) = model_endpoint(endpoint).await;
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let agent_url = format!("http://{}", closed.local_addr().unwrap());
        drop(closed);
        let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("redaction-cache");
        let dir = tempfile::tempdir().unwrap();
        let config = format!(
            "[server]\nbind = \"127.0.0.1:0\"\nrate_limit_per_minute = 0\n\
             [[server.trusted_delegators]]\nid = \"front-desk\"\ntoken_env = \"CANARY_DELEGATOR_TOKEN\"\n\
             [store]\npath = \"harness.db\"\n\
             [plugins]\ncache_dir = {cache:?}\n\
             [model]\nprovider = \"openai\"\nbase_url = \"{model_url}\"\nmodel = \"canary-model\"\n\
             api_key_env = \"CANARY_MODEL_KEY\"\ntimeout = 10\nmax_retries = 1\n\
             [roster]\ncard_timeout_secs = 1\n\
             [[agents]]\nid = \"ledger\"\nurl = \"{agent_url}\"\ntoken_env = \"CANARY_AGENT_TOKEN\"\n",
        );
        let path = dir.path().join("config.toml");
        std::fs::write(&path, config).unwrap();
        let mut child = Command::new(HARNESS)
            .args(["serve", "--config"])
            .arg(&path)
            .env("RUST_LOG", "debug")
            .env("CANARY_MODEL_KEY", MODEL_KEY)
            .env("CANARY_DELEGATOR_TOKEN", DELEGATOR_TOKEN)
            .env("CANARY_AGENT_TOKEN", AGENT_TOKEN)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let lines = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("listening on ").nth(1) {
                    let _ = tx.send(rest.split_whitespace().next().unwrap_or("").to_string());
                }
                lines.lock().unwrap().push(line);
            }
        });
        let base = rx
            .recv_timeout(STARTUP_TIMEOUT)
            .expect("the harness logged its address");
        let model_host = model_url
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap()
            .to_string();
        let canaries = [
            MODEL_KEY,
            DELEGATOR_TOKEN,
            AGENT_TOKEN,
            MODEL_PATH,
            &model_host,
        ]
        .map(str::to_string)
        .to_vec();
        let harness = Harness {
            child,
            base,
            log,
            http: reqwest::Client::new(),
            canaries,
            _dir: dir,
        };
        (harness, stub)
    }

    /// The log so far, one string.
    fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// Sends a request as `caller`; the status and the whole body as text.
    async fn send(&self, caller: &Caller, request: reqwest::RequestBuilder) -> (u16, String) {
        let request = match caller {
            Caller::Anonymous => request,
            Caller::Participant(id) => request.header("X-Participant-Id", id),
            Caller::Authorization(value) => request.header("Authorization", value),
        };
        let send = async {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            (status, response.text().await.unwrap())
        };
        tokio::time::timeout(DEADLINE, send)
            .await
            .expect("the answer came in time")
    }

    async fn rpc(&self, caller: &Caller, method: &str, params: Value) -> String {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let request = self.http.post(&self.base).header("A2A-Version", "1.0");
        let (status, text) = self.send(caller, request.json(&body)).await;
        assert_eq!(status, 200, "{text}");
        text
    }

    /// A JSON-RPC body as it is, with no `A2A-Version` (as 0.3 clients send).
    async fn rpc_raw(&self, caller: &Caller, body: &str) -> String {
        let request = self
            .http
            .post(&self.base)
            .header("Content-Type", "application/json")
            .body(body.to_string());
        self.send(caller, request).await.1
    }

    async fn rest(&self, caller: &Caller, method: &str, path: &str, body: Option<Value>) -> String {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("A2A-Version", "1.0");
        if let Some(body) = body {
            request = request.json(&body);
        }
        self.send(caller, request).await.1
    }
}

/// Who sends a request.
enum Caller {
    Anonymous,
    Participant(String),
    /// An `Authorization` header as given.
    Authorization(String),
}

fn bearer(token: &str) -> Caller {
    Caller::Authorization(format!("Bearer {token}"))
}

fn message(text: &str) -> Value {
    json!({"message": {
        "messageId": uuid::Uuid::new_v4().to_string(),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }})
}

/// The JSON of each `data:` line of an event stream.
fn events(stream: &str) -> Vec<Value> {
    stream
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str(data.trim()).unwrap())
        .collect()
}

/// Asserts a task (as JSON) failed with exactly `reason`, its last history message saying it too.
fn assert_failed_with(task: &Value, reason: &str) {
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED", "{task}");
    assert_eq!(task["status"]["message"]["parts"][0]["text"], reason);
    if let Some(history) = task["history"].as_array() {
        assert_eq!(history.last().unwrap()["parts"][0]["text"], reason);
    }
}

/// Drives tasks to FAILED over every binding and reads everything a client can read; returns
/// each answer as `(what, text)`. Every task is checked to fail with exactly `reason`.
async fn read_everything(harness: &Harness, reason: &str) -> Vec<(String, String)> {
    let delegator = bearer(DELEGATOR_TOKEN);
    let carol = Caller::Participant("carol".to_string());
    let anyone = Caller::Anonymous;
    let mut read = Vec::new();

    // Created over JSON-RPC by the trusted delegator, blocking until it fails.
    let sent = harness
        .rpc(&delegator, "SendMessage", message("summarise the ledger"))
        .await;
    let by_delegator: Value = serde_json::from_str(&sent).unwrap();
    let by_delegator = &by_delegator["result"]["task"];
    assert_failed_with(by_delegator, reason);
    let delegator_task = by_delegator["id"].as_str().unwrap().to_string();
    read.push(("JSON-RPC SendMessage".to_string(), sent));

    // Streamed over JSON-RPC by an anonymous caller.
    let streamed = harness
        .rpc(&anyone, "SendStreamingMessage", message("stream it"))
        .await;
    let last = events(&streamed).last().cloned().unwrap();
    let status = &last["result"]["statusUpdate"]["status"];
    assert_eq!(status["state"], "TASK_STATE_FAILED", "{streamed}");
    assert_eq!(status["message"]["parts"][0]["text"], reason);
    let anonymous_task = last["result"]["statusUpdate"]["taskId"]
        .as_str()
        .unwrap()
        .to_string();
    read.push(("JSON-RPC SendStreamingMessage".to_string(), streamed));

    // Created and streamed over REST by an untrusted participant.
    let sent = harness
        .rest(&carol, "POST", "/message:send", Some(message("rest task")))
        .await;
    let by_carol: Value = serde_json::from_str(&sent).unwrap();
    assert_failed_with(&by_carol["task"], reason);
    let carol_task = by_carol["task"]["id"].as_str().unwrap().to_string();
    read.push(("REST message:send".to_string(), sent));
    let streamed = harness
        .rest(
            &carol,
            "POST",
            "/message:stream",
            Some(message("rest stream")),
        )
        .await;
    let last = events(&streamed).last().cloned().unwrap();
    assert_eq!(
        last["statusUpdate"]["status"]["message"]["parts"][0]["text"],
        reason
    );
    read.push(("REST message:stream".to_string(), streamed));

    // Every way of reading the tasks back.
    let got = harness
        .rpc(&delegator, "GetTask", json!({"id": delegator_task}))
        .await;
    let task: Value = serde_json::from_str(&got).unwrap();
    assert_failed_with(&task["result"], reason);
    read.push(("JSON-RPC GetTask".to_string(), got));
    let got = harness
        .rpc(&anyone, "GetTask", json!({"id": anonymous_task}))
        .await;
    read.push(("JSON-RPC GetTask, anonymous".to_string(), got));
    for (who, caller) in [("delegator", &delegator), ("anonymous", &anyone)] {
        let listed = harness.rpc(caller, "ListTasks", json!({})).await;
        read.push((format!("JSON-RPC ListTasks, {who}"), listed));
    }
    let subscribed = harness
        .rpc(&delegator, "SubscribeToTask", json!({"id": delegator_task}))
        .await;
    read.push(("JSON-RPC SubscribeToTask".to_string(), subscribed));
    let legacy = harness
        .rpc_raw(
            &delegator,
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"id": delegator_task}})
                .to_string(),
        )
        .await;
    assert!(legacy.contains(reason), "{legacy}");
    read.push(("JSON-RPC 0.3 tasks/get".to_string(), legacy));
    let got = harness
        .rest(&carol, "GET", &format!("/tasks/{carol_task}"), None)
        .await;
    let task: Value = serde_json::from_str(&got).unwrap();
    assert_failed_with(&task, reason);
    read.push(("REST GET /tasks/{id}".to_string(), got));
    for (what, method, path) in [
        ("REST GET /tasks", "GET", "/tasks".to_string()),
        (
            "REST subscribe",
            "POST",
            format!("/tasks/{carol_task}:subscribe"),
        ),
        ("REST cancel", "POST", format!("/tasks/{carol_task}:cancel")),
    ] {
        read.push((
            what.to_string(),
            harness.rest(&carol, method, &path, None).await,
        ));
    }

    // The card, and errors to bad requests, some of them carrying a secret of the harness
    // where it does not belong.
    for path in [
        "/.well-known/agent-card.json",
        "/extendedAgentCard",
        "/nowhere",
    ] {
        read.push((
            path.to_string(),
            harness.rest(&anyone, "GET", path, None).await,
        ));
    }
    let bad_bodies = [
        "{not json",
        r#"{"jsonrpc":"2.0","id":1,"method":"NoSuchMethod"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":7}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":""}}"#,
        r#"[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]"#,
    ];
    for body in bad_bodies {
        read.push((
            format!("JSON-RPC {body}"),
            harness.rpc_raw(&anyone, body).await,
        ));
    }
    let get =
        json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": delegator_task}})
            .to_string();
    for (what, caller) in [
        ("an agent's token as a bearer", bearer(AGENT_TOKEN)),
        ("the model key as a bearer", bearer(MODEL_KEY)),
        (
            "a delegator's token as Basic credentials",
            Caller::Authorization(format!("Basic {DELEGATOR_TOKEN}")),
        ),
        (
            "someone else's task",
            Caller::Participant("mallory".to_string()),
        ),
    ] {
        let refused = harness.rpc_raw(&caller, &get).await;
        assert!(refused.contains("\"error\""), "{what}: {refused}");
        read.push((format!("JSON-RPC GetTask with {what}"), refused));
        let path = format!("/tasks/{delegator_task}");
        let refused = harness.rest(&caller, "GET", &path, None).await;
        read.push((format!("REST GET /tasks/{{id}} with {what}"), refused));
    }
    read
}

/// Asserts no canary appears in any answer, naming the answer and the canary when one does.
fn assert_no_canary(harness: &Harness, read: &[(String, String)]) {
    for (what, text) in read {
        for canary in &harness.canaries {
            assert!(
                !text.contains(canary.as_str()),
                "{what} reveals {canary}:\n{text}"
            );
        }
    }
}

/// Asserts the log names no secret (the model URL is the operator's own and may appear).
fn assert_log_keeps_secrets(log: &str) {
    for secret in [MODEL_KEY, DELEGATOR_TOKEN, AGENT_TOKEN] {
        assert!(!log.contains(secret), "the log reveals {secret}:\n{log}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_refuses_the_key_and_echoes_it_reveals_nothing_to_clients() {
    let (harness, stub) = Harness::start(Endpoint::RefusesTheKey).await;
    let reason = "the model endpoint refused the API key (HTTP 401)";
    let read = read_everything(&harness, reason).await;
    assert_no_canary(&harness, &read);
    let stub = stub.unwrap();
    let sent = stub.authorizations.lock().unwrap().clone();
    assert!(
        sent.iter()
            .all(|header| *header == format!("Bearer {MODEL_KEY}"))
    );
    let log = harness.log();
    assert_log_keeps_secrets(&log);
    assert!(
        log.contains("Incorrect API key provided: [redacted]."),
        "the log keeps the masked body:\n{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_fails_with_the_key_in_its_body_reveals_nothing_to_clients() {
    let (harness, _stub) = Harness::start(Endpoint::FailsWithTheKey).await;
    let reason = "the model endpoint answered HTTP 500 after 1 retry";
    let read = read_everything(&harness, reason).await;
    assert_no_canary(&harness, &read);
    let log = harness.log();
    assert_log_keeps_secrets(&log);
    assert!(
        log.contains("upstream failure while serving key [redacted]\\\\n at /srv/"),
        "the log keeps the masked body, escaped:\n{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_is_down_reveals_neither_its_url_nor_a_secret_to_clients() {
    let (harness, _stub) = Harness::start(Endpoint::Down).await;
    let reason = "the model endpoint could not be reached after 1 retry";
    let read = read_everything(&harness, reason).await;
    assert_no_canary(&harness, &read);
    let log = harness.log();
    assert_log_keeps_secrets(&log);
    assert!(
        log.contains("could not reach the model endpoint after 1 retry"),
        "{log}"
    );
}
