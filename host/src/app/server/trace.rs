//! The server span of every A2A request (JSON-RPC, its 0.3 dialect, HTTP+JSON, streams): read
//! the caller's W3C trace context, serve the request within a span of kind server, end it with
//! the response's status. The operation names the span once it is decoded
//! ([`crate::base::telemetry::name_current`], called by [`crate::app::server::ops`]), so any
//! binding served through [`traced`] and `ops` gets the same spans. With traces off, one branch.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;

use crate::base::telemetry::{self, traceparent};

/// Serves `request` within its server span (see the module's doc).
pub async fn traced(request: Request, next: Next) -> Response {
    if !telemetry::enabled() {
        return next.run(request).await;
    }
    let headers = request.headers();
    let context = telemetry::a2a_server(
        request.method().as_str(),
        headers.get(traceparent::TRACEPARENT).map(|v| v.as_bytes()),
        headers.get(traceparent::TRACESTATE).map(|v| v.as_bytes()),
    );
    let Some(context) = context else {
        return next.run(request).await;
    };
    let response = telemetry::within(Some(context.clone()), next.run(request)).await;
    telemetry::end_served(&context, response.status().as_u16());
    response
}
