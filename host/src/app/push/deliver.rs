//! One push delivered: the queued `StreamResponse` POSTed to its webhook, the host checked
//! against `[push] allowed_hosts` again (what a name resolves to may have changed since the
//! config was set) and the connection opened to the checked address; the client's token in
//! `X-A2A-Notification-Token`, the config's `authentication` as an `Authorization` header;
//! within a deadline, reading at most a capped response. Redirects are not followed.

use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode, header};
use http_body_util::{BodyExt, Full};

use crate::base::config::HostPattern;
use crate::base::egress::{self, EgressError, Target};
use crate::base::protocol::requests::TaskPushNotificationConfig;
use crate::state::store::OutboxItem;
use crate::state::tasks::push_configs::authentication;

/// How long one POST may take, connection included: §4.3.3 recommends 10-30 s; a receiver
/// that needs longer should answer first and work after.
pub const DELIVERY_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of a receiver's answer that is read: only its status matters, and a receiver must
/// not be able to make the harness read without end.
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024;
/// The header that carries the client's token (§4.3.3).
pub const TOKEN_HEADER: &str = "x-a2a-notification-token";

/// How one delivery ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The receiver answered 2xx.
    Delivered,
    /// The config was deleted since the push was queued: nothing to deliver to.
    Gone,
    /// Never to succeed as it stands: the host is not allowed (any more), the receiver
    /// redirected, or it refused the push (4xx other than 408 and 429). Given up at once.
    Refused(String),
    /// May succeed later (no connection, a timeout, 408, 429, 5xx): retried with backoff.
    Failed(String),
}

/// Delivers `item` to its config's webhook, if `allowed` still lets the harness reach it.
pub async fn deliver(item: &OutboxItem, allowed: &[HostPattern]) -> Outcome {
    let Some(config) = &item.config else {
        return Outcome::Gone;
    };
    let Ok(config) = serde_json::from_str::<TaskPushNotificationConfig>(config) else {
        return Outcome::Refused("the stored config cannot be read".into());
    };
    let Some((uri, target)) = config
        .url
        .parse::<http::Uri>()
        .ok()
        .and_then(|uri| Target::of_uri(&uri).map(|target| (uri, target)))
    else {
        return Outcome::Refused("the webhook URL is not an http or https URL".into());
    };
    let sent = tokio::time::timeout(DELIVERY_TIMEOUT, async {
        let addresses = match egress::resolve_allowed(&target, &target.matching(allowed)).await {
            Ok(addresses) => addresses,
            Err(err @ (EgressError::NotAllowed(_) | EgressError::Prohibited { .. })) => {
                return Outcome::Refused(format!("{err} (push.allowed_hosts)"));
            }
            Err(err) => return Outcome::Failed(err.to_string()),
        };
        let request = match request(&uri, &config, item.body.clone()) {
            Ok(request) => request,
            Err(why) => return Outcome::Refused(why),
        };
        let stream = match egress::connect(&addresses).await {
            Ok(stream) => stream,
            Err(err) => return Outcome::Failed(err.to_string()),
        };
        if target.https {
            match egress::tls_connect(&target.host, stream).await {
                Ok(tls) => exchange(tls, request).await,
                Err(err) => Outcome::Failed(err.to_string()),
            }
        } else {
            exchange(stream, request).await
        }
    })
    .await;
    sent.unwrap_or_else(|_| {
        Outcome::Failed(format!("no answer within {} s", DELIVERY_TIMEOUT.as_secs()))
    })
}

/// The POST: the path on the request line, the authority in `Host`, the push as JSON.
fn request(
    uri: &http::Uri,
    config: &TaskPushNotificationConfig,
    body: String,
) -> Result<Request<Full<Bytes>>, String> {
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let mut builder = Request::post(path)
        .header(header::HOST, uri.authority().map_or("", |a| a.as_str()))
        .header(header::CONTENT_TYPE, "application/json")
        .header(
            header::USER_AGENT,
            concat!("tiny-harness/", env!("CARGO_PKG_VERSION")),
        );
    if !config.token.is_empty() {
        builder = builder.header(TOKEN_HEADER, config.token.as_str());
    }
    if let Some(auth) = &config.authentication {
        let (scheme, credentials) = authentication(auth);
        if !credentials.is_empty() {
            let scheme = if scheme.is_empty() { "Bearer" } else { scheme };
            let mut value = http::HeaderValue::from_str(&format!("{scheme} {credentials}"))
                .map_err(|_| "the authentication cannot go in a header".to_string())?;
            value.set_sensitive(true);
            builder = builder.header(header::AUTHORIZATION, value);
        }
    }
    builder
        .body(Full::new(Bytes::from(body)))
        .map_err(|err| err.to_string())
}

/// Sends the request over the connection and reads at most [`MAX_RESPONSE_BYTES`] of the
/// answer; the status says how it went.
async fn exchange<S>(stream: S, request: Request<Full<Bytes>>) -> Outcome
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let io = hyper_util::rt::TokioIo::new(stream);
    let (mut sender, connection) = match hyper::client::conn::http1::handshake(io).await {
        Ok(pair) => pair,
        Err(err) => return Outcome::Failed(err.to_string()),
    };
    // Driven until the answer is read, then dropped with the connection.
    let _driver = tokio_util::task::AbortOnDropHandle::new(tokio::spawn(connection));
    let response = match sender.send_request(request).await {
        Ok(response) => response,
        Err(err) => return Outcome::Failed(err.to_string()),
    };
    let status = response.status();
    let mut body = response.into_body();
    let mut read = 0;
    while read <= MAX_RESPONSE_BYTES
        && let Some(Ok(frame)) = body.frame().await
    {
        read += frame.data_ref().map_or(0, |data| data.len());
    }
    outcome_of(status)
}

/// What an answer's status means for the push.
fn outcome_of(status: StatusCode) -> Outcome {
    let code = status.as_u16();
    if status.is_success() {
        Outcome::Delivered
    } else if status.is_redirection() {
        Outcome::Refused(format!(
            "the webhook answered {code}: redirects are not followed (register the final URL)"
        ))
    } else if code == 408 || code == 429 || status.is_server_error() {
        Outcome::Failed(format!("the webhook answered {code}"))
    } else {
        Outcome::Refused(format!("the webhook answered {code}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_is_delivered_redirects_and_client_errors_refused_the_rest_retried() {
        let of = |code: u16| outcome_of(StatusCode::from_u16(code).unwrap());
        assert_eq!(of(200), Outcome::Delivered);
        assert_eq!(of(204), Outcome::Delivered);
        assert!(matches!(of(307), Outcome::Refused(_)));
        assert!(matches!(of(404), Outcome::Refused(_)));
        assert!(matches!(of(429), Outcome::Failed(_)));
        assert!(matches!(of(503), Outcome::Failed(_)));
    }

    #[test]
    fn the_token_and_the_authentication_go_in_their_headers() {
        let config = TaskPushNotificationConfig {
            url: "http://127.0.0.1:9/hook?x=1".into(),
            token: "tok".into(),
            authentication: Some(serde_json::json!({"scheme": "Bearer", "credentials": "c"})),
            ..TaskPushNotificationConfig::default()
        };
        let uri: http::Uri = config.url.parse().unwrap();
        let request = request(&uri, &config, "{}".into()).unwrap();
        assert_eq!(request.uri(), "/hook?x=1");
        assert_eq!(request.headers()[header::HOST], "127.0.0.1:9");
        assert_eq!(request.headers()[TOKEN_HEADER], "tok");
        assert_eq!(request.headers()[header::AUTHORIZATION], "Bearer c");
    }
}
