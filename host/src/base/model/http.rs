//! What the HTTP providers share: their settings, and one call to a model endpoint (JSON
//! exchanges with retries), with every way it can fail sorted into a [`ModelError`] the retry
//! loop can judge and cleaned by one [`Redactor`] before anything logs it.

use crate::base::http_body::{Body, read_capped};
use crate::base::text::log_field;
use std::fmt;
use std::time::Duration;

use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::{RequestBuilder, Response};
use serde_json::Value;
use tracing::Instrument;

use super::redact::Redactor;
use super::retry::{Failure, RetryPolicy, with_retries};
use super::{ModelError, Origin};

/// The largest answer read. A chat completion is kilobytes; a misbehaving or hostile endpoint
/// must not be able to make the harness buffer without bound.
pub const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

/// Everything an HTTP provider needs, resolved from `[model]` and the environment.
#[derive(Clone)]
pub struct HttpSettings {
    /// The API root (`https://api.openai.com/v1`); a trailing slash is ignored.
    pub base_url: String,
    /// The model name sent with every request.
    pub model: String,
    /// Sent as the provider's credential header; `None` sends none (Ollama needs none).
    pub api_key: Option<String>,
    /// Seconds one attempt may take, connection to last byte.
    pub timeout_secs: u64,
    /// The output limit when the request sets none.
    pub max_output_tokens: u32,
    /// Reported by [`super::Model::context_window`].
    pub context_window: Option<usize>,
    /// How failed attempts are retried (`model.max_retries`, production delays by default).
    pub retry: RetryPolicy,
}

/// Never prints the key, so settings can be logged and appear in panics safely.
impl fmt::Debug for HttpSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpSettings")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout_secs", &self.timeout_secs)
            .field("max_output_tokens", &self.max_output_tokens)
            .field("context_window", &self.context_window)
            .field("retry", &self.retry)
            .finish()
    }
}

impl HttpSettings {
    /// `base_url` without its trailing slashes.
    pub fn root(&self) -> &str {
        self.base_url.trim_end_matches('/')
    }

    /// The host name of `base_url`, lower-cased, if it parses.
    pub fn host(&self) -> Option<String> {
        reqwest::Url::parse(self.root())
            .ok()
            .and_then(|url| url.host_str().map(str::to_ascii_lowercase))
    }
}

/// The one client a model uses for all its calls, so connections are pooled and reused.
pub(crate) fn client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .user_agent(concat!("tiny-harness/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|err| error_chain(&err))
}

/// One model call with the provider's retries: `request` builds each attempt, `parse` reads
/// the JSON answer; `shown` names the endpoint in logs, as [`without_credentials`] gave it (once,
/// when the model was made, not per call). Every error leaving an attempt is cleaned by a [`Redactor`] of
/// the credentials the request carries (the key masked wherever the endpoint echoed it, the
/// text capped and escaped), so neither the retry loop's log lines nor the caller ever hold the
/// raw text. Logs name the endpoint without the credentials its URL may hold, inside a
/// `model_call` span naming the task, the message and the turn the call is for (`origin`).
pub(crate) async fn call<T>(
    settings: &HttpSettings,
    shown: &str,
    origin: &Origin,
    request: impl Fn() -> RequestBuilder,
    parse: impl Fn(&Value) -> Result<T, ModelError>,
) -> Result<T, ModelError> {
    let span = tracing::info_span!(
        "model_call",
        task = %log_field::escape(&origin.task_id),
        message_id = origin.message_id.as_deref().map(log_field::escape).map(tracing::field::display),
        turn = origin.turn,
    );
    with_retries(&settings.retry, shown, || async {
        // Built only when an attempt failed: a successful call pays nothing for it.
        let redactor = || Redactor::new(credentials(settings, request()));
        let answer = exchange(request(), settings.timeout_secs)
            .await
            .map_err(|failure| Failure {
                error: failure.error.redacted(&redactor()),
                retry_after: failure.retry_after,
            })?;
        parse(&answer).map_err(|err| Failure::from(err.redacted(&redactor())))
    })
    .instrument(span)
    .await
}

/// The headers that carry a credential, whichever provider or proxy reads them.
const CREDENTIAL_HEADERS: [&str; 4] = [
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
];

/// Every secret a request carries, as an endpoint might echo it: the API key, the password of
/// the URL, and each credential header's value whole and without its scheme (`Bearer …`, and
/// the `Basic …` reqwest makes of a URL's user and password).
fn credentials(settings: &HttpSettings, request: RequestBuilder) -> Vec<String> {
    let mut secrets: Vec<String> = settings.api_key.iter().cloned().collect();
    if let Ok(url) = reqwest::Url::parse(settings.root())
        && let Some(password) = url.password()
    {
        secrets.push(password.to_string());
    }
    if let Ok(built) = request.build() {
        for name in CREDENTIAL_HEADERS {
            for value in built.headers().get_all(name) {
                let text = String::from_utf8_lossy(value.as_bytes()).into_owned();
                if let Some((_scheme, token)) = text.trim().split_once(' ') {
                    secrets.push(token.to_string());
                }
                secrets.push(text);
            }
        }
    }
    secrets
}

/// `url` without the user and password it may carry, for the log and `harness check`.
pub(crate) fn without_credentials(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) if !parsed.username().is_empty() || parsed.password().is_some() => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.as_str().trim_end_matches('/').to_string()
        }
        _ => url.to_string(),
    }
}

/// Sends one request and reads its JSON answer, all within `timeout_secs`. The errors hold the
/// endpoint's raw text; [`call`] cleans them.
async fn exchange(request: RequestBuilder, timeout_secs: u64) -> Result<Value, Failure> {
    let limit = Duration::from_secs(timeout_secs);
    match tokio::time::timeout(limit, exchange_untimed(request)).await {
        Ok(result) => result,
        Err(_) => Err(ModelError::Timeout {
            secs: timeout_secs,
            retries: 0,
        }
        .into()),
    }
}

async fn exchange_untimed(request: RequestBuilder) -> Result<Value, Failure> {
    let response = request.send().await.map_err(transport)?;
    let status = response.status();
    let retry_after = retry_after(response.headers());
    let body = read_limited(response).await?;
    if !status.is_success() {
        return Err(Failure {
            error: ModelError::Http {
                status: status.as_u16(),
                body: String::from_utf8_lossy(&body).into_owned(),
                retries: 0,
            },
            retry_after,
        });
    }
    serde_json::from_slice(&body).map_err(|err| {
        let text = String::from_utf8_lossy(&body);
        ModelError::InvalidResponse(format!("not JSON ({err}): {text}")).into()
    })
}

/// A connection failure, without the URL reqwest would print: the base URL may carry
/// credentials, and names an internal host.
fn transport(err: reqwest::Error) -> Failure {
    ModelError::Transport {
        detail: error_chain(&err.without_url()),
        retries: 0,
    }
    .into()
}

/// Reads the body, refusing one larger than [`MAX_RESPONSE_BYTES`].
async fn read_limited(mut response: Response) -> Result<Vec<u8>, Failure> {
    match read_capped(&mut response, MAX_RESPONSE_BYTES)
        .await
        .map_err(transport)?
    {
        Body::Whole(body) => Ok(body),
        Body::Cut(_) => Err(ModelError::InvalidResponse(format!(
            "the answer is larger than {MAX_RESPONSE_BYTES} bytes"
        ))
        .into()),
    }
}

/// `Retry-After` in seconds (whole or fractional). The HTTP-date form is ignored: model
/// providers send seconds, and a clock-skewed date is worse than our own backoff.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    let seconds: f64 = text.parse().ok()?;
    Duration::try_from_secs_f64(seconds).ok()
}

/// An error and its causes on one line: reqwest's own message ("error sending request") says
/// little, the cause ("connection refused") says what to fix.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    fn headers(value: &str) -> HeaderMap {
        let mut map = HeaderMap::new();
        map.insert(RETRY_AFTER, HeaderValue::from_str(value).unwrap());
        map
    }

    #[test]
    fn retry_after_is_read_in_seconds() {
        assert_eq!(retry_after(&headers("3")), Some(Duration::from_secs(3)));
        assert_eq!(
            retry_after(&headers(" 0.5 ")),
            Some(Duration::from_millis(500))
        );
    }

    #[test]
    fn a_retry_after_date_or_nonsense_is_ignored() {
        assert_eq!(retry_after(&headers("Wed, 21 Oct 2015 07:28:00 GMT")), None);
        assert_eq!(retry_after(&headers("-4")), None);
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn a_url_is_shown_without_its_user_and_password() {
        assert_eq!(
            without_credentials("https://user:s3cret@proxy.example/v1"),
            "https://proxy.example/v1"
        );
        assert_eq!(
            without_credentials("http://127.0.0.1:11434/v1/"),
            "http://127.0.0.1:11434/v1/"
        );
        assert_eq!(without_credentials("not a url"), "not a url");
    }

    #[test]
    fn the_credentials_of_a_request_are_its_key_its_password_and_its_headers() {
        let settings = HttpSettings {
            base_url: "https://user:s3cret@proxy.example/v1".into(),
            model: "m".into(),
            api_key: Some("sk-1".into()),
            timeout_secs: 1,
            max_output_tokens: 1,
            context_window: None,
            retry: RetryPolicy::new(0),
        };
        let request = reqwest::Client::new()
            .post(settings.root())
            .header("x-api-key", "sk-1");
        let secrets = credentials(&settings, request);
        // reqwest turns the URL's user and password into a Basic header.
        assert_eq!(
            secrets,
            [
                "sk-1",
                "s3cret",
                "dXNlcjpzM2NyZXQ=",
                "Basic dXNlcjpzM2NyZXQ=",
                "sk-1"
            ]
        );
    }

    #[test]
    fn the_debug_form_hides_the_key() {
        let settings = HttpSettings {
            base_url: "https://api.openai.com/v1/".into(),
            model: "m".into(),
            api_key: Some("sk-secret".into()),
            timeout_secs: 1,
            max_output_tokens: 1,
            context_window: None,
            retry: RetryPolicy::new(0),
        };
        assert!(!format!("{settings:?}").contains("sk-secret"));
        assert_eq!(settings.root(), "https://api.openai.com/v1");
        assert_eq!(settings.host().as_deref(), Some("api.openai.com"));
    }
}
