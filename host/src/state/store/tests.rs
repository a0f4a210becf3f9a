//! Store tests on a real SQLite file.

use super::*;
use crate::base::protocol::types::{Role, TaskStatus};
use crate::state::records::extension::TaskExtension;
use rusqlite::params;

fn record(id: &str, owner: &str, state: TaskState) -> TaskRecord {
    TaskRecord {
        id: id.to_string(),
        context_id: "ctx".to_string(),
        status: TaskStatus {
            state,
            message: None,
            timestamp: Some(crate::base::protocol::types::timestamp_now()),
        },
        artifacts: Vec::new(),
        metadata: Default::default(),
        ext: TaskExtension::from_text(id),
        owner: owner.to_string(),
    }
}

fn message(text: &str) -> Message {
    Message {
        message_id: text.to_string(),
        role: Role::User,
        parts: vec![crate::base::protocol::types::Part::text(text)],
        ..Message::default()
    }
}

#[test]
fn a_write_lands_whole_and_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/harness.db");
    {
        let store = Store::open(&path).unwrap();
        store
            .write(|tx| {
                tx.insert_task(&record("t1", "alice", TaskState::Working))?;
                tx.append_message("t1", &message("hello"))?;
                tx.append_journal("t1", &serde_json::json!({"step": 1}))?;
                Ok(())
            })
            .unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.task("t1").unwrap().unwrap().owner, "alice");
    assert_eq!(store.history("t1", None).unwrap().len(), 1);
    let journal: Vec<(i64, serde_json::Value)> = store.journal("t1").unwrap();
    assert_eq!(journal, vec![(1, serde_json::json!({"step": 1}))]);
}

#[test]
fn a_failed_write_leaves_nothing_behind() {
    let store = Store::open_in_memory().unwrap();
    let result: Result<(), StoreError> = store.write(|tx| {
        tx.insert_task(&record("t1", "alice", TaskState::Working))?;
        Err(StoreError::Corrupt(
            serde_json::from_str::<u8>("x").unwrap_err(),
        ))
    });
    assert!(result.is_err());
    assert!(store.task("t1").unwrap().is_none());
}

#[test]
fn history_keeps_the_most_recent_messages_in_order() {
    let store = Store::open_in_memory().unwrap();
    store
        .write(|tx| {
            tx.insert_task(&record("t1", "alice", TaskState::Working))?;
            for text in ["a", "b", "c"] {
                tx.append_message("t1", &message(text))?;
            }
            Ok(())
        })
        .unwrap();
    let last_two: Vec<String> = store
        .history("t1", Some(2))
        .unwrap()
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(last_two, ["b", "c"]);
    assert_eq!(store.messages_after("t1", 2).unwrap().len(), 1);
}

#[test]
fn listing_shows_only_the_callers_tasks_newest_first_in_pages() {
    let store = Store::open_in_memory().unwrap();
    store
        .write(|tx| {
            for id in ["t1", "t2", "t3"] {
                tx.insert_task(&record(id, "alice", TaskState::Working))?;
            }
            tx.insert_task(&record("other", "bob", TaskState::Working))
        })
        .unwrap();
    let mut filter = TaskFilter {
        participant_id: "alice".into(),
        limit: 2,
        ..TaskFilter::default()
    };
    let first = store.list_tasks(&filter).unwrap();
    assert_eq!(first.total, 3);
    let ids: Vec<_> = first.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["t3", "t2"]);
    filter.cursor = first.next_cursor;
    let second = store.list_tasks(&filter).unwrap();
    let ids: Vec<_> = second.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["t1"]);
    assert!(second.next_cursor.is_none());
}

#[test]
fn a_participant_removed_from_a_task_no_longer_finds_it_but_the_owner_does() {
    use crate::state::records::extension::{Participant, ParticipantKind, Role as TaskRole};
    let participant = |id: &str| Participant {
        id: id.to_string(),
        kind: ParticipantKind::Human,
        role: TaskRole::Watcher,
        display_name: None,
    };
    let store = Store::open_in_memory().unwrap();
    let mut task = record("t1", "alice", TaskState::Working);
    task.ext.participants = vec![participant("bob"), participant("carol")];
    store.write(|tx| tx.insert_task(&task)).unwrap();
    let listed = |who: &str| {
        store
            .list_tasks(&TaskFilter {
                participant_id: who.into(),
                limit: 10,
                ..TaskFilter::default()
            })
            .unwrap()
            .total
    };
    assert_eq!((listed("alice"), listed("bob"), listed("carol")), (1, 1, 1));
    task.ext.participants = vec![participant("carol")];
    store.write(|tx| tx.update_task(&task)).unwrap();
    assert_eq!((listed("alice"), listed("bob"), listed("carol")), (1, 0, 1));
}

#[test]
fn listing_filters_by_state_and_open_tasks_exclude_terminal_ones() {
    let store = Store::open_in_memory().unwrap();
    store
        .write(|tx| {
            tx.insert_task(&record("done", "alice", TaskState::Completed))?;
            tx.insert_task(&record("open", "alice", TaskState::Working))
        })
        .unwrap();
    let page = store
        .list_tasks(&TaskFilter {
            participant_id: "alice".into(),
            state: Some(TaskState::Completed),
            limit: 10,
            ..TaskFilter::default()
        })
        .unwrap();
    assert_eq!(page.tasks.len(), 1);
    assert_eq!(page.tasks[0].id, "done");
    assert_eq!(store.open_task_ids().unwrap(), ["open"]);
}

#[test]
fn a_creating_message_finds_its_task_for_its_owner_only() {
    let store = Store::open_in_memory().unwrap();
    store
        .write(|tx| {
            tx.insert_task(&record("t1", "alice", TaskState::Working))?;
            tx.record_creation("alice", "m1", "t1")
        })
        .unwrap();
    assert_eq!(
        store.task_created_by("alice", "m1").unwrap().as_deref(),
        Some("t1")
    );
    assert_eq!(store.task_created_by("bob", "m1").unwrap(), None);
    assert_eq!(store.task_created_by("alice", "m2").unwrap(), None);
    let again = store.write(|tx| tx.record_creation("alice", "m1", "t1"));
    assert!(again.is_err(), "one task per owner and message id");
}

#[test]
fn a_version_1_file_opens_keeps_its_tasks_whole_and_gains_the_later_tables_and_columns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    let mut old = record("old", "alice", TaskState::Working);
    old.artifacts.push(crate::base::protocol::types::Artifact {
        artifact_id: "a1".into(),
        name: "answer".into(),
        parts: vec![crate::base::protocol::types::Part::text("42")],
        ..Default::default()
    });
    old.metadata.insert("k".into(), "v".into());
    {
        let conn = raw_connection(&path);
        conn.execute_batch(&format!(
            "BEGIN;\n{}\nPRAGMA user_version = 1;\nCOMMIT;",
            schema::MIGRATIONS[0]
        ))
        .unwrap();
        conn.execute(
            "INSERT INTO tasks (id, context_id, state, updated_at, created_seq, updated_seq, record) \
             VALUES ('old', 'ctx', 'TASK_STATE_WORKING', '', 1, 1, ?1)",
            params![serde_json::to_string(&old).unwrap()],
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    let version: i64 = store
        .lock()
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, schema::SCHEMA_VERSION);
    assert_eq!(version, 6);
    let read = store.task("old").unwrap().unwrap();
    assert_eq!(
        read, old,
        "the record is whole after its parts moved to columns"
    );
    store
        .write(|tx| tx.record_creation("alice", "m1", "old"))
        .unwrap();
    assert_eq!(
        store.task_created_by("alice", "m1").unwrap().as_deref(),
        Some("old")
    );
    drop(store);
    Store::open(&path).expect("a migrated file opens again unchanged");
}

/// Every table and index of a file, with each one's columns as SQLite reports them: the
/// schema, whatever text created it.
fn schema_of(conn: &Connection) -> Vec<String> {
    let mut objects = conn
        .prepare(
            "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name",
        )
        .unwrap();
    let objects: Vec<(String, String)> = objects
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut schema = Vec::new();
    for (kind, name) in objects {
        let pragma = if kind == "table" {
            "table_xinfo"
        } else {
            "index_xinfo"
        };
        let mut columns = conn
            .prepare(&format!("SELECT * FROM pragma_{pragma}('{name}')"))
            .unwrap();
        let count = columns.column_count();
        let rows: Vec<String> = columns
            .query_map([], |row| {
                Ok((0..count)
                    .map(|i| format!("{:?}", row.get_ref(i).unwrap()))
                    .collect::<Vec<_>>()
                    .join(","))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        schema.push(format!("{kind} {name}: {}", rows.join(" | ")));
    }
    schema
}

#[test]
fn a_new_store_is_created_at_the_current_schema_and_matches_every_migration_applied_in_turn() {
    let dir = tempfile::tempdir().unwrap();
    let new_path = dir.path().join("new.db");
    drop(Store::open(&new_path).unwrap());
    let new = raw_connection(&new_path);
    let version: i64 = new
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, schema::SCHEMA_VERSION);
    let tasks_sql: String = new
        .query_row(
            "SELECT sql FROM sqlite_master WHERE name = 'tasks'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert!(
        schema::CURRENT.contains(&tasks_sql),
        "created by CURRENT, not by CREATE then ALTER: {tasks_sql}"
    );

    let migrated = Connection::open_in_memory().unwrap();
    for sql in schema::MIGRATIONS {
        migrated.execute_batch(sql).unwrap();
    }
    assert_eq!(schema_of(&new), schema_of(&migrated));
}

#[test]
fn a_file_from_a_newer_build_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    raw_connection(&path)
        .pragma_update(None, "user_version", schema::SCHEMA_VERSION + 1)
        .unwrap();
    let err = Store::open(&path).err().expect("refused").to_string();
    assert!(err.contains("newer tiny-harness"), "{err}");
}

#[tokio::test]
// The lock is held on purpose, so the writes queue up behind it (a current-thread runtime: the
// writer thread, not this task, is what waits for it).
#[allow(clippy::await_holding_lock)]
async fn writes_queued_together_commit_together_and_a_failing_one_leaves_the_others_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("batch.db")).unwrap());
    let held = store.lock();
    let mut queued = Vec::new();
    for id in ["t1", "t2", "bad", "t3"] {
        let store = store.clone();
        queued.push(tokio::spawn(async move {
            store
                .write_queued(move |tx| {
                    tx.insert_task(&record(id, "alice", TaskState::Working))?;
                    if id == "bad" {
                        return Err(StoreError::Corrupt(
                            serde_json::from_str::<u8>("x").unwrap_err(),
                        ));
                    }
                    tx.append_message(id, &message("hello"))
                })
                .await
        }));
    }
    // Every write is queued (the spawned tasks ran at this await) while the connection is held.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    drop(held);
    let mut outcomes = Vec::new();
    for write in queued {
        outcomes.push(write.await.unwrap().is_ok());
    }
    assert_eq!(outcomes, [true, true, false, true]);
    assert_eq!(store.write_counts().writes(), 3);
    assert_eq!(
        store.write_counts().commits(),
        1,
        "one transaction for the batch"
    );
    for id in ["t1", "t2", "t3"] {
        assert_eq!(
            store.history(id, None).unwrap().len(),
            1,
            "{id} landed whole"
        );
    }
    assert!(
        store.task("bad").unwrap().is_none(),
        "the failed write left nothing"
    );
}

#[tokio::test]
async fn a_lone_write_that_fails_or_panics_leaves_nothing_and_the_next_one_lands() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("alone.db")).unwrap());
    let failed = store
        .write_queued(|tx| {
            tx.insert_task(&record("bad", "alice", TaskState::Working))?;
            Err::<(), _>(StoreError::Corrupt(
                serde_json::from_str::<u8>("x").unwrap_err(),
            ))
        })
        .await;
    assert!(matches!(failed, Err(StoreError::Corrupt(_))), "{failed:?}");
    let panicking = store.clone();
    let panicked = tokio::spawn(async move {
        panicking
            .write_queued(|tx| {
                tx.insert_task(&record("boom", "alice", TaskState::Working))?;
                panic!("a bug in a write");
                #[allow(unreachable_code)]
                Ok(())
            })
            .await
    })
    .await;
    assert!(
        !matches!(panicked, Ok(Ok(()))),
        "a panicking write does not report success"
    );
    store
        .write_queued(|tx| {
            tx.insert_task(&record("good", "alice", TaskState::Working))?;
            tx.append_message("good", &message("hello"))
        })
        .await
        .unwrap();
    assert!(
        store.task("bad").unwrap().is_none(),
        "the failed write left nothing"
    );
    assert!(
        store.task("boom").unwrap().is_none(),
        "the panicked write left nothing"
    );
    assert_eq!(
        store.history("good", None).unwrap().len(),
        1,
        "the next write landed whole"
    );
    assert_eq!(store.write_counts().writes(), 1);
}

#[tokio::test]
// The lock is held on purpose, as above, so that two writes queue up together.
#[allow(clippy::await_holding_lock)]
async fn an_idle_writers_caller_commits_itself_and_after_a_batch_the_writer_thread_commits() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("idle.db")).unwrap());
    let committer = |store: Arc<Store>| async move {
        store
            .write_queued(|tx| {
                tx.insert_task(&record(
                    &uuid::Uuid::new_v4().to_string(),
                    "alice",
                    TaskState::Working,
                ))?;
                Ok(std::thread::current().name().map(str::to_string))
            })
            .await
            .unwrap()
    };
    let here = std::thread::current().name().map(str::to_string);
    assert_eq!(
        committer(store.clone()).await,
        here,
        "an idle writer: its caller commits, no thread is woken"
    );

    let held = store.lock();
    let batch: Vec<_> = (0..2)
        .map(|_| tokio::spawn(committer(store.clone())))
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let released = std::time::Instant::now();
    drop(held);
    for write in batch {
        assert_eq!(write.await.unwrap().as_deref(), Some("store-writer"));
    }
    assert_eq!(
        store.write_counts().commits(),
        2,
        "the two committed together"
    );
    let next = committer(store.clone()).await;
    // Within `CONTENDED_FOR` of a batch, writes are left to the writer thread: the next write
    // goes there too, unless this machine took longer than that to get here.
    assert!(
        next.as_deref() == Some("store-writer") || released.elapsed() >= writer::CONTENDED_FOR,
        "a write right after a batch was committed by its caller ({next:?})"
    );
    assert_eq!(store.write_counts().writes(), 4);
}

#[tokio::test]
async fn over_a_file_other_processes_write_every_write_goes_to_the_writer_thread() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("shared.db")).unwrap();
    store.written_by_other_processes();
    for n in 0..3 {
        let thread = store
            .write_queued(move |tx| {
                tx.insert_task(&record(&format!("t{n}"), "alice", TaskState::Working))?;
                Ok(std::thread::current().name().map(str::to_string))
            })
            .await
            .unwrap();
        assert_eq!(thread.as_deref(), Some("store-writer"), "write {n}");
    }
}

#[tokio::test]
async fn a_queued_write_is_read_back_at_once_from_a_reader_connection() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("read.db")).unwrap();
    for n in 0..20 {
        let id = format!("t{n}");
        let written = id.clone();
        store
            .write_queued(move |tx| tx.insert_task(&record(&written, "alice", TaskState::Working)))
            .await
            .unwrap();
        assert!(
            store.task(&id).unwrap().is_some(),
            "{id} is visible once acknowledged"
        );
    }
}

#[test]
fn a_loops_read_of_new_messages_finds_them_and_never_waits_for_a_write() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("latest.db")).unwrap());
    store
        .write(|tx| {
            tx.insert_task(&record("t1", "alice", TaskState::Working))?;
            tx.append_message("t1", &message("first"))?;
            tx.append_message("t1", &message("second"))
        })
        .unwrap();
    let texts = |store: &Store| -> Vec<String> {
        store
            .messages_after("t1", 1)
            .unwrap()
            .into_iter()
            .map(|(_, m)| m.text())
            .collect()
    };
    assert_eq!(
        texts(&store),
        ["second"],
        "read on the idle write connection"
    );

    // A write holds the write connection: the read goes to a reader connection at once.
    let held = store.lock();
    let (answer, answered) = std::sync::mpsc::channel();
    let reading = store.clone();
    std::thread::spawn(move || answer.send(texts(&reading)).unwrap());
    let found = answered
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the read waited for the write connection");
    drop(held);
    assert_eq!(found, ["second"]);
}

#[test]
fn a_status_change_rewrites_the_status_and_leaves_the_artifacts_column_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("parts.db")).unwrap();
    let mut task = record("t1", "alice", TaskState::Working);
    task.artifacts.push(crate::base::protocol::types::Artifact {
        artifact_id: "a1".into(),
        parts: vec![crate::base::protocol::types::Part::text("big")],
        ..Default::default()
    });
    store.write(|tx| tx.insert_task(&task)).unwrap();
    // Make the stored artifacts recognisable: an unchanged part is not rewritten.
    store
        .lock()
        .execute(
            "UPDATE tasks SET artifacts = json_set(artifacts, '$[0].name', 'kept') WHERE id = 't1'",
            [],
        )
        .unwrap();
    let mut after = task.clone();
    after.status.state = TaskState::Completed;
    store
        .write(|tx| tx.write_change(Some(&task), &after))
        .unwrap();
    let read = store.task("t1").unwrap().unwrap();
    assert_eq!(read.state(), TaskState::Completed);
    assert_eq!(
        read.artifacts[0].name, "kept",
        "the artifacts were not rewritten"
    );
    // Without a `before`, every part is written.
    store.write(|tx| tx.update_task(&task)).unwrap();
    assert_eq!(store.task("t1").unwrap().unwrap(), task);
}

#[test]
fn cached_statements_are_not_prepared_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prepared.db");
    let store = Store::open(&path).unwrap();
    for id in ["t1", "t2", "t3"] {
        store
            .write(|tx| {
                tx.insert_task(&record(id, "alice", TaskState::Working))?;
                tx.append_message(id, &message("hello"))?;
                tx.append_journal(id, &serde_json::json!({"step": 1}))
            })
            .unwrap();
    }
    let conn = store.lock();
    let keyed = [
        (queries::MESSAGES_AFTER, 2),
        (queries::HISTORY, 2),
        (queries::JOURNAL, 1),
        (queries::NEXT_MESSAGE_SEQ, 1),
        (queries::NEXT_JOURNAL_SEQ, 1),
    ];
    for (sql, parameters) in keyed {
        let mut stmt = conn.prepare(sql).unwrap();
        for id in ["t1", "t2", "t3", "t1"] {
            let mut rows = if parameters == 2 {
                stmt.query(params![id, 0]).unwrap()
            } else {
                stmt.query(params![id]).unwrap()
            };
            while rows.next().unwrap().is_some() {}
        }
        let again = stmt.get_status(rusqlite::StatementStatus::RePrepare);
        assert_eq!(again, 0, "prepared again on a new task id: {sql}");
    }
}

#[test]
fn committed_pages_reach_the_database_file_without_the_store_closing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("checkpointed.db");
    let store = Store::open(&path).unwrap();
    let empty = std::fs::metadata(&path).unwrap().len();
    for n in 0..200 {
        store
            .write(|tx| {
                let id = format!("t{n}");
                tx.insert_task(&record(&id, "alice", TaskState::Working))?;
                tx.append_message(&id, &message(&"words ".repeat(100)))
            })
            .unwrap();
    }
    // The writer never checkpoints; the checkpointer thread copies the WAL into the file.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::fs::metadata(&path).unwrap().len() <= empty {
        assert!(
            std::time::Instant::now() < deadline,
            "the WAL was not checkpointed into the file"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(store.task("t199").unwrap().unwrap().owner, "alice");
}

/// A plain connection to a file, for writing what an older or newer build would have left.
/// SQLite takes its allocator before it first initialises (`memory::install`), whichever test
/// runs first in this process.
fn raw_connection(path: &std::path::Path) -> Connection {
    super::memory::install();
    Connection::open(path).unwrap()
}

#[test]
fn a_changed_task_moves_to_the_front_of_listings_also_after_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("order.db");
    let ids = |store: &Store| -> Vec<String> {
        let page = store
            .list_tasks(&TaskFilter {
                participant_id: "alice".into(),
                limit: 10,
                ..TaskFilter::default()
            })
            .unwrap();
        page.tasks.into_iter().map(|t| t.id).collect()
    };
    {
        let store = Store::open(&path).unwrap();
        for id in ["t1", "t2", "t3"] {
            store
                .write(|tx| tx.insert_task(&record(id, "alice", TaskState::Working)))
                .unwrap();
        }
        store
            .write(|tx| tx.update_task(&record("t1", "alice", TaskState::Completed)))
            .unwrap();
        assert_eq!(ids(&store), ["t1", "t3", "t2"]);
    }
    // The sequence goes on from the newest change in the file, not from a count in memory.
    let store = Store::open(&path).unwrap();
    store
        .write(|tx| tx.update_task(&record("t2", "alice", TaskState::Completed)))
        .unwrap();
    store
        .write(|tx| tx.insert_task(&record("t4", "alice", TaskState::Working)))
        .unwrap();
    assert_eq!(ids(&store), ["t4", "t2", "t1", "t3"]);
}

#[test]
fn a_new_store_file_has_small_pages_and_an_older_file_keeps_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let page_size = |path: &std::path::Path| -> i64 {
        raw_connection(path)
            .query_row("PRAGMA page_size", [], |row| row.get(0))
            .unwrap()
    };
    let fresh = dir.path().join("fresh.db");
    drop(Store::open(&fresh).unwrap());
    assert_eq!(page_size(&fresh), PAGE_SIZE);

    // A file an earlier build created at SQLite's default page size opens, works and keeps it.
    let older = dir.path().join("older.db");
    {
        let conn = raw_connection(&older);
        conn.pragma_update(None, "page_size", 4096).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.execute_batch(&format!(
            "BEGIN;\n{}\nPRAGMA user_version = 1;\nCOMMIT;",
            schema::MIGRATIONS[0]
        ))
        .unwrap();
    }
    {
        let store = Store::open(&older).unwrap();
        store
            .write(|tx| tx.insert_task(&record("t1", "alice", TaskState::Working)))
            .unwrap();
        assert_eq!(store.task("t1").unwrap().unwrap().owner, "alice");
    }
    assert_eq!(page_size(&older), 4096);
}

#[test]
fn the_wal_stays_short_under_steady_writes_and_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("steady.db");
    let wal = dir.path().join("steady.db-wal");
    let store = Arc::new(Store::open(&path).unwrap());
    let body = "words ".repeat(300);
    store
        .write(|tx| tx.insert_task(&record("t", "alice", TaskState::Working)))
        .unwrap();
    // Readers that never stop, as under load: each read holds a snapshot of the WAL for a
    // moment, which is what keeps a passive checkpoint from ever letting the WAL start over.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (store, stop) = (store.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut reads = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    store.history("t", Some(5)).unwrap();
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    // 16,000 commits of three pages or more each: some 48 MiB of WAL frames at 1 KiB, which a
    // WAL that never started over would hold whole.
    let mut longest = 0;
    for n in 0..16_000 {
        let message = message(&format!("{n} {body}"));
        store.write(|tx| tx.append_message("t", &message)).unwrap();
        longest = longest.max(std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0));
    }
    stop.store(true, Ordering::Relaxed);
    let reads: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert!(reads > 0, "the readers read");
    assert_eq!(
        store.history("t", None).unwrap().len(),
        16_000,
        "every write landed"
    );
    // A few MiB when the machine is idle; the bound leaves room for a busy one, where each
    // checkpoint round takes longer and finds more frames.
    assert!(
        longest < 16 << 20,
        "the WAL grew to {longest} bytes; restarts keep it to a few MiB"
    );
}
