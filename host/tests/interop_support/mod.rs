//! Support for the interop tests: a real harness (runtime, engine, store, the conformance model)
//! served in-process on loopback, and plain HTTP helpers that speak JSON-RPC and REST the way a
//! foreign client would, without this crate's client in the way.

#![allow(dead_code)]

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{Value, json};
use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;
use tokio::sync::oneshot;

/// The bearer token every request of [`Harness::http`] presents, as the token caller `tck`: a
/// caller that proves who it is lists its tasks, as the TCK's runs configure it.
pub const CALLER_TOKEN: &str = "interop-tck-caller-token-45c48cce2e2d7fbd";

/// How long a test waits for a whole stream before it fails instead of hanging.
pub const STREAM_DEADLINE: Duration = Duration::from_secs(30);

/// A harness serving on `127.0.0.1:0` until dropped or stopped.
pub struct Harness {
    pub base: String,
    pub http: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl Harness {
    /// A harness whose model is `[model] provider = "conformance"`.
    pub async fn conformance() -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let text = "[server]\nbind = \"127.0.0.1:0\"\nrate_limit_per_minute = 0\n\
                    [[server.callers]]\nid = \"tck\"\ntoken_env = \"TCK_TOKEN\"\n\
                    [store]\npath = \"harness.db\"\n[model]\nprovider = \"conformance\"\n";
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).unwrap();
        let env = |name: &str| (name == "TCK_TOKEN").then(|| CALLER_TOKEN.to_string());
        let runtime = Runtime::build_with_env(Config::load(&path).unwrap(), env)
            .await
            .unwrap();
        let base = format!("http://{}", runtime.local_addr());
        let (stop, stopped) = oneshot::channel::<()>();
        let done = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            runtime.serve(shutdown).await.unwrap();
        });
        let mut headers = reqwest::header::HeaderMap::new();
        let bearer = format!("Bearer {CALLER_TOKEN}");
        headers.insert(
            reqwest::header::AUTHORIZATION,
            reqwest::header::HeaderValue::from_str(&bearer).unwrap(),
        );
        Harness {
            base,
            http: reqwest::Client::builder()
                .default_headers(headers)
                .build()
                .unwrap(),
            stop: Some(stop),
            done: Some(done),
            _dir: dir,
        }
    }

    /// Stops serving and waits for the server to finish.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(done) = self.done.take() {
            let _ = done.await;
        }
    }

    /// `base` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A JSON-RPC call with `A2A-Version: version` (none when empty); the whole response body.
    pub async fn rpc(&self, version: &str, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut request = self.http.post(&self.base).json(&body);
        if !version.is_empty() {
            request = request.header("A2A-Version", version);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200, "JSON-RPC answers HTTP 200");
        response.json().await.unwrap()
    }

    /// A JSON-RPC streaming call: every event's JSON-RPC response, until the server closes.
    pub async fn rpc_stream(&self, version: &str, method: &str, params: Value) -> Vec<Value> {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        let mut request = self.http.post(&self.base).json(&body);
        if !version.is_empty() {
            request = request.header("A2A-Version", version);
        }
        events(request.send().await.unwrap()).await
    }

    /// A REST request with `A2A-Version: 1.0`; the status and the JSON body (null when empty).
    pub async fn rest(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self
            .http
            .request(method, self.url(path))
            .header("A2A-Version", "1.0");
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let bytes = response.bytes().await.unwrap();
        let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, value)
    }

    /// A JSON-RPC streaming call, open: its events read one at a time.
    pub async fn rpc_stream_open(&self, version: &str, method: &str, params: Value) -> Events {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        let mut request = self.http.post(&self.base).json(&body);
        if !version.is_empty() {
            request = request.header("A2A-Version", version);
        }
        Events::open(request.send().await.unwrap())
    }

    /// A REST streaming request: every event's data as JSON, until the server closes.
    pub async fn rest_stream(&self, method: &str, path: &str, body: Option<Value>) -> Vec<Value> {
        self.rest_stream_open(method, path, body).await.rest().await
    }

    /// A REST streaming request, open: its events read one at a time.
    pub async fn rest_stream_open(&self, method: &str, path: &str, body: Option<Value>) -> Events {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self
            .http
            .request(method, self.url(path))
            .header("A2A-Version", "1.0")
            .header("Accept", "text/event-stream");
        if let Some(body) = body {
            request = request.json(&body);
        }
        Events::open(request.send().await.unwrap())
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The data of every SSE event of a response, parsed as JSON.
pub async fn events(response: reqwest::Response) -> Vec<Value> {
    Events::open(response).rest().await
}

/// An open SSE response whose events a test reads one at a time, so that it can act on an
/// event (a subscription's first snapshot, say) before the stream goes on.
pub struct Events {
    stream: futures::stream::BoxStream<'static, Value>,
}

impl Events {
    /// Checks that the response is an SSE stream and opens it.
    pub fn open(response: reqwest::Response) -> Events {
        assert_eq!(response.status(), 200, "a stream starts with HTTP 200");
        let content_type = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_string();
        assert!(
            content_type.starts_with("text/event-stream"),
            "{content_type}"
        );
        let stream = response
            .bytes_stream()
            .eventsource()
            .filter_map(|event| async move {
                let event = event.unwrap();
                (!event.data.trim().is_empty()).then(|| serde_json::from_str(&event.data).unwrap())
            })
            .boxed();
        Events { stream }
    }

    /// The next event's data; fails the test if the stream ends first or none comes within
    /// [`STREAM_DEADLINE`].
    pub async fn next(&mut self) -> Value {
        tokio::time::timeout(STREAM_DEADLINE, self.stream.next())
            .await
            .expect("an event comes")
            .expect("the stream has another event")
    }

    /// Every event left, until the server closes the stream.
    pub async fn rest(self) -> Vec<Value> {
        tokio::time::timeout(STREAM_DEADLINE, self.stream.collect::<Vec<Value>>())
            .await
            .expect("the stream ends")
    }
}

/// A 1.0 user message with one text part and the given id (whose prefix names the scenario).
pub fn message(message_id: &str, text: &str) -> Value {
    json!({"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]})
}

/// A message id for a conformance scenario, unique per call.
pub fn scenario(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4())
}
