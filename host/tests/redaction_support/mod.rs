//! The pieces of the redaction tests: canary secrets, a model endpoint that misbehaves with the
//! key, `harness serve` run with the canaries in its environment (its log kept), and plain HTTP
//! requests as any client sends them.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::support::harness_process::{HARNESS, STARTUP_TIMEOUT};

pub const MODEL_KEY: &str = "sk-CANARY-model-key-7d41a9e0";
pub const DELEGATOR_TOKEN: &str = "CANARY-delegator-token-52be07f1";
pub const AGENT_TOKEN: &str = "CANARY-agent-token-c3f18e44";
pub const MODEL_PATH: &str = "canary-model-path-9e2d";

/// How long one request, or one whole stream, may take before the test fails instead of hanging.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// How the stub model endpoint misbehaves.
#[derive(Clone, Copy)]
pub enum Endpoint {
    /// HTTP 401, the body quoting the key and the whole `Authorization` header it received.
    RefusesTheKey,
    /// HTTP 500, the key in the body.
    FailsWithTheKey,
    /// Nothing listens: the port is closed.
    Down,
}

#[derive(Default)]
pub struct Stub {
    /// The `Authorization` header of every request the endpoint received.
    pub authorizations: Mutex<Vec<String>>,
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
pub async fn model_endpoint(endpoint: Endpoint) -> (String, Option<Arc<Stub>>) {
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
pub struct Harness {
    child: Child,
    base: String,
    log: Arc<Mutex<Vec<String>>>,
    http: reqwest::Client,
    /// The canaries: every secret, the model URL's path and its host and port.
    pub canaries: Vec<String>,
    _dir: tempfile::TempDir,
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Harness {
    pub async fn start(endpoint: Endpoint) -> (Harness, Option<Arc<Stub>>) {
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
    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// Sends a request as `caller`; the status and the whole body as text.
    pub async fn send(&self, caller: &Caller, request: reqwest::RequestBuilder) -> (u16, String) {
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

    pub async fn rpc(&self, caller: &Caller, method: &str, params: Value) -> String {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let request = self.http.post(&self.base).header("A2A-Version", "1.0");
        let (status, text) = self.send(caller, request.json(&body)).await;
        assert_eq!(status, 200, "{text}");
        text
    }

    /// A JSON-RPC body as it is, with no `A2A-Version` (as 0.3 clients send).
    pub async fn rpc_raw(&self, caller: &Caller, body: &str) -> String {
        let request = self
            .http
            .post(&self.base)
            .header("Content-Type", "application/json")
            .body(body.to_string());
        self.send(caller, request).await.1
    }

    pub async fn rest(
        &self,
        caller: &Caller,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> String {
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
pub enum Caller {
    Anonymous,
    Participant(String),
    /// An `Authorization` header as given.
    Authorization(String),
}

pub fn bearer(token: &str) -> Caller {
    Caller::Authorization(format!("Bearer {token}"))
}

pub fn message(text: &str) -> Value {
    json!({"message": {
        "messageId": uuid::Uuid::new_v4().to_string(),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }})
}

/// The JSON of each `data:` line of an event stream.
pub fn events(stream: &str) -> Vec<Value> {
    stream
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str(data.trim()).unwrap())
        .collect()
}
