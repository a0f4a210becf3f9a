//! What one connection is doing, for its timeouts: whether a request is in flight (until its
//! response body is fully sent), when the head of the next request began to arrive, when it went
//! idle. The socket, request body and response body wrappers here report it, and the request
//! body is cut off when it does not arrive in time.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use http_body::{Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::{Instant, Sleep};

/// How far away "no deadline" is: a request in flight is bounded by its own limits (the body
/// timeout, the handler's), not by the connection's.
const NO_DEADLINE: Duration = Duration::from_secs(24 * 60 * 60);

/// Why a connection would be closed at its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stall {
    /// A request is in flight: nothing to close for.
    None,
    /// The head of a request began (or the connection opened) and is not complete.
    Header,
    /// No request is in flight and none has begun.
    Idle,
}

/// One connection's activity, shared by its socket, its requests and its driver.
pub(crate) struct Activity {
    state: Mutex<State>,
    /// Woken on every change, so the driver recomputes its deadline.
    pub(crate) changed: Notify,
}

struct State {
    in_flight: usize,
    /// When the head of the next request began to arrive; a new connection owes its first
    /// head from the moment it opens.
    head_started: Option<Instant>,
    /// When the last request in flight finished.
    idle_since: Instant,
}

impl Activity {
    /// A connection that has just opened.
    pub(crate) fn new() -> Arc<Activity> {
        let now = Instant::now();
        Arc::new(Activity {
            state: Mutex::new(State {
                in_flight: 0,
                head_started: Some(now),
                idle_since: now,
            }),
            changed: Notify::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Plain counters and instants: a value left by a panic is still a value.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Bytes arrived. With no request in flight they are the start of the next request's head.
    /// Bytes that arrive while one is in flight (a pipelined request) start no head: that
    /// request is under the idle timeout instead, and hyper reads it as soon as it may.
    fn bytes_read(&self) {
        let mut state = self.lock();
        if state.in_flight == 0 && state.head_started.is_none() {
            state.head_started = Some(Instant::now());
            drop(state);
            self.changed.notify_one();
        }
    }

    /// A request's head is complete; it stays in flight until the guard is dropped (with its
    /// response body, once that is sent).
    pub(crate) fn request_started(self: &Arc<Self>) -> InFlight {
        let mut state = self.lock();
        state.in_flight += 1;
        state.head_started = None;
        drop(state);
        self.changed.notify_one();
        InFlight(self.clone())
    }

    /// When the connection should be closed if nothing changes, and why.
    pub(crate) fn deadline(
        &self,
        header_timeout: Duration,
        idle_timeout: Duration,
    ) -> (Instant, Stall) {
        let state = self.lock();
        if state.in_flight > 0 {
            (Instant::now() + NO_DEADLINE, Stall::None)
        } else if let Some(started) = state.head_started {
            (started + header_timeout, Stall::Header)
        } else {
            (state.idle_since + idle_timeout, Stall::Idle)
        }
    }
}

/// A request in flight; dropping it (with the response body, or with the handler when the
/// connection goes first) ends it.
pub(crate) struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.in_flight = state.in_flight.saturating_sub(1);
        if state.in_flight == 0 {
            state.idle_since = Instant::now();
        }
        drop(state);
        self.0.changed.notify_one();
    }
}

/// The socket, telling the activity when bytes arrive.
pub(crate) struct Watched {
    stream: TcpStream,
    activity: Arc<Activity>,
}

impl Watched {
    pub(crate) fn new(stream: TcpStream, activity: Arc<Activity>) -> Watched {
        Watched { stream, activity }
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.bytes_read();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Why a request body was cut off.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {} s", .0.as_secs())]
pub(crate) struct BodyTimedOut(pub(crate) Duration);

/// A request body that must arrive whole within its limit from when the head arrived. Past it,
/// reading fails and `expired` is set, so the response can say why.
pub(crate) struct TimedBody {
    inner: hyper::body::Incoming,
    deadline: Option<Pin<Box<Sleep>>>,
    limit: Duration,
    expired: Arc<AtomicBool>,
}

impl TimedBody {
    pub(crate) fn new(
        inner: hyper::body::Incoming,
        limit: Duration,
        expired: Arc<AtomicBool>,
    ) -> TimedBody {
        use http_body::Body as _;
        // A request with no body (most GETs) needs no timer.
        let deadline = (!inner.is_end_stream()).then(|| Box::pin(tokio::time::sleep(limit)));
        TimedBody {
            inner,
            deadline,
            limit,
            expired,
        }
    }
}

impl http_body::Body for TimedBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(None) => {
                this.deadline = None;
                Poll::Ready(None)
            }
            Poll::Ready(Some(frame)) => Poll::Ready(Some(frame.map_err(Into::into))),
            Poll::Pending => {
                let over = this
                    .deadline
                    .as_mut()
                    .is_some_and(|deadline| deadline.as_mut().poll(cx).is_ready());
                if over {
                    this.deadline = None;
                    this.expired.store(true, Ordering::Relaxed);
                    return Poll::Ready(Some(Err(BodyTimedOut(this.limit).into())));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that keeps its request in flight until it is sent whole (or dropped), so a
/// long event stream is never taken for an idle connection.
pub(crate) struct Tracked {
    body: Body,
    _in_flight: InFlight,
}

impl Tracked {
    pub(crate) fn new(body: Body, in_flight: InFlight) -> Tracked {
        Tracked {
            body,
            _in_flight: in_flight,
        }
    }
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: Duration = Duration::from_secs(10);
    const IDLE: Duration = Duration::from_secs(60);

    /// Whether `deadline` is `limit` after some instant between `before` and now.
    fn after(deadline: Instant, before: Instant, limit: Duration) -> bool {
        deadline >= before + limit && deadline <= Instant::now() + limit
    }

    #[test]
    fn a_new_connection_owes_a_head_then_idles_between_requests() {
        let before = Instant::now();
        let activity = Activity::new();
        let (deadline, stall) = activity.deadline(HEADER, IDLE);
        assert_eq!(stall, Stall::Header);
        assert!(after(deadline, before, HEADER));
        let request = activity.request_started();
        assert_eq!(activity.deadline(HEADER, IDLE).1, Stall::None);
        let before = Instant::now();
        drop(request);
        let (deadline, stall) = activity.deadline(HEADER, IDLE);
        assert_eq!(stall, Stall::Idle);
        assert!(after(deadline, before, IDLE));
        let before = Instant::now();
        activity.bytes_read();
        let (head, stall) = activity.deadline(HEADER, IDLE);
        assert_eq!(stall, Stall::Header);
        assert!(after(head, before, HEADER));
        activity.bytes_read();
        assert_eq!(
            activity.deadline(HEADER, IDLE),
            (head, Stall::Header),
            "more bytes of the same head do not move its deadline"
        );
    }

    #[test]
    fn bytes_read_while_a_request_is_in_flight_start_no_head() {
        let activity = Activity::new();
        let request = activity.request_started();
        activity.bytes_read();
        drop(request);
        assert_eq!(activity.deadline(HEADER, IDLE).1, Stall::Idle);
    }
}
