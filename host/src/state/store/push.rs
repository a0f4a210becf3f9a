//! Push notifications in the store: each task's webhook configs (`push_configs`) and the
//! outbox of pushes not yet delivered (`push_outbox`). A push is queued in the transaction of
//! the change it tells of, once per config the task then has, so a change that landed has its
//! pushes landed too and a crash loses none; the delivery worker takes the oldest push of each
//! (task, config) pair, so each webhook hears of a task's changes in the order they were made.

use rusqlite::{OptionalExtension, params};

use super::{Store, StoreError, Tx};

/// The outcome of [`Tx::save_push_config`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saved {
    /// A new config was added.
    Added,
    /// The config with this id was replaced.
    Replaced,
    /// The task already has `max` configs and this id is not one of them; nothing was written.
    Full,
}

/// One queued push: the oldest not delivered for its (task, config) pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxItem {
    /// The item's place in the outbox: later changes have larger numbers.
    pub seq: i64,
    /// The task the push tells of.
    pub task_id: String,
    /// The config it goes to.
    pub config_id: String,
    /// The `StreamResponse` JSON to POST.
    pub body: String,
    /// When it was queued, in milliseconds since the epoch.
    pub enqueued_at: i64,
    /// Deliveries tried so far.
    pub attempts: i64,
    /// Not to be tried before this time (milliseconds since the epoch).
    pub not_before: i64,
    /// The config's JSON as it is now; `None` when it was deleted since.
    pub config: Option<String>,
}

impl Tx<'_> {
    /// Adds the config `id` of the task, or replaces the one with that id; a new id on a task
    /// that already has `max` configs is refused ([`Saved::Full`]). `config` is its JSON.
    pub fn save_push_config(
        &mut self,
        task_id: &str,
        id: &str,
        config: &str,
        max: usize,
    ) -> Result<Saved, StoreError> {
        let replaced = self
            .conn
            .prepare_cached("UPDATE push_configs SET config = ?3 WHERE task_id = ?1 AND id = ?2")?
            .execute(params![task_id, id, config])?;
        if replaced > 0 {
            return Ok(Saved::Replaced);
        }
        let count: i64 = self
            .conn
            .prepare_cached("SELECT count(*) FROM push_configs WHERE task_id = ?1")?
            .query_row(params![task_id], |row| row.get(0))?;
        if count as usize >= max {
            return Ok(Saved::Full);
        }
        self.conn
            .prepare_cached("INSERT INTO push_configs (task_id, id, config) VALUES (?1, ?2, ?3)")?
            .execute(params![task_id, id, config])?;
        Ok(Saved::Added)
    }

    /// Deletes the config and every push still queued for it; whether it existed.
    pub fn delete_push_config(&mut self, task_id: &str, id: &str) -> Result<bool, StoreError> {
        let deleted = self
            .conn
            .prepare_cached("DELETE FROM push_configs WHERE task_id = ?1 AND id = ?2")?
            .execute(params![task_id, id])?;
        self.conn
            .prepare_cached("DELETE FROM push_outbox WHERE task_id = ?1 AND config_id = ?2")?
            .execute(params![task_id, id])?;
        Ok(deleted > 0)
    }

    /// Whether the task has a push config: a change of a task without one queues nothing and
    /// serialises nothing.
    pub fn has_push_configs(&self, task_id: &str) -> Result<bool, StoreError> {
        Ok(self
            .conn
            .prepare_cached("SELECT 1 FROM push_configs WHERE task_id = ?1 LIMIT 1")?
            .query_row(params![task_id], |_| Ok(()))
            .optional()?
            .is_some())
    }

    /// Queues `body` (a `StreamResponse` as JSON) for every config of the task, queued at `now`
    /// (milliseconds since the epoch); how many pushes were queued.
    pub fn enqueue_push(
        &mut self,
        task_id: &str,
        body: &str,
        now: i64,
    ) -> Result<usize, StoreError> {
        Ok(self
            .conn
            .prepare_cached(
                "INSERT INTO push_outbox (task_id, config_id, body, enqueued_at) \
                 SELECT task_id, id, ?2, ?3 FROM push_configs WHERE task_id = ?1 ORDER BY rowid",
            )?
            .execute(params![task_id, body, now])?)
    }

    /// Claims a queued push for one delivery: sets it not to be tried by anyone else before
    /// `until`, if it is due at `now` (milliseconds since the epoch). Whether this caller won
    /// it: of processes sharing the store, one delivers each push.
    pub fn claim_push(&mut self, seq: i64, now: i64, until: i64) -> Result<bool, StoreError> {
        Ok(self
            .conn
            .prepare_cached(
                "UPDATE push_outbox SET not_before = ?3 WHERE seq = ?1 AND not_before <= ?2",
            )?
            .execute(params![seq, now, until])?
            > 0)
    }

    /// Removes a queued push: delivered, or given up on.
    pub fn remove_push(&mut self, seq: i64) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("DELETE FROM push_outbox WHERE seq = ?1")?
            .execute(params![seq])?;
        Ok(())
    }

    /// Records a failed delivery of a queued push: one more attempt, not tried again before
    /// `not_before` (milliseconds since the epoch).
    pub fn retry_push(&mut self, seq: i64, not_before: i64) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "UPDATE push_outbox SET attempts = attempts + 1, not_before = ?2 WHERE seq = ?1",
            )?
            .execute(params![seq, not_before])?;
        Ok(())
    }
}

impl Store {
    /// The task's config `id`, as JSON.
    pub fn push_config(&self, task_id: &str, id: &str) -> Result<Option<String>, StoreError> {
        self.read(|conn| {
            Ok(conn
                .prepare_cached("SELECT config FROM push_configs WHERE task_id = ?1 AND id = ?2")?
                .query_row(params![task_id, id], |row| row.get(0))
                .optional()?)
        })
    }

    /// Every config of the task, oldest first, as (id, JSON).
    pub fn push_configs(&self, task_id: &str) -> Result<Vec<(String, String)>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT id, config FROM push_configs WHERE task_id = ?1 ORDER BY rowid",
            )?;
            let rows = stmt.query_map(params![task_id], |row| Ok((row.get(0)?, row.get(1)?)))?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    /// The oldest queued push of each (task, config) pair, oldest first, at most `limit`: the
    /// only ones a worker may deliver, so each webhook hears of a task's changes in order.
    pub fn push_heads(&self, limit: usize) -> Result<Vec<OutboxItem>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT o.seq, o.task_id, o.config_id, o.body, o.enqueued_at, o.attempts, \
                 o.not_before, c.config \
                 FROM (SELECT min(seq) AS seq FROM push_outbox GROUP BY task_id, config_id) h \
                 JOIN push_outbox o ON o.seq = h.seq \
                 LEFT JOIN push_configs c ON c.task_id = o.task_id AND c.id = o.config_id \
                 ORDER BY o.seq LIMIT ?1",
            )?;
            let rows = stmt.query_map(params![limit as i64], |row| {
                Ok(OutboxItem {
                    seq: row.get(0)?,
                    task_id: row.get(1)?,
                    config_id: row.get(2)?,
                    body: row.get(3)?,
                    enqueued_at: row.get(4)?,
                    attempts: row.get(5)?,
                    not_before: row.get(6)?,
                    config: row.get(7)?,
                })
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::types::TaskState;
    use crate::state::records::extension::TaskExtension;
    use crate::state::records::record::TaskRecord;

    fn store_with_task(path: &std::path::Path) -> Store {
        let store = Store::open(path).unwrap();
        let record =
            TaskRecord::for_test(TaskExtension::from_text("goal"), TaskState::Working, "o");
        store.write(|tx| tx.insert_task(&record).map(drop)).unwrap();
        store
    }

    #[test]
    fn configs_are_capped_replaced_by_id_and_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.db");
        let store = store_with_task(&path);
        let save = |id: &str, json: &str| {
            let (id, json) = (id.to_string(), json.to_string());
            store
                .write(move |tx| tx.save_push_config("t", &id, &json, 2))
                .unwrap()
        };
        assert_eq!(save("a", "{\"url\":\"1\"}"), Saved::Added);
        assert_eq!(save("b", "{}"), Saved::Added);
        assert_eq!(save("c", "{}"), Saved::Full);
        assert_eq!(save("a", "{\"url\":\"2\"}"), Saved::Replaced);
        drop(store);
        let store = Store::open(&path).unwrap();
        let ids: Vec<String> = store
            .push_configs("t")
            .unwrap()
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(
            store.push_config("t", "a").unwrap().as_deref(),
            Some("{\"url\":\"2\"}")
        );
    }

    #[test]
    fn the_outbox_offers_the_oldest_push_of_each_webhook_and_forgets_a_deleted_ones() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_task(&dir.path().join("h.db"));
        store
            .write(|tx| {
                tx.save_push_config("t", "a", "{}", 8)?;
                tx.save_push_config("t", "b", "{}", 8)?;
                tx.enqueue_push("t", "first", 1)?;
                tx.enqueue_push("t", "second", 2)
            })
            .unwrap();
        let heads = store.push_heads(10).unwrap();
        let seen: Vec<(&str, &str)> = heads
            .iter()
            .map(|h| (h.config_id.as_str(), h.body.as_str()))
            .collect();
        assert_eq!(seen, [("a", "first"), ("b", "first")]);
        let first = heads[0].seq;
        assert!(store.write(move |tx| tx.claim_push(first, 5, 100)).unwrap());
        assert!(
            !store.write(move |tx| tx.claim_push(first, 6, 100)).unwrap(),
            "a claimed push is not claimed twice"
        );
        store.write(move |tx| tx.remove_push(first)).unwrap();
        store
            .write(|tx| tx.delete_push_config("t", "b").map(drop))
            .unwrap();
        let heads = store.push_heads(10).unwrap();
        assert_eq!(heads.len(), 1);
        assert_eq!(
            (heads[0].config_id.as_str(), heads[0].body.as_str()),
            ("a", "second")
        );
        assert!(heads[0].config.is_some());
    }

    #[test]
    fn a_version_5_file_gains_the_push_tables_and_keeps_its_tasks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v5.db");
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            for (from, sql) in super::super::schema::MIGRATIONS.iter().take(5).enumerate() {
                conn.execute_batch(&format!(
                    "BEGIN;\n{sql}\nPRAGMA user_version = {};\nCOMMIT;",
                    from + 1
                ))
                .unwrap();
            }
        }
        let store = store_with_task(&path);
        drop(store);
        let store = Store::open(&path).unwrap();
        assert!(store.task("t").unwrap().is_some());
        store
            .write(|tx| tx.save_push_config("t", "a", "{}", 1))
            .unwrap();
        assert_eq!(store.push_configs("t").unwrap().len(), 1);
    }
}
