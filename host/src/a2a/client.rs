//! A client for other A2A 1.0 agents over JSON-RPC: unary calls, and SSE streams read as
//! [`StreamResponse`]s. Used to delegate work to remote agents and to test this server.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use eventsource_stream::{EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::a2a::card::CARD_PATH;
use crate::a2a::headers::{A2A_VERSION_HEADER, PARTICIPANT_HEADER, SUPPORTED_VERSION};
use crate::a2a::jsonrpc::JSONRPC_VERSION;
use crate::a2a::types::{
    AgentCard, ListTasksRequest, ListTasksResponse, SendMessageRequest, SendMessageResponse,
    StreamResponse, Task,
};

/// How long to wait for a TCP (and TLS) connection to an agent.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a quick call (card, get, list, cancel, non-blocking send) may take in all.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a blocking `SendMessage` may take: a little over the ten minutes this server waits
/// for a task to settle, so its answer arrives before the client gives up.
pub const BLOCKING_SEND_TIMEOUT: Duration = Duration::from_secs(11 * 60);
/// How long a stream may go without a byte. Servers send keep-alives (this one every 15 s), so a
/// longer silence means the connection is dead.
pub const STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// The largest unary response read; a bigger one is refused rather than held in memory.
pub const MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;

/// A stream of events from `SendStreamingMessage` or `SubscribeToTask`. It ends when the server
/// closes it, which A2A servers do once the task settles.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamResponse, ClientError>> + Send>>;

/// Why a call to another agent failed. `Rpc` keeps the JSON-RPC error as the agent sent it.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot build the HTTP client: {0}")]
    Build(#[source] reqwest::Error),
    #[error("request to {url} failed: {source}")]
    Transport {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{url} answered HTTP {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error("JSON-RPC error {code}: {message}")]
    Rpc {
        code: i32,
        message: String,
        data: Option<Value>,
    },
    #[error("invalid response from {url}: {message}")]
    InvalidResponse { url: String, message: String },
}

impl ClientError {
    /// The JSON-RPC error code, when the agent answered with one.
    pub fn rpc_code(&self) -> Option<i32> {
        match self {
            ClientError::Rpc { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// The HTTP status, when the agent answered with something other than 200.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            ClientError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// A client for one agent. Every request carries `A2A-Version: 1.0` and, when set, the
/// participant id the calls are made as.
pub struct A2aClient {
    http: reqwest::Client,
    base_url: String,
    participant: Option<String>,
    next_id: AtomicU64,
}

impl A2aClient {
    /// A client for the agent whose JSON-RPC endpoint (and card root) is `base_url`.
    pub fn new(base_url: impl Into<String>) -> Result<A2aClient, ClientError> {
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(ClientError::Build)?;
        let base_url = base_url.into().trim_end_matches('/').to_string();
        Ok(A2aClient {
            http,
            base_url,
            participant: None,
            next_id: AtomicU64::new(1),
        })
    }

    /// Makes every call as this participant (`X-Participant-Id`).
    pub fn with_participant(mut self, id: impl Into<String>) -> A2aClient {
        self.participant = Some(id.into());
        self
    }

    /// The agent's base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The agent's card, from `{base}/.well-known/agent-card.json`.
    pub async fn fetch_card(&self) -> Result<AgentCard, ClientError> {
        let url = format!("{}{CARD_PATH}", self.base_url);
        let request = self.http.get(&url).timeout(REQUEST_TIMEOUT);
        let response = self
            .headers(request)
            .send()
            .await
            .map_err(transport(&url))?;
        let body = read_ok_body(&url, response).await?;
        serde_json::from_slice(&body).map_err(|err| invalid(&url, format!("agent card: {err}")))
    }

    /// `SendMessage`. Blocking unless the request's configuration says `returnImmediately`.
    pub async fn send_message(
        &self,
        request: SendMessageRequest,
    ) -> Result<SendMessageResponse, ClientError> {
        let immediate = request
            .configuration
            .as_ref()
            .is_some_and(|c| c.return_immediately);
        let timeout = if immediate {
            REQUEST_TIMEOUT
        } else {
            BLOCKING_SEND_TIMEOUT
        };
        self.call("SendMessage", &request, timeout).await
    }

    /// `GetTask`, with at most `history_length` recent messages.
    pub async fn get_task(
        &self,
        id: &str,
        history_length: Option<i32>,
    ) -> Result<Task, ClientError> {
        let mut params = json!({ "id": id });
        if let Some(n) = history_length {
            params["historyLength"] = json!(n);
        }
        self.call("GetTask", &params, REQUEST_TIMEOUT).await
    }

    /// `ListTasks`.
    pub async fn list_tasks(
        &self,
        request: ListTasksRequest,
    ) -> Result<ListTasksResponse, ClientError> {
        self.call("ListTasks", &request, REQUEST_TIMEOUT).await
    }

    /// `CancelTask`; returns the task as it is after the cancel.
    pub async fn cancel_task(&self, id: &str) -> Result<Task, ClientError> {
        self.call("CancelTask", &json!({ "id": id }), REQUEST_TIMEOUT)
            .await
    }

    /// `SendStreamingMessage`. An error before the stream starts is returned here; errors after
    /// it come as items.
    pub async fn send_streaming_message(
        &self,
        request: SendMessageRequest,
    ) -> Result<EventStream, ClientError> {
        self.stream("SendStreamingMessage", &request).await
    }

    /// `SubscribeToTask`: the task as it is now, then its events until it settles.
    pub async fn subscribe(&self, id: &str) -> Result<EventStream, ClientError> {
        self.stream("SubscribeToTask", &json!({ "id": id })).await
    }

    /// Any unary method, for those without a typed helper.
    pub async fn call<P: Serialize + ?Sized, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        timeout: Duration,
    ) -> Result<R, ClientError> {
        let url = self.base_url.clone();
        let request = self.post(method, params).timeout(timeout);
        let response = request.send().await.map_err(transport(&url))?;
        let body = read_ok_body(&url, response).await?;
        let result = result_of(&url, &body)?;
        serde_json::from_value(result)
            .map_err(|err| invalid(&url, format!("{method} result: {err}")))
    }

    async fn stream<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<EventStream, ClientError> {
        let url = self.base_url.clone();
        let request = self
            .post(method, params)
            .header(ACCEPT, "text/event-stream");
        let response = request.send().await.map_err(transport(&url))?;
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_sse || !response.status().is_success() {
            // An error before the stream starts is an ordinary JSON-RPC response.
            let body = read_ok_body(&url, response).await?;
            result_of(&url, &body)?;
            return Err(invalid(
                &url,
                format!("{method} answered without an event stream"),
            ));
        }
        let bytes = idle_limited(url.clone(), response.bytes_stream());
        let events = bytes.eventsource().filter_map(move |event| {
            let url = url.clone();
            async move {
                match event {
                    Ok(event) if event.data.trim().is_empty() => None,
                    Ok(event) => Some(result_of(&url, event.data.as_bytes()).and_then(|value| {
                        serde_json::from_value(value)
                            .map_err(|err| invalid(&url, format!("stream event: {err}")))
                    })),
                    Err(EventStreamError::Transport(err)) => Some(Err(err)),
                    Err(err) => Some(Err(invalid(&url, format!("event stream: {err}")))),
                }
            }
        });
        Ok(Box::pin(events))
    }

    fn post<P: Serialize + ?Sized>(&self, method: &str, params: &P) -> reqwest::RequestBuilder {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body =
            json!({ "jsonrpc": JSONRPC_VERSION, "id": id, "method": method, "params": params });
        self.headers(self.http.post(&self.base_url)).json(&body)
    }

    fn headers(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let request = request.header(A2A_VERSION_HEADER, SUPPORTED_VERSION);
        match &self.participant {
            Some(id) => request.header(PARTICIPANT_HEADER, id),
            None => request,
        }
    }
}

/// The bytes of a stream, ending with an error after [`STREAM_IDLE_TIMEOUT`] of silence or at
/// the first transport error.
fn idle_limited(
    url: String,
    bytes: impl Stream<Item = Result<bytes::Bytes, reqwest::Error>> + Send + 'static,
) -> impl Stream<Item = Result<bytes::Bytes, ClientError>> + Send {
    let state = Some(Box::pin(bytes));
    futures::stream::unfold(state, move |state| {
        let url = url.clone();
        async move {
            let mut bytes = state?;
            match tokio::time::timeout(STREAM_IDLE_TIMEOUT, bytes.next()).await {
                Ok(None) => None,
                Ok(Some(Ok(chunk))) => Some((Ok(chunk), Some(bytes))),
                Ok(Some(Err(source))) => Some((Err(ClientError::Transport { url, source }), None)),
                Err(_) => {
                    let message = format!("no data for {} s", STREAM_IDLE_TIMEOUT.as_secs());
                    Some((Err(invalid(&url, message)), None))
                }
            }
        }
    })
}

/// The body of a 200 response, read up to [`MAX_RESPONSE_BYTES`]; other statuses are errors.
async fn read_ok_body(url: &str, mut response: reqwest::Response) -> Result<Vec<u8>, ClientError> {
    let status = response.status();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(transport(url))? {
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(invalid(
                url,
                format!("response larger than {MAX_RESPONSE_BYTES} bytes"),
            ));
        }
        body.extend_from_slice(&chunk);
    }
    if !status.is_success() {
        let text = String::from_utf8_lossy(&body).trim().to_string();
        return Err(ClientError::Status {
            url: url.to_string(),
            status: status.as_u16(),
            body: text,
        });
    }
    Ok(body)
}

/// The `result` of a JSON-RPC response, or its `error` as [`ClientError::Rpc`].
fn result_of(url: &str, body: &[u8]) -> Result<Value, ClientError> {
    let mut response: Value =
        serde_json::from_slice(body).map_err(|err| invalid(url, format!("not JSON: {err}")))?;
    if let Some(error) = response.get_mut("error").map(Value::take) {
        let code = error.get("code").and_then(Value::as_i64);
        let code = code.and_then(|code| i32::try_from(code).ok());
        let message = error.get("message").and_then(Value::as_str);
        return Err(match (code, message) {
            (Some(code), Some(message)) => ClientError::Rpc {
                code,
                message: message.to_string(),
                data: error.get("data").cloned(),
            },
            _ => invalid(url, format!("malformed JSON-RPC error: {error}")),
        });
    }
    match response.get_mut("result").map(Value::take) {
        Some(result) => Ok(result),
        None => Err(invalid(
            url,
            "JSON-RPC response has neither result nor error",
        )),
    }
}

fn transport(url: &str) -> impl FnOnce(reqwest::Error) -> ClientError + '_ {
    move |source| ClientError::Transport {
        url: url.to_string(),
        source,
    }
}

fn invalid(url: &str, message: impl Into<String>) -> ClientError {
    ClientError::InvalidResponse {
        url: url.to_string(),
        message: message.into(),
    }
}
