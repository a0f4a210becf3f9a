//! A task's inbox: what arrived since the loop last looked. Participants' messages become input
//! for the model, the stand-ins' reports of children become untrusted notes, and `/sub-task`
//! commands are carried out here, without a model turn. Each batch is journaled in one
//! transaction with the task's new state.

use std::sync::Arc;

use super::ToolError;
use super::children::SpawnRequest;
use super::children::report::CHILD_REPORT_KEY;
use super::journal::{JournalEntry, Replay};
use super::shared::{Shared, StepError};
use super::status::set_status;
use crate::base::protocol::types::{Message, Role, TaskState};
use crate::state::records::extension::{
    ENVELOPE_MEDIA_TYPE, Lifecycle, ParticipantKind, TaskExtension, TaskLink,
};
use crate::state::records::record::TaskRecord;
use crate::state::store::{StoreError, Tx};
use crate::state::tasks::engine_port::FirstInput;
use crate::state::tasks::hub::Change;
use crate::work::agents::SELF_ID;
use crate::work::tools::brief::ChildBrief;

/// The command a participant sends to give the task a sub-task on this harness.
pub const SUBTASK_COMMAND: &str = "/sub-task";

/// What [`drain`] found.
pub(super) enum Drained {
    /// No new message.
    Nothing,
    /// New messages, journaled; the task as that write left it.
    Recorded(Arc<TaskRecord>),
    /// New messages that change nothing but the history: applied to the replay and left in
    /// [`Replay::unjournaled`] for the step's next write. The task is as it was read.
    Unwritten,
    /// New messages, but the task had ended or gone when they were to be written.
    Ended,
}

/// Records every new message for the task: participants' messages, the stand-ins' reports of
/// its children (as untrusted notes) and `/sub-task` commands (carried out here, without a model
/// turn).
pub(super) async fn drain(
    shared: &Shared,
    record: &TaskRecord,
    replay: &mut Replay,
) -> Result<Drained, StepError> {
    let hub = &shared.hub;
    let mut entries = Vec::new();
    let mut replies = Vec::new();
    let mut links = Vec::new();
    // Each message read, by sequence number, with its id when a participant sent it: the turn
    // names the newest one recorded to the model without reading it again.
    let mut read = Vec::new();
    for (seq, message) in hub
        .store()
        .messages_after(&record.id, replay.last_inbound_seq)?
    {
        read.push((
            seq,
            (message.role == Role::User).then(|| message.message_id.clone()),
        ));
        if is_child_report(&message) {
            entries.push(JournalEntry::Note {
                source: "agent".to_string(),
                text: message.text(),
                message_seq: Some(seq),
            });
            continue;
        }
        if message.role != Role::User {
            continue;
        }
        let text = message_text(&message);
        // A message that only changes the brief is not input for the model: the change shows
        // in the `task` section.
        if text.is_empty() {
            continue;
        }
        let from = sender_of(&message, record);
        if let Some(goal) = subtask_command(&text) {
            let outcome = match run_subtask_command(shared, record, &message, goal).await {
                Ok(link) => {
                    let outcome = format!("sub-task {} created on {SELF_ID}", link.task_id);
                    links.push(link);
                    outcome
                }
                Err(err) => format!("the sub-task was not created: {err}"),
            };
            replies.push(outcome.clone());
            entries.push(JournalEntry::Command {
                message_seq: seq,
                from,
                text,
                outcome,
            });
            continue;
        }
        let trusted = record
            .ext
            .participant(&from)
            .is_none_or(|p| p.kind != ParticipantKind::Agent);
        entries.push(JournalEntry::Inbound {
            message_seq: seq,
            from,
            trusted,
            text,
        });
    }
    if entries.is_empty() {
        return Ok(Drained::Nothing);
    }
    let changes_nothing_else = replies.is_empty()
        && links.is_empty()
        && record.state() == TaskState::Working
        && record.ext.lifecycle != Lifecycle::Participant
        && entries
            .iter()
            .all(|e| matches!(e, JournalEntry::Inbound { .. } | JournalEntry::Note { .. }));
    if changes_nothing_else {
        for entry in &entries {
            replay.apply(entry);
        }
        replay.newest_drained = newest(read, replay.last_inbound_seq);
        replay.unjournaled.extend(entries);
        return Ok(Drained::Unwritten);
    }
    let earlier = std::mem::take(&mut replay.unjournaled);
    let wakes_model = entries
        .iter()
        .any(|e| !matches!(e, JournalEntry::Command { .. }));
    let (recorded, added) = (entries.clone(), links.clone());
    let change = hub
        .change(&record.id, move |rec, tx| {
            let id = rec.id.clone();
            for entry in earlier.iter().chain(&recorded) {
                tx.append_journal(&id, entry)?;
            }
            for reply in replies {
                let message = Message::agent_text(&id, &rec.context_id, reply);
                tx.append_message(&id, &message)?;
            }
            for link in added {
                if !rec
                    .ext
                    .sub_tasks
                    .iter()
                    .any(|l| l.is(link.agent_id(), &link.task_id))
                {
                    rec.ext.sub_tasks.push(link);
                }
            }
            if wakes_model
                && matches!(
                    rec.state(),
                    TaskState::Submitted | TaskState::InputRequired | TaskState::AuthRequired
                )
            {
                set_status(rec, TaskState::Working, None);
            }
            Ok(())
        })
        .await?;
    let Change::Applied(after, ()) = change else {
        return Ok(Drained::Ended);
    };
    for entry in &entries {
        replay.apply(entry);
    }
    replay.newest_drained = newest(read, replay.last_inbound_seq);
    if let Some(children) = shared.children.as_ref() {
        for link in &links {
            children.follow(&record.id, link);
        }
    }
    Ok(Drained::Recorded(after))
}

/// The message read at `seq` (the newest one drained), with its id when a participant sent it.
fn newest(read: Vec<(i64, Option<String>)>, seq: i64) -> Option<(i64, Option<String>)> {
    read.into_iter().find(|(read_seq, _)| *read_seq == seq)
}

/// A new task's first message as the model's input, when draining it would make exactly one
/// participant's input of it: not a `/sub-task` command, not a brief alone, not a task a
/// participant works. The transaction that creates the task then journals it (with
/// [`record_first_input`]) and sets the task working, so the task's first step is its model call
/// instead of a drain and a write of its own. `None` leaves the message to the loop's first
/// drain.
pub(crate) fn first_input(record: &TaskRecord, message: &Message) -> Option<FirstInput> {
    if record.ext.lifecycle == Lifecycle::Participant
        || message.role != Role::User
        || is_child_report(message)
    {
        return None;
    }
    let text = message_text(message);
    if text.is_empty() || subtask_command(&text).is_some() {
        return None;
    }
    let from = sender_of(message, record);
    let trusted = record
        .ext
        .participant(&from)
        .is_none_or(|p| p.kind != ParticipantKind::Agent);
    Some(FirstInput {
        from,
        trusted,
        text,
        message_id: message.message_id.clone(),
        conversation: None,
    })
}

/// Journals the earlier exchanges of a new task's context in the transaction that creates it:
/// the engines' [`crate::state::tasks::engine_port::Engine::record_conversation`].
pub(crate) fn record_conversation(
    tx: &mut Tx<'_>,
    task_id: &str,
    text: &str,
) -> Result<(), StoreError> {
    tx.append_journal(
        task_id,
        &JournalEntry::Conversation {
            text: text.to_string(),
        },
    )?;
    Ok(())
}

/// Journals `first`, the message at `seq`, as the drain's entry for it, in the transaction that
/// creates the task: the engines' [`crate::state::tasks::engine_port::Engine::record_first_input`].
pub(crate) fn record_first_input(
    tx: &mut Tx<'_>,
    task_id: &str,
    first: &FirstInput,
    seq: i64,
) -> Result<(), StoreError> {
    tx.append_journal(task_id, &first.entry(seq))?;
    Ok(())
}

impl FirstInput {
    /// The journal entry for the message, written at `seq` in the creating transaction.
    pub(crate) fn entry(&self, seq: i64) -> JournalEntry {
        JournalEntry::Inbound {
            message_seq: seq,
            from: self.from.clone(),
            trusted: self.trusted,
            text: self.text.clone(),
        }
    }

    /// The loop's replay once the entry for the message at `seq` is journaled, as a drain of
    /// it would have left it.
    pub(crate) fn replay(&self, seq: i64) -> Replay {
        let mut replay = Replay::default();
        if let Some(text) = &self.conversation {
            replay.apply(&JournalEntry::Conversation { text: text.clone() });
        }
        replay.apply(&self.entry(seq));
        replay.newest_drained = Some((seq, Some(self.message_id.clone())));
        replay.skip_drain_once = true;
        replay
    }
}

/// Whether anything the loop would read arrived after `seq`, the last message it drained: a
/// child's report, a participant's words or a command. Asked in the transaction that would
/// complete the task, so that news landing while the model was answering is never missed: the
/// answer is recorded, and the model gets another turn with the news first.
pub(super) fn has_unread(tx: &Tx<'_>, task_id: &str, seq: i64) -> Result<bool, StoreError> {
    Ok(tx
        .messages_after(task_id, seq)?
        .iter()
        .any(|(_, message)| is_input(message)))
}

/// Whether [`drain`] makes a journal entry of the message: a child's report, or a participant's
/// message with something in it besides a task envelope.
fn is_input(message: &Message) -> bool {
    is_child_report(message) || (message.role == Role::User && !message_text(message).is_empty())
}

/// Whether a message is a stand-in's report of a child.
fn is_child_report(message: &Message) -> bool {
    message.role == Role::Agent
        && message
            .metadata
            .as_ref()
            .is_some_and(|m| m.contains_key(CHILD_REPORT_KEY))
}

/// The goal of a `/sub-task {goal}` command, if the text is one.
fn subtask_command(text: &str) -> Option<&str> {
    let rest = text.trim_start().strip_prefix(SUBTASK_COMMAND)?;
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return None;
    }
    Some(rest.trim())
}

/// Creates the child a `/sub-task` command asks for, on this harness, through A2A like any
/// other child. The message id comes from the command's, so a replay finds the same child.
async fn run_subtask_command(
    shared: &Shared,
    record: &TaskRecord,
    message: &Message,
    goal: &str,
) -> Result<TaskLink, ToolError> {
    if goal.is_empty() {
        return Err(ToolError::new(
            "command.invalid",
            format!(
                "{SUBTASK_COMMAND} needs a goal: {SUBTASK_COMMAND} <what the sub-task must do>"
            ),
        ));
    }
    let Some(children) = shared.children.as_ref() else {
        return Err(ToolError::new(
            "tool.unavailable",
            "sub-tasks are not available on this harness",
        ));
    };
    let from_text = TaskExtension::from_text(goal);
    let request = SpawnRequest {
        parent: record,
        agent: None,
        brief: ChildBrief {
            name: from_text.name,
            goal: from_text.goal,
            description: None,
            acceptance_criteria: Vec::new(),
            participants: record.ext.participants.clone(),
            lifecycle: Lifecycle::Agent,
            model: None,
        },
        message_id: format!("subtask-command-{}", message.message_id),
    };
    children.spawn(request).await
}

/// The participant a message is from: its metadata, or the task's owner.
fn sender_of(message: &Message, record: &TaskRecord) -> String {
    message
        .metadata
        .as_ref()
        .and_then(|m| m.get("participant_id"))
        .and_then(|v| v.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| record.owner.clone())
}

/// A message as the model reads it: its text parts, and any data parts (but a task envelope) as
/// JSON.
fn message_text(message: &Message) -> String {
    message
        .parts
        .iter()
        .filter(|part| part.media_type != ENVELOPE_MEDIA_TYPE)
        .filter_map(|part| {
            part.text
                .clone()
                .or_else(|| part.data.as_ref().map(|d| d.to_string()))
                .or_else(|| part.url.as_ref().map(|u| format!("[file: {u}]")))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::types::Part;

    fn new_task(lifecycle: Lifecycle) -> TaskRecord {
        let mut ext = TaskExtension::from_text("goal");
        ext.lifecycle = lifecycle;
        TaskRecord::for_test(ext, TaskState::Submitted, "owner")
    }

    fn said(text: &str) -> Message {
        Message {
            message_id: "m1".into(),
            role: Role::User,
            parts: vec![Part::text(text)],
            ..Message::default()
        }
    }

    #[test]
    fn a_first_message_is_journaled_at_creation_only_when_it_is_plain_input() {
        let task = new_task(Lifecycle::Agent);
        let first = first_input(&task, &said("What is 2 + 2?")).expect("plain input");
        assert!(matches!(
            first.entry(7),
            JournalEntry::Inbound { message_seq: 7, ref from, trusted: true, ref text }
                if from == "owner" && text == "What is 2 + 2?"
        ));
        let replay = first.replay(7);
        assert_eq!(replay.last_inbound_seq, 7);
        assert_eq!(replay.newest_drained, Some((7, Some("m1".to_string()))));
        assert!(
            replay.skip_drain_once,
            "nothing else can have been drained yet"
        );
        // Left to the loop's drain: a command, a brief alone, a task a participant works.
        assert!(first_input(&task, &said("/sub-task count them")).is_none());
        assert!(first_input(&task, &said("")).is_none());
        assert!(first_input(&new_task(Lifecycle::Participant), &said("hi")).is_none());
    }

    #[test]
    fn a_sub_task_command_is_the_word_then_the_goal() {
        assert_eq!(
            subtask_command("/sub-task count the invoices"),
            Some("count the invoices")
        );
        assert_eq!(
            subtask_command("  /sub-task\n  two\nlines "),
            Some("two\nlines")
        );
        assert_eq!(
            subtask_command("/sub-task"),
            Some(""),
            "a goal is then asked for"
        );
        assert_eq!(subtask_command("/sub-tasks are neat"), None);
        assert_eq!(subtask_command("please /sub-task this"), None);
    }
}
