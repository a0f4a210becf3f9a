//! One task's loop: each step reads what the journal says, does the one next thing (drain new
//! messages, run a pending tool call, compact, call the model, finish), and records it in one
//! transaction with the task's new state before the next step begins. A model call's first
//! tool call, when it stays in the process, is run and recorded with it: one transaction.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::budget::{self, Budget};
use super::children::Children;
use super::inbox::{Drained, drain, has_unread};
use super::journal::{JournalEntry, Replay};
use super::participant_task::participant_step;
use crate::context::budget::{Fit, RequestSize, fit, turn_budget};
use crate::context::compaction::{split_point, summary_request};
use crate::context::{StaticPrefix, TurnInput, assemble};
use crate::model::{
    Effort, Finish, Model, ModelError, ModelReply, Models, ToolCall, ToolSpec, TurnContext,
    TurnReply, Usage,
};
use crate::protocol::types::{
    Artifact, DIRECT_REPLY_KEY, Message, Part, Role, TaskState, TaskStatus, timestamp_now,
};
use crate::records::extension::{Lifecycle, StepState};
use crate::records::record::TaskRecord;
use crate::skills::Catalog;
use crate::store::{StoreError, Tx};
use crate::tasks::hub::{Change, TaskHub};
use crate::tools::{Effect, ToolContext, ToolHost, ToolOutcome};

/// Settings of the turn loop, from `[context]`, `[limits]` and `[model]`.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    pub max_turns: u32,
    pub turn_budget_tokens: usize,
    pub compaction_fraction: f64,
    pub max_output_tokens: Option<u32>,
    /// `limits.task_token_budget`: no task uses more, whatever its brief says.
    pub task_token_budget: Option<u64>,
}

/// What every loop shares: computed once at start-up.
pub(crate) struct Shared {
    pub hub: Arc<TaskHub>,
    /// The default model and the named ones; each task runs on the one its brief names.
    pub models: Models,
    pub tools: Arc<dyn ToolHost>,
    pub prefix: StaticPrefix,
    /// The tool definitions, sorted by name, as sent on every turn.
    pub tool_specs: Arc<[ToolSpec]>,
    pub settings: EngineSettings,
    /// Creates and follows child tasks; `None` where tasks have no children (tests).
    pub children: Option<Arc<Children>>,
    /// The skills whose bodies loaded skills' sections hold.
    pub skills: Arc<Catalog>,
}

/// What a task's loop does after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Go on at once: there is more to do.
    Continue,
    /// Wait for news (a message, a child's report).
    Park,
    /// The task has ended, or cannot go on in this process (a store error).
    Stop,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum StepError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Model(#[from] ModelError),
}

/// The task's journal folded, to take steps from.
pub(crate) fn replay_of(shared: &Shared, id: &str) -> Result<Replay, StoreError> {
    let entries = shared.hub.store().journal::<JournalEntry>(id)?;
    Ok(Replay::from_entries(entries.iter().map(|(_, e)| e)))
}

/// One step of the task, the same on every engine: the next thing the journal says is to be
/// done, recorded before it returns. A failed model call fails the task (with the reason a
/// client may read) and a task that ends failed cancels its open children. A store error is
/// returned: the embedded engine stops the loop until the next start, a distributed one retries.
pub(crate) async fn step(
    shared: &Shared,
    id: &str,
    replay: &mut Replay,
) -> Result<Step, StoreError> {
    let next = next_step(shared, id, replay).await;
    if next.is_ok() && !replay.unjournaled.is_empty() {
        // The step wrote no journal entry after its drain (it parks or the task ended): what
        // the drain found is written on its own.
        write_unjournaled(&shared.hub, id, replay).await?;
    }
    match next {
        Ok(Step::Stop) => {
            cancel_children_of_ended(shared, id);
            Ok(Step::Stop)
        }
        Ok(step) => Ok(step),
        Err(StepError::Model(err)) => {
            tracing::warn!(task = %id, "model call failed: {err}");
            fail(&shared.hub, id, &err.public_reason()).await?;
            cancel_children_of_ended(shared, id);
            Ok(Step::Stop)
        }
        Err(StepError::Store(err)) => Err(err),
    }
}

/// How a parked loop learns whether it may go: news that came while it was stepping keeps it.
pub(crate) trait Parking: Send {
    /// Called before each step reads the store: news from here on keeps the loop.
    fn begin_step(&self);
    /// The loop has nothing to do; true when it is to end (nothing arrived since
    /// [`Parking::begin_step`]). A loop that ends keeps nothing in memory: the next news starts
    /// a fresh one from the journal.
    fn retire(&mut self) -> bool;
}

/// Where a loop starts from.
#[derive(Debug)]
pub(crate) enum Origin {
    /// The task was just created, in the same process: its journal is empty, so there is
    /// nothing to read.
    Created,
    /// The task was just created, in the same process, with its first message journaled in
    /// the creating transaction and its state set working: its journal is this replay's one
    /// entry, so there is nothing to read either.
    Drained(Box<Replay>),
    /// The task has a past (news woke it, or the process restarted): its journal is read.
    Journal,
}

/// Runs a task until it is terminal or parked. Stops early, leaving the task as it is, when
/// `stop` is cancelled (a cancel request or shutdown).
pub(crate) async fn run_task(
    shared: Arc<Shared>,
    id: String,
    origin: Origin,
    parking: impl Parking,
    stop: CancellationToken,
) {
    loop_steps(&shared, &id, origin, parking, stop).await;
    // However the loop ended, the record it kept goes: the next loop reads the store.
    shared.hub.loop_stopped(&id);
}

async fn loop_steps(
    shared: &Shared,
    id: &str,
    origin: Origin,
    mut parking: impl Parking,
    stop: CancellationToken,
) {
    let read = match origin {
        // Only the task's own loop journals, and this is its first.
        Origin::Created => Ok(Replay::default()),
        Origin::Drained(replay) => Ok(*replay),
        Origin::Journal => replay_of(shared, id),
    };
    let mut replay = match read {
        Ok(replay) => replay,
        Err(err) => {
            tracing::error!(task = %id, "cannot read the journal: {err}");
            return;
        }
    };
    loop {
        parking.begin_step();
        let step = tokio::select! {
            biased;
            _ = stop.cancelled() => return,
            step = step(shared, id, &mut replay) => step,
        };
        match step {
            Ok(Step::Continue) => {}
            Ok(Step::Park) => {
                // Dropped before the loop may end, so that no record outlives its loop; when
                // news keeps the loop, its next step reads the store.
                shared.hub.loop_stopped(id);
                if parking.retire() {
                    return;
                }
            }
            Ok(Step::Stop) => return,
            Err(err) => {
                // The task stays open and resumes from its journal at the next start.
                tracing::error!(task = %id, "store error; the task stops until restart: {err}");
                return;
            }
        }
    }
}

async fn next_step(shared: &Shared, id: &str, replay: &mut Replay) -> Result<Step, StepError> {
    let hub = &shared.hub;
    let Some(record) = hub.task_for_loop(id)? else {
        return Ok(Step::Stop);
    };
    if record.state().is_terminal() {
        return Ok(Step::Stop);
    }
    // What was drained is journaled with the state it sets; the step goes on from the record
    // that write left, without reading the inbox again: news that lands from here on is found
    // by the next step, and no answer is final while some is unread (`has_unread`).
    let drained = if std::mem::take(&mut replay.skip_drain_once) {
        Drained::Nothing
    } else {
        drain(shared, &record, replay).await?
    };
    let record = match drained {
        Drained::Nothing | Drained::Unwritten => record,
        Drained::Recorded(after) => after,
        Drained::Ended => return Ok(Step::Continue),
    };
    if record.ext.lifecycle == Lifecycle::Participant {
        return Ok(participant_step(hub, &record, replay).await?);
    }
    match record.state() {
        TaskState::Submitted => {
            return Ok(advance(
                hub.change(id, |rec, _| {
                    set_status(rec, TaskState::Working, None);
                    Ok(())
                })
                .await?,
            ));
        }
        TaskState::InputRequired | TaskState::AuthRequired => return Ok(Step::Park),
        _ => {}
    }
    let token_budget = Budget::of(&record, shared.settings.task_token_budget);
    let held = budget::held_by_children(&record);
    if let Some(reason) = token_budget.and_then(|b| b.exceeded_by(&replay.usage, held)) {
        // Checked before the reply's tool calls run as well as before the next model call: a
        // task past its budget starts nothing more, sub-tasks included.
        fail(hub, id, &reason).await?;
        return Ok(Step::Stop);
    }
    if let Some(call) = replay.next_pending_call().cloned() {
        let context = ToolContext {
            record: &record,
            call_id: &call.id,
            skills: replay.skills(),
        };
        let outcome = shared.tools.invoke(&context, &call).await;
        let entry = result_entry(&call, &outcome);
        let effects = outcome.effects.clone();
        let recorded = entry.clone();
        let earlier = std::mem::take(&mut replay.unjournaled);
        let change = hub
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
        return Ok(advance(change));
    }
    if replay.only_commands() {
        // Made to carry out a command: nothing for the model until its sub-task reports.
        return Ok(Step::Park);
    }
    if let Some(answer) = replay.final_reply.clone() {
        if has_open_subtasks(&record) {
            return Ok(Step::Park);
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
        return Ok(match change {
            // News came after the answer: the next step reads it and the model answers again.
            Change::Applied(_, false) => Step::Continue,
            _ => Step::Stop,
        });
    }
    if replay.turn_calls >= shared.settings.max_turns as usize {
        let reason = format!(
            "the task reached limits.max_turns ({}) without finishing",
            shared.settings.max_turns
        );
        fail(hub, id, &reason).await?;
        return Ok(Step::Stop);
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
            return Ok(Step::Stop);
        }
    };
    let effort = record
        .ext
        .reasoning_effort
        .as_deref()
        .and_then(Effort::parse);
    let skills = shared.skills.sections(replay.skills());
    let input = TurnInput {
        record: &record,
        skills: &skills,
        summary: replay.summary.as_deref(),
        history: replay.turn_messages(&record.ext.goal),
    };
    let settings = &shared.settings;
    let request = assemble(
        &shared.prefix,
        &shared.tool_specs,
        settings.max_output_tokens,
        &input,
    );
    let limit = turn_budget(settings.turn_budget_tokens, model.context_window());
    let cut = split_point(replay.live_history());
    let size = RequestSize::of(&request);
    match (
        fit(size, limit, settings.compaction_fraction, cut.is_some()),
        cut,
    ) {
        (Fit::Compact, Some(cut)) => {
            compact(shared, &*model, effort, id, replay, cut, limit).await?;
            return Ok(Step::Continue);
        }
        (Fit::Over(reason), _) => {
            // No request is sent that the model cannot take, and no compaction that cannot
            // help is tried again at every turn: the task ends, saying why.
            tracing::warn!(task = %id, "{reason}");
            fail(hub, id, &reason.to_string()).await?;
            return Ok(Step::Stop);
        }
        _ => {}
    }
    // A call is expected to cost at least the request's estimate, and at least what the last
    // one did: stopping before it keeps a tree within its root's budget.
    let next = (size.total as u64).max(replay.last_call.total());
    if let Some(reason) = token_budget.and_then(|b| b.next_call_over(&replay.usage, held, next)) {
        fail(hub, id, &reason).await?;
        return Ok(Step::Stop);
    }
    let message_id = newest_inbound_id(hub, id, replay)?;
    let turn = TurnContext {
        task_id: id,
        message_id: message_id.as_deref(),
        effort,
        turn: replay.turn_calls,
    };
    let TurnReply { reply, finish } = model.complete_turn(&request, &turn).await?;
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
    let task_token_budget = settings.task_token_budget;
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
                finish_task(rec, tx, &reply.text, &finish.unwrap_or_default())?;
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

/// The reply's first tool call, run before the reply is journaled when it stays in the process
/// ([`ToolHost::invoke_in_process`]): the reply and the call's result then share one
/// transaction, a turn's one commit. `None` when the call asked to reach outside (it runs once
/// the reply is journaled, so that a restart replays that call rather than asking the model
/// for another), when the reply makes no call, or when the next step has to stop the task
/// instead (ended meanwhile, or past its token budget with this reply).
async fn first_call_in_process(
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
    Ok(shared
        .tools
        .invoke_in_process(&context, call)
        .await
        .map(|outcome| (call.clone(), outcome)))
}

/// The journal entry of a call's result, with the effects applied with it.
fn result_entry(call: &ToolCall, outcome: &ToolOutcome) -> JournalEntry {
    JournalEntry::ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: outcome.text(),
        is_error: outcome.result.is_err(),
        effects: outcome.effects.clone(),
    }
}

/// A task that ended without its answer (failed, rejected, or canceled while a step was under
/// way) no longer wants its children's work: each open one is canceled on its agent, so nothing
/// keeps running for a parent that is gone. (A cancel request also does this itself; a second
/// cancel of a child is harmless.)
fn cancel_children_of_ended(shared: &Shared, id: &str) {
    let ended = matches!(
        shared.hub.task_for_loop(id),
        Ok(Some(record)) if matches!(
            record.state(),
            TaskState::Failed | TaskState::Rejected | TaskState::Canceled
        )
    );
    if ended && let Some(children) = shared.children.as_ref() {
        children.cancel_open(id);
    }
}

/// Starts following the children a tool call just created.
fn follow_new_children(shared: &Shared, parent: &str, effects: &[Effect]) {
    let Some(children) = shared.children.as_ref() else {
        return;
    };
    for effect in effects {
        if let Effect::LinkSubtask { link, .. } = effect {
            children.follow(parent, link);
        }
    }
}

/// Folds the oldest history into a summary, asked of the task's own model at its effort, in a
/// request within the turn budget.
async fn compact(
    shared: &Shared,
    model: &dyn Model,
    effort: Option<Effort>,
    id: &str,
    replay: &mut Replay,
    cut: usize,
    budget_tokens: usize,
) -> Result<(), StepError> {
    let folded = &replay.live_history()[..cut];
    let request = summary_request(
        replay.summary.as_deref(),
        folded,
        shared.settings.max_output_tokens,
        budget_tokens,
    );
    let removed_chars = request
        .messages
        .iter()
        .map(|m| match m {
            crate::model::ChatMessage::User { content } => content.len(),
            _ => 0,
        })
        .sum();
    let reply = model.complete_with_effort(&request, effort).await?;
    let usage = replay.usage.plus(reply.usage);
    let entry = JournalEntry::Compaction {
        summary: reply.text,
        folded_through: replay.folded_through + cut,
        removed_items: cut,
        removed_chars,
        usage: reply.usage,
    };
    tracing::info!(task = %id, removed_items = cut, "compacted the history");
    let limit = shared.settings.task_token_budget;
    let recorded = entry.clone();
    let earlier = std::mem::take(&mut replay.unjournaled);
    if let Change::Applied(..) = shared
        .hub
        .change(id, move |rec, tx| {
            append_unjournaled(tx, &rec.id, &earlier)?;
            budget::show_usage(rec, usage, limit);
            tx.append_journal(&rec.id.clone(), &recorded)
        })
        .await?
    {
        replay.apply(&entry);
    }
    Ok(())
}

/// Writes what a drain left unwritten ([`Replay::unjournaled`]) in a transaction of its own.
async fn write_unjournaled(hub: &TaskHub, id: &str, replay: &mut Replay) -> Result<(), StoreError> {
    let earlier = std::mem::take(&mut replay.unjournaled);
    hub.change(id, move |rec, tx| append_unjournaled(tx, &rec.id, &earlier))
        .await?;
    Ok(())
}

/// Appends what a drain left unwritten, before the entry of the step that writes it.
fn append_unjournaled(
    tx: &mut Tx<'_>,
    id: &str,
    earlier: &[JournalEntry],
) -> Result<(), StoreError> {
    for entry in earlier {
        tx.append_journal(id, entry)?;
    }
    Ok(())
}

/// Where the loop goes after a change: on, unless the change ended the task (then there is no
/// next step to read the store for) or found it ended or gone.
fn advance<T>(change: Change<T>) -> Step {
    match change {
        Change::Applied(record, _) if record.state().is_terminal() => Step::Stop,
        Change::Applied(..) => Step::Continue,
        Change::Terminal(_) | Change::Missing => Step::Stop,
    }
}

fn has_open_subtasks(record: &TaskRecord) -> bool {
    record.ext.sub_tasks.iter().any(|link| !link.has_ended())
}

pub(super) fn set_status(record: &mut TaskRecord, state: TaskState, message: Option<Message>) {
    record.status = TaskStatus {
        state,
        message,
        timestamp: Some(timestamp_now()),
    };
}

fn apply_effects(
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
fn finish_task(
    record: &mut TaskRecord,
    tx: &mut Tx<'_>,
    text: &str,
    finish: &Finish,
) -> Result<(), StoreError> {
    let mut message = Message::agent_text(&record.id, &record.context_id, text);
    if finish.direct_message {
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
