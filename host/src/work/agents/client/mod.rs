//! A client for other A2A agents over JSON-RPC: unary calls, and SSE streams read as
//! [`StreamResponse`]s. Used to delegate work to remote agents and to test this server.
//!
//! It speaks 1.0, and 0.3 ([`legacy`]) to an agent whose card says 0.3: [`A2aClient::connect`]
//! reads the card and chooses; [`A2aClient::with_dialect`] chooses without asking. Either way
//! the caller works with the 1.0 types.

mod auth;
mod events;
mod http;
pub mod legacy;
pub mod oauth2;
mod trace;

use http::{idle_limited, invalid, read_ok_body, result_of};
use trace::client_span;

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::{Stream, StreamExt};
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::base::protocol::card::AgentCard;
use crate::base::protocol::card::CARD_PATH;
use crate::base::protocol::headers::LEGACY_VERSION;
use crate::base::protocol::headers::{
    A2A_EXTENSIONS_HEADER, A2A_VERSION_HEADER, PARTICIPANT_HEADER, SUPPORTED_VERSION,
};
use crate::base::protocol::jsonrpc::JSONRPC_VERSION;
use crate::base::protocol::requests::{ListTasksRequest, ListTasksResponse, SendMessageRequest};
use crate::base::protocol::types::{SendMessageResponse, StreamResponse, Task};
use crate::base::protocol::v03::{self, convert};

pub use auth::AgentSecrets;
use auth::Credentials;
use oauth2::{TokenError, TokenSource};

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
    /// The HTTP client could not be built.
    Build(#[source] reqwest::Error),
    #[error("request to {url} failed: {source}")]
    /// The request did not get an answer (connection, timeout, TLS).
    Transport {
        /// The agent's URL.
        url: String,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },
    #[error("{url} answered HTTP {status}: {body}")]
    /// The agent answered with a status other than 200.
    Status {
        /// The agent's URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The start of the answer's body, cleaned and capped, to say what went wrong.
        body: String,
    },
    #[error("JSON-RPC error {code}: {message}")]
    /// The agent answered with a JSON-RPC error.
    Rpc {
        /// The error's code (A2A's, or JSON-RPC's own).
        code: i32,
        /// The error's message, as the agent wrote it.
        message: String,
        /// The error's `data` (its `ErrorInfo` details), as the agent sent it.
        data: Option<Value>,
    },
    #[error("invalid response from {url}: {message}")]
    /// The answer is not what the protocol says (not JSON, the wrong shape, too large).
    InvalidResponse {
        /// The agent's URL.
        url: String,
        /// What was wrong with it.
        message: String,
    },
    #[error("{0}")]
    /// The operation has no form in the agent's dialect.
    Unsupported(String),
    #[error("cannot obtain an access token: {0}")]
    /// No OAuth2 access token could be had for the agent: the call was not sent.
    Credentials(#[source] TokenError),
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

/// The version of the protocol a client speaks to its agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// A2A 1.0, which every card this harness accepts declares.
    #[default]
    V1_0,
    /// 0.3 method names and shapes, for agents that have not moved to 1.0.
    V0_3,
}

/// A client for one agent. Every request carries the `A2A-Version` of its dialect and, when
/// set, the participant id the calls are made as.
pub struct A2aClient {
    http: reqwest::Client,
    /// Where the card is: `{base_url}/.well-known/agent-card.json`.
    base_url: String,
    /// Where JSON-RPC requests go: the base URL unless the card names another.
    endpoint: String,
    participant: Option<String>,
    /// Sent as `Authorization: Bearer …`: what makes this harness a trusted delegator there.
    auth: Credentials,
    /// Extension URIs activated on every request (`A2A-Extensions`).
    extensions: Vec<String>,
    next_id: AtomicU64,
    dialect: Dialect,
}

impl A2aClient {
    /// A 1.0 client for the agent whose JSON-RPC endpoint (and card root) is `base_url`.
    pub fn new(base_url: impl Into<String>) -> Result<A2aClient, ClientError> {
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(ClientError::Build)?;
        let base_url = base_url.into().trim_end_matches('/').to_string();
        Ok(A2aClient {
            http,
            endpoint: base_url.clone(),
            base_url,
            participant: None,
            auth: Credentials::default(),
            extensions: Vec::new(),
            next_id: AtomicU64::new(1),
            dialect: Dialect::V1_0,
        })
    }

    /// A client for the agent at `base_url`, speaking what its card says: 1.0 at its JSON-RPC
    /// interface, or 0.3 at the card's `url` when the card is a 0.3 one (see
    /// [`legacy::card_dialect`]).
    pub async fn connect(base_url: impl Into<String>) -> Result<A2aClient, ClientError> {
        let mut client = A2aClient::new(base_url)?;
        let card = client.fetch_card_json().await?;
        let (dialect, endpoint) = legacy::card_dialect(&card);
        client.dialect = dialect;
        if let Some(endpoint) = endpoint {
            client.endpoint = endpoint.trim_end_matches('/').to_string();
        }
        Ok(client)
    }

    /// Speaks `dialect` to the agent, without asking its card.
    pub fn with_dialect(mut self, dialect: Dialect) -> A2aClient {
        self.dialect = dialect;
        self
    }

    /// The dialect this client speaks.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Where JSON-RPC requests go.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Makes every call as this participant (`X-Participant-Id`).
    pub fn with_participant(mut self, id: impl Into<String>) -> A2aClient {
        self.participant = Some(id.into());
        self
    }

    /// Authenticates every call with this bearer token. Give it only to the agent it was issued
    /// for: whoever holds it may create tasks in the delegator's name.
    pub fn with_bearer(mut self, token: impl Into<String>) -> A2aClient {
        self.auth.bearer = Some(token.into());
        self
    }

    /// Presents `key` in the header `header` on every call (an `apiKeySecurityScheme` in a
    /// header). Fails on a header name that is not one.
    pub fn with_api_key(mut self, header: &str, key: &str) -> Result<A2aClient, ClientError> {
        let name = reqwest::header::HeaderName::from_bytes(header.as_bytes()).map_err(|_| {
            ClientError::Unsupported("the API key's header name is not a header name".to_string())
        })?;
        self.auth.api_key = Some((name, auth::sensitive(key)));
        Ok(self)
    }

    /// Authenticates every call with an OAuth2 access token from `source`, in place of any
    /// bearer token; a 401 gets one new token and one retry.
    pub fn with_oauth2(mut self, source: Arc<TokenSource>) -> A2aClient {
        self.auth.oauth2 = Some(source);
        self
    }

    /// `text` with every secret this client presents, or has presented, masked: for what the
    /// agent sends back, which may quote an access token.
    pub fn mask_secrets(&self, text: &str) -> String {
        self.auth.mask(text)
    }

    /// Activates these extensions on every call (`A2A-Extensions`).
    pub fn with_extensions(mut self, uris: Vec<String>) -> A2aClient {
        self.extensions = uris;
        self
    }

    /// The agent's base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The agent's card, from `{base}/.well-known/agent-card.json`.
    pub async fn fetch_card(&self) -> Result<AgentCard, ClientError> {
        let url = format!("{}{CARD_PATH}", self.base_url);
        let card = self.fetch_card_json().await?;
        serde_json::from_value(card).map_err(|err| invalid(&url, format!("agent card: {err}")))
    }

    /// The agent's card as JSON, whatever version it is written in.
    pub async fn fetch_card_json(&self) -> Result<Value, ClientError> {
        let url = format!("{}{CARD_PATH}", self.base_url);
        client_span("GetAgentCard", &self.base_url, |trace| async move {
            let build = || trace.apply(self.headers(self.http.get(&url).timeout(REQUEST_TIMEOUT)));
            let response = self.auth.send(&url, build).await?;
            let body = read_ok_body(&url, response).await?;
            serde_json::from_slice(&body).map_err(|err| invalid(&url, format!("agent card: {err}")))
        })
        .await
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
        match self.dialect {
            Dialect::V1_0 => self.call("SendMessage", &request, timeout).await,
            Dialect::V0_3 => {
                let params = convert::send_params_from_v10(&request);
                let result: Value = self.call(v03::SEND, &params, timeout).await?;
                legacy::send_result(&self.endpoint, result)
            }
        }
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
        match self.dialect {
            Dialect::V1_0 => self.call("GetTask", &params, REQUEST_TIMEOUT).await,
            Dialect::V0_3 => {
                let result: Value = self.call(v03::GET, &params, REQUEST_TIMEOUT).await?;
                legacy::task(&self.endpoint, result)
            }
        }
    }

    /// `ListTasks`; 0.3 has no such method.
    pub async fn list_tasks(
        &self,
        request: ListTasksRequest,
    ) -> Result<ListTasksResponse, ClientError> {
        if self.dialect == Dialect::V0_3 {
            return Err(ClientError::Unsupported(
                "ListTasks does not exist in A2A 0.3".to_string(),
            ));
        }
        self.call("ListTasks", &request, REQUEST_TIMEOUT).await
    }

    /// `CancelTask`; returns the task as it is after the cancel.
    pub async fn cancel_task(&self, id: &str) -> Result<Task, ClientError> {
        let params = json!({ "id": id });
        match self.dialect {
            Dialect::V1_0 => self.call("CancelTask", &params, REQUEST_TIMEOUT).await,
            Dialect::V0_3 => {
                let result: Value = self.call(v03::CANCEL, &params, REQUEST_TIMEOUT).await?;
                legacy::task(&self.endpoint, result)
            }
        }
    }

    /// `SendStreamingMessage`. An error before the stream starts is returned here; errors after
    /// it come as items.
    pub async fn send_streaming_message(
        &self,
        request: SendMessageRequest,
    ) -> Result<EventStream, ClientError> {
        match self.dialect {
            Dialect::V1_0 => self.stream("SendStreamingMessage", &request).await,
            Dialect::V0_3 => {
                let params = convert::send_params_from_v10(&request);
                self.stream(v03::STREAM, &params).await
            }
        }
    }

    /// `SubscribeToTask`: the task as it is now, then its events until it settles.
    pub async fn subscribe(&self, id: &str) -> Result<EventStream, ClientError> {
        let method = match self.dialect {
            Dialect::V1_0 => "SubscribeToTask",
            Dialect::V0_3 => v03::RESUBSCRIBE,
        };
        self.stream(method, &json!({ "id": id })).await
    }

    /// Any unary method, for those without a typed helper.
    pub async fn call<P: Serialize + ?Sized, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        timeout: Duration,
    ) -> Result<R, ClientError> {
        let url = self.endpoint.clone();
        client_span(method, &self.endpoint, |trace| async move {
            let build = || trace.apply(self.post(method, params).timeout(timeout));
            let response = self.auth.send(&url, build).await?;
            let body = read_ok_body(&url, response).await?;
            let result = result_of(&url, &body)?;
            serde_json::from_value(result)
                .map_err(|err| invalid(&url, format!("{method} result: {err}")))
        })
        .await
    }

    async fn stream<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<EventStream, ClientError> {
        let url = self.endpoint.clone();
        let dialect = self.dialect;
        // The span covers the request and the stream's start; its events are the task's.
        let response = client_span(method, &self.endpoint, |trace| async move {
            let build = || {
                trace.apply(
                    self.post(method, params)
                        .header(ACCEPT, "text/event-stream"),
                )
            };
            self.auth.send(&self.endpoint, build).await
        })
        .await?;
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
        let events = events::event_data(url.clone(), bytes).map(move |data| {
            let data = data?;
            let value = result_of(&url, data.as_bytes())?;
            match dialect {
                Dialect::V1_0 => serde_json::from_value(value)
                    .map_err(|err| invalid(&url, format!("stream event: {err}"))),
                Dialect::V0_3 => legacy::event(&url, value),
            }
        });
        Ok(Box::pin(events))
    }

    fn post<P: Serialize + ?Sized>(&self, method: &str, params: &P) -> reqwest::RequestBuilder {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body =
            json!({ "jsonrpc": JSONRPC_VERSION, "id": id, "method": method, "params": params });
        self.headers(self.http.post(&self.endpoint)).json(&body)
    }

    fn headers(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let version = match self.dialect {
            Dialect::V1_0 => SUPPORTED_VERSION,
            Dialect::V0_3 => LEGACY_VERSION,
        };
        let mut request = request.header(A2A_VERSION_HEADER, version);
        if let Some(id) = &self.participant {
            request = request.header(PARTICIPANT_HEADER, id);
        }
        if !self.extensions.is_empty() {
            request = request.header(A2A_EXTENSIONS_HEADER, self.extensions.join(", "));
        }
        request
    }
}
