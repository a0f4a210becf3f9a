//! SQLite, the embedded default store: tasks, their message history, and the engine's journal.
//!
//! Every change a turn makes (a journal entry, the task's new state, a message) is written in one
//! transaction, so a crash leaves either all of a step or none of it. WAL mode with
//! `synchronous = NORMAL` survives a killed process; only a power loss can drop the last commits.

mod checkpoint;
mod columns;
mod lock;
mod memory;
mod push;
mod queries;
mod readers;
mod schema;
mod tx;
mod writer;

use std::path::{Path, PathBuf};
#[cfg(any(test, feature = "test-support"))]
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::Connection;
use serde::de::DeserializeOwned;

use crate::base::protocol::types::{Message, TaskState};
use crate::state::records::record::TaskRecord;
use checkpoint::Checkpointer;
pub use lock::{Holder, LockError, LockMode, StoreLock, lock_path};
pub use push::{OutboxItem, Saved};
use readers::Readers;
pub use tx::Tx;
#[cfg(any(test, feature = "test-support"))]
pub use writer::WriteCounts;
#[cfg(not(any(test, feature = "test-support")))]
use writer::WriteCounts;
use writer::Writer;

/// How long a connection waits for a lock held by another connection before failing.
const BUSY_TIMEOUT_MS: u64 = 5_000;

/// The page size of a store file created by this build, in bytes: SQLite's default until
/// 3.12, a quarter of today's. A commit writes each page it touched to the WAL whole, and a
/// commit of a few new tasks touches the right edge of every table and index (a dozen pages)
/// whatever their rows' size, so smaller pages mean a quarter of the bytes written, copied by
/// each checkpoint and held up by each WAL restart. Measured under load (`docs/performance.md`,
/// "What was tried"): 10-14% more requests per second and 6-10% less CPU per request than at 4 KiB.
/// A file's page size is fixed when it is created: a store created at another size keeps it.
pub const PAGE_SIZE: i64 = 1024;

/// Prepared statements kept per connection: every fixed statement of the store plus the
/// shapes of a listing's SQL, so no statement is parsed twice.
const STATEMENT_CACHE: usize = 96;

/// Why the store failed. Callers report it; nothing here is recoverable by retrying at once.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite could not open (or set up) the store file.
    #[error("cannot open the store at {path}: {source}")]
    Open {
        /// The store file, as `store.path` resolved.
        path: String,
        /// SQLite's reason.
        source: rusqlite::Error,
    },
    /// The folder the store file goes in could not be created.
    #[error("cannot create the store's folder {path}: {source}")]
    Folder {
        /// The folder.
        path: String,
        /// The file system's reason.
        source: std::io::Error,
    },
    /// A statement failed.
    #[error("store error: {0}")]
    Sql(#[from] rusqlite::Error),
    /// A stored JSON column no longer reads as its type.
    #[error("stored data could not be read: {0}")]
    Corrupt(#[from] serde_json::Error),
    /// The write ran but its batch's commit failed, so it did not land; carries SQLite's reason.
    #[error("the store could not commit: {0}")]
    Commit(String),
    /// The write never ran (the writer had stopped, or its transaction could not begin) or its
    /// closure panicked; the server log has the cause.
    #[error("the write was not carried out; the server log says why")]
    NotWritten,
    /// The writer thread could not be spawned.
    #[error("cannot start the store's writer thread: {0}")]
    Thread(std::io::Error),
}

/// A page of tasks for `ListTasks`.
#[derive(Debug, Clone)]
pub struct TaskPage {
    /// This page's tasks, most recently updated first.
    pub tasks: Vec<TaskRecord>,
    /// How many tasks match the filter across all pages, read with the page.
    pub total: usize,
    /// The cursor for the next page, `None` on the last page.
    pub next_cursor: Option<i64>,
}

/// Which tasks a listing wants.
#[derive(Debug, Clone, Default)]
pub struct TaskFilter {
    /// The caller: only tasks it is a participant of are listed.
    pub participant_id: String,
    /// Only tasks of this A2A context.
    pub context_id: Option<String>,
    /// Only tasks in this state.
    pub state: Option<TaskState>,
    /// Only tasks updated after this time (RFC 3339, compared as stored).
    pub updated_after: Option<String>,
    /// Only tasks updated before this cursor (exclusive).
    pub cursor: Option<i64>,
    /// The most tasks on the page.
    pub limit: usize,
}

/// The store: one write connection, driven by the writer thread (queued writes, committed
/// together) or by [`Store::write`] directly, and reader connections for reads.
pub struct Store {
    /// The write connection. The writer thread holds it for a batch; `write` for one write.
    conn: Arc<Mutex<Connection>>,
    writer: Writer,
    /// Copies the WAL into the file off the writer's path; `None` in memory.
    checkpointer: Option<Arc<Checkpointer>>,
    readers: Readers,
    /// Writes and commits made, counted only in builds for tests (`test-support`).
    counts: Arc<WriteCounts>,
    /// Reads made, for tests and benchmarks (see [`Store::read_count`]).
    #[cfg(any(test, feature = "test-support"))]
    reads: AtomicU64,
}

impl Store {
    /// Opens (creating if needed) the store at `path`, with its folder.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Folder {
                path: dir.display().to_string(),
                source,
            })?;
        }
        memory::install();
        let conn = Connection::open(path).map_err(|source| StoreError::Open {
            path: path.display().to_string(),
            source,
        })?;
        Store::with_connection(conn, Some(path.to_path_buf()))
    }

    /// A store that lives in memory only, for tests and benchmarks.
    pub fn open_in_memory() -> Result<Store, StoreError> {
        memory::install();
        Store::with_connection(Connection::open_in_memory()?, None)
    }

    fn with_connection(conn: Connection, path: Option<PathBuf>) -> Result<Store, StoreError> {
        conn.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS))?;
        // Before WAL mode and the first table: it takes effect on a file that is still empty
        // and is ignored on any other.
        conn.pragma_update(None, "page_size", PAGE_SIZE)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        if path.is_some() {
            // Checkpoints run on their own thread (`checkpoint`), never inside a commit.
            conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        }
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        schema::migrate(&conn)?;
        let conn = Arc::new(Mutex::new(conn));
        let counts: Arc<WriteCounts> = Arc::default();
        let checkpointer = match &path {
            Some(path) => Some(Arc::new(Checkpointer::start(path, conn.clone())?)),
            None => None,
        };
        let readers = match path {
            Some(path) => Readers::Pool {
                path,
                idle: Mutex::new(Vec::new()),
            },
            None => Readers::Shared(conn.clone()),
        };
        Ok(Store {
            writer: Writer::start(conn.clone(), counts.clone(), checkpointer.clone())?,
            checkpointer,
            conn,
            readers,
            counts,
            #[cfg(any(test, feature = "test-support"))]
            reads: AtomicU64::new(0),
        })
    }

    /// Runs `f` in one transaction on the calling thread: all of its writes land, or none. For
    /// callers outside the async runtime (tests, tools); async code uses [`Store::write_queued`].
    pub fn write<T>(
        &self,
        f: impl FnOnce(&mut Tx<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let conn = lock(&self.conn);
        let value = in_transaction(&conn, f)?;
        self.counts.landed(1);
        if let Some(checkpointer) = &self.checkpointer {
            checkpointer.committed();
        }
        Ok(value)
    }

    /// Queues `f` for the writer thread and waits, without holding an executor thread, for the
    /// commit that carries it: all of its writes land, or none; writes queued together are
    /// committed in one transaction, each in a savepoint of its own so one that fails leaves
    /// the others whole. When the writer is idle and has not had company lately, the caller
    /// commits `f` itself instead (tens of microseconds, never waiting on a lock): two thread
    /// wake-ups saved (`writer`).
    pub async fn write_queued<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Tx<'_>) -> Result<T, StoreError> + Send + 'static,
    {
        self.writer.write(f, |_| {}).await
    }

    /// As [`Store::write_queued`], and once the commit has landed, `committed` is called with
    /// what `f` returned, on the committing thread, before the caller hears of it. The hooks of
    /// successive writes run in the order the writes ran: what mirrors the store in memory
    /// (the hub's live records) stays in step with it however the callers are scheduled.
    /// A hook must be quick: the writer waits for it.
    pub async fn write_queued_then<T, F, H>(&self, f: F, committed: H) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Tx<'_>) -> Result<T, StoreError> + Send + 'static,
        H: FnOnce(&T) + Send + 'static,
    {
        self.writer.write(f, committed).await
    }

    /// Commits a write that touches no task (the health row): it lands only if the store takes
    /// writes now (`/readyz`). It blocks (on the write connection, and up to SQLite's busy
    /// timeout on another process's lock): call it off the async runtime (`spawn_blocking`).
    pub fn probe_write(&self) -> Result<(), StoreError> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs() as i64);
        self.write(move |tx| tx.probe(now))
    }

    /// Other processes write this file too (the Temporal engine's workers): a write may then
    /// wait in SQLite for another process's transaction, so no write is committed on its
    /// caller's thread any more, where that wait would hold an executor thread.
    pub fn written_by_other_processes(&self) {
        self.writer.always_queue();
    }

    /// What the store has written since it was opened. Only in builds for tests
    /// (`test-support`).
    #[cfg(any(test, feature = "test-support"))]
    pub fn write_counts(&self) -> &WriteCounts {
        &self.counts
    }

    /// Reads made since the store was opened (each call of a reading method is one), for tests
    /// that check what a task costs. Only in builds for tests (`test-support`).
    #[cfg(any(test, feature = "test-support"))]
    pub fn read_count(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    fn read<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        #[cfg(any(test, feature = "test-support"))]
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.readers.read(f)
    }

    /// As [`Store::read`], on the write connection when no write holds it, else on a reader:
    /// for a loop's small read right after its own write. A reader connection finds the file
    /// changed since its last read and drops every page it had cached, so the read costs a
    /// system call per page; the write connection holds the pages it just wrote. It never
    /// waits for a write.
    fn read_latest<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let writes = match self.conn.try_lock() {
            Ok(conn) => Some(conn),
            Err(std::sync::TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        };
        match writes {
            Some(conn) => {
                #[cfg(any(test, feature = "test-support"))]
                self.reads.fetch_add(1, Ordering::Relaxed);
                f(&conn)
            }
            None => self.read(f),
        }
    }

    /// The task with this id.
    pub fn task(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.read(|conn| queries::task(conn, id))
    }

    /// The task that the owner's message with this id created, if one did.
    pub fn task_created_by(
        &self,
        owner: &str,
        message_id: &str,
    ) -> Result<Option<String>, StoreError> {
        self.read(|conn| queries::creation(conn, owner, message_id))
    }

    /// Ids of every task that is not terminal, oldest first: the ones to resume after a restart.
    pub fn open_task_ids(&self) -> Result<Vec<String>, StoreError> {
        self.read(queries::open_task_ids)
    }

    /// The task's messages after `after_seq`, with their sequence numbers, oldest first.
    pub fn messages_after(
        &self,
        task_id: &str,
        after_seq: i64,
    ) -> Result<Vec<(i64, Message)>, StoreError> {
        self.read_latest(|conn| queries::messages_after(conn, task_id, after_seq))
    }

    /// The task's history: the last `limit` messages (all when `None`), oldest first.
    pub fn history(&self, task_id: &str, limit: Option<usize>) -> Result<Vec<Message>, StoreError> {
        self.read(|conn| queries::history(conn, task_id, limit))
    }

    /// Every journal entry of the task, with its sequence number, in order.
    pub fn journal<T: DeserializeOwned>(&self, task_id: &str) -> Result<Vec<(i64, T)>, StoreError> {
        self.read(|conn| queries::journal(conn, task_id))
    }

    /// A page of the tasks a participant may see, most recently updated first.
    pub fn list_tasks(&self, filter: &TaskFilter) -> Result<TaskPage, StoreError> {
        self.read(|conn| queries::list_tasks(conn, filter))
    }

    #[cfg(test)]
    fn lock(&self) -> MutexGuard<'_, Connection> {
        lock(&self.conn)
    }
}

/// Runs `f` between `BEGIN IMMEDIATE` and `COMMIT`, rolling back when it fails or panics.
fn in_transaction<T>(
    conn: &Connection,
    f: impl FnOnce(&mut Tx<'_>) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    // Immediate: the write lock is taken at the start, so that a transaction that reads then
    // writes waits its turn (busy timeout) rather than failing when another process sharing
    // the store (workers of one Temporal task queue) committed in between.
    conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
    let mut guard = RollbackUnlessDone { conn, done: false };
    let value = f(&mut Tx { conn })?;
    conn.prepare_cached("COMMIT")?.execute([])?;
    guard.done = true;
    Ok(value)
}

/// Rolls the open transaction back when dropped before it committed (an error or a panic).
struct RollbackUnlessDone<'a> {
    conn: &'a Connection,
    done: bool,
}

impl Drop for RollbackUnlessDone<'_> {
    fn drop(&mut self) {
        if !self.done
            && let Ok(mut stmt) = self.conn.prepare_cached("ROLLBACK")
        {
            let _ = stmt.execute([]);
        }
    }
}

/// A mutex whose holder panicked is still safe to use: SQLite rolled back the holder's open
/// transaction (or the guard did), so what it guards is consistent.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests;
