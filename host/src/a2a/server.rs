//! The A2A HTTP server: its routes (the agent card, the JSON-RPC endpoint and the HTTP+JSON
//! binding), the limits every request passes (rate, body size, panics), and graceful serving.

use std::any::Any;
use std::future::Future;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use governor::clock::Clock;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::trace::TraceLayer;

use crate::a2a::card::CARD_PATH;
use crate::a2a::jsonrpc::{self, RequestId, RpcError};
use crate::a2a::types::AgentCard;
use crate::a2a::{dispatch, rest};
use crate::tasks::{Delegators, TaskService};

/// How long agent-card caches may keep the card (§8.6.1); it only changes with a restart.
pub const CARD_MAX_AGE_SECONDS: u32 = 300;
/// The rate limiter forgets idle peers once it tracks this many, so a scan from many addresses
/// cannot grow its memory without bound.
pub const RATE_LIMIT_MAX_TRACKED_PEERS: usize = 10_000;
/// How long [`serve`] waits, after shutdown is asked for, for open requests (streams above all)
/// to finish before it returns anyway.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// What the server needs: the task service, the card it publishes, who its trusted delegators
/// are, and its limits.
#[derive(Clone)]
pub struct ServerState {
    pub service: Arc<dyn TaskService>,
    pub card: AgentCard,
    /// Whose bearer tokens make a caller trusted; every binding identifies callers through them.
    pub delegators: Arc<Delegators>,
    /// Larger request bodies get HTTP 413 before they are parsed.
    pub max_request_bytes: usize,
    /// Requests per minute one peer IP may make before HTTP 429; 0 turns limiting off.
    pub rate_limit_per_minute: u32,
}

/// The state handlers share: the server state and what is derived from it once.
pub(crate) struct App {
    pub(crate) state: ServerState,
    /// The URIs of the extensions the card offers: the only ones `A2A-Extensions` may name.
    pub(crate) supported_extensions: Vec<String>,
    card_json: Bytes,
    card_etag: HeaderValue,
    /// When the router was built: the card only changes with a restart.
    card_last_modified: HeaderValue,
}

type PeerLimiter = DefaultKeyedRateLimiter<IpAddr>;

/// The server's routes with every limit applied. Serve it with [`serve`], which supplies the
/// peer addresses the rate limit is keyed by.
pub fn router(state: ServerState) -> Router {
    let max_request_bytes = state.max_request_bytes;
    let limiter = NonZeroU32::new(state.rate_limit_per_minute)
        .map(|rate| Arc::new(RateLimiter::keyed(Quota::per_minute(rate))));
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
        supported_extensions,
        card_json,
        card_etag,
        card_last_modified,
    });

    // Layers run outside-in in the reverse of the order they are added: trace, catch panics,
    // rate limit, then the body limits, then the handler.
    let mut router = Router::new()
        .route(CARD_PATH, get(agent_card))
        .route("/", post(dispatch::rpc))
        .merge(rest::routes())
        .fallback(rest::not_found)
        .with_state(app)
        // Limits bodies without a Content-Length as they are read into bytes.
        .layer(DefaultBodyLimit::max(max_request_bytes))
        // Refuses a declared Content-Length over the limit before reading anything.
        .layer(RequestBodyLimitLayer::new(max_request_bytes));
    if let Some(limiter) = limiter {
        router = router.layer(middleware::from_fn_with_state(limiter, rate_limit));
    }
    router
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(TraceLayer::new_for_http())
}

/// Serves `router` on `listener` until `shutdown` completes, then lets open requests finish for
/// up to [`SHUTDOWN_GRACE`]. Connections carry their peer address for the rate limit.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (stopping_tx, stopping_rx) = tokio::sync::oneshot::channel::<()>();
    let server = axum::serve(
        listener,
        router.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(async move {
        shutdown.await;
        let _ = stopping_tx.send(());
    });
    let grace_over = async move {
        // A dropped sender means the server ended by itself; then there is nothing to wait for.
        if stopping_rx.await.is_err() {
            std::future::pending::<()>().await;
        }
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    tokio::select! {
        result = server => result,
        () = grace_over => {
            tracing::warn!("requests still open after the shutdown grace period; stopping anyway");
            Ok(())
        }
    }
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

/// Refuses a request with HTTP 429 and `Retry-After` when its peer IP is over its quota.
/// A router served without peer addresses counts every request against one shared key.
async fn rate_limit(
    State(limiter): State<Arc<PeerLimiter>>,
    request: Request,
    next: Next,
) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip())
        .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    if limiter.len() > RATE_LIMIT_MAX_TRACKED_PEERS {
        limiter.retain_recent();
    }
    match limiter.check_key(&peer) {
        Ok(()) => next.run(request).await,
        Err(not_until) => {
            let wait = not_until.wait_time_from(limiter.clock().now());
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            let seconds = seconds.max(1);
            tracing::info!(%peer, seconds, "rate limit exceeded");
            let message = format!("rate limit exceeded; retry after {seconds} s\n");
            (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, seconds.to_string())],
                message,
            )
                .into_response()
        }
    }
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
