//! The store's writer: a thread of its own that owns the write connection's turn, takes every
//! write queued since its last commit and commits them together (group commit). An async caller
//! awaits its answer without holding an executor thread; the commit, not the caller, is what the
//! answer waits for, so an acknowledged change is in the WAL before anyone hears of it.
//!
//! Each queued write runs inside a savepoint of the shared transaction: one that fails is rolled
//! back alone, and its caller gets its own error; the others commit.
//!
//! A write that finds the writer idle (nothing queued, the write connection free) commits on its
//! caller's thread instead, in the same code as a batch of one. Handing it to the writer thread
//! and back costs two thread wake-ups, and on a VM each costs more than the commit itself (a few
//! pages copied into the WAL, no `fsync`: tens of microseconds): a task's turn, which writes
//! three times, spent most of its CPU waking threads. The caller never waits on a lock for it:
//! a write that finds the connection held (a batch, a WAL restart) or a queue joins the queue,
//! and over a file other processes write too, where SQLite could make a commit wait for theirs,
//! every write joins it.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::checkpoint::Checkpointer;
use super::{StoreError, Tx, lock};

/// The most writes one transaction carries. A bound keeps each commit's WAL frames and the wait
/// of the first write in a batch small under a flood.
pub(super) const MAX_BATCH: usize = 64;

/// What a committed (`None`) or failed (`Some(reason)`) commit tells a queued write's caller.
type Finish = Box<dyn FnOnce(Option<&str>) + Send>;
/// A queued write: runs in the batch's transaction and says how to answer its caller; `Err` when
/// the write failed and its savepoint is to be rolled back.
type Job = Box<dyn FnOnce(&mut Tx<'_>) -> Result<Finish, Finish> + Send>;

/// Counts of what the store wrote, for tests and benchmarks: only in builds for them
/// (`test-support`).
#[cfg(any(test, feature = "test-support"))]
#[derive(Debug, Default)]
pub struct WriteCounts {
    writes: AtomicU64,
    commits: AtomicU64,
}

/// A build without `test-support` counts nothing: the writer's calls to [`WriteCounts::landed`]
/// compile to nothing.
#[cfg(not(any(test, feature = "test-support")))]
#[derive(Debug, Default)]
pub(super) struct WriteCounts;

#[cfg(not(any(test, feature = "test-support")))]
impl WriteCounts {
    #[inline(always)]
    pub(super) fn landed(&self, _writes: u64) {}
}

#[cfg(any(test, feature = "test-support"))]
impl WriteCounts {
    /// Writes that landed (each caller's `write`, however they were batched).
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    /// Transactions committed: fewer than writes when writes were committed together.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    pub(super) fn landed(&self, writes: u64) {
        self.writes.fetch_add(writes, Ordering::Relaxed);
        self.commits.fetch_add(1, Ordering::Relaxed);
    }
}

/// The queue to the writer thread, the thread, and what an idle writer's caller commits with.
pub(super) struct Writer {
    queue: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    /// Writes sent and not yet taken by the writer thread.
    queued: Arc<AtomicUsize>,
    /// When the writer thread last committed more than one write at once.
    contended: Arc<Contention>,
    /// Set when other processes write the file: every write goes to the writer thread.
    always_queue: AtomicBool,
    conn: Arc<Mutex<Connection>>,
    counts: Arc<WriteCounts>,
    checkpointer: Option<Arc<Checkpointer>>,
}

impl Writer {
    /// Starts the writer thread over the write connection.
    pub(super) fn start(
        conn: Arc<Mutex<Connection>>,
        counts: Arc<WriteCounts>,
        checkpointer: Option<Arc<Checkpointer>>,
    ) -> Result<Writer, StoreError> {
        let (queue, jobs) = mpsc::channel::<Job>();
        let queued = Arc::new(AtomicUsize::new(0));
        let contended = Arc::new(Contention::new());
        let thread = {
            let flow = Flow {
                queued: queued.clone(),
                contended: contended.clone(),
            };
            let (conn, counts, checkpointer) = (conn.clone(), counts.clone(), checkpointer.clone());
            std::thread::Builder::new()
                .name("store-writer".into())
                .spawn(move || run(&conn, &jobs, &flow, &counts, checkpointer.as_deref()))
                .map_err(StoreError::Thread)?
        };
        Ok(Writer {
            queue: Some(queue),
            thread: Some(thread),
            queued,
            contended,
            always_queue: AtomicBool::new(false),
            conn,
            counts,
            checkpointer,
        })
    }

    /// Queues `f` and waits for the commit that carries it, or commits it at once on this
    /// thread when the writer is idle (see the module's doc). Once that commit has landed,
    /// `committed` is called with what `f` returned, on the committing thread and with the
    /// write connection still held, before the caller hears of it: the hooks of successive
    /// writes run in the order the writes ran, which no set of awaiting callers can promise.
    pub(super) async fn write<T, F, H>(&self, f: F, committed: H) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Tx<'_>) -> Result<T, StoreError> + Send + 'static,
        H: FnOnce(&T) + Send + 'static,
    {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |tx| match f(tx) {
            Ok(value) => Ok(Box::new(move |failed: Option<&str>| {
                let _ = answer.send(match failed {
                    None => {
                        committed(&value);
                        Ok(value)
                    }
                    Some(reason) => Err(StoreError::Commit(reason.to_string())),
                });
            })),
            Err(err) => Err(Box::new(move |_| {
                let _ = answer.send(Err(err));
            })),
        });
        let queue = self.queue.as_ref().ok_or(StoreError::NotWritten)?;
        if let Some(conn) = self.idle() {
            // Answered before `commit_batch` returns: the await below is ready at once.
            commit_batch(&conn, vec![job], &self.counts);
            drop(conn);
            if let Some(checkpointer) = &self.checkpointer {
                checkpointer.committed();
            }
        } else {
            self.queued.fetch_add(1, Ordering::AcqRel);
            if queue.send(job).is_err() {
                self.queued.fetch_sub(1, Ordering::AcqRel);
                return Err(StoreError::NotWritten);
            }
        }
        // A write that was never run (the transaction could not begin) or whose closure
        // panicked is dropped with its sender: the caller hears that it did not land.
        answered.await.unwrap_or(Err(StoreError::NotWritten))
    }

    /// From now on every write goes to the writer thread (see `Store::written_by_other_processes`).
    pub(super) fn always_queue(&self) {
        self.always_queue.store(true, Ordering::Release);
    }

    /// The write connection, when nothing is queued and no one holds it; never waits.
    fn idle(&self) -> Option<MutexGuard<'_, Connection>> {
        if self.always_queue.load(Ordering::Acquire)
            || self.queued.load(Ordering::Acquire) > 0
            || self.contended.lately()
        {
            return None;
        }
        match self.conn.try_lock() {
            Ok(conn) => Some(conn),
            // Its holder panicked; SQLite rolled back what it had open (see `super::lock`).
            Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Closing the queue ends the thread once what is queued has landed.
        self.queue.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// How long after a batch of more than one write callers leave every write to the writer
/// thread. Under load writes overlap all the time, and one committed alone on its caller's
/// thread is one fewer in the batch that would have carried it: fewer writes per commit, more
/// pages written per write (measured: 8.3 writes per commit queued, 6.6 with callers
/// committing whenever the writer was idle, and 5-7% fewer requests per second).
pub(super) const CONTENDED_FOR: Duration = Duration::from_millis(10);

/// When the writer thread last had company: writes queued together.
struct Contention {
    since: Instant,
    /// Microseconds from `since` to the latest batch of more than one write; 0 for never.
    latest: AtomicU64,
}

impl Contention {
    fn new() -> Contention {
        Contention {
            since: Instant::now(),
            latest: AtomicU64::new(0),
        }
    }

    fn now(&self) {
        let micros = self.since.elapsed().as_micros() as u64;
        self.latest.store(micros.max(1), Ordering::Relaxed);
    }

    /// Whether writes were queued together within [`CONTENDED_FOR`].
    fn lately(&self) -> bool {
        let latest = self.latest.load(Ordering::Relaxed);
        latest != 0
            && self.since.elapsed().as_micros() as u64 <= latest + CONTENDED_FOR.as_micros() as u64
    }
}

/// What the writer thread tells callers about its queue.
struct Flow {
    queued: Arc<AtomicUsize>,
    contended: Arc<Contention>,
}

fn run(
    conn: &Mutex<Connection>,
    jobs: &mpsc::Receiver<Job>,
    flow: &Flow,
    counts: &WriteCounts,
    checkpointer: Option<&Checkpointer>,
) {
    while let Ok(first) = jobs.recv() {
        // The connection first, then the queue: what was queued while a direct `write` held
        // the connection joins this batch.
        let conn = lock(conn);
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        flow.queued.fetch_sub(batch.len(), Ordering::AcqRel);
        if batch.len() > 1 {
            flow.contended.now();
        }
        commit_batch(&conn, batch, counts);
        drop(conn);
        if let Some(checkpointer) = checkpointer {
            checkpointer.committed();
        }
    }
}

/// Runs the batch in one transaction, each write in its own savepoint, commits, then answers
/// every caller.
fn commit_batch(conn: &Connection, mut batch: Vec<Job>, counts: &WriteCounts) {
    let mut finishes: Vec<Finish> = Vec::with_capacity(batch.len());
    if let Err(err) = execute(conn, "BEGIN IMMEDIATE") {
        // Dropped unrun: each caller hears that its write did not land.
        tracing::error!("the store could not begin a write: {err}");
        return;
    }
    if batch.len() == 1
        && let Some(job) = batch.pop()
    {
        commit_alone(conn, job, counts);
        return;
    }
    let mut landed = 0;
    for job in batch {
        if let Err(err) = execute(conn, "SAVEPOINT write") {
            tracing::error!("the store could not open a savepoint: {err}");
            continue;
        }
        let mut tx = Tx { conn };
        let outcome = catch_unwind(AssertUnwindSafe(|| job(&mut tx)));
        match outcome {
            Ok(Ok(finish)) => {
                finishes.push(finish);
                landed += 1;
                let _ = execute(conn, "RELEASE write");
            }
            Ok(Err(finish)) => {
                // Its own error: its changes go, the batch's others stay.
                let _ = execute(conn, "ROLLBACK TO write");
                let _ = execute(conn, "RELEASE write");
                finishes.push(finish);
            }
            Err(_) => {
                // The panic is reported by the panic hook; the write's changes go.
                let _ = execute(conn, "ROLLBACK TO write");
                let _ = execute(conn, "RELEASE write");
            }
        }
    }
    match execute(conn, "COMMIT") {
        Ok(()) => {
            counts.landed(landed);
            for finish in finishes {
                finish(None);
            }
        }
        Err(err) => {
            let _ = execute(conn, "ROLLBACK");
            let reason = err.to_string();
            tracing::error!("the store could not commit: {reason}");
            for finish in finishes {
                finish(Some(&reason));
            }
        }
    }
}

/// One write in a transaction of its own (begun): no savepoint, since its failure takes the
/// whole transaction back and nothing else is in it (two statements and a sub-journal less).
fn commit_alone(conn: &Connection, job: Job, counts: &WriteCounts) {
    let mut tx = Tx { conn };
    match catch_unwind(AssertUnwindSafe(|| job(&mut tx))) {
        Ok(Ok(finish)) => match execute(conn, "COMMIT") {
            Ok(()) => {
                counts.landed(1);
                finish(None);
            }
            Err(err) => {
                let _ = execute(conn, "ROLLBACK");
                let reason = err.to_string();
                tracing::error!("the store could not commit: {reason}");
                finish(Some(&reason));
            }
        },
        Ok(Err(finish)) => {
            // Its own error, which `finish` carries: its changes go.
            let _ = execute(conn, "ROLLBACK");
            finish(None);
        }
        Err(_) => {
            // The panic is reported by the panic hook; the write's changes go.
            let _ = execute(conn, "ROLLBACK");
        }
    }
}

fn execute(conn: &Connection, sql: &str) -> Result<(), rusqlite::Error> {
    conn.prepare_cached(sql)?.execute([])?;
    Ok(())
}
