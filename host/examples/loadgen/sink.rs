//! An OTLP/HTTP trace sink for the traces-on load run (`--sink-only`): decodes every
//! `ExportTraceServiceRequest` posted to `/v1/traces`, counts its spans and bytes, answers 200.
//! In Rust, like the stub model, so the collector's own work weighs as little as it can on the
//! machine the harness is measured on; the span count shows whether the harness dropped spans
//! under load (its batch queue is bounded).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;

/// What the sink has received.
#[derive(Default)]
struct Received {
    spans: AtomicU64,
    bytes: AtomicU64,
}

async fn export(State(received): State<Arc<Received>>, body: Bytes) -> StatusCode {
    let Ok(request) = ExportTraceServiceRequest::decode(body.as_ref()) else {
        return StatusCode::BAD_REQUEST;
    };
    let spans: usize = request
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .map(|s| s.spans.len())
        .sum();
    let spans = received.spans.fetch_add(spans as u64, Ordering::Relaxed) + spans as u64;
    let bytes = received
        .bytes
        .fetch_add(body.len() as u64, Ordering::Relaxed)
        + body.len() as u64;
    println!("sink: {spans} spans, {bytes} bytes so far");
    StatusCode::OK
}

/// Binds the sink on `bind` and serves it on this runtime; returns the address it listens on.
pub async fn start_sink(bind: &str) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .expect("the sink binds its address");
    let addr = listener.local_addr().expect("local address");
    let app = axum::Router::new()
        .route("/v1/traces", axum::routing::post(export))
        .with_state(Arc::new(Received::default()));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}
