//! How a task record is kept in its row: the parts that change at different rates in columns of
//! their own (status, artifacts, extension), the rest (id, context, metadata, owner) in
//! `record`. A change writes only the parts it touched: a status change does not re-serialise
//! the task's artifacts, nor a usage update its whole record.

use rusqlite::Row;
use serde::{Deserialize, Serialize};

use super::StoreError;
use crate::base::protocol::types::{Artifact, Struct, TaskStatus};
use crate::state::records::extension::TaskExtension;
use crate::state::records::record::TaskRecord;

/// The columns a task's record is read from, in this order, as a `SELECT` lists them.
pub(super) const RECORD_COLUMNS: &str = "record, status, artifacts, ext";

/// What `record` holds: the parts set at creation.
#[derive(Serialize)]
struct BaseOut<'a> {
    id: &'a str,
    context_id: &'a str,
    metadata: &'a Struct,
    owner: &'a str,
}

#[derive(Deserialize)]
struct BaseIn {
    id: String,
    context_id: String,
    #[serde(default)]
    metadata: Struct,
    owner: String,
}

/// The serialised parts of a record; `None` for a part a change left alone.
#[derive(Debug, Default)]
pub(super) struct Parts {
    pub base: Option<String>,
    pub status: Option<String>,
    pub artifacts: Option<String>,
    pub ext: Option<String>,
}

impl Parts {
    /// Every part, for a new row.
    pub(super) fn all(record: &TaskRecord) -> Result<Parts, StoreError> {
        Parts::changed(None, record)
    }

    /// The parts that differ from `before` (all of them without it).
    pub(super) fn changed(
        before: Option<&TaskRecord>,
        after: &TaskRecord,
    ) -> Result<Parts, StoreError> {
        let differs = |same: fn(&TaskRecord, &TaskRecord) -> bool| {
            before.is_none_or(|before| !same(before, after))
        };
        Ok(Parts {
            base: if differs(|a, b| {
                a.id == b.id
                    && a.context_id == b.context_id
                    && a.metadata == b.metadata
                    && a.owner == b.owner
            }) {
                Some(serde_json::to_string(&BaseOut {
                    id: &after.id,
                    context_id: &after.context_id,
                    metadata: &after.metadata,
                    owner: &after.owner,
                })?)
            } else {
                None
            },
            status: if differs(|a, b| a.status == b.status) {
                Some(serde_json::to_string(&after.status)?)
            } else {
                None
            },
            artifacts: if differs(|a, b| a.artifacts == b.artifacts) {
                Some(serde_json::to_string(&after.artifacts)?)
            } else {
                None
            },
            ext: if differs(|a, b| a.ext == b.ext) {
                Some(serde_json::to_string(&after.ext)?)
            } else {
                None
            },
        })
    }
}

/// The record from a row whose first four columns are [`RECORD_COLUMNS`].
pub(super) fn read_record(row: &Row<'_>) -> rusqlite::Result<Result<TaskRecord, StoreError>> {
    let base: String = row.get(0)?;
    let status: String = row.get(1)?;
    let artifacts: String = row.get(2)?;
    let ext: String = row.get(3)?;
    Ok(assemble(&base, &status, &artifacts, &ext))
}

fn assemble(
    base: &str,
    status: &str,
    artifacts: &str,
    ext: &str,
) -> Result<TaskRecord, StoreError> {
    let base: BaseIn = serde_json::from_str(base)?;
    Ok(TaskRecord {
        id: base.id,
        context_id: base.context_id,
        status: serde_json::from_str::<TaskStatus>(status)?,
        artifacts: serde_json::from_str::<Vec<Artifact>>(artifacts)?,
        metadata: base.metadata,
        ext: serde_json::from_str::<TaskExtension>(ext)?,
        owner: base.owner,
    })
}
