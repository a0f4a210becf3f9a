//! The push worker: delivers the store's outbox of push notifications (`store::push`), the
//! oldest push of each (task, webhook) pair at a time, so every webhook hears of a task's
//! changes in order; retries a failed one with backoff until [`MAX_ATTEMPTS`] or [`MAX_AGE`];
//! removes one only once it was delivered or given up on. A push is queued in the transaction
//! of its change, so a harness killed at any point loses none; after a restart it sends again
//! at most the pushes that were in flight.
//!
//! One in flight per (task, webhook) pair rather than per task: a task's webhooks are
//! different receivers, and one that is down must not hold back the others. Each delivery
//! first claims its push in the store for [`CLAIM_FOR`], so that of processes sharing a store
//! (Temporal workers) one delivers each push, and the next push of the pair waits for it.

mod deliver;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

pub use deliver::{DELIVERY_TIMEOUT, MAX_RESPONSE_BYTES, Outcome, TOKEN_HEADER, deliver};

use crate::base::config::HostPattern;
use crate::base::config::push::PushConfig;
use crate::base::metrics::METRICS;
use crate::base::text::log_field::escape_capped;
use crate::state::store::{OutboxItem, Store, StoreError};
use crate::state::tasks::hub::TaskHub;
use crate::state::tasks::push_configs::PushConfigs;
use crate::state::tasks::push_queue::now_millis;

/// Deliveries tried for one push before it is dropped (and logged): with the backoff below,
/// about half an hour of a receiver being down.
pub const MAX_ATTEMPTS: i64 = 12;
/// The oldest a push may grow before it is dropped, however few attempts it had: news of a
/// task a day old is history, not a notification.
pub const MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);
/// The wait before the first retry; each later one waits twice the one before.
pub const FIRST_RETRY: Duration = Duration::from_secs(1);
/// The longest wait between two attempts.
pub const MAX_RETRY: Duration = Duration::from_secs(15 * 60);
/// Deliveries in flight at once, across all tasks: a bound on the harness's outbound
/// connections for pushes.
pub const MAX_IN_FLIGHT: usize = 32;
/// How long a claimed push is left to its claimant: longer than a delivery may take, so no
/// other look takes it while it is in flight. A push in flight when its harness was killed is
/// sent again once this has passed.
pub const CLAIM_FOR: Duration = Duration::from_secs(30);
/// Pushes read from the outbox per look: the heads of this many (task, webhook) pairs.
const HEADS_PER_LOOK: usize = 256;
/// How often the worker looks at the outbox without being woken: retries come due, and
/// pushes queued by another process sharing the store (Temporal workers) are found.
const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// The most characters of a receiver's answer or a config id a log line carries.
const MAX_LOGGED_CHARS: usize = 200;

/// Push notifications as `harness serve` runs them (`[push]`): the operations the server
/// answers, and what wakes the worker.
pub struct Push {
    /// The push-config operations every binding calls.
    pub configs: Arc<PushConfigs>,
    ready: Arc<Notify>,
    allowed: Vec<HostPattern>,
}

impl Push {
    /// The hub with push on when `[push]` offers it (each change then queues its pushes), and
    /// the operations over it; `None` when it does not.
    pub fn attach(hub: TaskHub, config: &PushConfig) -> (Arc<TaskHub>, Option<Push>) {
        if !config.enabled() {
            return (Arc::new(hub), None);
        }
        let ready = Arc::new(Notify::new());
        let hub = Arc::new(hub.with_push_outbox(ready.clone()));
        let allowed = config.patterns();
        let configs = Arc::new(PushConfigs::new(hub.clone(), allowed.clone()));
        let push = Push {
            configs,
            ready,
            allowed,
        };
        (hub, Some(push))
    }

    /// Starts delivering the outbox of `store`; the worker stops when the handle is dropped.
    /// Deliveries in flight then are abandoned: their pushes stay queued for the next start.
    pub fn start(&self, store: Arc<Store>) -> AbortOnDropHandle<()> {
        let worker = PushWorker::new(store, self.ready.clone(), self.allowed.clone());
        AbortOnDropHandle::new(worker.start(CancellationToken::new()))
    }
}

/// Delivers the outbox of `store` to webhooks on `allowed` (`push.allowed_hosts`).
pub struct PushWorker {
    store: Arc<Store>,
    ready: Arc<Notify>,
    allowed: Arc<Vec<HostPattern>>,
}

impl PushWorker {
    /// A worker over `store`, woken by `ready` (the hub's, notified after a change queued a
    /// push).
    pub fn new(store: Arc<Store>, ready: Arc<Notify>, allowed: Vec<HostPattern>) -> PushWorker {
        PushWorker {
            store,
            ready,
            allowed: Arc::new(allowed),
        }
    }

    /// Runs until `stop` is cancelled. Deliveries in flight then are abandoned: their pushes
    /// stay in the outbox for the next start.
    pub fn start(self, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move { self.run(stop).await })
    }

    async fn run(self, stop: CancellationToken) {
        let (done, mut finished) = mpsc::unbounded_channel::<(OutboxItem, Outcome)>();
        let mut in_flight: HashSet<(String, String)> = HashSet::new();
        let mut deliveries = tokio::task::JoinSet::new();
        loop {
            let wait = match self.look(&mut in_flight, &mut deliveries, &done).await {
                Ok(wait) => wait,
                Err(err) => {
                    tracing::error!("push outbox unreadable: {err}");
                    POLL_INTERVAL
                }
            };
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = self.ready.notified() => {}
                _ = tokio::time::sleep(wait) => {}
                Some((item, outcome)) = finished.recv() => {
                    in_flight.remove(&(item.task_id.clone(), item.config_id.clone()));
                    self.settle(item, outcome).await;
                }
                Some(_) = deliveries.join_next(), if !deliveries.is_empty() => {}
            }
        }
    }

    /// Starts a delivery for each (task, webhook) pair whose oldest push is due and not in
    /// flight; how long until the next one comes due (at most [`POLL_INTERVAL`]).
    async fn look(
        &self,
        in_flight: &mut HashSet<(String, String)>,
        deliveries: &mut tokio::task::JoinSet<()>,
        done: &mpsc::UnboundedSender<(OutboxItem, Outcome)>,
    ) -> Result<Duration, StoreError> {
        let now = now_millis();
        let mut wait = POLL_INTERVAL;
        let mut due = Vec::new();
        for item in self.store.push_heads(HEADS_PER_LOOK)? {
            if in_flight.len() + due.len() >= MAX_IN_FLIGHT {
                break;
            }
            if in_flight.contains(&(item.task_id.clone(), item.config_id.clone())) {
                continue;
            }
            if item.not_before > now {
                wait = wait.min(Duration::from_millis((item.not_before - now) as u64));
                continue;
            }
            due.push(item);
        }
        if due.is_empty() {
            return Ok(wait);
        }
        let seqs: Vec<i64> = due.iter().map(|item| item.seq).collect();
        let until = now + CLAIM_FOR.as_millis() as i64;
        let won = self
            .store
            .write_queued(move |tx| {
                let mut won = HashSet::new();
                for seq in seqs {
                    if tx.claim_push(seq, now, until)? {
                        won.insert(seq);
                    }
                }
                Ok(won)
            })
            .await?;
        for item in due.into_iter().filter(|item| won.contains(&item.seq)) {
            in_flight.insert((item.task_id.clone(), item.config_id.clone()));
            let (allowed, done) = (self.allowed.clone(), done.clone());
            deliveries.spawn(async move {
                let outcome = deliver(&item, &allowed).await;
                let _ = done.send((item, outcome));
            });
        }
        Ok(wait)
    }

    /// Removes a push that was delivered or given up on, or schedules its next attempt.
    async fn settle(&self, item: OutboxItem, outcome: Outcome) {
        let seq = item.seq;
        let field = |text: &str| escape_capped(text, MAX_LOGGED_CHARS);
        let retry_at = match &outcome {
            Outcome::Delivered => {
                METRICS.push_delivery("delivered");
                tracing::debug!(task = %item.task_id, config = %field(&item.config_id), "push delivered");
                None
            }
            Outcome::Gone => None,
            Outcome::Refused(why) => {
                METRICS.push_delivery("refused");
                tracing::warn!(task = %item.task_id, config = %field(&item.config_id), "push refused, dropped: {}", field(why));
                None
            }
            Outcome::Failed(why) => {
                let now = now_millis();
                let attempts = item.attempts + 1;
                let age = Duration::from_millis((now - item.enqueued_at).max(0) as u64);
                if attempts >= MAX_ATTEMPTS || age >= MAX_AGE {
                    METRICS.push_delivery("dropped");
                    tracing::warn!(task = %item.task_id, config = %field(&item.config_id), attempts, "push not delivered, dropped after its last attempt: {}", field(why));
                    None
                } else {
                    METRICS.push_delivery("retried");
                    tracing::info!(task = %item.task_id, config = %field(&item.config_id), attempts, "push not delivered, will retry: {}", field(why));
                    Some(now + backoff(attempts).as_millis() as i64)
                }
            }
        };
        let written = self
            .store
            .write_queued(move |tx| match retry_at {
                Some(at) => tx.retry_push(seq, at),
                None => tx.remove_push(seq),
            })
            .await;
        if let Err(err) = written {
            // The push stays queued as it was: it is tried again, not lost.
            tracing::error!("push outbox not updated: {err}");
        }
    }
}

/// The wait after `attempts` failed attempts: [`FIRST_RETRY`] doubled each time, at most
/// [`MAX_RETRY`].
pub fn backoff(attempts: i64) -> Duration {
    let doublings = (attempts.max(1) - 1).min(30) as u32;
    FIRST_RETRY
        .saturating_mul(2u32.saturating_pow(doublings))
        .min(MAX_RETRY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_wait_twice_as_long_each_time_up_to_the_cap() {
        assert_eq!(backoff(1), FIRST_RETRY);
        assert_eq!(backoff(2), FIRST_RETRY * 2);
        assert_eq!(backoff(4), FIRST_RETRY * 8);
        assert_eq!(backoff(MAX_ATTEMPTS), MAX_RETRY.min(FIRST_RETRY * 2048));
        assert_eq!(backoff(40), MAX_RETRY);
    }
}
