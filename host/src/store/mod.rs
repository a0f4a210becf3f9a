//! SQLite, the embedded default store: tasks, their message history, and the engine's journal.
//!
//! Every change a turn makes (a journal entry, the task's new state, a message) is written in one
//! transaction, so a crash leaves either all of a step or none of it. WAL mode with
//! `synchronous = NORMAL` survives a killed process; only a power loss can drop the last commits.

mod schema;

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::a2a::types::{Message, TaskState};
use crate::tasks::record::TaskRecord;

/// How long a writer waits for a lock held by another connection before failing.
const BUSY_TIMEOUT_MS: u64 = 5_000;

/// Why the store failed. Callers report it; nothing here is recoverable by retrying at once.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the store at {path}: {source}")]
    Open {
        path: String,
        source: rusqlite::Error,
    },
    #[error("cannot create the store's folder {path}: {source}")]
    Folder {
        path: String,
        source: std::io::Error,
    },
    #[error("store error: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("stored data could not be read: {0}")]
    Corrupt(#[from] serde_json::Error),
}

/// A page of tasks for `ListTasks`.
#[derive(Debug, Clone)]
pub struct TaskPage {
    pub tasks: Vec<TaskRecord>,
    pub total: usize,
    /// The cursor for the next page, `None` on the last page.
    pub next_cursor: Option<i64>,
}

/// Which tasks a listing wants.
#[derive(Debug, Clone, Default)]
pub struct TaskFilter {
    pub participant_id: String,
    pub context_id: Option<String>,
    pub state: Option<TaskState>,
    pub updated_after: Option<String>,
    /// Only tasks updated before this cursor (exclusive).
    pub cursor: Option<i64>,
    pub limit: usize,
}

/// The store. One connection behind a mutex: every operation is short, and SQLite serialises
/// writers anyway.
pub struct Store {
    conn: Mutex<Connection>,
}

/// One write transaction; see [`Store::write`].
pub struct Tx<'a> {
    tx: rusqlite::Transaction<'a>,
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
        let conn = Connection::open(path).map_err(|source| StoreError::Open {
            path: path.display().to_string(),
            source,
        })?;
        Store::with_connection(conn)
    }

    /// A store that lives in memory only, for tests and benchmarks.
    pub fn open_in_memory() -> Result<Store, StoreError> {
        Store::with_connection(Connection::open_in_memory()?)
    }

    fn with_connection(conn: Connection) -> Result<Store, StoreError> {
        conn.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        schema::migrate(&conn)?;
        Ok(Store {
            conn: Mutex::new(conn),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves SQLite consistent (the transaction rolls back),
        // so a poisoned mutex is safe to keep using.
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `f` in one transaction: all of its writes land, or none.
    pub fn write<T>(
        &self,
        f: impl FnOnce(&mut Tx<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.lock();
        // Immediate: the write lock is taken at the start, so that a transaction that reads then
        // writes waits its turn (busy timeout) rather than failing when another process sharing
        // the store (workers of one Temporal task queue) committed in between.
        let mut tx = Tx {
            tx: conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?,
        };
        let value = f(&mut tx)?;
        tx.tx.commit()?;
        Ok(value)
    }

    /// The task with this id.
    pub fn task(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let conn = self.lock();
        read_task(&conn, id)
    }

    /// The task that the owner's message with this id created, if one did.
    pub fn task_created_by(
        &self,
        owner: &str,
        message_id: &str,
    ) -> Result<Option<String>, StoreError> {
        let conn = self.lock();
        read_creation(&conn, owner, message_id)
    }

    /// Ids of every task that is not terminal, oldest first: the ones to resume after a restart.
    pub fn open_task_ids(&self) -> Result<Vec<String>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT id FROM tasks WHERE state NOT IN (?1, ?2, ?3, ?4) ORDER BY created_seq",
        )?;
        let terminal = [
            TaskState::Completed,
            TaskState::Failed,
            TaskState::Canceled,
            TaskState::Rejected,
        ]
        .map(|s| s.wire_name());
        let ids = stmt
            .query_map(
                params![terminal[0], terminal[1], terminal[2], terminal[3]],
                |row| row.get(0),
            )?
            .collect::<Result<Vec<String>, _>>()?;
        Ok(ids)
    }

    /// The task's messages after `after_seq`, with their sequence numbers, oldest first.
    pub fn messages_after(
        &self,
        task_id: &str,
        after_seq: i64,
    ) -> Result<Vec<(i64, Message)>, StoreError> {
        let conn = self.lock();
        read_messages_after(&conn, task_id, after_seq)
    }

    /// The task's history: the last `limit` messages (all when `None`), oldest first.
    pub fn history(&self, task_id: &str, limit: Option<usize>) -> Result<Vec<Message>, StoreError> {
        let conn = self.lock();
        let limit = limit.map(|l| l as i64).unwrap_or(-1);
        let mut stmt = conn.prepare(
            "SELECT body FROM (SELECT seq, body FROM messages WHERE task_id = ?1 \
             ORDER BY seq DESC LIMIT ?2) ORDER BY seq",
        )?;
        let rows = stmt.query_map(params![task_id, limit], |row| row.get::<_, String>(0))?;
        let mut out = Vec::new();
        for body in rows {
            out.push(serde_json::from_str(&body?)?);
        }
        Ok(out)
    }

    /// Every journal entry of the task, with its sequence number, in order.
    pub fn journal<T: DeserializeOwned>(&self, task_id: &str) -> Result<Vec<(i64, T)>, StoreError> {
        let conn = self.lock();
        let mut stmt =
            conn.prepare("SELECT seq, entry FROM journal WHERE task_id = ?1 ORDER BY seq")?;
        let rows = stmt.query_map(params![task_id], |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, entry) = row?;
            out.push((seq, serde_json::from_str(&entry)?));
        }
        Ok(out)
    }

    /// A page of the tasks a participant may see, most recently updated first.
    pub fn list_tasks(&self, filter: &TaskFilter) -> Result<TaskPage, StoreError> {
        let conn = self.lock();
        let mut clauses =
            vec!["id IN (SELECT task_id FROM task_participants WHERE participant_id = :who)"];
        if filter.context_id.is_some() {
            clauses.push("context_id = :context");
        }
        if filter.state.is_some() {
            clauses.push("state = :state");
        }
        if filter.updated_after.is_some() {
            clauses.push("updated_at > :after");
        }
        let base = clauses.join(" AND ");
        let state = filter.state.map(|s| s.wire_name());
        let named: Vec<(&str, &dyn rusqlite::ToSql)> = vec![
            (":who", &filter.participant_id),
            (":context", &filter.context_id),
            (":state", &state),
            (":after", &filter.updated_after),
        ];
        let used = |sql: &str| -> Vec<(&str, &dyn rusqlite::ToSql)> {
            named
                .iter()
                .filter(|(name, _)| sql.contains(name))
                .copied()
                .collect()
        };
        let count_sql = format!("SELECT COUNT(*) FROM tasks WHERE {base}");
        let total: i64 = conn.query_row(&count_sql, used(&count_sql).as_slice(), |r| r.get(0))?;
        let cursor_clause = if filter.cursor.is_some() {
            " AND updated_seq < :cursor"
        } else {
            ""
        };
        let page_sql = format!(
            "SELECT record, updated_seq FROM tasks WHERE {base}{cursor_clause} \
             ORDER BY updated_seq DESC LIMIT :limit"
        );
        let limit = (filter.limit + 1) as i64;
        let mut params = used(&page_sql);
        params.retain(|(name, _)| *name != ":cursor" && *name != ":limit");
        if let Some(cursor) = &filter.cursor {
            params.push((":cursor", cursor));
        }
        params.push((":limit", &limit));
        let mut stmt = conn.prepare(&page_sql)?;
        let rows = stmt.query_map(params.as_slice(), |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
        })?;
        let mut tasks = Vec::new();
        let mut seqs = Vec::new();
        for row in rows {
            let (record, seq) = row?;
            tasks.push(serde_json::from_str::<TaskRecord>(&record)?);
            seqs.push(seq);
        }
        let next_cursor = if tasks.len() > filter.limit {
            tasks.truncate(filter.limit);
            seqs.get(filter.limit - 1).copied()
        } else {
            None
        };
        Ok(TaskPage {
            tasks,
            total: total as usize,
            next_cursor,
        })
    }
}

impl Tx<'_> {
    /// Inserts a new task and indexes its participants.
    pub fn insert_task(&mut self, record: &TaskRecord) -> Result<(), StoreError> {
        let seq = next_seq(&self.tx)?;
        self.tx.execute(
            "INSERT INTO tasks (id, context_id, state, updated_at, created_seq, updated_seq, record) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6)",
            params![
                record.id,
                record.context_id,
                record.state().wire_name(),
                record.status.timestamp.clone().unwrap_or_default(),
                seq,
                serde_json::to_string(record)?
            ],
        )?;
        self.index_participants(record)
    }

    /// Replaces a task's record, moving it to the front of listings.
    pub fn update_task(&mut self, record: &TaskRecord) -> Result<(), StoreError> {
        let seq = next_seq(&self.tx)?;
        self.tx.execute(
            "UPDATE tasks SET state = ?2, updated_at = ?3, updated_seq = ?4, record = ?5 \
             WHERE id = ?1",
            params![
                record.id,
                record.state().wire_name(),
                record.status.timestamp.clone().unwrap_or_default(),
                seq,
                serde_json::to_string(record)?
            ],
        )?;
        self.index_participants(record)
    }

    /// The task as it is inside this transaction.
    pub fn task(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        read_task(&self.tx, id)
    }

    /// The task that the owner's message with this id created, as of this transaction.
    pub fn task_created_by(
        &self,
        owner: &str,
        message_id: &str,
    ) -> Result<Option<String>, StoreError> {
        read_creation(&self.tx, owner, message_id)
    }

    /// The task's messages after `after_seq`, as of this transaction: what arrived that a
    /// reader who has seen up to `after_seq` has not.
    pub fn messages_after(
        &self,
        task_id: &str,
        after_seq: i64,
    ) -> Result<Vec<(i64, Message)>, StoreError> {
        read_messages_after(&self.tx, task_id, after_seq)
    }

    /// Records that the owner's message with this id created the task. Write it in the task's
    /// own transaction, so that the task never exists without it.
    pub fn record_creation(
        &mut self,
        owner: &str,
        message_id: &str,
        task_id: &str,
    ) -> Result<(), StoreError> {
        self.tx.execute(
            "INSERT INTO task_creations (owner, message_id, task_id) VALUES (?1, ?2, ?3)",
            params![owner, message_id, task_id],
        )?;
        Ok(())
    }

    /// Appends a message to the task's history and returns its sequence number.
    pub fn append_message(&mut self, task_id: &str, message: &Message) -> Result<i64, StoreError> {
        let seq: i64 = self.tx.query_row(
            "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE task_id = ?1",
            params![task_id],
            |row| row.get(0),
        )?;
        self.tx.execute(
            "INSERT INTO messages (task_id, seq, body) VALUES (?1, ?2, ?3)",
            params![task_id, seq, serde_json::to_string(message)?],
        )?;
        Ok(seq)
    }

    /// Appends an entry to the task's journal and returns its sequence number.
    pub fn append_journal<T: Serialize>(
        &mut self,
        task_id: &str,
        entry: &T,
    ) -> Result<i64, StoreError> {
        let seq: i64 = self.tx.query_row(
            "SELECT COALESCE(MAX(seq), 0) + 1 FROM journal WHERE task_id = ?1",
            params![task_id],
            |row| row.get(0),
        )?;
        self.tx.execute(
            "INSERT INTO journal (task_id, seq, entry) VALUES (?1, ?2, ?3)",
            params![task_id, seq, serde_json::to_string(entry)?],
        )?;
        Ok(seq)
    }

    /// Makes the participant index of the task exactly its owner and its participants: entries
    /// of participants no longer on the task go in the same transaction, so a participant
    /// removed from a task no longer finds it in a listing.
    fn index_participants(&mut self, record: &TaskRecord) -> Result<(), StoreError> {
        self.tx.execute(
            "DELETE FROM task_participants WHERE task_id = ?1",
            params![record.id],
        )?;
        let mut stmt = self.tx.prepare_cached(
            "INSERT OR IGNORE INTO task_participants (task_id, participant_id) VALUES (?1, ?2)",
        )?;
        stmt.execute(params![record.id, record.owner])?;
        for participant in &record.ext.participants {
            stmt.execute(params![record.id, participant.id])?;
        }
        Ok(())
    }
}

fn read_task(conn: &Connection, id: &str) -> Result<Option<TaskRecord>, StoreError> {
    let record: Option<String> = conn
        .query_row(
            "SELECT record FROM tasks WHERE id = ?1",
            params![id],
            |row| row.get(0),
        )
        .optional()?;
    Ok(match record {
        Some(text) => Some(serde_json::from_str(&text)?),
        None => None,
    })
}

fn read_messages_after(
    conn: &Connection,
    task_id: &str,
    after_seq: i64,
) -> Result<Vec<(i64, Message)>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, body FROM messages WHERE task_id = ?1 AND seq > ?2 ORDER BY seq",
    )?;
    let rows = stmt.query_map(params![task_id, after_seq], |row| {
        Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (seq, body) = row?;
        out.push((seq, serde_json::from_str(&body)?));
    }
    Ok(out)
}

fn read_creation(
    conn: &Connection,
    owner: &str,
    message_id: &str,
) -> Result<Option<String>, StoreError> {
    Ok(conn
        .query_row(
            "SELECT task_id FROM task_creations WHERE owner = ?1 AND message_id = ?2",
            params![owner, message_id],
            |row| row.get(0),
        )
        .optional()?)
}

/// A store-wide counter, so listings order by the last change without relying on clocks.
fn next_seq(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.query_row(
        "UPDATE counters SET value = value + 1 WHERE name = 'task_update' RETURNING value",
        [],
        |row| row.get(0),
    )?)
}

#[cfg(test)]
mod tests;
