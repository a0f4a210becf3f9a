//! Fetching one remote agent's card from `{url}/.well-known/agent-card.json`, bounded in time and
//! in size, so that one slow or hostile agent cannot hold up or flood the harness's start-up.
//! Start-up fetches every agent's card at once (`Registry::discover`), so it waits for the
//! slowest card, not for their sum.

use std::time::Duration;

use crate::base::http_body::{Body, read_capped};
use crate::base::protocol::card::AgentCard;
use crate::base::protocol::card::CARD_PATH;
use crate::base::protocol::headers::{A2A_VERSION_HEADER, SUPPORTED_VERSION};

/// The largest card body read. An honest card is a few kilobytes; 4 MiB leaves room for a
/// verbose one (the roster caps what the model reads anyway) while a server that streams without
/// end is cut off instead of filling memory.
pub const MAX_CARD_BYTES: usize = 4 * 1024 * 1024;

/// Why a card could not be fetched. The text goes to the operator's log, never to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    #[error("cannot build the HTTP client: {0}")]
    /// The HTTP client could not be built (TLS set-up): no card can be fetched.
    Client(String),
    #[error("no card within {} s (roster.card_timeout_secs)", .0.as_secs_f32())]
    /// The card did not arrive within the timeout given.
    Timeout(Duration),
    #[error("cannot reach {url}: {reason}")]
    /// The card's URL could not be reached.
    Unreachable {
        /// The card's URL.
        url: String,
        /// The transport error with its causes.
        reason: String,
    },
    #[error("{url} answered HTTP {status}")]
    /// The agent answered with a status other than success.
    Status {
        /// The card's URL.
        url: String,
        /// The HTTP status.
        status: u16,
    },
    #[error("the card is larger than {MAX_CARD_BYTES} bytes")]
    /// The card was larger than [`MAX_CARD_BYTES`]; the rest was not read.
    TooLarge,
    #[error("the card is not an A2A agent card: {0}")]
    /// The body is not a card; the parser's message.
    Malformed(String),
}

/// Fetches and parses cards; one per start-up, shared by every fetch so they run concurrently
/// over one connection pool.
#[derive(Clone)]
pub struct CardFetcher {
    http: reqwest::Client,
    timeout: Duration,
}

impl CardFetcher {
    /// A fetcher whose every fetch ends within `timeout`.
    ///
    /// Redirects are not followed: the operator registers the URL the card is served at, and a
    /// card that points somewhere else should be looked at, not silently chased.
    pub fn new(timeout: Duration) -> Result<CardFetcher, FetchError> {
        let http = reqwest::Client::builder()
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|err| FetchError::Client(error_chain(&err)))?;
        Ok(CardFetcher { http, timeout })
    }

    /// The card of the agent at `base_url`.
    pub async fn fetch(&self, base_url: &str) -> Result<AgentCard, FetchError> {
        let url = format!("{}{CARD_PATH}", base_url.trim_end_matches('/'));
        match tokio::time::timeout(self.timeout, self.fetch_unbounded(&url)).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::Timeout(self.timeout)),
        }
    }

    async fn fetch_unbounded(&self, url: &str) -> Result<AgentCard, FetchError> {
        let unreachable = |err: reqwest::Error| FetchError::Unreachable {
            url: url.to_string(),
            reason: error_chain(&err),
        };
        let mut response = self
            .http
            .get(url)
            .header(A2A_VERSION_HEADER, SUPPORTED_VERSION)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(unreachable)?;
        if !response.status().is_success() {
            return Err(FetchError::Status {
                url: url.to_string(),
                status: response.status().as_u16(),
            });
        }
        if response
            .content_length()
            .is_some_and(|n| n > MAX_CARD_BYTES as u64)
        {
            return Err(FetchError::TooLarge);
        }
        let body = match read_capped(&mut response, MAX_CARD_BYTES)
            .await
            .map_err(unreachable)?
        {
            Body::Whole(body) => body,
            Body::Cut(_) => return Err(FetchError::TooLarge),
        };
        serde_json::from_slice(&body).map_err(|err| FetchError::Malformed(err.to_string()))
    }
}

/// An error with its causes, `a: b: c`, because reqwest's own text ("error sending request")
/// hides the reason an operator needs (connection refused, DNS, TLS).
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
