//! The A2A HTTP server: its routes (the agent card, the JSON-RPC endpoint and the HTTP+JSON
//! binding) and the limits every request passes (rate, body size, panics). [`serve`] (in
//! [`crate::app::server::connections`]) serves them under the connection limits.

use std::any::Any;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::num::NonZeroU32;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::trace::TraceLayer;

use crate::app::server::identity::{self, Identifier};
use crate::app::server::ops::App;
pub use crate::app::server::ops::ServerState;
use crate::app::server::rate_limit::{self, RateLimit};
use crate::app::server::{dispatch, grpc, rest};
use crate::app::server::{fair_share, health, trace};
use crate::base::protocol::card::CARD_PATH;
use crate::base::protocol::jsonrpc::{self, RequestId, RpcError};

pub use crate::app::server::connections::{
    ConnectionLimits, SHUTDOWN_GRACE, Wire, serve, serve_wire,
};

/// How long agent-card caches may keep the card (§8.6.1); it only changes with a restart.
pub const CARD_MAX_AGE_SECONDS: u32 = 300;

/// What the HTTP and gRPC routes share: the operations' state, who callers are, and the rate
/// limit, so one caller has one quota whichever binding it calls.
struct Shared {
    app: Arc<App>,
    identifier: Arc<Identifier>,
    limiter: Option<Arc<RateLimit>>,
}

/// The server's routes with every limit applied. Serve it with [`serve`], which supplies the
/// peer addresses anonymous callers are rate-limited by.
pub fn router(state: ServerState) -> Router {
    http_router(&shared(state))
}

/// The HTTP routes and the gRPC binding's, under one rate limit: serve the first with [`serve`]
/// and the second with [`serve_wire`] over [`Wire::H2c`].
pub fn routers(state: ServerState) -> (Router, Router) {
    let shared = shared(state);
    let grpc = grpc::router(
        shared.app.clone(),
        shared.identifier.clone(),
        shared.limiter.clone(),
    );
    (http_router(&shared), grpc)
}

fn shared(state: ServerState) -> Shared {
    let identifier = Arc::new(Identifier::new(
        state.credentials.clone(),
        state.verifier.clone(),
        state.allow_anonymous,
    ));
    let limiter =
        NonZeroU32::new(state.rate_limit_per_minute).map(|rate| Arc::new(RateLimit::new(rate)));
    let card_json = Bytes::from(serde_json::to_vec(&state.card).unwrap_or_default());
    let mut hasher = DefaultHasher::new();
    card_json.hash(&mut hasher);
    let card_etag = HeaderValue::from_str(&format!("\"{:016x}\"", hasher.finish()))
        .unwrap_or_else(|_| HeaderValue::from_static("\"card\""));
    let supported_extensions = state
        .card
        .capabilities
        .extensions
        .iter()
        .map(|extension| extension.uri.clone())
        .collect();
    let card_last_modified = HeaderValue::from_str(&http_date(time::OffsetDateTime::now_utc()))
        .unwrap_or_else(|_| HeaderValue::from_static("Thu, 01 Jan 1970 00:00:00 GMT"));
    let app = Arc::new(App {
        state,
        identifier: identifier.clone(),
        supported_extensions,
        card_json,
        card_etag,
        card_last_modified,
    });
    Shared {
        app,
        identifier,
        limiter,
    }
}

fn http_router(shared: &Shared) -> Router {
    let app = shared.app.clone();
    let max_request_bytes = app.state.max_request_bytes;
    let health = app.state.health.clone();
    let metrics = app.state.metrics;
    // Layers run outside-in in the reverse of the order they are added: trace, catch panics,
    // who the caller is, the caller's share of connections, rate limit, the refusal of a caller
    // whose identification failed, then the body limits, then the handler.
    let mut router = Router::new()
        .route(CARD_PATH, get(agent_card))
        .route("/", post(dispatch::rpc))
        .merge(rest::routes())
        .fallback(rest::not_found)
        .with_state(app)
        // Limits bodies without a Content-Length as they are read into bytes.
        .layer(DefaultBodyLimit::max(max_request_bytes))
        // Refuses a declared Content-Length over the limit before reading anything.
        .layer(RequestBodyLimitLayer::new(max_request_bytes))
        // After the limits: a caller guessing tokens spends its rate like any other.
        .layer(middleware::from_fn(identity::refuse_unidentified));
    if let Some(limiter) = shared.limiter.clone() {
        router = router.layer(middleware::from_fn_with_state(limiter, rate_limit::limit));
    }
    // Before the rate limit: a request refused for its caller's share spends none of its rate.
    router
        .layer(middleware::from_fn(fair_share::enforce))
        // Once per request, before every limit that counts a caller by who it is.
        .layer(middleware::from_fn_with_state(
            shared.identifier.clone(),
            identity::identify_request,
        ))
        // Outside every A2A limit, so a refused request is traced too; not the probes.
        .layer(middleware::from_fn(trace::traced))
        // Merged after the caller layers, which therefore do not wrap them: a prober holds
        // no token and must not be rate-limited out of rotation (`health`).
        .merge(health::routes(health))
        .merge(if metrics {
            health::metrics_route()
        } else {
            Router::new()
        })
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(TraceLayer::new_for_http())
}

/// `GET /.well-known/agent-card.json`, with the caching headers §8.6.1 recommends
/// (`Cache-Control`, `ETag`, `Last-Modified`).
async fn agent_card(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let cache = HeaderValue::from_str(&format!("public, max-age={CARD_MAX_AGE_SECONDS}"))
        .unwrap_or_else(|_| HeaderValue::from_static("no-cache"));
    if headers.get(header::IF_NONE_MATCH) == Some(&app.card_etag) {
        let headers = [
            (header::ETAG, app.card_etag.clone()),
            (header::CACHE_CONTROL, cache),
            (header::LAST_MODIFIED, app.card_last_modified.clone()),
        ];
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    let headers = [
        (
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        ),
        (header::ETAG, app.card_etag.clone()),
        (header::CACHE_CONTROL, cache),
        (header::LAST_MODIFIED, app.card_last_modified.clone()),
    ];
    (headers, app.card_json.clone()).into_response()
}

/// An HTTP date (RFC 9110 §5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT`.
fn http_date(at: time::OffsetDateTime) -> String {
    let format = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    at.to_offset(time::UtcOffset::UTC)
        .format(&format)
        .unwrap_or_else(|_| "Thu, 01 Jan 1970 00:00:00 GMT".to_string())
}

/// The last resort when a handler panics: a JSON-RPC internal error, not a dropped connection.
fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response {
    let detail = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("non-string panic payload");
    dispatch::json(jsonrpc::Response::failure(
        RequestId::Null,
        RpcError::internal(format!("handler panicked: {detail}")),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates_are_written_as_rfc_9110_asks() {
        let at = time::macros::datetime!(1994-11-06 08:49:37 UTC);
        assert_eq!(http_date(at), "Sun, 06 Nov 1994 08:49:37 GMT");
    }
}
