//! The records of tasks being worked on, kept in memory as their last change left them, so a
//! task's loop reads its record without a store read and a JSON parse at every step.
//!
//! Every change goes through the [`super::hub::TaskHub`], so the hub knows each record a commit
//! leaves. It is told on the committing thread (the store's writer thread, or the caller's when
//! the writer was idle), with the write connection held, right after each commit and in commit
//! order ([`crate::state::store::Store::write_queued_then`]), so an ended task's record, once dropped,
//! is never put back by an older change whose caller woke late. Each change is also stamped with a
//! version in the order the writes run, and an entry is replaced only by a newer version. A
//! record that is not here is read from the store, which is always right; this is only a
//! shortcut, and only for the engine's loops (`GetTask` and listings read the store).
//!
//! What is kept: the record of any task a change touched, until its loop parks or stops; the
//! record a task ended with only while its loop runs (the loop claimed it when it read its
//! record), for that loop's last look. A task that ends with no loop running (canceled while it
//! waited) leaves nothing behind.
//!
//! Only one process may keep it: when other processes write the same store (the Temporal engine
//! runs steps on whichever worker takes them), a record here could miss their changes, so the
//! hub over a shared store keeps none ([`LiveRecords::disabled`]).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::state::records::record::TaskRecord;

/// Records kept at most, and loops followed at most. Entries go when their task's loop parks or
/// stops; the cap bounds what a burst of tasks (or a loop that never stopped cleanly) can hold:
/// past it, a change is simply not kept, and the loop reads the store.
pub const MAX_LIVE_RECORDS: usize = 4_096;

/// See the module documentation.
pub struct LiveRecords {
    enabled: bool,
    /// The next version to stamp; taken inside each write, and writes run one at a time on the
    /// write connection, so versions follow write order.
    next_version: Arc<AtomicU64>,
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    records: HashMap<String, Entry>,
    /// The tasks whose loop is running (it read its record through [`LiveRecords::claim`] and
    /// has not stopped): only their ended records are kept, since only a loop reads one.
    looping: HashSet<String>,
}

/// Takes the version of a write, inside the write: the store runs writes one after another on
/// its write connection, so versions follow the order the changes were made in.
#[derive(Clone)]
pub struct Stamper(Arc<AtomicU64>);

impl Stamper {
    /// The version of the write now running.
    pub fn stamp(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed)
    }
}

struct Entry {
    version: u64,
    record: Arc<TaskRecord>,
    /// The update sequence of the task's row this record was written with
    /// ([`crate::state::store::Tx::task_with_update_seq`]).
    update_seq: i64,
}

impl LiveRecords {
    /// Kept in memory: this process is the only writer of the store.
    pub fn enabled() -> LiveRecords {
        LiveRecords {
            enabled: true,
            next_version: Arc::new(AtomicU64::new(1)),
            kept: Mutex::new(Kept::default()),
        }
    }

    /// Nothing kept: other processes write the same store.
    pub fn disabled() -> LiveRecords {
        LiveRecords {
            enabled: false,
            ..LiveRecords::enabled()
        }
    }

    /// What stamps versions inside writes.
    pub fn stamper(&self) -> Stamper {
        Stamper(self.next_version.clone())
    }

    /// The write stamped `version` has committed, leaving `record`. An older version than the
    /// one kept changes nothing. A terminal task's record is kept only while the task's loop
    /// runs (its last look at how the task ended then reads no store), until that loop stops
    /// ([`LiveRecords::forget`]); a task that ended with no loop running is dropped at once, so
    /// that nothing is kept that no loop will read or forget.
    pub fn landed(&self, version: u64, record: &TaskRecord, update_seq: i64) {
        self.landed_shared(version, &Arc::new(record.clone()), update_seq);
    }

    /// As [`LiveRecords::landed`], keeping `record` itself: no copy is made, which matters on
    /// the committing thread the hub calls this from, with the write connection held.
    pub fn landed_shared(&self, version: u64, record: &Arc<TaskRecord>, update_seq: i64) {
        if !self.enabled {
            return;
        }
        let mut kept = self.lock();
        let kept = &mut *kept;
        if record.state().is_terminal() && !kept.looping.contains(&record.id) {
            if kept
                .records
                .get(&record.id)
                .is_some_and(|entry| entry.version < version)
            {
                kept.records.remove(&record.id);
            }
            return;
        }
        let full = kept.records.len() >= MAX_LIVE_RECORDS;
        match kept.records.get_mut(&record.id) {
            Some(entry) if entry.version >= version => {}
            Some(entry) => {
                *entry = Entry {
                    version,
                    record: record.clone(),
                    update_seq,
                };
            }
            None if full => {}
            None => {
                kept.records.insert(
                    record.id.clone(),
                    Entry {
                        version,
                        record: record.clone(),
                        update_seq,
                    },
                );
            }
        }
    }

    /// The task's loop is running and reads its record: from now until the loop stops
    /// ([`LiveRecords::forget`]), the record the task ends with is kept for it.
    pub fn claim(&self, id: &str) {
        if !self.enabled {
            return;
        }
        let mut kept = self.lock();
        if kept.looping.len() < MAX_LIVE_RECORDS && !kept.looping.contains(id) {
            kept.looping.insert(id.to_string());
        }
    }

    /// The task's record as its last landed change left it, if kept.
    pub fn get(&self, id: &str) -> Option<Arc<TaskRecord>> {
        if !self.enabled {
            return None;
        }
        self.lock()
            .records
            .get(id)
            .map(|entry| entry.record.clone())
    }

    /// The task's record as its last landed change left it, with the update sequence of the
    /// row it was written to: a write that finds the row still at that sequence has the row's
    /// content here, and need not read and parse it.
    pub fn get_with_update_seq(&self, id: &str) -> Option<(Arc<TaskRecord>, i64)> {
        if !self.enabled {
            return None;
        }
        self.lock()
            .records
            .get(id)
            .map(|entry| (entry.record.clone(), entry.update_seq))
    }

    /// Drops the task's record: its loop stopped (or parked), so nothing reads it until the next
    /// one starts.
    pub fn forget(&self, id: &str) {
        if self.enabled {
            let mut kept = self.lock();
            kept.records.remove(id);
            kept.looping.remove(id);
        }
    }

    /// How many records are kept.
    pub fn len(&self) -> usize {
        self.lock().records.len()
    }

    /// How many tasks' loops are followed (claimed and not yet forgotten).
    pub fn looping(&self) -> usize {
        self.lock().looping.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, Kept> {
        self.kept
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::types::TaskState;

    fn record(id: &str, state: TaskState, note: &str) -> TaskRecord {
        let ext = crate::state::records::extension::TaskExtension::from_text("goal");
        let mut record = TaskRecord::for_test(ext, state, "o");
        record.id = id.into();
        record.metadata.insert("note".into(), note.into());
        record
    }

    fn note(records: &LiveRecords, id: &str) -> Option<String> {
        records
            .get(id)
            .map(|r| r.metadata["note"].as_str().unwrap().to_string())
    }

    #[test]
    fn a_late_older_change_never_replaces_a_newer_one() {
        let records = LiveRecords::enabled();
        let stamper = records.stamper();
        let (first, second) = (stamper.stamp(), stamper.stamp());
        records.landed(second, &record("t", TaskState::Working, "second"), 1);
        records.landed(first, &record("t", TaskState::Working, "first"), 1);
        assert_eq!(note(&records, "t").as_deref(), Some("second"));
        let third = records.stamper().stamp();
        records.landed(third, &record("t", TaskState::InputRequired, "third"), 1);
        assert_eq!(note(&records, "t").as_deref(), Some("third"));
    }

    #[test]
    fn an_ended_task_is_kept_only_until_its_loop_forgets_it() {
        let records = LiveRecords::enabled();
        records.claim("a");
        records.landed(
            records.stamper().stamp(),
            &record("a", TaskState::Working, "a"),
            1,
        );
        records.landed(
            records.stamper().stamp(),
            &record("b", TaskState::Working, "b"),
            1,
        );
        records.landed(
            records.stamper().stamp(),
            &record("a", TaskState::Completed, "done"),
            1,
        );
        assert_eq!(
            note(&records, "a").as_deref(),
            Some("done"),
            "the loop of a task that just ended reads how it ended"
        );
        records.forget("a");
        records.forget("b");
        assert!(records.is_empty());
        assert_eq!(records.looping(), 0);
        records.landed(
            records.stamper().stamp(),
            &record("c", TaskState::Canceled, "canceled"),
            1,
        );
        assert_eq!(
            note(&records, "c"),
            None,
            "a task that ended with no record kept is not added"
        );
    }

    #[test]
    fn a_task_that_ends_with_no_loop_running_leaves_nothing_behind() {
        let records = LiveRecords::enabled();
        // A waiting parent's record is kept when a child's state is written to it, before
        // the report wakes its loop; then the parent is canceled.
        records.landed(
            records.stamper().stamp(),
            &record("parent", TaskState::InputRequired, "child working"),
            1,
        );
        assert_eq!(records.len(), 1);
        records.landed(
            records.stamper().stamp(),
            &record("parent", TaskState::Canceled, "canceled"),
            1,
        );
        assert_eq!(
            note(&records, "parent"),
            None,
            "no loop will read or forget it, so it is dropped at once"
        );
        assert!(records.is_empty());
    }

    #[test]
    fn the_cap_bounds_what_is_kept_and_a_disabled_one_keeps_nothing() {
        let records = LiveRecords::enabled();
        for i in 0..MAX_LIVE_RECORDS + 10 {
            records.landed(
                records.stamper().stamp(),
                &record(&format!("t{i}"), TaskState::Working, "x"),
                1,
            );
        }
        assert_eq!(records.len(), MAX_LIVE_RECORDS);
        let disabled = LiveRecords::disabled();
        disabled.landed(
            disabled.stamper().stamp(),
            &record("t", TaskState::Working, "x"),
            1,
        );
        assert_eq!(disabled.get("t"), None);
    }
}
