//! A fair share of the open connections: no caller holds more than
//! `server.max_connections_per_caller` of them, event streams included, so one client (or one
//! peer harness's followers) holding its whole share leaves the rest of `max_connections` to
//! everyone else.
//!
//! A connection counts against its caller from when it is accepted until it closes, idle
//! keep-alive time included (it holds a place under `max_connections` all that while). Until
//! its first request head arrives, the caller is only its address: past a share of connections
//! from one address that have not spoken, a new one is *crowded* and gets [`CROWDED_HEAD_WAIT`]
//! for its head instead of the header timeout, so silent connections from one address cannot
//! hold the server for long, while a burst of real requests (this harness reaching itself for
//! several children at once) is served. A head names the caller ([`key_of`]): this
//! harness's own calls (the self secret: its children on `self` and their followers) count
//! against nobody, a proven participant (delegator, token caller, JWT) against its id, anyone
//! else against its address. A
//! request whose caller already holds its whole share is answered `503 Service Unavailable` with
//! `Retry-After` and `Connection: close`, before any work, and its connection closes, which
//! gives its place back. The caller's other connections are untouched.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::app::server::caller_key::{CallerKey, key_of};

/// The `Retry-After` of a refusal, in seconds: a share frees as soon as one of the caller's
/// connections closes (a stream whose task ended, an idle one timed out), so soon is worth a
/// try, and not so soon that a client retrying at once costs the server much.
pub const RETRY_AFTER_SECS: u64 = 2;
/// How often refusals are reported: at most one WARN line per interval, so a caller hammering
/// at its share cannot flood the log.
pub const REFUSAL_REPORT_INTERVAL: Duration = Duration::from_secs(10);
/// How much of a refused request's body is read before the answer, and for how long: a body
/// left unread when the connection closes can make the kernel reset it, and the client would
/// see a reset instead of the 503. A bigger or slower body is not waited for.
const DRAIN_BYTES: usize = 64 * 1024;
const DRAIN_WAIT: Duration = Duration::from_millis(500);
/// How long a crowded connection (one of more than a share of connections from one address that
/// have not sent a request yet) has for its first request head: a client that connects to ask
/// something sends its head at once, so a second is plenty, and a silent connection from a
/// crowded address is closed after it instead of holding its place for the header timeout.
pub const CROWDED_HEAD_WAIT: Duration = Duration::from_secs(1);

/// What a connection counts against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Slot {
    /// A connection whose first request head has not arrived: its address is all that is known.
    Arriving(IpAddr),
    /// A caller a request head named.
    Caller(CallerKey),
}

/// The connections each caller holds, and what was refused.
#[derive(Debug)]
pub struct Shares {
    per_caller: usize,
    held: Mutex<HashMap<Slot, usize>>,
    report: Mutex<Report>,
}

/// Refusals since the last WARN line.
#[derive(Debug)]
struct Report {
    last: Option<Instant>,
    refused: u64,
}

impl Shares {
    /// Shares of `per_caller` connections each (at least one).
    pub fn new(per_caller: usize) -> Arc<Shares> {
        Arc::new(Shares {
            per_caller: per_caller.max(1),
            held: Mutex::new(HashMap::new()),
            report: Mutex::new(Report {
                last: None,
                refused: 0,
            }),
        })
    }

    /// The place of a connection just accepted from `peer`: crowded when that address already
    /// holds a whole share of connections that have not spoken (see [`CROWDED_HEAD_WAIT`]).
    pub fn arriving(self: &Arc<Self>, peer: IpAddr) -> Arc<ConnectionShare> {
        let slot = Slot::Arriving(peer);
        let crowded = {
            let mut held = lock(&self.held);
            let count = held.entry(slot.clone()).or_insert(0);
            *count += 1;
            *count > self.per_caller
        };
        Arc::new(ConnectionShare {
            shares: self.clone(),
            slot: Mutex::new(Some(slot)),
            crowded,
        })
    }

    /// How many connections `key` holds now (those still arriving not included).
    pub fn held_by(&self, key: &CallerKey) -> usize {
        let slot = Slot::Caller(key.clone());
        lock(&self.held).get(&slot).copied().unwrap_or(0)
    }

    /// One more connection for `slot`, if its share has room.
    fn take(&self, slot: &Slot) -> bool {
        let mut held = lock(&self.held);
        let count = held.entry(slot.clone()).or_insert(0);
        if *count >= self.per_caller {
            return false;
        }
        *count += 1;
        true
    }

    fn give_back(&self, slot: &Slot) {
        let mut held = lock(&self.held);
        if let Some(count) = held.get_mut(slot) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                held.remove(slot);
            }
        }
    }

    /// Counts a refusal, and writes the WARN line when the last one is an interval old.
    fn refused(&self, caller: &CallerKey) {
        let mut report = lock(&self.report);
        report.refused += 1;
        let due = report
            .last
            .is_none_or(|last| last.elapsed() >= REFUSAL_REPORT_INTERVAL);
        if due {
            let since = report
                .last
                .map(|last| format!("in the last {} s", last.elapsed().as_secs().max(1)))
                .unwrap_or_else(|| "so far".to_string());
            tracing::warn!(
                "fair share: refused {} requests {since}; the latest from {caller}, which holds {} open connections (server.max_connections_per_caller)",
                report.refused,
                self.per_caller
            );
            report.refused = 0;
            report.last = Some(Instant::now());
        }
    }
}

/// One connection's place in its caller's share, given back when the connection closes (the
/// value is dropped with it).
#[derive(Debug)]
pub struct ConnectionShare {
    shares: Arc<Shares>,
    /// `None` while the connection counts against nobody (this harness's own calls).
    slot: Mutex<Option<Slot>>,
    /// Whether its address already held a share of silent connections when it arrived.
    crowded: bool,
}

/// A request refused because its caller holds its whole share.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{caller} already holds {share} open connections, its whole share of this server; close one, or retry after {RETRY_AFTER_SECS} s"
)]
pub struct ShareFull {
    /// The caller that holds the connections.
    pub caller: CallerKey,
    /// How many open connections one caller may hold (its whole share).
    pub share: usize,
}

impl ConnectionShare {
    /// Whether the connection must send its first request head within [`CROWDED_HEAD_WAIT`]:
    /// it arrived past its address's share of silent connections, and has not spoken since.
    pub fn crowded(&self) -> bool {
        self.crowded && matches!(*lock(&self.slot), Some(Slot::Arriving(_)))
    }

    /// A request head named its caller (`None`: this harness itself): from now on the
    /// connection counts against it. Refused when the caller already holds its whole share and
    /// this connection is not one of them; the connection then keeps its old place until it
    /// closes.
    pub fn claim(&self, caller: Option<CallerKey>) -> Result<(), ShareFull> {
        let wanted = caller.map(Slot::Caller);
        let mut slot = lock(&self.slot);
        if *slot == wanted {
            return Ok(());
        }
        if let Some(new) = &wanted
            && !self.shares.take(new)
        {
            let Slot::Caller(caller) = new.clone() else {
                unreachable!("a request names a caller, never an arriving slot")
            };
            self.shares.refused(&caller);
            return Err(ShareFull {
                caller,
                share: self.shares.per_caller,
            });
        }
        if let Some(old) = std::mem::replace(&mut *slot, wanted) {
            self.shares.give_back(&old);
        }
        Ok(())
    }
}

impl Drop for ConnectionShare {
    fn drop(&mut self) {
        if let Some(slot) = lock(&self.slot).take() {
            self.shares.give_back(&slot);
        }
    }
}

/// The middleware: counts each request's connection against its caller, and refuses one past
/// the caller's share with 503 before any work. A request served without a connection share
/// (a router served by something other than [`crate::app::server::connections::serve`]) passes.
pub async fn enforce(request: Request, next: Next) -> Response {
    let Some(share) = request.extensions().get::<Arc<ConnectionShare>>().cloned() else {
        return next.run(request).await;
    };
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip())
        .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    match share.claim(key_of(request.extensions().get(), peer)) {
        Ok(()) => next.run(request).await,
        Err(full) => {
            let body = request.into_body();
            let _ = tokio::time::timeout(DRAIN_WAIT, axum::body::to_bytes(body, DRAIN_BYTES)).await;
            refusal(&full)
        }
    }
}

/// `503` with `Retry-After`, closing the connection.
fn refusal(full: &ShareFull) -> Response {
    let mut response = (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, RETRY_AFTER_SECS.to_string())],
        format!("{full}\n"),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Counters and instants: a value left by a panic is still a value.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))
    }

    #[test]
    fn a_caller_past_its_share_is_refused_while_others_are_served() {
        let shares = Shares::new(2);
        let flooder = CallerKey::Peer(peer(2));
        let held: Vec<_> = (0..2)
            .map(|_| {
                let share = shares.arriving(peer(2));
                share.claim(Some(flooder.clone())).unwrap();
                share
            })
            .collect();
        assert_eq!(shares.held_by(&flooder), 2);
        let next = shares.arriving(peer(2));
        assert!(!next.crowded(), "nothing else of 127.0.0.2 is silent");
        assert_eq!(
            next.claim(Some(flooder.clone())),
            Err(ShareFull {
                caller: flooder.clone(),
                share: 2
            })
        );
        let other = shares.arriving(peer(3));
        assert_eq!(other.claim(Some(CallerKey::Peer(peer(3)))), Ok(()));
        drop(next);
        drop(held);
        assert_eq!(shares.held_by(&flooder), 0, "closed connections give back");
        let again = shares.arriving(peer(2));
        assert_eq!(again.claim(Some(flooder)), Ok(()));
    }

    #[test]
    fn this_harness_counts_against_nobody_even_from_a_full_address() {
        let shares = Shares::new(1);
        let local = CallerKey::Peer(peer(1));
        let anonymous = shares.arriving(peer(1));
        anonymous.claim(Some(local.clone())).unwrap();
        let own: Vec<_> = (0..5)
            .map(|_| {
                let share = shares.arriving(peer(1));
                share.claim(None).unwrap();
                share
            })
            .collect();
        assert_eq!(shares.held_by(&local), 1);
        drop(own);
    }

    #[test]
    fn past_a_share_of_silent_connections_from_one_address_a_new_one_is_crowded_until_it_speaks() {
        let shares = Shares::new(2);
        let silent: Vec<_> = (0..2).map(|_| shares.arriving(peer(2))).collect();
        assert!(silent.iter().all(|share| !share.crowded()));
        let crowded = shares.arriving(peer(2));
        assert!(crowded.crowded());
        assert!(
            !shares.arriving(peer(3)).crowded(),
            "other addresses are not"
        );
        crowded.claim(None).unwrap();
        assert!(
            !crowded.crowded(),
            "a connection that spoke is no longer crowded"
        );
        drop(silent);
        assert!(!shares.arriving(peer(2)).crowded());
    }

    #[test]
    fn a_connection_that_changes_caller_moves_its_place() {
        let shares = Shares::new(1);
        let ledger = CallerKey::Proven("ledger".into());
        let share = shares.arriving(peer(2));
        share.claim(Some(CallerKey::Peer(peer(2)))).unwrap();
        share.claim(Some(ledger.clone())).unwrap();
        assert_eq!(shares.held_by(&CallerKey::Peer(peer(2))), 0);
        assert_eq!(shares.held_by(&ledger), 1);
        share.claim(Some(ledger.clone())).unwrap();
        assert_eq!(
            shares.held_by(&ledger),
            1,
            "the same caller again takes nothing"
        );
    }

    #[test]
    fn a_refusal_names_the_caller_its_share_and_when_to_retry_golden() {
        let full = ShareFull {
            caller: CallerKey::Peer(peer(2)),
            share: 128,
        };
        assert_eq!(
            full.to_string(),
            "address 127.0.0.2 already holds 128 open connections, its whole share of this server; close one, or retry after 2 s"
        );
        let response = refusal(&full);
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[header::RETRY_AFTER], "2");
        assert_eq!(response.headers()[header::CONNECTION], "close");
    }
}
