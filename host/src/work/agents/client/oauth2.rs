//! OAuth2 client credentials (RFC 6749 §4.4) for one agent: access tokens fetched from the
//! operator's token endpoint, cached, and fetched again before they expire or when the agent
//! refuses one. One fetch at a time: calls that need a token while one is being fetched wait
//! for it instead of fetching their own.
//!
//! The client secret and the access tokens never appear in an error or a log line: errors say
//! what the endpoint answered (its `error` code and description, cleaned, capped and with the
//! secret masked), and [`TokenSource::mask`] hides every token issued from text an agent sends
//! back.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::base::http_body::{Body, read_capped};
use crate::base::model::Redactor;

/// How long before its expiry a token is replaced: a call that starts with it must still be
/// carrying a valid token when the agent checks it, despite clock skew and a slow network.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(60);
/// How long a token is used when the endpoint does not say (`expires_in` is optional): short,
/// so a token that expires sooner is soon replaced, and a 401 replaces it anyway.
pub const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(300);
/// How long one token request may take, connection included: calls wait for it.
pub const TOKEN_REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// The largest token response read. A token response is a few kilobytes at most (a JWT with
/// many claims); a bigger one is refused rather than held.
pub const MAX_TOKEN_RESPONSE_BYTES: usize = 64 * 1024;
/// The most characters of the endpoint's own words (`error`, `error_description`) an error keeps.
pub const MAX_ENDPOINT_TEXT_CHARS: usize = 300;
/// How many issued tokens are remembered for masking: the current one and a few before it,
/// which an agent may still quote.
const MAX_REMEMBERED_TOKENS: usize = 8;

/// The configured client, with its secret read from the environment.
#[derive(Clone)]
pub struct OAuth2Client {
    /// `[agents.oauth2] token_url`.
    pub token_url: String,
    /// `[agents.oauth2] client_id`.
    pub client_id: String,
    /// The value of `client_secret_env`.
    pub client_secret: String,
    /// `[agents.oauth2] scopes`, sent space-separated.
    pub scopes: Vec<String>,
}

/// Never prints the secret.
impl std::fmt::Debug for OAuth2Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth2Client")
            .field("token_url", &self.token_url)
            .field("client_id", &self.client_id)
            .field("client_secret", &"[redacted]")
            .field("scopes", &self.scopes)
            .finish()
    }
}

/// Why no access token could be had. The text names the endpoint and what it said, never the
/// secret nor a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("cannot build the HTTP client for the token endpoint: {0}")]
    /// The HTTP client could not be built.
    Client(String),
    #[error("the token endpoint {url} did not answer within {} s", TOKEN_REQUEST_TIMEOUT.as_secs())]
    /// The endpoint took longer than [`TOKEN_REQUEST_TIMEOUT`].
    Timeout {
        /// The token URL.
        url: String,
    },
    #[error("cannot reach the token endpoint {url}: {reason}")]
    /// The request got no answer.
    Unreachable {
        /// The token URL.
        url: String,
        /// The transport error, masked and capped.
        reason: String,
    },
    #[error("the token endpoint {url} refused the client with HTTP {status}: {said}")]
    /// The endpoint answered with an error status.
    Refused {
        /// The token URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// Its `error` and `error_description`, cleaned, masked and capped.
        said: String,
    },
    #[error("the token endpoint {url} sent an unusable answer: {reason}")]
    /// A 200 whose body is not a bearer token response.
    Invalid {
        /// The token URL.
        url: String,
        /// What was wrong with it.
        reason: String,
    },
}

/// The current access token and when it is due for replacement.
struct Cached {
    value: String,
    refresh_at: Instant,
}

/// Access tokens for one agent.
pub struct TokenSource {
    http: reqwest::Client,
    client: OAuth2Client,
    /// Held across a fetch: the one-fetch-at-a-time lock.
    current: tokio::sync::Mutex<Option<Cached>>,
    /// Tokens issued so far (the last [`MAX_REMEMBERED_TOKENS`]), for [`TokenSource::mask`].
    issued: Mutex<Vec<String>>,
    fetches: std::sync::atomic::AtomicU64,
}

/// Never prints a token nor the secret.
impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSource")
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
}

#[derive(Deserialize, Default)]
struct ErrorResponse {
    #[serde(default)]
    error: String,
    #[serde(default)]
    error_description: String,
}

impl TokenSource {
    /// A source for `client`. Redirects are not followed: the secret goes to the configured URL
    /// and nowhere else.
    pub fn new(client: OAuth2Client) -> Result<TokenSource, TokenError> {
        let http = reqwest::Client::builder()
            .connect_timeout(TOKEN_REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|err| TokenError::Client(err.to_string()))?;
        Ok(TokenSource {
            http,
            client,
            current: tokio::sync::Mutex::new(None),
            issued: Mutex::new(Vec::new()),
            fetches: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// A token good for at least [`REFRESH_MARGIN`] more: the cached one, or a new one.
    pub async fn token(&self) -> Result<String, TokenError> {
        let mut current = self.current.lock().await;
        if let Some(cached) = current.as_ref().filter(|c| Instant::now() < c.refresh_at) {
            return Ok(cached.value.clone());
        }
        let (value, lifetime) = self.fetch().await?;
        let refresh_at = Instant::now() + lifetime.saturating_sub(REFRESH_MARGIN);
        *current = Some(Cached {
            value: value.clone(),
            refresh_at,
        });
        Ok(value)
    }

    /// Forgets `rejected`, which the agent refused, so the next [`TokenSource::token`] fetches a
    /// new one. A token already replaced (by a concurrent call that saw the same refusal) is left
    /// alone, so one refusal costs one fetch.
    pub async fn reject(&self, rejected: &str) {
        let mut current = self.current.lock().await;
        if current.as_ref().is_some_and(|c| c.value == rejected) {
            *current = None;
        }
    }

    /// How many tokens have been fetched (logged at debug, read by tests).
    pub fn fetches(&self) -> u64 {
        self.fetches.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// `text` with every token issued so far and the client secret masked.
    pub fn mask(&self, text: &str) -> String {
        let issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        // The secret as configured and as form-encoded for Basic authentication: an endpoint
        // may quote either.
        let secret = &self.client.client_secret;
        let encoded = form_encode(secret);
        let redactor = Redactor::new(issued.iter().chain([secret, &encoded]));
        redactor.mask_only(text)
    }

    async fn fetch(&self) -> Result<(String, Duration), TokenError> {
        let url = &self.client.token_url;
        let fetched = tokio::time::timeout(TOKEN_REQUEST_TIMEOUT, self.fetch_unbounded()).await;
        let (value, lifetime) = fetched.map_err(|_| TokenError::Timeout { url: url.clone() })??;
        self.fetches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        if issued.len() == MAX_REMEMBERED_TOKENS {
            issued.remove(0);
        }
        issued.push(value.clone());
        tracing::debug!(token_url = %url, lifetime_secs = lifetime.as_secs(), "agents: fetched an OAuth2 access token");
        Ok((value, lifetime))
    }

    async fn fetch_unbounded(&self) -> Result<(String, Duration), TokenError> {
        let client = &self.client;
        let url = client.token_url.clone();
        let mut form = vec![("grant_type", "client_credentials".to_string())];
        if !client.scopes.is_empty() {
            form.push(("scope", client.scopes.join(" ")));
        }
        // RFC 6749 §2.3.1: HTTP Basic, each part form-urlencoded first.
        let mut response = self
            .http
            .post(&url)
            .basic_auth(
                form_encode(&client.client_id),
                Some(form_encode(&client.client_secret)),
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .form(&form)
            .send()
            .await
            .map_err(|err| TokenError::Unreachable {
                url: url.clone(),
                reason: self.clean(&error_chain(&err)),
            })?;
        let status = response.status();
        let body = match read_capped(&mut response, MAX_TOKEN_RESPONSE_BYTES).await {
            Ok(Body::Whole(body)) => body,
            Ok(Body::Cut(body)) if !status.is_success() => body,
            Ok(Body::Cut(_)) => {
                return Err(TokenError::Invalid {
                    url,
                    reason: format!("larger than {MAX_TOKEN_RESPONSE_BYTES} bytes"),
                });
            }
            Err(err) => {
                return Err(TokenError::Unreachable {
                    url,
                    reason: self.clean(&error_chain(&err)),
                });
            }
        };
        if !status.is_success() {
            let said: ErrorResponse = serde_json::from_slice(&body).unwrap_or_default();
            let said = match (said.error.is_empty(), said.error_description.is_empty()) {
                (true, _) => "no OAuth2 error in the answer".to_string(),
                (false, true) => said.error,
                (false, false) => format!("{} ({})", said.error, said.error_description),
            };
            return Err(TokenError::Refused {
                url,
                status: status.as_u16(),
                said: self.clean(&said),
            });
        }
        let invalid = |reason: &str| TokenError::Invalid {
            url: url.clone(),
            reason: reason.to_string(),
        };
        let answer: TokenResponse = serde_json::from_slice(&body)
            .map_err(|_| invalid("not a token response (access_token missing or not JSON)"))?;
        if let Some(kind) = &answer.token_type
            && !kind.eq_ignore_ascii_case("bearer")
        {
            return Err(invalid("token_type is not Bearer"));
        }
        let usable = !answer.access_token.is_empty()
            && answer
                .access_token
                .bytes()
                .all(|b| (0x21..=0x7e).contains(&b));
        if !usable {
            return Err(invalid("access_token is empty or not printable ASCII"));
        }
        let lifetime = answer
            .expires_in
            .map_or(DEFAULT_TOKEN_LIFETIME, Duration::from_secs);
        Ok((answer.access_token, lifetime))
    }

    /// The endpoint's text for an error: the secret and issued tokens masked, on one line, capped.
    fn clean(&self, text: &str) -> String {
        let masked = self.mask(text);
        let capped = crate::base::text::log_field::escape_capped(&masked, MAX_ENDPOINT_TEXT_CHARS);
        self.mask(&capped)
    }
}

/// `application/x-www-form-urlencoded` bytes (the HTML form encoding RFC 6749 §2.3.1 asks for
/// the client id and secret before they are joined for Basic authentication).
fn form_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => {
                out.push(char::from(byte));
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// An error with its causes, `a: b: c`: reqwest's own text hides the reason.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_credentials_are_form_encoded_before_basic_authentication() {
        assert_eq!(form_encode("front-desk_1.x*"), "front-desk_1.x*");
        assert_eq!(form_encode("a b:c/d+é"), "a+b%3Ac%2Fd%2B%C3%A9");
    }

    #[test]
    fn debug_never_prints_the_secret() {
        let client = OAuth2Client {
            token_url: "https://auth.example/t".into(),
            client_id: "c".into(),
            client_secret: "s3cret-value-0123".into(),
            scopes: vec![],
        };
        let source = TokenSource::new(client.clone()).unwrap();
        for text in [format!("{client:?}"), format!("{source:?}")] {
            assert!(!text.contains("s3cret"), "{text}");
            assert!(text.contains("[redacted]"), "{text}");
        }
    }

    #[test]
    fn issued_tokens_and_the_secret_are_masked() {
        let source = TokenSource::new(OAuth2Client {
            token_url: "https://auth.example/t".into(),
            client_id: "c".into(),
            client_secret: "s3cret-value-0123".into(),
            scopes: vec![],
        })
        .unwrap();
        source.issued.lock().unwrap().push("tok-abc-123".into());
        assert_eq!(
            source.mask("echo tok-abc-123 and s3cret-value-0123"),
            "echo [redacted] and [redacted]"
        );
    }
}
