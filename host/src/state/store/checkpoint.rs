//! The WAL checkpointer: a thread with its own connection that copies committed pages from the
//! WAL into the database file. SQLite would otherwise checkpoint inside a commit, every 1,000
//! pages, on the writer's thread: the writer (and every write queued behind it) would wait for
//! the copy and its `fsync`. A passive checkpoint here never blocks a writer or a reader; the
//! WAL is reused from its start once a checkpoint has caught up.
//!
//! Under steady load a passive checkpoint never quite catches up, so the WAL would grow without
//! end; once it is long, the checkpointer restarts it. A restart stops writes while it copies the
//! last frames and waits for readers still on the old WAL. It stops them by holding the write
//! connection's lock in this process, not SQLite's write lock: the writer thread then waits on a
//! mutex and goes on the moment the restart is done, where SQLite's busy handler would have put
//! it to sleep for 1, then 2, then 5 ms and more (the writes' p99 under load, before).

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;

use super::{StoreError, lock};

/// How long the checkpointer lets commits gather after the first one it hears of: one
/// checkpoint then copies many commits' pages, each page once. Short enough that each restart
/// has little to copy: under load, 50 ms gave a lower p99 than 100, 200 or 400 ms.
const GATHER: Duration = Duration::from_millis(50);

/// WAL frames (pages) past which a checkpoint also restarts the WAL: 1 MiB of WAL at the
/// store's 1 KiB pages ([`super::PAGE_SIZE`]). Under load a round finds a few thousand frames,
/// so the WAL restarts about every round and stays a few MiB long.
const RESTART_FRAMES: i64 = 1_024;

/// How long the restart sleeps between looks at readers still on the old WAL. Reads take tens
/// of microseconds, and writes wait all the while: SQLite's own busy handler would sleep 1 ms
/// at the least.
const READER_POLL: Duration = Duration::from_micros(20);

/// The longest a restart holds writes waiting for readers before it gives up, to be tried again
/// at the next checkpoint: a long read delays the WAL's restart, never the writes behind it.
const RESTART_WAIT: Duration = Duration::from_millis(100);

/// Looks at the readers a restart makes before it gives up, [`READER_POLL`] apart.
const READER_POLLS: i32 = (RESTART_WAIT.as_micros() / READER_POLL.as_micros()) as i32;

/// What the writer tells the checkpointer: commits since the last checkpoint, or stop.
#[derive(Default)]
struct Signal {
    commits: u64,
    stop: bool,
}

/// The checkpointer thread and how to wake it.
pub(super) struct Checkpointer {
    signal: Arc<(Mutex<Signal>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts the thread on its own connection to the file. `writes` is the write connection,
    /// held while the WAL restarts.
    pub(super) fn start(
        path: &Path,
        writes: Arc<Mutex<Connection>>,
    ) -> Result<Checkpointer, StoreError> {
        let mut conn = Connection::open(path).map_err(|source| StoreError::Open {
            path: path.display().to_string(),
            source,
        })?;
        conn.busy_handler(Some(wait_for_readers))?;
        let signal = Arc::new((Mutex::new(Signal::default()), Condvar::new()));
        let theirs = signal.clone();
        let thread = std::thread::Builder::new()
            .name("store-checkpoint".into())
            .spawn(move || run(&conn, &writes, &theirs))
            .map_err(StoreError::Thread)?;
        Ok(Checkpointer {
            signal,
            thread: Some(thread),
        })
    }

    /// A commit landed: its pages are in the WAL, to be checkpointed soon. Only the first
    /// commit since the last checkpoint wakes the thread: while commits gather it sleeps out its
    /// time whatever comes, and a wake-up per commit would cost more than the commit.
    pub(super) fn committed(&self) {
        let (state, wake) = &*self.signal;
        let mut heard = lock(state);
        heard.commits += 1;
        if heard.commits == 1 {
            wake.notify_one();
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        let (state, wake) = &*self.signal;
        lock(state).stop = true;
        wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(conn: &Connection, writes: &Mutex<Connection>, signal: &(Mutex<Signal>, Condvar)) {
    let (state, wake) = signal;
    loop {
        {
            let mut heard = lock(state);
            while heard.commits == 0 && !heard.stop {
                heard = wake.wait(heard).unwrap_or_else(|p| p.into_inner());
            }
            if heard.stop {
                break;
            }
        }
        // Let commits gather (or stop early on shutdown), then copy them all at once.
        {
            let heard = lock(state);
            let (heard, _) = wake
                .wait_timeout_while(heard, GATHER, |s| !s.stop)
                .unwrap_or_else(|p| p.into_inner());
            if heard.stop {
                break;
            }
        }
        lock(state).commits = 0;
        if let Err(err) = checkpoint(conn, writes) {
            tracing::warn!("WAL checkpoint failed (it is retried after the next commit): {err}");
        }
    }
    // The last commits go into the file before the store closes: a clean stop leaves a short
    // WAL behind.
    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
}

/// A passive checkpoint, then a restart when the WAL has grown past [`RESTART_FRAMES`].
fn checkpoint(conn: &Connection, writes: &Mutex<Connection>) -> Result<(), rusqlite::Error> {
    if passive(conn)? > RESTART_FRAMES {
        // What the first pass left is what was committed while it ran: copy that too while
        // writes go on, so the restart has only the last few frames to copy with writes held.
        passive(conn)?;
        let _held = lock(writes);
        conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()))?;
    }
    Ok(())
}

/// Copies what it can without waiting for anyone; returns the frames in the WAL.
fn passive(conn: &Connection) -> Result<i64, rusqlite::Error> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| row.get(1))
}

/// The checkpointer's busy handler: a short sleep and another look, [`READER_POLLS`] times.
fn wait_for_readers(polls: i32) -> bool {
    if polls >= READER_POLLS {
        return false;
    }
    std::thread::sleep(READER_POLL);
    true
}
