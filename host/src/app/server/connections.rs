//! Serving connections: the accept loop with its cap on open connections and each caller's
//! share of them ([`crate::app::server::fair_share`]), and on each connection the header, body and idle
//! timeouts (hyper enforces none of them by itself), the peer address and the connection's
//! share handed to the routes, and graceful shutdown.
//!
//! hyper's own header timeout is not used: it also runs while a kept-alive connection waits for
//! its next request, so it would close idle connections long before the idle timeout. Here a
//! connection's clock is `Activity`: a new connection, or the first byte of a later request,
//! starts the header timeout; a request in flight (its response streaming included) stops every
//! connection timeout; a connection with nothing in flight and nothing begun is idle.
//!
//! The gRPC binding is served by the same loop over HTTP/2 with prior knowledge ([`Wire::H2c`]):
//! its streams are the requests in flight, and a stalled or idle connection is sent GOAWAY, so
//! streams already open finish.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use axum::response::IntoResponse;
use hyper::body::Incoming;
use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::app::server::activity::{
    Activity, BodyTimedOut, InFlight, Stall, TimedBody, Tracked, Watched,
};
use crate::app::server::fair_share::{CROWDED_HEAD_WAIT, ConnectionShare, Shares};
use crate::base::config::ServerConfig;
use crate::base::metrics::METRICS;

/// How long [`serve`], once shutdown is asked for, lets open requests (streams above all)
/// finish before it returns anyway.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// How long the accept loop pauses after an accept error that is not one connection's (out of
/// file descriptors, above all), so it does not spin while nothing can be accepted.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_secs(1);

/// The limits every connection is served under; see `[server]` in the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// A request head (the first from when the connection opens, later ones from their first
    /// byte) must arrive whole within this, or the connection is closed.
    pub header_read_timeout: Duration,
    /// A request body must arrive whole within this from its head, or the request gets HTTP 408
    /// and the connection is closed.
    pub body_read_timeout: Duration,
    /// A connection with no request in flight and none begun is closed after this.
    pub idle_timeout: Duration,
    /// Connections open at once; past it, new connections wait in the listen queue, unaccepted,
    /// until one closes.
    pub max_connections: usize,
    /// Connections one caller may hold of them; see [`crate::app::server::fair_share`].
    pub max_connections_per_caller: usize,
}

impl ConnectionLimits {
    /// The limits `[server]` sets.
    pub fn from_config(server: &ServerConfig) -> ConnectionLimits {
        ConnectionLimits {
            header_read_timeout: Duration::from_secs(server.header_read_timeout_secs),
            body_read_timeout: Duration::from_secs(server.body_read_timeout_secs),
            idle_timeout: Duration::from_secs(server.idle_timeout_secs),
            max_connections: server.max_connections,
            max_connections_per_caller: server.connections_per_caller(),
        }
    }
}

impl Default for ConnectionLimits {
    fn default() -> ConnectionLimits {
        ConnectionLimits::from_config(&ServerConfig::default())
    }
}

/// What a listener speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// HTTP/1.1: the JSON-RPC and HTTP+JSON bindings and the card.
    Http1,
    /// HTTP/2 with prior knowledge (h2c), as gRPC clients speak it without TLS.
    H2c,
}

/// Serves `router` over HTTP/1.1; see [`serve_wire`].
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_wire(listener, router, limits, Wire::Http1, shutdown).await
}

/// Serves `router` on `listener` under `limits` until `shutdown` completes; then stops
/// accepting, closes idle connections, and lets open requests finish for up to
/// [`SHUTDOWN_GRACE`]. Each request carries its peer address (`ConnectInfo<SocketAddr>`) and
/// its connection's place in its caller's share (`Arc<ConnectionShare>`), which the router's
/// [`crate::app::server::fair_share::enforce`] claims.
pub async fn serve_wire(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    wire: Wire,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let open = Arc::new(Semaphore::new(limits.max_connections));
    let shares = Shares::new(limits.max_connections_per_caller);
    let stopping = CancellationToken::new();
    let mut connections = JoinSet::new();
    let mut shutdown = pin!(shutdown);
    loop {
        // Past the cap nothing is accepted: new connections wait in the kernel's listen queue.
        let permit = tokio::select! {
            () = &mut shutdown => break,
            permit = open.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                let share = shares.arriving(peer.ip());
                let connection = Connection {
                    router: router.clone(),
                    peer,
                    limits,
                    wire,
                    stopping: stopping.clone(),
                    share,
                };
                connections.spawn(connection.serve(stream, permit));
            }
            Err(error) => pause_after(error).await,
        }
        while connections.try_join_next().is_some() {}
    }
    drop(listener);
    stopping.cancel();
    let drained = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(SHUTDOWN_GRACE, drained).await.is_err() {
        tracing::warn!("requests still open after the shutdown grace period; stopping anyway");
    }
    // Dropping the set aborts the connections still open.
    Ok(())
}

/// An error of one connection (reset before it was accepted) is nothing; any other (out of file
/// descriptors) is logged and waited out.
async fn pause_after(error: std::io::Error) {
    use std::io::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::ConnectionRefused | ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::error!("accept error: {error}; pausing before accepting again");
    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
}

/// One accepted connection and what it is served with.
struct Connection {
    router: Router,
    peer: SocketAddr,
    limits: ConnectionLimits,
    wire: Wire,
    stopping: CancellationToken,
    /// Its place in its caller's share, given back when the connection ends.
    share: Arc<ConnectionShare>,
}

impl Connection {
    /// Serves the connection until it ends, its header or idle timeout passes, or shutdown has
    /// closed it. `_permit` holds its place under the cap until then.
    async fn serve(self, stream: TcpStream, _permit: OwnedSemaphorePermit) {
        let _open = METRICS.open_connection();
        // Small JSON answers and stream events go out at once, not after Nagle's delay.
        let _ = stream.set_nodelay(true);
        let activity = Activity::new();
        let io = TokioIo::new(Watched::new(stream, activity.clone()));
        let (router, peer, body_timeout) = (
            self.router.clone(),
            self.peer,
            self.limits.body_read_timeout,
        );
        let requests = activity.clone();
        let share = self.share.clone();
        let service = hyper::service::service_fn(move |request: Request<Incoming>| {
            let in_flight = requests.request_started();
            let served = Served {
                peer,
                share: share.clone(),
                in_flight,
            };
            handle(request, router.clone(), body_timeout, served)
        });
        match self.wire {
            Wire::Http1 => {
                let mut builder = http1::Builder::new();
                // Off: this module keeps the header timeout (see the module's notes).
                builder.header_read_timeout(None);
                let connection = builder.serve_connection(io, service);
                self.drive(connection, &activity).await;
            }
            Wire::H2c => {
                let mut builder = http2::Builder::new(TokioExecutor::new());
                builder.timer(TokioTimer::new());
                let connection = builder.serve_connection(io, service);
                self.drive(connection, &activity).await;
            }
        }
    }

    /// Drives the connection until it ends or its clock closes it. An HTTP/2 connection is
    /// never cut while it may carry other streams: its stalls get GOAWAY, like an idle one.
    async fn drive<C>(&self, connection: C, activity: &Activity)
    where
        C: Future<Output = Result<(), hyper::Error>> + Graceful,
    {
        let mut connection = pin!(connection);
        let (limits, peer) = (self.limits, self.peer);
        let mut closing = false;
        loop {
            // A crowded connection (its address holds a share of silent ones) gets a short
            // wait for its first head instead of the header timeout.
            let header_timeout = if self.share.crowded() {
                limits.header_read_timeout.min(CROWDED_HEAD_WAIT)
            } else {
                limits.header_read_timeout
            };
            let (deadline, stall) = activity.deadline(header_timeout, limits.idle_timeout);
            tokio::select! {
                biased;
                result = connection.as_mut() => {
                    if let Err(error) = result {
                        tracing::debug!(%peer, "connection ended: {error}");
                    }
                    return;
                }
                () = self.stopping.cancelled(), if !closing => {
                    closing = true;
                    connection.as_mut().graceful_shutdown();
                }
                () = activity.changed.notified() => {}
                () = tokio::time::sleep_until(deadline) => match stall {
                    Stall::None => {}
                    Stall::Header if self.wire == Wire::Http1 || closing => {
                        tracing::debug!(%peer, "closing a connection: no whole request head in time");
                        return;
                    }
                    // Closes at once when nothing has arrived; a request that slipped in first
                    // is answered, then the connection closes.
                    Stall::Header | Stall::Idle if !closing => {
                        closing = true;
                        connection.as_mut().graceful_shutdown();
                    }
                    Stall::Header | Stall::Idle => return,
                },
            }
        }
    }
}

/// A connection that can be asked to finish what it has begun and close.
trait Graceful {
    fn graceful_shutdown(self: std::pin::Pin<&mut Self>);
}

impl<I, S> Graceful for http1::Connection<I, S>
where
    S: hyper::service::HttpService<Incoming>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    S::ResBody: hyper::body::Body + 'static,
    <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn graceful_shutdown(self: std::pin::Pin<&mut Self>) {
        http1::Connection::graceful_shutdown(self)
    }
}

impl<I, S, E> Graceful for http2::Connection<I, S, E>
where
    S: hyper::service::HttpService<Incoming>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    S::ResBody: hyper::body::Body + 'static,
    <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    E: hyper::rt::bounds::Http2ServerConnExec<S::Future, S::ResBody>,
{
    fn graceful_shutdown(self: std::pin::Pin<&mut Self>) {
        http2::Connection::graceful_shutdown(self)
    }
}

/// What a request carries from its connection.
struct Served {
    peer: SocketAddr,
    share: Arc<ConnectionShare>,
    in_flight: InFlight,
}

/// One request: its peer address and its connection's share added, its body timed, its
/// response body tracked so the connection counts it in flight until it is sent.
async fn handle(
    request: Request<Incoming>,
    router: Router,
    body_timeout: Duration,
    served: Served,
) -> Result<Response<Tracked>, Infallible> {
    let Served {
        peer,
        share,
        in_flight,
    } = served;
    let (mut parts, body) = request.into_parts();
    parts.extensions.insert(ConnectInfo(peer));
    parts.extensions.insert(share);
    let expired = Arc::new(AtomicBool::new(false));
    let body = Body::new(TimedBody::new(body, body_timeout, expired.clone()));
    let response = match router.oneshot(Request::from_parts(parts, body)).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    let response = if expired.load(Ordering::Relaxed) {
        body_timed_out(body_timeout)
    } else {
        response
    };
    Ok(response.map(|body| Tracked::new(body, in_flight)))
}

/// HTTP 408 for a body that did not arrive in time, closing the connection: the rest of the
/// body may still come, and would be read as the next request.
fn body_timed_out(limit: Duration) -> Response<Body> {
    let mut response = (
        StatusCode::REQUEST_TIMEOUT,
        format!("{}\n", BodyTimedOut(limit)),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}
