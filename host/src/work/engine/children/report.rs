//! What a parent learns of its child, and how it is recorded: the sub-task row's state, and a
//! note the parent's model reads (the child's answer, or the question it waits on), written as
//! one message in one transaction with the row.

use serde_json::{Value, json};

use crate::base::protocol::types::{Message, Part, Role, Task, TaskState};
use crate::state::records::extension::METADATA_KEY;
use crate::state::store::StoreError;
use crate::state::tasks::hub::{Change, TaskHub};

/// The longest child answer the parent's model reads whole; a longer one is cut and marked with
/// `…`, so one verbose child cannot fill the parent's turn budget.
pub const MAX_ANSWER_CHARS: usize = 4_000;
pub use crate::base::protocol::extension::CHILD_REPORT_KEY;

/// A change in a child, as the parent is to learn it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildNews {
    /// The child's state as its agent reports it, kept on the parent's sub-task row.
    pub state: TaskState,
    /// What the parent's model reads, when the change needs it (an answer, a question).
    pub note: Option<String>,
    /// The tokens the child says it has used (its task extension's `usage`), when it says:
    /// what it is charged against its parent's budget.
    pub spent: Option<u64>,
}

/// `Sub-task {id} on {agent} is {STATE}: {text}`, the text cut at [`MAX_ANSWER_CHARS`].
pub fn note_text(task_id: &str, agent: &str, state: TaskState, text: &str) -> String {
    format!(
        "Sub-task {task_id} on {agent} is {}: {}",
        state.short_name(),
        cut(text.trim())
    )
}

fn cut(text: &str) -> String {
    crate::base::text::cut::cut(text, MAX_ANSWER_CHARS).into_owned()
}

/// The child's last answer: its status message, else the text of its last artifact.
pub fn answer_of(task: &Task) -> String {
    let from_status = task
        .status
        .message
        .as_ref()
        .map(Message::text)
        .filter(|text| !text.trim().is_empty());
    if let Some(text) = from_status {
        return text;
    }
    task.artifacts
        .iter()
        .flatten()
        .next_back()
        .map(|artifact| {
            artifact
                .parts
                .iter()
                .filter_map(|part| part.text.as_deref())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// What the parent learns from the child's task as its agent reports it. A child waiting on its
/// participant by design (lifecycle `participant`) needs nothing from the parent.
pub fn news_of(task: &Task, agent: &str) -> ChildNews {
    let state = task.status.state;
    let waits_on_parent = matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
        && !is_participant_task(task);
    let note = (state.is_terminal() || waits_on_parent)
        .then(|| note_text(&task.id, agent, state, &answer_of(task)));
    ChildNews {
        state,
        note,
        spent: spent_by(task),
    }
}

fn is_participant_task(task: &Task) -> bool {
    extension_field(task, "lifecycle").and_then(Value::as_str) == Some("participant")
}

/// The tokens the child's task extension says it used: its `usage`, input and output. An
/// agent's word like any other: a value that is no count of tokens is not taken.
fn spent_by(task: &Task) -> Option<u64> {
    let usage = extension_field(task, "usage")?;
    let input = usage.get("input_tokens")?.as_u64()?;
    let output = usage.get("output_tokens")?.as_u64()?;
    input.checked_add(output)
}

fn extension_field<'a>(task: &'a Task, key: &str) -> Option<&'a Value> {
    task.metadata
        .as_ref()
        .and_then(|m| m.get(METADATA_KEY))
        .and_then(|ext| ext.get(key))
}

/// Records the news on the parent through the hub, in one transaction: the sub-task row's state
/// and, when there is one, the note as a report message. A row that is already terminal is never
/// changed, so a repeated report adds nothing. A parent that has ended takes no note; only its
/// row learns how the child ended ([`TaskHub::settle_subtask_row`]). Returns whether a note was
/// written (the parent's loop should wake).
pub async fn record(
    hub: &TaskHub,
    parent: &str,
    child: &str,
    agent: &str,
    news: &ChildNews,
) -> Result<bool, StoreError> {
    let (child_id, agent_id) = (child.to_string(), agent.to_string());
    let (child, agent, written) = (child.to_string(), agent.to_string(), news.clone());
    let change = hub
        .change(parent, move |record, tx| {
            let news = written;
            let Some(link) = record
                .ext
                .sub_tasks
                .iter_mut()
                .find(|l| l.is(&agent, &child))
            else {
                return Ok(false);
            };
            let known = link.state.as_deref().and_then(TaskState::from_wire);
            if known.is_some_and(TaskState::is_terminal) {
                return Ok(false);
            }
            if news.spent.is_some() {
                link.spent = news.spent;
            }
            if known == Some(news.state) {
                return Ok(false);
            }
            link.state = Some(news.state.wire_name().to_string());
            let Some(text) = &news.note else {
                return Ok(false);
            };
            let mut message = Message {
                message_id: uuid::Uuid::new_v4().to_string(),
                context_id: record.context_id.clone(),
                task_id: record.id.clone(),
                role: Role::Agent,
                parts: vec![Part::text(text.clone())],
                ..Message::default()
            };
            let mut metadata = serde_json::Map::new();
            metadata.insert(
                CHILD_REPORT_KEY.to_string(),
                json!({ "task_id": child, "agent": agent, "state": news.state.wire_name() }),
            );
            message.metadata = Some(metadata);
            tx.append_message(&record.id, &message)?;
            Ok(true)
        })
        .await?;
    match change {
        Change::Applied(_, wrote_note) => Ok(wrote_note),
        Change::Terminal(_) => {
            hub.settle_subtask_row(parent, &agent_id, &child_id, news.state, news.spent)
                .await?;
            Ok(false)
        }
        Change::Missing => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::types::{Artifact, TaskStatus};

    fn task(state: TaskState, answer: &str) -> Task {
        Task {
            id: "c-1".to_string(),
            status: TaskStatus {
                state,
                message: Some(Message::agent_text("c-1", "ctx", answer)),
                timestamp: None,
            },
            ..Task::default()
        }
    }

    #[test]
    fn a_finished_child_reports_its_answer_golden() {
        let news = news_of(
            &task(TaskState::Completed, "Balance: 1,250.00 EUR"),
            "ledger",
        );
        assert_eq!(news.state, TaskState::Completed);
        assert_eq!(
            news.note.as_deref(),
            Some("Sub-task c-1 on ledger is COMPLETED: Balance: 1,250.00 EUR")
        );
    }

    #[test]
    fn an_answer_over_four_thousand_characters_is_cut_and_marked() {
        let long = "x".repeat(9_000);
        let note = news_of(&task(TaskState::Completed, &long), "self")
            .note
            .unwrap();
        let answer = note.split_once(": ").unwrap().1;
        assert_eq!(answer.chars().count(), MAX_ANSWER_CHARS + 1);
        assert!(answer.ends_with('…'));
        let exact = "y".repeat(MAX_ANSWER_CHARS);
        let note = news_of(&task(TaskState::Completed, &exact), "self")
            .note
            .unwrap();
        assert!(
            note.ends_with('y'),
            "an answer of exactly the limit is whole"
        );
    }

    #[test]
    fn a_working_child_needs_no_note_and_a_waiting_one_does() {
        assert_eq!(news_of(&task(TaskState::Working, ""), "a").note, None);
        let waiting = news_of(&task(TaskState::InputRequired, "Which month?"), "a");
        assert_eq!(
            waiting.note.as_deref(),
            Some("Sub-task c-1 on a is INPUT_REQUIRED: Which month?")
        );
    }

    #[test]
    fn a_participant_task_waiting_on_its_participant_needs_nothing_from_the_parent() {
        let mut waiting = task(TaskState::InputRequired, "Please sign");
        let mut metadata = serde_json::Map::new();
        metadata.insert(
            METADATA_KEY.to_string(),
            json!({"lifecycle": "participant"}),
        );
        waiting.metadata = Some(metadata);
        assert_eq!(news_of(&waiting, "self").note, None);
    }

    #[test]
    fn without_a_status_message_the_last_artifact_is_the_answer() {
        let mut done = task(TaskState::Completed, "");
        done.status.message = None;
        done.artifacts = Some(vec![Artifact {
            artifact_id: "a".to_string(),
            name: "answer".to_string(),
            parts: vec![Part::text("42")],
            ..Artifact::default()
        }]);
        assert_eq!(answer_of(&done), "42");
    }
}
