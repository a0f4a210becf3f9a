//! Tasks a participant works (lifecycle `participant`), such as those
//! `create_task_for_participant` makes: the model never runs; the task waits, addressed to its
//! assignee, and the assignee's reply is its answer.

use super::journal::Replay;
use super::shared::Step;
use super::status::{complete, set_status};
use crate::base::protocol::types::{Message, TaskState};
use crate::state::records::extension::Role;
use crate::state::records::record::TaskRecord;
use crate::state::store::StoreError;
use crate::state::tasks::hub::TaskHub;

/// One step of a task its assignee works (lifecycle `participant`): the model never runs. The
/// task waits, addressed to the assignee, and the assignee's reply is its answer.
pub(super) async fn participant_step(
    hub: &TaskHub,
    record: &TaskRecord,
    replay: &Replay,
) -> Result<Step, StoreError> {
    let assignee = record
        .ext
        .participants
        .iter()
        .find(|p| p.role == Role::Assignee)
        .map(|p| p.id.clone());
    let answers = |from: &str| match &assignee {
        Some(assignee) => from == assignee,
        None => from != record.owner,
    };
    if let Some(answer) = replay.last_inbound_from(answers) {
        let answer = answer.to_string();
        hub.change(&record.id, move |rec, tx| complete(rec, tx, &answer))
            .await?;
        return Ok(Step::Stop);
    }
    if record.state() != TaskState::InputRequired {
        hub.change(&record.id, move |rec, tx| {
            let mut message = Message::agent_text(&rec.id, &rec.context_id, rec.ext.goal.clone());
            if let Some(assignee) = &assignee {
                let mut metadata = serde_json::Map::new();
                metadata.insert("participant_id".into(), assignee.clone().into());
                message.metadata = Some(metadata);
            }
            tx.append_message(&rec.id, &message)?;
            set_status(rec, TaskState::InputRequired, Some(message));
            Ok(())
        })
        .await?;
    }
    Ok(Step::Park)
}
