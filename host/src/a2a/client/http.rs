//! Reading what an agent answers: bodies up to a size limit, JSON-RPC results and errors, and
//! event streams that end after a silence.

use futures::{Stream, StreamExt};
use serde_json::Value;

use super::{ClientError, MAX_RESPONSE_BYTES, STREAM_IDLE_TIMEOUT};

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

/// The body of a 200 response, read up to [`MAX_RESPONSE_BYTES`]; other statuses are errors.
pub(super) async fn read_ok_body(
    url: &str,
    mut response: reqwest::Response,
) -> Result<Vec<u8>, ClientError> {
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

pub(super) fn transport(url: &str) -> impl FnOnce(reqwest::Error) -> ClientError + '_ {
    move |source| ClientError::Transport {
        url: url.to_string(),
        source,
    }
}

pub(crate) fn invalid(url: &str, message: impl Into<String>) -> ClientError {
    ClientError::InvalidResponse {
        url: url.to_string(),
        message: message.into(),
    }
}
