//! The store's tables, created on first open and versioned with `user_version`.

use rusqlite::Connection;

/// The schema version this build writes. A newer file is refused rather than misread.
const SCHEMA_VERSION: i64 = 1;

pub(super) fn migrate(conn: &Connection) -> Result<(), rusqlite::Error> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(rusqlite::Error::InvalidParameterName(format!(
            "the store was written by a newer tiny-harness (schema {version}, this build reads {SCHEMA_VERSION})"
        )));
    }
    if version == SCHEMA_VERSION {
        return Ok(());
    }
    conn.execute_batch(
        "BEGIN;
         CREATE TABLE IF NOT EXISTS tasks (
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
         INSERT OR IGNORE INTO counters (name, value) VALUES ('task_update', 0);
         PRAGMA user_version = 1;
         COMMIT;",
    )
}
