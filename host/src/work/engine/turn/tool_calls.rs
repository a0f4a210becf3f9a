//! A turn's tool calls: the call a recorded reply left pending, the first call of a new reply
//! when it stays in the process, the journal entry of a result and what its effects change in
//! the task (plan, questions, sub-tasks, roles). Apart from the model's turn that asks for them.

use std::time::Instant;

use super::{advance, append_unjournaled};
use crate::base::model::{ModelReply, ToolCall, Usage};
use crate::base::protocol::types::{Message, TaskState};
use crate::base::telemetry;
use crate::state::records::extension::StepState;
use crate::state::records::record::TaskRecord;
use crate::state::store::{StoreError, Tx};
use crate::state::tasks::hub::Change;
use crate::work::engine::budget::{self, Budget};
use crate::work::engine::journal::{JournalEntry, Replay};
use crate::work::engine::progress::{self, Doing};
use crate::work::engine::shared::{Shared, Step};
use crate::work::engine::status::set_status;
use crate::work::tools::{Effect, ToolContext, ToolOutcome};

/// Runs the call a recorded reply left pending and journals its result with its effects.
pub(super) async fn run_pending_call(
    shared: &Shared,
    id: &str,
    record: &TaskRecord,
    replay: &mut Replay,
    call: ToolCall,
) -> Result<Step, StoreError> {
    let context = ToolContext {
        record,
        call_id: &call.id,
        skills: replay.skills(),
    };
    progress::announce(&shared.hub, record, Doing::RunningTool(&call.name));
    let started = Instant::now();
    let task = telemetry::task_context(id, record.ext.trace.as_deref());
    let mut span = telemetry::execute_tool(task.as_ref(), &call.name, &call.id, None);
    let invoked = shared.tools.invoke(&context, &call);
    let outcome = telemetry::within(span.context(), invoked).await;
    progress::tool_ran(id, &call, outcome.result.is_ok(), started.elapsed());
    progress::tool_traced(&mut span, &outcome);
    let entry = result_entry(&call, &outcome);
    let effects = outcome.effects.clone();
    let recorded = entry.clone();
    let earlier = std::mem::take(&mut replay.unjournaled);
    let change = shared
        .hub
        .change(id, move |rec, tx| {
            append_unjournaled(tx, &rec.id, &earlier)?;
            apply_effects(rec, &effects, tx)?;
            tx.append_journal(&rec.id.clone(), &recorded)
        })
        .await?;
    if matches!(change, Change::Applied(..)) {
        replay.apply(&entry);
    }
    follow_new_children(shared, id, &outcome.effects);
    Ok(advance(change))
}

/// The reply's first tool call, run before the reply is journaled when it stays in the process
/// ([`crate::work::tools::ToolHost::invoke_in_process`]): the reply and the call's result then share
/// one transaction, a turn's one commit. `None` when the call asked to reach outside (it runs once
/// the reply is journaled, so that a restart replays that call rather than asking the model
/// for another), when the reply makes no call, or when the next step has to stop the task
/// instead (ended meanwhile, or past its token budget with this reply).
pub(super) async fn first_call_in_process(
    shared: &Shared,
    id: &str,
    replay: &Replay,
    reply: &ModelReply,
    usage: Usage,
) -> Result<Option<(ToolCall, ToolOutcome)>, StoreError> {
    let Some(call) = reply.tool_calls.first() else {
        return Ok(None);
    };
    // Read again: the model's answer took its time, and the call sees the task as it is now.
    let Some(record) = shared.hub.task_for_loop(id)? else {
        return Ok(None);
    };
    let held = budget::held_by_children(&record);
    let over_budget = Budget::of(&record, shared.settings.task_token_budget)
        .is_some_and(|b| b.exceeded_by(&usage, held).is_some());
    if record.state().is_terminal() || over_budget {
        return Ok(None);
    }
    let context = ToolContext {
        record: &record,
        call_id: &call.id,
        skills: replay.skills(),
    };
    progress::announce(&shared.hub, &record, Doing::RunningTool(&call.name));
    let started = Instant::now();
    let since = telemetry::enabled().then(std::time::SystemTime::now);
    // In the process, a call makes no request: its span is made once it is known to have run
    // (a call that must reach outside runs, and is traced, after its reply is journaled).
    let outcome = shared.tools.invoke_in_process(&context, call).await;
    if let Some(outcome) = &outcome {
        progress::tool_ran(id, call, outcome.result.is_ok(), started.elapsed());
        let task = telemetry::task_context(id, record.ext.trace.as_deref());
        let mut span = telemetry::execute_tool(task.as_ref(), &call.name, &call.id, since);
        progress::tool_traced(&mut span, outcome);
    }
    Ok(outcome.map(|outcome| (call.clone(), outcome)))
}

/// The journal entry of a call's result, with the effects applied with it.
pub(super) fn result_entry(call: &ToolCall, outcome: &ToolOutcome) -> JournalEntry {
    JournalEntry::ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: outcome.text(),
        is_error: outcome.result.is_err(),
        effects: outcome.effects.clone(),
    }
}

/// Starts following the children a tool call just created.
pub(super) fn follow_new_children(shared: &Shared, parent: &str, effects: &[Effect]) {
    let Some(children) = shared.children.as_ref() else {
        return;
    };
    for effect in effects {
        if let Effect::LinkSubtask { link, .. } = effect {
            progress::child_created(parent, link.agent_id(), &link.task_id);
            children.follow(parent, link);
        }
    }
}

/// Applies a tool call's effects to the task, in the transaction that journals its result.
pub(super) fn apply_effects(
    record: &mut TaskRecord,
    effects: &[Effect],
    tx: &mut Tx<'_>,
) -> Result<(), StoreError> {
    for effect in effects {
        match effect {
            Effect::AttachPlan { plan } => record.ext.plan = Some(plan.clone()),
            Effect::CompleteStep { step, output } => {
                if let Some(plan) = record.ext.plan.as_mut()
                    && let Some(found) = plan.steps.iter_mut().find(|s| &s.id == step)
                {
                    found.state = StepState::Done;
                    found.output = Some(output.clone());
                }
            }
            Effect::AskParticipant {
                participant_id,
                question,
                options,
            } => {
                let mut text = question.clone();
                if !options.is_empty() {
                    text.push_str(&format!("\noptions: {}", options.join(", ")));
                }
                let mut message = Message::agent_text(&record.id, &record.context_id, text);
                let mut metadata = serde_json::Map::new();
                metadata.insert("participant_id".into(), participant_id.clone().into());
                message.metadata = Some(metadata);
                tx.append_message(&record.id, &message)?;
                set_status(record, TaskState::InputRequired, Some(message));
            }
            Effect::LinkSubtask { link, step } => {
                if !record
                    .ext
                    .sub_tasks
                    .iter()
                    .any(|l| l.is(link.agent_id(), &link.task_id))
                {
                    record.ext.sub_tasks.push(link.clone());
                }
                if let Some(step) = step
                    && let Some(plan) = record.ext.plan.as_mut()
                    && let Some(found) = plan.steps.iter_mut().find(|s| &s.id == step)
                {
                    found.linked_tasks.push(link.task_id.clone());
                    if found.state == StepState::Pending {
                        found.state = StepState::Active;
                    }
                }
            }
            // A task's skills are its journal's: `Replay` folds these from the recorded result.
            Effect::LoadSkill { .. } | Effect::UnloadSkill { .. } => {}
            Effect::SetRole {
                participant_id,
                role,
            } => {
                if let Some(participant) = record
                    .ext
                    .participants
                    .iter_mut()
                    .find(|p| &p.id == participant_id)
                {
                    participant.role = *role;
                }
            }
        }
    }
    Ok(())
}
