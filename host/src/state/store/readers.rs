//! Reader connections: reads (`GetTask`, `ListTasks`, the loops' reads) run on connections of
//! their own, so in WAL mode they never wait for a write to commit. A store in memory has one
//! connection only (another connection would open another database), so its reads share it.
//! A loop's read of new messages uses the write connection when no write holds it
//! (`Store::read_latest`): its cache holds the pages the loop just wrote.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OpenFlags};

use super::{BUSY_TIMEOUT_MS, STATEMENT_CACHE, StoreError, lock};

/// Idle reader connections kept open for the next read. More readers than this at once open
/// extra connections, closed after use: a burst does not keep file handles forever.
const MAX_IDLE_READERS: usize = 8;

pub(super) enum Readers {
    /// A pool of read-only connections to the file.
    Pool {
        path: PathBuf,
        idle: Mutex<Vec<Connection>>,
    },
    /// The write connection, for a store in memory.
    Shared(Arc<Mutex<Connection>>),
}

impl Readers {
    /// Runs `f` on a reader connection.
    pub(super) fn read<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match self {
            Readers::Shared(conn) => f(&lock(conn)),
            Readers::Pool { path, idle } => {
                let taken = lock(idle).pop();
                let conn = match taken {
                    Some(conn) => conn,
                    None => open_reader(path)?,
                };
                let result = f(&conn);
                let mut idle = lock(idle);
                if idle.len() < MAX_IDLE_READERS {
                    idle.push(conn);
                }
                result
            }
        }
    }
}

fn open_reader(path: &PathBuf) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI,
    )
    .map_err(|source| StoreError::Open {
        path: path.display().to_string(),
        source,
    })?;
    conn.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS))?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(conn)
}
