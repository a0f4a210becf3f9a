//! The request rate limit, keyed by who is calling: this harness's own calls are never limited,
//! a proven participant (delegator, token caller, JWT) is limited by its id, anyone else by peer
//! address. Refusals are counted
//! and reported in one WARN line per interval, never logged one by one.

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::Clock;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

/// The limiter forgets idle keys once it tracks this many, and the refusal report counts at
/// most this many distinct callers, so a scan from many addresses cannot grow memory without
/// bound.
pub const MAX_TRACKED_KEYS: usize = 10_000;
/// How often refusals are reported: one WARN line per interval that had any, so a flood of
/// refused requests cannot flood the log.
pub const REFUSAL_REPORT_INTERVAL: Duration = Duration::from_secs(10);

use crate::app::server::caller_key::{CallerKey as RateKey, key_of};
/// Whose quota a request counts against: the caller every per-caller limit knows.
pub use crate::base::metrics::METRICS;

/// The limiter and what it refused since the last report.
pub struct RateLimit {
    limiter: DefaultKeyedRateLimiter<RateKey>,
    refusals: Arc<Refusals>,
}

impl RateLimit {
    /// `per_minute` requests a minute for each key (bursts of as many), callers known by what
    /// identification found ([`crate::app::server::identity::Identified`]).
    pub fn new(per_minute: NonZeroU32) -> RateLimit {
        RateLimit {
            limiter: RateLimiter::keyed(Quota::per_minute(per_minute)),
            refusals: Arc::new(Refusals::default()),
        }
    }

    /// `Ok` when the key is within its quota; otherwise the whole seconds to wait, at least 1.
    fn check(&self, key: &RateKey) -> Result<(), u64> {
        if self.limiter.len() > MAX_TRACKED_KEYS {
            self.limiter.retain_recent();
        }
        self.limiter.check_key(key).map_err(|not_until| {
            let wait = not_until.wait_time_from(self.limiter.clock().now());
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            seconds.max(1)
        })
    }
}

/// The middleware: refuses a request over its caller's quota with HTTP 429 and `Retry-After`.
/// A router served without peer addresses counts every anonymous request against one key.
pub async fn limit(State(limit): State<Arc<RateLimit>>, request: Request, next: Next) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip())
        .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    let Some(key) = key_of(request.extensions().get(), peer) else {
        return next.run(request).await;
    };
    match limit.check(&key) {
        Ok(()) => next.run(request).await,
        Err(seconds) => {
            METRICS.rate_limited();
            limit.refusals.record(key);
            start_reporter(&limit.refusals);
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

/// Refusals since the last report, by key.
struct Refusals {
    tally: Mutex<Tally>,
    reporter_started: AtomicBool,
}

struct Tally {
    since: Instant,
    by_key: HashMap<RateKey, u64>,
    /// Refusals of keys past [`MAX_TRACKED_KEYS`], counted but not told apart.
    untracked: u64,
}

impl Default for Refusals {
    fn default() -> Refusals {
        Refusals {
            tally: Mutex::new(Tally {
                since: Instant::now(),
                by_key: HashMap::new(),
                untracked: 0,
            }),
            reporter_started: AtomicBool::new(false),
        }
    }
}

impl Refusals {
    fn lock(&self) -> MutexGuard<'_, Tally> {
        // A tally is plain counters: one left half-updated by a panic is still worth reading.
        self.tally
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn record(&self, key: RateKey) {
        let mut tally = self.lock();
        let tracked = tally.by_key.len();
        match tally.by_key.get_mut(&key) {
            Some(count) => *count += 1,
            None if tracked < MAX_TRACKED_KEYS => {
                tally.by_key.insert(key, 1);
            }
            None => tally.untracked += 1,
        }
    }

    /// What was refused since the last report, and a fresh tally; `None` when nothing was.
    fn take(&self) -> Option<RefusalReport> {
        let mut tally = self.lock();
        let since = std::mem::replace(&mut tally.since, Instant::now());
        let by_key = std::mem::take(&mut tally.by_key);
        let untracked = std::mem::take(&mut tally.untracked);
        let refused = by_key.values().sum::<u64>() + untracked;
        if refused == 0 {
            return None;
        }
        let busiest = by_key
            .iter()
            .max_by(|a, b| {
                a.1.cmp(b.1)
                    .then_with(|| b.0.to_string().cmp(&a.0.to_string()))
            })
            .map(|(key, count)| (key.clone(), *count));
        Some(RefusalReport {
            refused,
            callers: by_key.len(),
            more_callers: untracked > 0,
            busiest,
            seconds: since.elapsed().as_secs().max(1),
        })
    }
}

impl Drop for Refusals {
    /// The last interval's refusals are reported when the server stops, not lost.
    fn drop(&mut self) {
        if let Some(report) = self.take() {
            tracing::warn!("{report}");
        }
    }
}

/// Starts, on the first refusal, the task that reports refusals every
/// [`REFUSAL_REPORT_INTERVAL`]; it ends once the limiter is gone.
fn start_reporter(refusals: &Arc<Refusals>) {
    if refusals.reporter_started.swap(true, Ordering::Relaxed) {
        return;
    }
    let refusals = Arc::downgrade(refusals);
    tokio::spawn(async move {
        let first = tokio::time::Instant::now() + REFUSAL_REPORT_INTERVAL;
        let mut ticks = tokio::time::interval_at(first, REFUSAL_REPORT_INTERVAL);
        loop {
            ticks.tick().await;
            let Some(refusals) = refusals.upgrade() else {
                return;
            };
            if let Some(report) = refusals.take() {
                tracing::warn!("{report}");
            }
        }
    });
}

/// One interval's refusals, as the WARN line reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RefusalReport {
    refused: u64,
    /// Distinct callers refused (keys), up to [`MAX_TRACKED_KEYS`].
    callers: usize,
    /// Whether more callers than that were refused.
    more_callers: bool,
    /// The caller refused most often, and how often.
    busiest: Option<(RateKey, u64)>,
    seconds: u64,
}

impl fmt::Display for RefusalReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let more = if self.more_callers { " or more" } else { "" };
        write!(
            f,
            "rate limit: refused {} requests from {} callers{more} in the last {} s",
            self.refused, self.callers, self.seconds
        )?;
        if let Some((key, count)) = &self.busiest {
            write!(f, "; most from {key} ({count})")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderMap, HeaderValue};

    use super::*;
    use crate::app::server::identity::{Credentials, Identified, Identifier};
    use crate::base::protocol::headers;

    const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

    fn bearer(token: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let value = HeaderValue::from_str(&format!("Bearer {token}")).unwrap();
        headers.insert(header::AUTHORIZATION, value);
        headers
    }

    async fn key(identifier: &Identifier, headers: &HeaderMap) -> Option<RateKey> {
        let identified = Identified(identifier.caller(headers).await);
        key_of(Some(&identified), LOOPBACK)
    }

    #[tokio::test]
    async fn the_self_secret_is_never_limited_and_everyone_else_is_keyed_by_what_proves_them() {
        let credentials = Arc::new(Credentials::none());
        let identifier = Identifier::new(credentials.clone(), None, true);
        let own = bearer(credentials.self_secret());
        assert_eq!(key(&identifier, &own).await, None);
        let mut claimed = HeaderMap::new();
        claimed.insert(
            headers::PARTICIPANT_HEADER,
            HeaderValue::from_static("self"),
        );
        assert_eq!(
            key(&identifier, &claimed).await,
            Some(RateKey::Peer(LOOPBACK)),
            "a header naming self proves nothing"
        );
        let forged = bearer("not-anybody's-token-at-all");
        assert_eq!(
            key(&identifier, &forged).await,
            Some(RateKey::Peer(LOOPBACK)),
            "a token that is nobody's gets no pass"
        );
        assert_eq!(key_of(None, LOOPBACK), Some(RateKey::Peer(LOOPBACK)));
    }

    #[tokio::test]
    async fn a_configured_delegator_and_a_token_caller_are_keyed_by_their_ids() {
        let server = crate::base::config::ServerConfig {
            trusted_delegators: vec![crate::base::config::TrustedDelegatorConfig {
                id: "ledger".into(),
                token_env: "LEDGER".into(),
            }],
            callers: vec![crate::base::config::CallerConfig {
                id: "alice".into(),
                token_env: "ALICE".into(),
            }],
            ..crate::base::config::ServerConfig::default()
        };
        let token = |name: &str| format!("{name}-token-0123456789abcdef");
        let credentials = Credentials::from_config(&server, |name| Some(token(name))).unwrap();
        let identifier = Identifier::new(Arc::new(credentials), None, true);
        assert_eq!(
            key(&identifier, &bearer(&token("LEDGER"))).await,
            Some(RateKey::Proven("ledger".into()))
        );
        assert_eq!(
            key(&identifier, &bearer(&token("ALICE"))).await,
            Some(RateKey::Proven("alice".into()))
        );
    }

    #[test]
    fn a_key_over_its_quota_waits_and_other_keys_do_not() {
        let limit = RateLimit::new(NonZeroU32::new(2).unwrap());
        let flooder = RateKey::Peer(LOOPBACK);
        assert!(limit.check(&flooder).is_ok());
        assert!(limit.check(&flooder).is_ok());
        let wait = limit.check(&flooder).unwrap_err();
        assert!((1..=60).contains(&wait), "{wait}");
        assert!(limit.check(&RateKey::Proven("ledger".into())).is_ok());
    }

    #[test]
    fn refusals_are_reported_once_per_interval_with_counts_and_the_busiest_caller_golden() {
        let refusals = Refusals::default();
        assert_eq!(refusals.take(), None, "nothing refused, nothing reported");
        for _ in 0..30 {
            refusals.record(RateKey::Peer(LOOPBACK));
        }
        for _ in 0..7 {
            refusals.record(RateKey::Proven("ledger".into()));
        }
        let report = refusals.take().unwrap();
        assert_eq!(
            report.to_string(),
            "rate limit: refused 37 requests from 2 callers in the last 1 s; most from address 127.0.0.1 (30)"
        );
        assert_eq!(refusals.take(), None, "the tally starts again");
    }

    #[test]
    fn the_refusal_tally_tells_apart_at_most_the_tracked_number_of_callers() {
        let refusals = Refusals::default();
        for n in 0..(MAX_TRACKED_KEYS as u32 + 5) {
            refusals.record(RateKey::Peer(IpAddr::V4(Ipv4Addr::from(n))));
        }
        let report = refusals.take().unwrap();
        assert_eq!(report.refused, MAX_TRACKED_KEYS as u64 + 5);
        assert_eq!(report.callers, MAX_TRACKED_KEYS);
        assert!(report.to_string().contains("callers or more"), "{report}");
    }
}
