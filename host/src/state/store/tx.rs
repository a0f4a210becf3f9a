//! One write transaction's operations. A [`Tx`] exists only inside [`super::Store::write`] or a
//! queued write: its changes land together, or not at all. Statements are prepared once per
//! connection and kept.

use rusqlite::{Connection, params};
use serde::Serialize;

use super::columns::Parts;
use super::{StoreError, queries};
use crate::base::protocol::types::Message;
use crate::state::records::record::TaskRecord;

/// One write transaction; see [`super::Store::write`].
pub struct Tx<'a> {
    pub(super) conn: &'a Connection,
}

impl Tx<'_> {
    /// Inserts a new task and indexes its participants. Returns the row's update sequence.
    pub fn insert_task(&mut self, record: &TaskRecord) -> Result<i64, StoreError> {
        let seq = self.next_seq()?;
        let parts = Parts::all(record)?;
        self.conn
            .prepare_cached(
                "INSERT INTO tasks (id, context_id, state, updated_at, created_seq, updated_seq, \
                 record, status, artifacts, ext) VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7, ?8, ?9)",
            )?
            .execute(params![
                record.id,
                record.context_id,
                record.state().wire_name(),
                record.status.timestamp.as_deref().unwrap_or_default(),
                seq,
                parts.base,
                parts.status,
                parts.artifacts,
                parts.ext,
            ])?;
        self.add_participants(record)?;
        Ok(seq)
    }

    /// Replaces a task's record, moving it to the front of listings.
    pub fn update_task(&mut self, record: &TaskRecord) -> Result<(), StoreError> {
        self.write_change(None, record).map(drop)
    }

    /// Writes what changed from `before` (the task as this transaction read it) to `after`:
    /// only the parts that differ are serialised, and the participant index only when the
    /// participants changed. The task moves to the front of listings. Returns the row's new
    /// update sequence.
    pub fn write_change(
        &mut self,
        before: Option<&TaskRecord>,
        after: &TaskRecord,
    ) -> Result<i64, StoreError> {
        let seq = self.next_seq()?;
        let parts = Parts::changed(before, after)?;
        self.conn
            .prepare_cached(
                "UPDATE tasks SET state = ?2, updated_at = ?3, updated_seq = ?4, \
                 record = COALESCE(?5, record), status = COALESCE(?6, status), \
                 artifacts = COALESCE(?7, artifacts), ext = COALESCE(?8, ext) WHERE id = ?1",
            )?
            .execute(params![
                after.id,
                after.state().wire_name(),
                after.status.timestamp.as_deref().unwrap_or_default(),
                seq,
                parts.base,
                parts.status,
                parts.artifacts,
                parts.ext,
            ])?;
        let participants_changed = before.is_none_or(|before| {
            before.owner != after.owner || before.ext.participants != after.ext.participants
        });
        if participants_changed {
            self.index_participants(after)?;
        }
        Ok(seq)
    }

    /// The task as it is inside this transaction.
    pub fn task(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        queries::task(self.conn, id)
    }

    /// The task as it is inside this transaction, with its row's update sequence: a number
    /// every write of the row (insert or change) moves past every earlier one, so a copy of the
    /// record known to have been written with it is the row's content as long as it is the
    /// same.
    pub fn task_with_update_seq(&self, id: &str) -> Result<Option<(TaskRecord, i64)>, StoreError> {
        queries::task_with_update_seq(self.conn, id)
    }

    /// The update sequence of the task's row inside this transaction (see
    /// [`Tx::task_with_update_seq`]), without reading the record.
    pub fn task_update_seq(&self, id: &str) -> Result<Option<i64>, StoreError> {
        queries::task_update_seq(self.conn, id)
    }

    /// The task that the owner's message with this id created, as of this transaction.
    pub fn task_created_by(
        &self,
        owner: &str,
        message_id: &str,
    ) -> Result<Option<String>, StoreError> {
        queries::creation(self.conn, owner, message_id)
    }

    /// The task's messages after `after_seq`, as of this transaction: what arrived that a
    /// reader who has seen up to `after_seq` has not.
    pub fn messages_after(
        &self,
        task_id: &str,
        after_seq: i64,
    ) -> Result<Vec<(i64, Message)>, StoreError> {
        queries::messages_after(self.conn, task_id, after_seq)
    }

    /// Rewrites the health row with `now` (seconds since the epoch): a write that touches no
    /// task, so that its commit landing proves the store writable (`/readyz`).
    pub fn probe(&mut self, now: i64) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO health (id, probed_at) VALUES (1, ?1) \
                 ON CONFLICT (id) DO UPDATE SET probed_at = excluded.probed_at",
            )?
            .execute(params![now])?;
        Ok(())
    }

    /// Records that the owner's message with this id created the task. Write it in the task's
    /// own transaction, so that the task never exists without it.
    pub fn record_creation(
        &mut self,
        owner: &str,
        message_id: &str,
        task_id: &str,
    ) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO task_creations (owner, message_id, task_id) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![owner, message_id, task_id])?;
        Ok(())
    }

    /// Appends a message to the task's history and returns its sequence number.
    pub fn append_message(&mut self, task_id: &str, message: &Message) -> Result<i64, StoreError> {
        let seq: i64 = self
            .conn
            .prepare_cached(queries::NEXT_MESSAGE_SEQ)?
            .query_row(params![task_id], |row| row.get(0))?;
        self.conn
            .prepare_cached("INSERT INTO messages (task_id, seq, body) VALUES (?1, ?2, ?3)")?
            .execute(params![task_id, seq, serde_json::to_string(message)?])?;
        Ok(seq)
    }

    /// Appends an entry to the task's journal and returns its sequence number.
    pub fn append_journal<T: Serialize>(
        &mut self,
        task_id: &str,
        entry: &T,
    ) -> Result<i64, StoreError> {
        let seq: i64 = self
            .conn
            .prepare_cached(queries::NEXT_JOURNAL_SEQ)?
            .query_row(params![task_id], |row| row.get(0))?;
        self.conn
            .prepare_cached("INSERT INTO journal (task_id, seq, entry) VALUES (?1, ?2, ?3)")?
            .execute(params![task_id, seq, serde_json::to_string(entry)?])?;
        Ok(seq)
    }

    /// Makes the participant index of the task exactly its owner and its participants: entries
    /// of participants no longer on the task go in the same transaction, so a participant
    /// removed from a task no longer finds it in a listing.
    fn index_participants(&mut self, record: &TaskRecord) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("DELETE FROM task_participants WHERE task_id = ?1")?
            .execute(params![record.id])?;
        self.add_participants(record)
    }

    /// Indexes the task's owner and participants (a new task has no entries to remove).
    fn add_participants(&mut self, record: &TaskRecord) -> Result<(), StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "INSERT OR IGNORE INTO task_participants (task_id, participant_id) VALUES (?1, ?2)",
        )?;
        stmt.execute(params![record.id, record.owner])?;
        // The creator usually joins as a participant too: one entry is enough.
        for participant in record
            .ext
            .participants
            .iter()
            .filter(|p| p.id != record.owner)
        {
            stmt.execute(params![record.id, participant.id])?;
        }
        Ok(())
    }

    /// A store-wide sequence, so listings order by the last change without relying on clocks:
    /// one past the newest change, read in this transaction (the write lock makes it this
    /// transaction's alone, whichever process writes) from the end of `tasks_by_update`.
    fn next_seq(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .prepare_cached(queries::NEXT_UPDATE_SEQ)?
            .query_row([], |row| row.get(0))?)
    }
}
