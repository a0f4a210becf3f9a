//! The steps a turn takes before any work: read the task, drain its news, start it or let it
//! wait, check its token budget, finish with the model's answer, check the turn limit and find
//! its model. Each may end the step; apart from the loop so that `next_step` reads as their order.

use std::sync::Arc;

use super::{advance, has_open_subtasks};
use crate::base::model::Model;
use crate::base::protocol::types::TaskState;
use crate::state::records::record::TaskRecord;
use crate::state::store::StoreError;
use crate::state::tasks::hub::{Change, TaskHub};
use crate::work::engine::budget::Budget;
use crate::work::engine::inbox::{Drained, drain, has_unread};
use crate::work::engine::journal::Replay;
use crate::work::engine::progress::{self, Doing};
use crate::work::engine::shared::{Shared, Step, StepError};
use crate::work::engine::status::{complete, fail, set_status};

/// The task as its loop keeps it; `None` when it is gone or has ended: the loop stops.
pub(super) fn open_task(hub: &TaskHub, id: &str) -> Result<Option<Arc<TaskRecord>>, StoreError> {
    let Some(record) = hub.task_for_loop(id)? else {
        return Ok(None);
    };
    if record.state().is_terminal() {
        return Ok(None);
    }
    Ok(Some(record))
}

/// Drains the task's news (unless its first input was journaled when it was created); the
/// task as the drain left it, or `None` when it ended before the news could be written.
pub(super) async fn drain_news(
    shared: &Shared,
    record: Arc<TaskRecord>,
    replay: &mut Replay,
) -> Result<Option<Arc<TaskRecord>>, StepError> {
    // What was drained is journaled with the state it sets; the step goes on from the record
    // that write left, without reading the inbox again: news that lands from here on is found
    // by the next step, and no answer is final while some is unread (`has_unread`).
    let drained = if std::mem::take(&mut replay.skip_drain_once) {
        Drained::Nothing
    } else {
        drain(shared, &record, replay).await?
    };
    Ok(match drained {
        Drained::Nothing | Drained::Unwritten => Some(record),
        Drained::Recorded(after) => Some(after),
        Drained::Ended => None,
    })
}

/// A submitted task starts working; a task waiting for input or authorization parks. `None`
/// for a task that is working.
pub(super) async fn start_or_wait(
    hub: &TaskHub,
    id: &str,
    record: &TaskRecord,
) -> Result<Option<Step>, StoreError> {
    match record.state() {
        TaskState::Submitted => {
            return Ok(Some(advance(
                hub.change(id, |rec, _| {
                    set_status(rec, TaskState::Working, None);
                    Ok(())
                })
                .await?,
            )));
        }
        TaskState::InputRequired | TaskState::AuthRequired => return Ok(Some(Step::Park)),
        _ => {}
    }
    Ok(None)
}

/// Fails a task past its token budget (what it used and what its children hold): `Stop`.
pub(super) async fn check_budget(
    hub: &TaskHub,
    id: &str,
    token_budget: Option<Budget>,
    held: u64,
    replay: &Replay,
) -> Result<Option<Step>, StoreError> {
    if let Some(reason) = token_budget.and_then(|b| b.exceeded_by(&replay.usage, held)) {
        // Checked before the reply's tool calls run as well as before the next model call: a
        // task past its budget starts nothing more, sub-tasks included.
        fail(hub, id, &reason).await?;
        return Ok(Some(Step::Stop));
    }
    Ok(None)
}

/// Where the model has nothing to do: a task made to carry out a command, or one whose model
/// has answered, parks while it waits for its sub-tasks; with none open, the answer completes
/// it unless news came after it. `None` when the model is to be called.
pub(super) async fn answer_or_wait(
    hub: &TaskHub,
    id: &str,
    record: &TaskRecord,
    replay: &Replay,
) -> Result<Option<Step>, StoreError> {
    if replay.only_commands() {
        // Made to carry out a command: nothing for the model until its sub-task reports.
        return Ok(Some(Step::Park));
    }
    if let Some(answer) = replay.final_reply.clone() {
        if has_open_subtasks(record) {
            for link in record.ext.sub_tasks.iter().filter(|l| !l.has_ended()) {
                let doing = Doing::WaitingOnSubTask {
                    task: &link.task_id,
                    agent: link.agent_id(),
                };
                progress::announce(hub, record, doing);
            }
            return Ok(Some(Step::Park));
        }
        let read_through = replay.last_inbound_seq;
        let change = hub
            .change(id, move |rec, tx| {
                if has_unread(tx, &rec.id, read_through)? {
                    return Ok(false);
                }
                complete(rec, tx, &answer)?;
                Ok(true)
            })
            .await?;
        return Ok(Some(match change {
            // News came after the answer: the next step reads it and the model answers again.
            Change::Applied(_, false) => Step::Continue,
            _ => Step::Stop,
        }));
    }
    Ok(None)
}

/// The model the next turn calls; `None` when the task may not have another turn and was
/// failed, saying why: it reached `limits.max_turns`, or its model is no longer configured.
pub(super) async fn model_for_turn(
    shared: &Shared,
    id: &str,
    record: &TaskRecord,
    replay: &Replay,
) -> Result<Option<Arc<dyn Model>>, StoreError> {
    let hub = &shared.hub;
    if replay.turn_calls >= shared.settings.max_turns as usize {
        let reason = format!(
            "the task reached limits.max_turns ({}) without finishing",
            shared.settings.max_turns
        );
        fail(hub, id, &reason).await?;
        return Ok(None);
    }
    let model = match shared.models.resolve(record.ext.model.as_deref()) {
        Ok(model) => model.clone(),
        Err(unknown) => {
            // Named at creation, gone since: the configuration changed under an open task.
            fail(
                hub,
                id,
                &format!("the task cannot run: {}", unknown.message()),
            )
            .await?;
            return Ok(None);
        }
    };
    Ok(Some(model))
}
