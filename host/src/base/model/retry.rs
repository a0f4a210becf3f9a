//! The retry loop both HTTP providers share: exponential backoff with jitter after a retryable
//! failure, honouring the server's `Retry-After` when it sends one.

use std::future::Future;
use std::time::Duration;

use super::ModelError;

/// The first backoff. Long enough for a momentary overload or a dropped connection to clear,
/// short enough that a single hiccup is not noticed by the person waiting on the task.
pub const BASE_DELAY: Duration = Duration::from_millis(500);

/// The longest backoff. Doubling from 500 ms reaches it on the fifth retry; beyond that, waiting
/// longer mostly stalls the task, and a provider that is down for minutes should fail the call
/// so the task reports why instead of hanging.
pub const MAX_DELAY: Duration = Duration::from_secs(8);

/// The longest `Retry-After` we wait. Provider rate limits are counted per minute, so half a
/// minute usually spans the rest of the window; a server asking for more (a daily quota, a long
/// outage) would hold the task hostage, so we retry earlier and let the retry count decide.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// How often and how long to wait between attempts of one model call.
///
/// The delays are fields rather than constants so tests can run the real loop in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt; `0` makes exactly one attempt.
    pub max_retries: u32,
    /// The backoff before the first retry; it doubles for each further retry.
    pub base_delay: Duration,
    /// No backoff is longer than this.
    pub max_delay: Duration,
    /// A server's `Retry-After` is honoured up to this long.
    pub max_retry_after: Duration,
}

impl RetryPolicy {
    /// The production policy with `max_retries` retries (`model.max_retries`).
    pub fn new(max_retries: u32) -> RetryPolicy {
        RetryPolicy {
            max_retries,
            base_delay: BASE_DELAY,
            max_delay: MAX_DELAY,
            max_retry_after: MAX_RETRY_AFTER,
        }
    }

    /// The wait before retry number `retry` (0 for the first retry).
    ///
    /// With a `Retry-After` the server knows best, so we wait what it asks, capped. Otherwise we
    /// back off exponentially with "equal jitter": a random point in the upper half of the
    /// exponential delay. The jitter spreads out harnesses that failed together, so they do not
    /// all come back at the same instant; keeping the lower half means the wait still grows.
    /// `unit` is the random draw in `[0, 1]`, a parameter so the arithmetic can be tested.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>, unit: f64) -> Duration {
        if let Some(wait) = retry_after {
            return wait.min(self.max_retry_after);
        }
        let factor = 2u32.checked_pow(retry).unwrap_or(u32::MAX);
        let exponential = self
            .base_delay
            .checked_mul(factor)
            .unwrap_or(self.max_delay)
            .min(self.max_delay);
        let half = exponential / 2;
        half + half.mul_f64(unit.clamp(0.0, 1.0))
    }
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy::new(3)
    }
}

/// One failed attempt: the error, and how long the server asked us to wait, if it did.
#[derive(Debug)]
pub struct Failure {
    /// What went wrong; [`ModelError::is_retryable`] decides whether to try again.
    pub error: ModelError,
    /// From the response's `Retry-After` header, in seconds.
    pub retry_after: Option<Duration>,
}

impl From<ModelError> for Failure {
    fn from(error: ModelError) -> Failure {
        Failure {
            error,
            retry_after: None,
        }
    }
}

/// Runs `attempt` until it succeeds, fails with an error that is not retryable, or has been
/// retried `policy.max_retries` times; the last error is returned, with the count of retries
/// made ([`ModelError::after_retries`]). `what` names the call in logs.
pub async fn with_retries<T, F, Fut>(
    policy: &RetryPolicy,
    what: &str,
    mut attempt: F,
) -> Result<T, ModelError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    let mut retry = 0;
    loop {
        let failure = match attempt().await {
            Ok(value) => return Ok(value),
            Err(failure) => failure,
        };
        if !failure.error.is_retryable() || retry >= policy.max_retries {
            return Err(failure.error.after_retries(retry));
        }
        let delay = policy.delay(retry, failure.retry_after, rand::random::<f64>());
        tracing::warn!(
            call = what,
            retry = retry + 1,
            of = policy.max_retries,
            delay_ms = delay.as_millis() as u64,
            error = %failure.error,
            "model call failed; retrying"
        );
        tokio::time::sleep(delay).await;
        retry += 1;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    fn fast(max_retries: u32) -> RetryPolicy {
        RetryPolicy {
            max_retries,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(4),
            max_retry_after: Duration::from_millis(20),
        }
    }

    fn http(status: u16) -> Failure {
        ModelError::Http {
            status,
            body: String::new(),
            retries: 0,
        }
        .into()
    }

    #[test]
    fn the_backoff_doubles_and_stops_at_the_cap() {
        let policy = RetryPolicy::new(10);
        let top: Vec<u64> = (0..6)
            .map(|retry| policy.delay(retry, None, 1.0).as_millis() as u64)
            .collect();
        assert_eq!(top, [500, 1000, 2000, 4000, 8000, 8000]);
        assert_eq!(policy.delay(40, None, 1.0), MAX_DELAY);
    }

    #[test]
    fn the_jitter_keeps_at_least_half_of_the_backoff() {
        let policy = RetryPolicy::new(3);
        assert_eq!(policy.delay(1, None, 0.0), Duration::from_millis(500));
        assert_eq!(policy.delay(1, None, 0.5), Duration::from_millis(750));
        assert_eq!(policy.delay(1, None, 7.0), Duration::from_millis(1000));
    }

    #[test]
    fn a_retry_after_is_honoured_up_to_its_cap() {
        let policy = RetryPolicy::new(3);
        let asked = Some(Duration::from_secs(2));
        assert_eq!(policy.delay(0, asked, 0.0), Duration::from_secs(2));
        let greedy = Some(Duration::from_secs(3600));
        assert_eq!(policy.delay(0, greedy, 0.0), MAX_RETRY_AFTER);
    }

    #[tokio::test]
    async fn a_retryable_error_is_retried_until_success() {
        let calls = AtomicU32::new(0);
        let result = with_retries(&fast(3), "test", || async {
            match calls.fetch_add(1, Ordering::SeqCst) {
                0 => Err(http(429)),
                1 => Err(ModelError::Timeout {
                    secs: 1,
                    retries: 0,
                }
                .into()),
                _ => Ok("answer"),
            }
        })
        .await;
        assert_eq!(result.ok(), Some("answer"));
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn the_last_error_is_returned_after_max_retries() {
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = with_retries(&fast(2), "test", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(http(503))
        })
        .await;
        assert!(matches!(
            result,
            Err(ModelError::Http {
                status: 503,
                retries: 2,
                ..
            })
        ));
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn an_error_that_is_not_retryable_is_returned_at_once() {
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = with_retries(&fast(5), "test", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(http(400))
        })
        .await;
        assert!(matches!(
            result,
            Err(ModelError::Http {
                status: 400,
                retries: 0,
                ..
            })
        ));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn zero_retries_means_one_attempt() {
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = with_retries(&fast(0), "test", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(ModelError::Transport {
                detail: "refused".into(),
                retries: 0,
            }
            .into())
        })
        .await;
        assert!(matches!(result, Err(ModelError::Transport { .. })));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn the_loop_waits_what_the_server_asked() {
        let calls = AtomicU32::new(0);
        let started = std::time::Instant::now();
        let result = with_retries(&fast(1), "test", || async {
            if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                Err(Failure {
                    error: ModelError::Http {
                        status: 429,
                        body: String::new(),
                        retries: 0,
                    },
                    retry_after: Some(Duration::from_secs(60)),
                })
            } else {
                Ok(())
            }
        })
        .await;
        assert!(result.is_ok());
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(20), "waited {waited:?}");
        assert!(waited < Duration::from_secs(5), "waited {waited:?}");
    }
}
