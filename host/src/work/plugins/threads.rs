//! The threads guest code runs on: a tokio runtime of its own, with a small fixed number of
//! worker threads named `plugin-{n}`, so that a plugin busy until its deadline takes CPU from
//! other plugin calls only, never from the threads that serve HTTP and drive the tasks. The
//! caller awaits the result over the task's join handle; calls in flight are bounded.
//!
//! A call's first slice, up to its first yield, runs on the caller's thread: most calls end
//! within it (a plugin's work is microseconds), and a hand-off to another thread and back would
//! cost more than the call. A guest yields at every epoch tick (`sandbox::EPOCH_TICK`), so a
//! plugin that spins holds the caller's thread for one tick at most before the rest of its
//! call moves to the plugin threads.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::runtime::Runtime;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::task::AbortOnDropHandle;

use crate::base::telemetry;

/// How plugin threads are named (`plugin-0`, `plugin-1`, …), so they can be told apart in a
/// profiler, in `top -H` and in tests.
pub const THREAD_NAME_PREFIX: &str = "plugin-";

/// Why a call could not run on the plugin threads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThreadsError {
    /// The plugin host is shutting down.
    #[error("the plugin threads have stopped")]
    Stopped,
    /// The host itself failed while running the call (a bug, never the guest's doing: a guest's
    /// failure is a trap, reported as such).
    #[error("the host failed while running the call")]
    Panicked,
}

/// A dedicated runtime for guest code and the bound on calls inside it.
pub struct PluginThreads {
    /// `Some` until dropped; dropped without blocking, since the last owner may be async code.
    runtime: Option<Runtime>,
    /// One permit per call in flight.
    calls: Arc<Semaphore>,
}

impl PluginThreads {
    /// Starts `threads` worker threads; at most `max_calls` calls run on them at once (they
    /// take turns, each guest yielding every epoch tick), the others wait for a permit.
    pub fn start(threads: usize, max_calls: usize) -> std::io::Result<PluginThreads> {
        let threads = threads.max(1);
        let next = Arc::new(AtomicUsize::new(0));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            // Guests get no files or sockets, so the blocking pool is next to idle; keep it as
            // small as the workers so plugins cannot grow the thread count either.
            .max_blocking_threads(threads)
            .thread_name_fn(move || {
                format!(
                    "{THREAD_NAME_PREFIX}{}",
                    next.fetch_add(1, Ordering::Relaxed)
                )
            })
            .enable_all()
            .build()?;
        Ok(PluginThreads {
            runtime: Some(runtime),
            calls: Arc::new(Semaphore::new(max_calls.max(1))),
        })
    }

    /// Runs `job` once a permit is free and returns what it returned: its first slice on the
    /// calling thread, the rest, if it yields, on the plugin threads.
    /// Dropping the returned future (the caller's task canceled) aborts the job at the guest's
    /// next yield, so an abandoned call does not go on spinning. The permit goes with the job
    /// and is given back only once the job is dropped, so the calls holding an instance never
    /// outnumber the permits, abandoned ones included: the plugin engine's pool is sized on it.
    pub async fn run<T, F>(&self, job: F) -> Result<T, ThreadsError>
    where
        T: Send + 'static,
        F: Future<Output = T> + Send + 'static,
    {
        let runtime = self.runtime.as_ref().ok_or(ThreadsError::Stopped)?;
        let permit = self
            .calls
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| ThreadsError::Stopped)?;
        let mut held = Held {
            job: Box::pin(job),
            _permit: permit,
        };
        // The first slice on the caller's thread: a call that ends before its first yield (one
        // epoch tick at most) costs no hand-off to another thread and back.
        match first_slice(&mut held).await {
            FirstSlice::Done(value) => return Ok(value),
            FirstSlice::Panicked => return Err(ThreadsError::Panicked),
            FirstSlice::Yielded => {}
        }
        // The rest runs within the caller's trace context, so a sub-task it creates is traced
        // under the tool call.
        let held = telemetry::within(telemetry::current(), held);
        let handle = AbortOnDropHandle::new(runtime.spawn(held));
        handle.await.map_err(|err| {
            if err.is_panic() {
                ThreadsError::Panicked
            } else {
                ThreadsError::Stopped
            }
        })
    }
}

/// How a job's first slice on the caller's thread ended.
enum FirstSlice<T> {
    Done(T),
    Panicked,
    /// The job yielded (at an epoch tick, or waiting on the host): the rest runs on the plugin
    /// threads.
    Yielded,
}

/// Polls `held` once on the caller's thread. A panic there is a bug in host code, reported as
/// [`ThreadsError::Panicked`] as it is on the plugin threads, never unwound into the caller.
async fn first_slice<F: Future>(held: &mut Held<F>) -> FirstSlice<F::Output> {
    std::future::poll_fn(|cx| {
        let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            std::pin::Pin::new(&mut *held).poll(cx)
        }));
        std::task::Poll::Ready(match polled {
            Ok(std::task::Poll::Ready(value)) => FirstSlice::Done(value),
            Ok(std::task::Poll::Pending) => FirstSlice::Yielded,
            Err(_) => FirstSlice::Panicked,
        })
    })
    .await
}

/// A job with the permit it runs under. Fields drop in order: the job (and the instance it
/// holds) first, then the permit.
struct Held<F> {
    job: std::pin::Pin<Box<F>>,
    _permit: OwnedSemaphorePermit,
}

impl<F: Future> Future for Held<F> {
    type Output = F::Output;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        self.job.as_mut().poll(cx)
    }
}

impl Drop for PluginThreads {
    fn drop(&mut self) {
        self.calls.close();
        if let Some(runtime) = self.runtime.take() {
            // A runtime dropped inside async code must not block waiting for its threads; the
            // calls still on them are aborted at their next yield.
            runtime.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread_name() -> Option<String> {
        std::thread::current().name().map(str::to_string)
    }

    #[tokio::test]
    async fn a_job_that_ends_in_its_first_slice_runs_on_the_callers_thread() {
        let threads = PluginThreads::start(1, 4).unwrap();
        let name = threads.run(async { thread_name() }).await.unwrap();
        assert_eq!(
            name,
            thread_name(),
            "no hand-off for a call that never yields"
        );
        assert_eq!(threads.calls.available_permits(), 4, "its permit is back");
    }

    #[tokio::test]
    async fn a_job_that_yields_goes_on_on_a_named_plugin_thread_and_its_result_comes_back() {
        let threads = PluginThreads::start(1, 4).unwrap();
        let (first, rest) = threads
            .run(async {
                let first = thread_name();
                tokio::task::yield_now().await;
                (first, thread_name())
            })
            .await
            .unwrap();
        assert_eq!(
            first,
            thread_name(),
            "the first slice ran on the caller's thread"
        );
        assert_eq!(
            rest.as_deref(),
            Some("plugin-0"),
            "the rest on the plugin thread"
        );
    }

    #[tokio::test]
    async fn calls_beyond_the_bound_wait_for_a_permit() {
        let threads = Arc::new(PluginThreads::start(1, 1).unwrap());
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let first = {
            let threads = threads.clone();
            tokio::spawn(async move {
                threads
                    .run(async move {
                        let _ = released.await;
                    })
                    .await
            })
        };
        while threads.calls.available_permits() > 0 {
            tokio::task::yield_now().await;
        }
        let second = threads.run(async { "second" });
        tokio::pin!(second);
        assert!(
            futures::poll!(second.as_mut()).is_pending(),
            "the second call waits while the first holds the only permit"
        );
        release.send(()).unwrap();
        assert_eq!(second.await, Ok("second"));
        first.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_job_panicking_after_it_yielded_is_reported_not_propagated() {
        let threads = PluginThreads::start(1, 1).unwrap();
        let outcome = threads
            .run(async {
                tokio::task::yield_now().await;
                if std::hint::black_box(true) {
                    panic!("a bug in host code");
                }
            })
            .await;
        assert_eq!(outcome, Err(ThreadsError::Panicked));
        assert_eq!(
            threads.run(async { 1 }).await,
            Ok(1),
            "the threads still serve"
        );
    }

    #[tokio::test]
    async fn a_panicking_job_is_reported_not_propagated() {
        let threads = PluginThreads::start(1, 1).unwrap();
        let outcome = threads
            .run(async {
                if std::hint::black_box(true) {
                    panic!("a bug in host code");
                }
            })
            .await;
        assert_eq!(outcome, Err(ThreadsError::Panicked));
        assert_eq!(threads.calls.available_permits(), 1, "its permit is back");
    }
}
