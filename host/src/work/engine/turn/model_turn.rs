//! The model's turn: assemble the request, compact or refuse when it does not fit, check the
//! call against the token budget, call the model, and record its reply (with its first tool call
//! when that stays in the process). Apart from the checks before it, which may end a step early.

use std::sync::Arc;

use super::call::Call;
use super::compaction::compact;
use super::tool_calls::{apply_effects, first_call_in_process, follow_new_children, result_entry};
use super::{advance, append_unjournaled, has_open_subtasks};
use crate::base::model::{Effort, Model, ModelReply, ModelRequest, Origin};
use crate::base::protocol::types::Role;
use crate::state::records::record::TaskRecord;
use crate::state::store::StoreError;
use crate::state::tasks::hub::{Change, TaskHub};
use crate::work::context::budget::{Fit, RequestSize, fit, turn_budget};
use crate::work::context::compaction::split_point;
use crate::work::context::{TurnInput, assemble};
use crate::work::engine::budget::{self, Budget};
use crate::work::engine::inbox::has_unread;
use crate::work::engine::journal::{JournalEntry, Replay};
use crate::work::engine::progress::{self, Doing};
use crate::work::engine::shared::{Shared, Step, StepError};
use crate::work::engine::status::{fail, finish_task};

/// One model turn of a working task, within its budget: `token_budget` and `held` are its
/// budget and what its children hold of it, as the step's budget check read them.
pub(super) async fn take_turn(
    shared: &Shared,
    id: &str,
    record: &TaskRecord,
    replay: &mut Replay,
    model: Arc<dyn Model>,
    token_budget: Option<Budget>,
    held: u64,
) -> Result<Step, StepError> {
    let effort = record
        .ext
        .reasoning_effort
        .as_deref()
        .and_then(Effort::parse);
    let origin = Origin {
        task_id: id.to_string(),
        message_id: newest_inbound_id(&shared.hub, id, replay)?,
        turn: replay.turn_calls,
    };
    let mut request = assemble_request(shared, record, replay);
    let size = RequestSize::of(&request);
    let call = Call {
        effort,
        origin,
        model_name: record.ext.model.as_deref().unwrap_or("default").to_string(),
        trace: record.ext.trace.clone(),
    };
    if let Some(exit) = fit_or_compact(shared, &*model, &call, id, replay, size).await? {
        return Ok(exit);
    }
    if let Some(exit) = check_next_call(&shared.hub, id, token_budget, held, replay, size).await? {
        return Ok(exit);
    }
    request.effort = call.effort;
    request.origin = call.origin.clone();
    progress::announce(&shared.hub, record, Doing::CallingModel);
    let reply = call.complete(&*model, &request, id).await?;
    Ok(record_reply(shared, id, replay, reply).await?)
}

/// The request of the task's next turn: the static prefix, its per-task sections and its live
/// history.
fn assemble_request(shared: &Shared, record: &TaskRecord, replay: &Replay) -> ModelRequest {
    let skills = shared.skills.sections(replay.skills());
    let input = TurnInput {
        record,
        skills: &skills,
        summary: replay.summary.as_deref(),
        conversation: replay.conversation.as_deref(),
        history: replay.turn_messages(&record.ext.goal),
    };
    let settings = &shared.settings;
    assemble(
        &shared.prefix.current(),
        &shared.tool_specs.current(),
        settings.max_output_tokens,
        &input,
    )
}

/// A request past the compaction fraction of the turn budget compacts the history (`Continue`:
/// the next step assembles again); one that cannot fit fails the task (`Stop`). `None` when it
/// is sent as it is.
async fn fit_or_compact(
    shared: &Shared,
    model: &dyn Model,
    call: &Call,
    id: &str,
    replay: &mut Replay,
    size: RequestSize,
) -> Result<Option<Step>, StepError> {
    let settings = &shared.settings;
    let limit = turn_budget(settings.turn_budget_tokens, model.context_window());
    let cut = split_point(replay.live_history());
    match (
        fit(size, limit, settings.compaction_fraction, cut.is_some()),
        cut,
    ) {
        (Fit::Compact, Some(cut)) => {
            compact(shared, model, call, id, replay, cut, limit).await?;
            return Ok(Some(Step::Continue));
        }
        (Fit::Over(reason), _) => {
            // No request is sent that the model cannot take, and no compaction that cannot
            // help is tried again at every turn: the task ends, saying why.
            tracing::warn!(task = %id, "{reason}");
            fail(&shared.hub, id, &reason.to_string()).await?;
            return Ok(Some(Step::Stop));
        }
        _ => {}
    }
    Ok(None)
}

/// Fails the task (`Stop`) when the call it is about to make would take it past its budget.
async fn check_next_call(
    hub: &TaskHub,
    id: &str,
    token_budget: Option<Budget>,
    held: u64,
    replay: &Replay,
    size: RequestSize,
) -> Result<Option<Step>, StoreError> {
    // A call is expected to cost at least the request's estimate, and at least what the last
    // one did: stopping before it keeps a tree within its root's budget.
    let next = (size.total as u64).max(replay.last_call.total());
    if let Some(reason) = token_budget.and_then(|b| b.next_call_over(&replay.usage, held, next)) {
        fail(hub, id, &reason).await?;
        return Ok(Some(Step::Stop));
    }
    Ok(None)
}

/// Journals the model's reply with the task's usage, and either the result of its first tool
/// call (run now when it stays in the process) or, for a final answer with nothing open and
/// nothing unread, the task's ending.
async fn record_reply(
    shared: &Shared,
    id: &str,
    replay: &mut Replay,
    reply: ModelReply,
) -> Result<Step, StoreError> {
    let hub = &shared.hub;
    let usage = replay.usage.plus(reply.usage);
    let entry = JournalEntry::ModelCall {
        reply: reply.clone(),
    };
    let early = first_call_in_process(shared, id, replay, &reply, usage).await?;
    let result = early
        .as_ref()
        .map(|(call, outcome)| result_entry(call, outcome));
    let effects = early
        .map(|(_, outcome)| outcome.effects)
        .unwrap_or_default();
    // The answer is the task's only if nothing arrived while the model wrote it: a report or a
    // message that landed during the call was not in the request, so the reply is recorded and
    // the next step drains the news and asks the model again.
    let read_through = replay.last_inbound_seq;
    let task_token_budget = shared.settings.task_token_budget;
    let recorded = entry.clone();
    let (recorded_result, applied) = (result.clone(), effects.clone());
    let earlier = std::mem::take(&mut replay.unjournaled);
    let change = hub
        .change(id, move |rec, tx| {
            let id = rec.id.clone();
            append_unjournaled(tx, &id, &earlier)?;
            tx.append_journal(&id, &recorded)?;
            budget::show_usage(rec, usage, task_token_budget);
            if let Some(result) = &recorded_result {
                apply_effects(rec, &applied, tx)?;
                tx.append_journal(&id, result)?;
            } else if reply.tool_calls.is_empty()
                && !has_open_subtasks(rec)
                && !has_unread(tx, &id, read_through)?
            {
                finish_task(rec, tx, &reply.text, &reply.finish)?;
            }
            Ok(())
        })
        .await?;
    if matches!(change, Change::Applied(..)) {
        replay.apply(&entry);
        if let Some(result) = &result {
            replay.apply(result);
        }
        follow_new_children(shared, id, &effects);
    }
    Ok(advance(change))
}

/// The id of the newest participant message, the one this turn answers (at `seq`, the last one
/// drained), for models that key their behaviour on it.
fn newest_inbound_id(
    hub: &TaskHub,
    id: &str,
    replay: &Replay,
) -> Result<Option<String>, StoreError> {
    let seq = replay.last_inbound_seq;
    if let Some((drained, message_id)) = &replay.newest_drained
        && *drained == seq
    {
        return Ok(message_id.clone());
    }
    let messages = hub.store().messages_after(id, seq.saturating_sub(1))?;
    Ok(messages
        .into_iter()
        .find(|(at, message)| *at == seq && message.role == Role::User)
        .map(|(_, message)| message.message_id))
}
