//! How a step writes a task's status: working or waiting, and its endings (completed with the
//! model's answer, failed with a reason). Kept below the loop, the inbox and participant tasks,
//! which all set a status.

use crate::base::model::{Finish, FinishState};
use crate::base::protocol::types::{
    Artifact, DIRECT_REPLY_KEY, Message, Part, TaskState, TaskStatus, timestamp_now,
};
use crate::state::records::record::TaskRecord;
use crate::state::store::{StoreError, Tx};
use crate::state::tasks::hub::TaskHub;

/// Sets the task's state, with the message that says why, stamped now.
pub(super) fn set_status(record: &mut TaskRecord, state: TaskState, message: Option<Message>) {
    record.status = TaskStatus {
        state,
        message,
        timestamp: Some(timestamp_now()),
    };
}

/// Completes the task with the model's answer: status message, history and an `answer` artifact.
pub(super) fn complete(
    record: &mut TaskRecord,
    tx: &mut Tx<'_>,
    answer: &str,
) -> Result<(), StoreError> {
    finish_task(record, tx, answer, &Finish::default())
}

/// Ends the turn loop with the model's final reply: the text becomes the status message (and
/// joins the history), then `finish` picks the artifacts (by default an `answer` artifact of the
/// text) and the state (by default completed). A direct reply is marked as such in the
/// message's metadata, where the protocol server looks for it.
pub(super) fn finish_task(
    record: &mut TaskRecord,
    tx: &mut Tx<'_>,
    text: &str,
    finish: &Finish,
) -> Result<(), StoreError> {
    let mut message = Message::agent_text(&record.id, &record.context_id, text);
    if finish.state == FinishState::DirectMessage {
        let mut metadata = serde_json::Map::new();
        metadata.insert(DIRECT_REPLY_KEY.to_string(), true.into());
        message.metadata = Some(metadata);
    }
    tx.append_message(&record.id, &message)?;
    match &finish.artifacts {
        None => record.artifacts.push(Artifact {
            artifact_id: uuid::Uuid::new_v4().to_string(),
            name: "answer".to_string(),
            parts: vec![Part::text(text)],
            ..Artifact::default()
        }),
        Some(artifacts) => record.artifacts.extend(artifacts.iter().cloned()),
    }
    set_status(record, finish.state.task_state(), Some(message));
    Ok(())
}

/// Fails the task with a reason the requester can act on.
pub(crate) async fn fail(hub: &TaskHub, id: &str, reason: &str) -> Result<(), StoreError> {
    let reason = reason.to_string();
    hub.change(id, move |rec, tx| {
        let message = Message::agent_text(&rec.id, &rec.context_id, reason);
        tx.append_message(&rec.id, &message)?;
        set_status(rec, TaskState::Failed, Some(message));
        Ok(())
    })
    .await?;
    Ok(())
}
