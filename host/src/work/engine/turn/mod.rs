//! One task's loop: each step reads what the journal says, does the one next thing (drain new
//! messages, run a pending tool call, compact, call the model, finish), and records it in one
//! transaction with the task's new state before the next step begins. A model call's first
//! tool call, when it stays in the process, is run and recorded with it: one transaction.

mod call;
mod checks;
mod compaction;
mod model_turn;
mod tool_calls;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::budget::{self, Budget};
use super::journal::{JournalEntry, Replay};
use super::participant_task::participant_step;
use super::progress;
use super::shared::{Shared, Step, StepError};
use super::status::fail;
use crate::base::protocol::types::TaskState;
use crate::state::records::extension::Lifecycle;
use crate::state::records::record::TaskRecord;
use crate::state::store::{StoreError, Tx};
use crate::state::tasks::hub::{Change, TaskHub};

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
    // Read once, here: a task that had ended before this step is not told ended again.
    let Some(record) = checks::open_task(&shared.hub, id)? else {
        if !replay.unjournaled.is_empty() {
            write_unjournaled(&shared.hub, id, replay).await?;
        }
        ended(shared, id, replay, false);
        return Ok(Step::Stop);
    };
    let next = next_step(shared, id, record, replay).await;
    if next.is_ok() && !replay.unjournaled.is_empty() {
        // The step wrote no journal entry after its drain (it parks or the task ended): what
        // the drain found is written on its own.
        write_unjournaled(&shared.hub, id, replay).await?;
    }
    match next {
        Ok(Step::Stop) => {
            ended(shared, id, replay, true);
            Ok(Step::Stop)
        }
        Ok(step) => Ok(step),
        Err(StepError::Model(err)) => {
            tracing::warn!(task = %id, "model call failed: {err}");
            fail(&shared.hub, id, &err.public_reason()).await?;
            ended(shared, id, replay, true);
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

/// The next step of the open task `record`, as the journal and the record say: drain its news,
/// start it or let it wait, check its token budget, run a pending tool call, finish with the
/// model's answer, check the turn limit, and take the model's turn. Each named step may end
/// this one.
async fn next_step(
    shared: &Shared,
    id: &str,
    record: Arc<TaskRecord>,
    replay: &mut Replay,
) -> Result<Step, StepError> {
    let hub = &shared.hub;
    let Some(record) = checks::drain_news(shared, record, replay).await? else {
        return Ok(Step::Continue);
    };
    if record.ext.lifecycle == Lifecycle::Participant {
        return Ok(participant_step(hub, &record, replay).await?);
    }
    if let Some(exit) = checks::start_or_wait(hub, id, &record).await? {
        return Ok(exit);
    }
    let token_budget = Budget::of(&record, shared.settings.task_token_budget);
    let held = budget::held_by_children(&record);
    if let Some(exit) = checks::check_budget(hub, id, token_budget, held, replay).await? {
        return Ok(exit);
    }
    if let Some(call) = replay.next_pending_call().cloned() {
        return Ok(tool_calls::run_pending_call(shared, id, &record, replay, call).await?);
    }
    if let Some(exit) = checks::answer_or_wait(hub, id, &record, replay).await? {
        return Ok(exit);
    }
    let Some(model) = checks::model_for_turn(shared, id, &record, replay).await? else {
        return Ok(Step::Stop);
    };
    model_turn::take_turn(shared, id, &record, replay, model, token_budget, held).await
}

/// After a step that stopped the loop: a task this step ended tells its end in the log, and a
/// task that ended without its answer (failed, rejected, or canceled while a step was under
/// way) no longer wants its children's work: each open one is canceled on its agent, so nothing
/// keeps running for a parent that is gone. (A cancel request also does this itself; a second
/// cancel of a child is harmless.)
fn ended(shared: &Shared, id: &str, replay: &Replay, in_this_step: bool) {
    let Ok(Some(record)) = shared.hub.task_for_loop(id) else {
        return;
    };
    if in_this_step && record.state().is_terminal() {
        progress::task_ended(&record, replay.turn_calls);
    }
    let unanswered = matches!(
        record.state(),
        TaskState::Failed | TaskState::Rejected | TaskState::Canceled
    );
    if unanswered && let Some(children) = shared.children.as_ref() {
        children.cancel_open(id);
    }
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

/// Whether a sub-task of the task is still open: its answer waits for them.
fn has_open_subtasks(record: &TaskRecord) -> bool {
    record.ext.sub_tasks.iter().any(|link| !link.has_ended())
}
