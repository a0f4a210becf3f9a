//! The store's tables, versioned with `user_version`: a new file is created at the current
//! schema in one transaction ([`CURRENT`]); each migration moves an older file one version on,
//! in its own transaction, so it is brought up to date step by step and a crash mid-way leaves
//! it at a version it can resume from.

use rusqlite::Connection;

/// The schema version this build writes. A newer file is refused rather than misread.
pub(super) const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// `MIGRATIONS[n]` moves a file from version `n` to `n + 1`. Never edit one that has shipped:
/// add the next.
pub(super) const MIGRATIONS: [&str; 6] = [
    // 1: tasks, their participants, history and journal.
    "CREATE TABLE IF NOT EXISTS tasks (
         id TEXT PRIMARY KEY,
         context_id TEXT NOT NULL,
         state TEXT NOT NULL,
         updated_at TEXT NOT NULL,
         created_seq INTEGER NOT NULL,
         updated_seq INTEGER NOT NULL,
         record TEXT NOT NULL
     );
     CREATE INDEX IF NOT EXISTS tasks_by_update ON tasks (updated_seq DESC);
     CREATE INDEX IF NOT EXISTS tasks_by_state ON tasks (state);
     CREATE TABLE IF NOT EXISTS task_participants (
         task_id TEXT NOT NULL REFERENCES tasks (id),
         participant_id TEXT NOT NULL,
         PRIMARY KEY (participant_id, task_id)
     );
     CREATE TABLE IF NOT EXISTS messages (
         task_id TEXT NOT NULL REFERENCES tasks (id),
         seq INTEGER NOT NULL,
         body TEXT NOT NULL,
         PRIMARY KEY (task_id, seq)
     );
     CREATE TABLE IF NOT EXISTS journal (
         task_id TEXT NOT NULL REFERENCES tasks (id),
         seq INTEGER NOT NULL,
         entry TEXT NOT NULL,
         PRIMARY KEY (task_id, seq)
     );
     CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
     INSERT OR IGNORE INTO counters (name, value) VALUES ('task_update', 0);",
    // 2: which message created which task, per owner, so a resent message finds its task
    // instead of creating a second one.
    "CREATE TABLE IF NOT EXISTS task_creations (
         owner TEXT NOT NULL,
         message_id TEXT NOT NULL,
         task_id TEXT NOT NULL REFERENCES tasks (id),
         PRIMARY KEY (owner, message_id)
     );",
    // 3: a record's parts in columns of their own, so a change writes only the parts it
    // touched (`store::columns`); `record` keeps the id, context, metadata and owner. The
    // participant index by task, so rewriting one task's entries does not scan every task's.
    "ALTER TABLE tasks ADD COLUMN status TEXT NOT NULL DEFAULT '{}';
     ALTER TABLE tasks ADD COLUMN artifacts TEXT NOT NULL DEFAULT '[]';
     ALTER TABLE tasks ADD COLUMN ext TEXT NOT NULL DEFAULT '{}';
     UPDATE tasks SET
         status = json_extract(record, '$.status'),
         artifacts = COALESCE(json_extract(record, '$.artifacts'), '[]'),
         ext = json_extract(record, '$.ext'),
         record = json_remove(record, '$.status', '$.artifacts', '$.ext');
     CREATE INDEX IF NOT EXISTS task_participants_by_task ON task_participants (task_id);",
    // 4: less to rewrite per change. No listing or start-up read uses the index by state (a
    // listing starts from the caller's participant entries, start-up scans for open tasks), yet
    // every state change moved an entry in it. The update sequence is the highest
    // `updated_seq` plus one, read from `tasks_by_update` in the writing transaction, so no
    // counter row is rewritten by every commit.
    "DROP INDEX IF EXISTS tasks_by_state;
     DROP TABLE IF EXISTS counters;",
    // 5: one row that `/readyz` rewrites: a commit that lands is what proves the store writable.
    "CREATE TABLE IF NOT EXISTS health (
         id INTEGER PRIMARY KEY CHECK (id = 1),
         probed_at INTEGER NOT NULL
     );",
    // 6: push notifications: each task's webhook configs, and the outbox of pushes not yet
    // delivered, written in the transaction of the change they tell of (`store::push`).
    "CREATE TABLE IF NOT EXISTS push_configs (
         task_id TEXT NOT NULL REFERENCES tasks (id),
         id TEXT NOT NULL,
         config TEXT NOT NULL,
         PRIMARY KEY (task_id, id)
     );
     CREATE TABLE IF NOT EXISTS push_outbox (
         seq INTEGER PRIMARY KEY AUTOINCREMENT,
         task_id TEXT NOT NULL,
         config_id TEXT NOT NULL,
         body TEXT NOT NULL,
         enqueued_at INTEGER NOT NULL,
         attempts INTEGER NOT NULL DEFAULT 0,
         not_before INTEGER NOT NULL DEFAULT 0
     );
     CREATE INDEX IF NOT EXISTS push_outbox_by_target ON push_outbox (task_id, config_id, seq);",
];

/// The schema of [`SCHEMA_VERSION`], written out: what a new file is created with, rather than
/// replaying every migration (copying data that is not there, creating what a later one
/// drops). The same tables, columns and indexes as [`MIGRATIONS`] applied in turn (tested);
/// when a migration is added, this is changed to match.
pub(super) const CURRENT: &str = "CREATE TABLE tasks (
         id TEXT PRIMARY KEY,
         context_id TEXT NOT NULL,
         state TEXT NOT NULL,
         updated_at TEXT NOT NULL,
         created_seq INTEGER NOT NULL,
         updated_seq INTEGER NOT NULL,
         record TEXT NOT NULL,
         status TEXT NOT NULL DEFAULT '{}',
         artifacts TEXT NOT NULL DEFAULT '[]',
         ext TEXT NOT NULL DEFAULT '{}'
     );
     CREATE INDEX tasks_by_update ON tasks (updated_seq DESC);
     CREATE TABLE task_participants (
         task_id TEXT NOT NULL REFERENCES tasks (id),
         participant_id TEXT NOT NULL,
         PRIMARY KEY (participant_id, task_id)
     );
     CREATE INDEX task_participants_by_task ON task_participants (task_id);
     CREATE TABLE messages (
         task_id TEXT NOT NULL REFERENCES tasks (id),
         seq INTEGER NOT NULL,
         body TEXT NOT NULL,
         PRIMARY KEY (task_id, seq)
     );
     CREATE TABLE journal (
         task_id TEXT NOT NULL REFERENCES tasks (id),
         seq INTEGER NOT NULL,
         entry TEXT NOT NULL,
         PRIMARY KEY (task_id, seq)
     );
     CREATE TABLE task_creations (
         owner TEXT NOT NULL,
         message_id TEXT NOT NULL,
         task_id TEXT NOT NULL REFERENCES tasks (id),
         PRIMARY KEY (owner, message_id)
     );
     CREATE TABLE health (
         id INTEGER PRIMARY KEY CHECK (id = 1),
         probed_at INTEGER NOT NULL
     );
     CREATE TABLE push_configs (
         task_id TEXT NOT NULL REFERENCES tasks (id),
         id TEXT NOT NULL,
         config TEXT NOT NULL,
         PRIMARY KEY (task_id, id)
     );
     CREATE TABLE push_outbox (
         seq INTEGER PRIMARY KEY AUTOINCREMENT,
         task_id TEXT NOT NULL,
         config_id TEXT NOT NULL,
         body TEXT NOT NULL,
         enqueued_at INTEGER NOT NULL,
         attempts INTEGER NOT NULL DEFAULT 0,
         not_before INTEGER NOT NULL DEFAULT 0
     );
     CREATE INDEX push_outbox_by_target ON push_outbox (task_id, config_id, seq);";

/// Brings the file to [`SCHEMA_VERSION`]: a new (empty) file at once with [`CURRENT`], an older
/// one a migration at a time.
pub(super) fn migrate(conn: &Connection) -> Result<(), rusqlite::Error> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    if version == 0 && is_empty(conn)? {
        conn.execute_batch(&format!(
            "BEGIN;\n{CURRENT}\nPRAGMA user_version = {SCHEMA_VERSION};\nCOMMIT;"
        ))?;
        tracing::debug!(version = SCHEMA_VERSION, "store created");
        return Ok(());
    }
    if version > SCHEMA_VERSION {
        return Err(rusqlite::Error::InvalidParameterName(format!(
            "the store was written by a newer tiny-harness (schema {version}, this build reads {SCHEMA_VERSION})"
        )));
    }
    for (from, sql) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
        let to = from + 1;
        conn.execute_batch(&format!(
            "BEGIN;\n{sql}\nPRAGMA user_version = {to};\nCOMMIT;"
        ))?;
        if from > 0 {
            tracing::info!(from, to, "store schema migrated");
        }
    }
    Ok(())
}

/// Whether the file holds no table, index or view yet: a new store, not a version-0 file
/// someone wrote into.
fn is_empty(conn: &Connection) -> Result<bool, rusqlite::Error> {
    let objects: i64 =
        conn.query_row("SELECT count(*) FROM sqlite_master", [], |row| row.get(0))?;
    Ok(objects == 0)
}
