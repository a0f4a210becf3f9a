//! Reading what an agent answers: bodies up to a size limit, JSON-RPC results and errors, and
//! event streams that end after a silence.

use futures::{Stream, StreamExt};
use serde_json::Value;

use super::{ClientError, MAX_RESPONSE_BYTES, STREAM_IDLE_TIMEOUT};
use crate::base::http_body::{Body, read_capped};

/// The most of an error response's body that is read: enough for any explanation, and a 30 MB
/// error page costs nothing.
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
/// The most characters of an agent's own words an error keeps (see [`peer_text`]).
pub const MAX_PEER_TEXT_CHARS: usize = 1_000;

/// The bytes of a stream, ending with an error after [`STREAM_IDLE_TIMEOUT`] of silence or at
/// the first transport error.
pub(super) fn idle_limited(
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

/// The body of a 200 response, read up to [`MAX_RESPONSE_BYTES`]; other statuses are errors,
/// whose body is read no further than [`MAX_ERROR_BODY_BYTES`] and kept as [`peer_text`].
pub(super) async fn read_ok_body(
    url: &str,
    mut response: reqwest::Response,
) -> Result<Vec<u8>, ClientError> {
    let status = response.status();
    let limit = if status.is_success() {
        MAX_RESPONSE_BYTES
    } else {
        MAX_ERROR_BODY_BYTES
    };
    let body = match read_capped(&mut response, limit)
        .await
        .map_err(transport(url))?
    {
        Body::Whole(body) => body,
        // Enough of an error body to say what went wrong; the rest is never read.
        Body::Cut(body) if !status.is_success() => body,
        Body::Cut(_) => {
            return Err(invalid(
                url,
                format!("response larger than {MAX_RESPONSE_BYTES} bytes"),
            ));
        }
    };
    if !status.is_success() {
        return Err(ClientError::Status {
            url: url.to_string(),
            status: status.as_u16(),
            body: peer_text(String::from_utf8_lossy(&body).trim()),
        });
    }
    Ok(body)
}

/// Text an agent wrote that is kept in an error (a body, a JSON-RPC error's message, what a
/// parser quotes of an answer): on one line, control characters escaped, cut at
/// [`MAX_PEER_TEXT_CHARS`], so that it can be logged and shown as it is.
pub(super) fn peer_text(text: &str) -> String {
    crate::base::text::log_field::escape_capped(text, MAX_PEER_TEXT_CHARS)
}

/// The `result` of a JSON-RPC response, or its `error` as [`ClientError::Rpc`].
pub(super) fn result_of(url: &str, body: &[u8]) -> Result<Value, ClientError> {
    let mut response: Value =
        serde_json::from_slice(body).map_err(|err| invalid(url, format!("not JSON: {err}")))?;
    if let Some(error) = response.get_mut("error").map(Value::take) {
        let code = error.get("code").and_then(Value::as_i64);
        let code = code.and_then(|code| i32::try_from(code).ok());
        let message = error.get("message").and_then(Value::as_str);
        return Err(match (code, message) {
            (Some(code), Some(message)) => ClientError::Rpc {
                code,
                message: peer_text(message),
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

pub(super) fn transport(url: &str) -> impl FnOnce(reqwest::Error) -> ClientError + '_ {
    move |source| ClientError::Transport {
        url: url.to_string(),
        source,
    }
}

pub(crate) fn invalid(url: &str, message: impl Into<String>) -> ClientError {
    ClientError::InvalidResponse {
        url: url.to_string(),
        message: peer_text(&message.into()),
    }
}
