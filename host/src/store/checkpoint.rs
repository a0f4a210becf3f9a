//! The WAL checkpointer: a thread with its own connection that copies committed pages from the
//! WAL into the database file. SQLite would otherwise checkpoint inside a commit, every 1,000
//! pages, on the writer's thread: the writer (and every write queued behind it) would wait for
//! the copy and its `fsync`. A passive checkpoint here never blocks a writer or a reader; the
//! WAL is reused from its start once a checkpoint has caught up.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;

use super::{BUSY_TIMEOUT_MS, StoreError, lock};

/// How long the checkpointer lets commits gather after the first one it hears of: one
/// checkpoint then copies many commits' pages, each page once.
const GATHER: Duration = Duration::from_millis(200);

/// WAL frames (pages) past which a checkpoint also restarts the WAL: about 16 MiB of WAL at
/// SQLite's default 4 KiB pages, the size the file settles at under load.
const RESTART_FRAMES: i64 = 4_096;

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
    /// Starts the thread on its own connection to the file.
    pub(super) fn start(path: &Path) -> Result<Checkpointer, StoreError> {
        let conn = Connection::open(path).map_err(|source| StoreError::Open {
            path: path.display().to_string(),
            source,
        })?;
        conn.busy_timeout(Duration::from_millis(BUSY_TIMEOUT_MS))?;
        let signal = Arc::new((Mutex::new(Signal::default()), Condvar::new()));
        let theirs = signal.clone();
        let thread = std::thread::Builder::new()
            .name("store-checkpoint".into())
            .spawn(move || run(&conn, &theirs))
            .map_err(StoreError::Thread)?;
        Ok(Checkpointer {
            signal,
            thread: Some(thread),
        })
    }

    /// A commit landed: its pages are in the WAL, to be checkpointed soon.
    pub(super) fn committed(&self) {
        let (state, wake) = &*self.signal;
        lock(state).commits += 1;
        wake.notify_one();
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

fn run(conn: &Connection, signal: &(Mutex<Signal>, Condvar)) {
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
        if let Err(err) = checkpoint(conn) {
            tracing::warn!("WAL checkpoint failed (it is retried after the next commit): {err}");
        }
    }
    // The last commits go into the file before the store closes: a clean stop leaves a short
    // WAL behind.
    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
}

/// A passive checkpoint, then a restart when the WAL has grown past [`RESTART_FRAMES`].
fn checkpoint(conn: &Connection) -> Result<(), rusqlite::Error> {
    let frames: i64 = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| row.get(1))?;
    if frames > RESTART_FRAMES {
        conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()))?;
    }
    Ok(())
}
