//! The store's reads, each on whichever connection asks: a reader's, or a write transaction's
//! own when it must see what it wrote. Every statement is prepared once per connection and kept
//! (`prepare_cached`), so SQLite parses each SQL text once, not on every call.
//!
//! `task_id = +?1` on `messages` and `journal`: with a bare `?1` on the first column of their
//! two-column key, SQLite (built with STAT4) marks the statement to be prepared again whenever
//! the parameter is bound, so a cached statement was parsed on every call anyway. The unary plus
//! keeps the index (`SEARCH … USING INDEX sqlite_autoindex_messages_1 (task_id=? AND seq>?)`)
//! and the statement prepared. `tests::cached_statements_are_not_prepared_again` holds it.

use rusqlite::{Connection, OptionalExtension, params};
use serde::de::DeserializeOwned;

use super::columns::{RECORD_COLUMNS, read_record};
use super::{StoreError, TaskFilter, TaskPage};
use crate::base::protocol::types::{Message, TaskState};
use crate::state::records::record::TaskRecord;

pub(super) const MESSAGES_AFTER: &str =
    "SELECT seq, body FROM messages WHERE task_id = +?1 AND seq > ?2 ORDER BY seq";
/// The last `?2` messages. A task's sequence numbers run 1, 2, 3…, so the last `n` are those
/// past the highest less `n`: no `LIMIT ?`, which would have the statement prepared again on
/// every call, as a bare key would.
pub(super) const HISTORY: &str = "SELECT body FROM messages WHERE task_id = +?1 AND seq > \
     (SELECT COALESCE(MAX(seq), 0) FROM messages WHERE task_id = +?1) - ?2 ORDER BY seq";
pub(super) const JOURNAL: &str = "SELECT seq, entry FROM journal WHERE task_id = +?1 ORDER BY seq";
pub(super) const NEXT_UPDATE_SEQ: &str = "SELECT COALESCE(MAX(updated_seq), 0) + 1 FROM tasks";
pub(super) const NEXT_MESSAGE_SEQ: &str =
    "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE task_id = +?1";
pub(super) const NEXT_JOURNAL_SEQ: &str =
    "SELECT COALESCE(MAX(seq), 0) + 1 FROM journal WHERE task_id = +?1";

pub(super) fn task(conn: &Connection, id: &str) -> Result<Option<TaskRecord>, StoreError> {
    conn.prepare_cached(&format!("SELECT {RECORD_COLUMNS} FROM tasks WHERE id = ?1"))?
        .query_row(params![id], read_record)
        .optional()?
        .transpose()
}

/// The task and its row's update sequence.
pub(super) fn task_with_update_seq(
    conn: &Connection,
    id: &str,
) -> Result<Option<(TaskRecord, i64)>, StoreError> {
    conn.prepare_cached(&format!(
        "SELECT {RECORD_COLUMNS}, updated_seq FROM tasks WHERE id = ?1"
    ))?
    .query_row(params![id], |row| {
        Ok(read_record(row)?.map(|record| (record, row.get::<_, i64>(4))))
    })
    .optional()?
    .map(|read| read.and_then(|(record, seq)| Ok((record, seq?))))
    .transpose()
}

/// The update sequence of the task's row, without reading the record.
pub(super) fn task_update_seq(conn: &Connection, id: &str) -> Result<Option<i64>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT updated_seq FROM tasks WHERE id = ?1")?
        .query_row(params![id], |row| row.get(0))
        .optional()?)
}

pub(super) fn messages_after(
    conn: &Connection,
    task_id: &str,
    after_seq: i64,
) -> Result<Vec<(i64, Message)>, StoreError> {
    let mut stmt = conn.prepare_cached(MESSAGES_AFTER)?;
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

pub(super) fn creation(
    conn: &Connection,
    owner: &str,
    message_id: &str,
) -> Result<Option<String>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT task_id FROM task_creations WHERE owner = ?1 AND message_id = ?2")?
        .query_row(params![owner, message_id], |row| row.get(0))
        .optional()?)
}

pub(super) fn open_task_ids(conn: &Connection) -> Result<Vec<String>, StoreError> {
    let mut stmt = conn.prepare_cached(
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

pub(super) fn history(
    conn: &Connection,
    task_id: &str,
    limit: Option<usize>,
) -> Result<Vec<Message>, StoreError> {
    let limit = limit.map_or(i64::MAX, |l| i64::try_from(l).unwrap_or(i64::MAX));
    let mut stmt = conn.prepare_cached(HISTORY)?;
    let rows = stmt.query_map(params![task_id, limit], |row| row.get::<_, String>(0))?;
    let mut out = Vec::new();
    for body in rows {
        out.push(serde_json::from_str(&body?)?);
    }
    Ok(out)
}

pub(super) fn journal<T: DeserializeOwned>(
    conn: &Connection,
    task_id: &str,
) -> Result<Vec<(i64, T)>, StoreError> {
    let mut stmt = conn.prepare_cached(JOURNAL)?;
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

/// A page of the tasks a participant may see, most recently updated first. The count and the
/// page are read in one read transaction, so they agree.
pub(super) fn list_tasks(conn: &Connection, filter: &TaskFilter) -> Result<TaskPage, StoreError> {
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
    // The SQL texts vary only by which filters are present (at most 16 shapes each), so the
    // statement cache keeps every one of them.
    let count_sql = format!("SELECT COUNT(*) FROM tasks WHERE {base}");
    let cursor_clause = if filter.cursor.is_some() {
        " AND updated_seq < :cursor"
    } else {
        ""
    };
    let page_sql = format!(
        "SELECT {RECORD_COLUMNS}, updated_seq FROM tasks WHERE {base}{cursor_clause} \
         ORDER BY updated_seq DESC LIMIT :limit"
    );
    let limit = (filter.limit + 1) as i64;
    let mut params = used(&page_sql);
    params.retain(|(name, _)| *name != ":cursor" && *name != ":limit");
    if let Some(cursor) = &filter.cursor {
        params.push((":cursor", cursor));
    }
    params.push((":limit", &limit));

    conn.prepare_cached("BEGIN")?.execute([])?;
    type Rows = Vec<(Result<TaskRecord, StoreError>, i64)>;
    let read = (|| -> Result<(i64, Rows), StoreError> {
        let total: i64 = conn
            .prepare_cached(&count_sql)?
            .query_row(used(&count_sql).as_slice(), |r| r.get(0))?;
        let mut stmt = conn.prepare_cached(&page_sql)?;
        let rows = stmt
            .query_map(params.as_slice(), |row| {
                Ok((read_record(row)?, row.get::<_, i64>(4)?))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok((total, rows))
    })();
    conn.prepare_cached("COMMIT")?.execute([])?;
    let (total, rows) = read?;
    let mut tasks = Vec::new();
    let mut seqs = Vec::new();
    for (record, seq) in rows {
        tasks.push(record?);
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
