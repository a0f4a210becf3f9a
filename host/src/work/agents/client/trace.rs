//! The client span of each request to an agent and the W3C trace context it carries
//! (`traceparent`, `tracestate`), so the agent's work joins this harness's trace.

use std::future::Future;

use super::ClientError;
use crate::base::telemetry::{self, TraceSpan, traceparent};

/// The trace context a request carries: none when traces are off.
pub(super) struct TraceHeaders(Option<(String, Option<String>)>);

impl TraceHeaders {
    /// `request` with the trace context's headers.
    pub(super) fn apply(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let Some((parent, state)) = &self.0 else {
            return request;
        };
        let request = request.header(traceparent::TRACEPARENT, parent);
        match state {
            Some(state) => request.header(traceparent::TRACESTATE, state),
            None => request,
        }
    }
}

/// Runs `work` (one request to the agent at `server`) within a client span named `method`,
/// giving it the headers to send; a failure marks the span by its kind, never the peer's words.
pub(super) async fn client_span<T, F, Fut>(
    method: &str,
    server: &str,
    work: F,
) -> Result<T, ClientError>
where
    F: FnOnce(TraceHeaders) -> Fut,
    Fut: Future<Output = Result<T, ClientError>>,
{
    let mut span = telemetry::a2a_client(method, server);
    let outcome = work(TraceHeaders(span.headers())).await;
    if let Err(err) = &outcome {
        failed(&mut span, err);
    }
    outcome
}

fn failed(span: &mut TraceSpan, err: &ClientError) {
    span.fail(match err {
        ClientError::Transport { .. } | ClientError::Build(_) => "transport",
        ClientError::Status { .. } => "http_status",
        ClientError::Rpc { .. } => "jsonrpc_error",
        ClientError::InvalidResponse { .. } => "invalid_response",
        ClientError::Unsupported(_) => "unsupported",
        ClientError::Credentials(_) => "credentials",
    });
}
