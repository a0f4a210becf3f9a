//! A parent's message to one of its open children (`message_subtask`): found among the parent's
//! sub-task rows by its agent and task id, and sent over A2A as a `SendMessage` on the child's
//! own task, the same way whichever agent runs it. The usual case is the answer to a question the
//! child asked (INPUT_REQUIRED): the child goes on with it, and its follower reports as before.

use super::Children;
use crate::base::protocol::requests::{SendMessageConfiguration, SendMessageRequest};
use crate::base::protocol::types::{Message, Part, Role, TaskState};
use crate::state::records::extension::TaskLink;
use crate::work::agents::MAX_ECHOED_ID_CHARS;
use crate::work::agents::client::A2aClient;
use crate::work::tools::{ChildMessage, ToolError};

/// The longest message a parent may send a child, in characters: an answer to a question, not a
/// document (a document belongs in a new sub-task's brief).
pub const MAX_MESSAGE_CHARS: usize = 16_000;
/// How many open sub-tasks an `[subtask.unknown]` error lists: enough to correct a typo, not
/// enough to fill the context.
const MAX_LISTED: usize = 10;

impl Children {
    /// Sends the message on the child's task on its agent and returns the child's row. Fails,
    /// sending nothing, for a row the parent does not have, a child that has ended, a task id
    /// shared by children on two agents when no agent is named, or an empty or overlong text.
    pub async fn message(&self, request: &ChildMessage) -> Result<TaskLink, ToolError> {
        let text = request.text.trim();
        if text.is_empty() {
            return Err(ToolError::new(
                "tool.invalid_arguments",
                "message_subtask needs a text to send",
            ));
        }
        let chars = text.chars().count();
        if chars > MAX_MESSAGE_CHARS {
            return Err(ToolError::new(
                "tool.invalid_arguments",
                format!(
                    "the text is {chars} characters, more than the {MAX_MESSAGE_CHARS} a message to a sub-task may hold: send the answer, or start a sub-task with the rest in its brief"
                ),
            ));
        }
        let link = find_row(
            &request.parent.ext.sub_tasks,
            &request.task_id,
            request.agent.as_deref(),
        )?;
        let agent = link.agent_id().to_string();
        let client = self.client(&agent)?;
        send(&client, &link.task_id, text, &request.message_id)
            .await
            .map_err(|err| {
                self.unreachable_error(&agent, "send the message to the sub-task", &err)
            })?;
        tracing::info!(parent = %request.parent.id, child = %link.task_id, %agent, "message sent to the sub-task");
        Ok(link.clone())
    }
}

/// The parent's open row for the child `task_id` (on `agent`, when named).
fn find_row<'a>(
    rows: &'a [TaskLink],
    task_id: &str,
    agent: Option<&str>,
) -> Result<&'a TaskLink, ToolError> {
    let matching: Vec<&TaskLink> = rows
        .iter()
        .filter(|l| l.task_id == task_id && agent.is_none_or(|a| l.agent_id() == a))
        .collect();
    // The id and agent are the model's words (perhaps copied from untrusted text): echoed
    // escaped and cut, like an unknown agent id.
    let echo = |text: &str| crate::base::text::log_field::escape_capped(text, MAX_ECHOED_ID_CHARS);
    let named = || match agent {
        Some(agent) => format!("{} on {}", echo(task_id), echo(agent)),
        None => echo(task_id),
    };
    match matching.as_slice() {
        [] => Err(ToolError::new(
            "subtask.unknown",
            format!(
                "this task has no sub-task {}; its open sub-tasks: {}",
                named(),
                open_rows(rows)
            ),
        )),
        [link] if link.has_ended() => {
            let state = link
                .state
                .as_deref()
                .and_then(TaskState::from_wire)
                .map(TaskState::short_name)
                .unwrap_or("ENDED");
            Err(ToolError::new(
                "subtask.ended",
                format!(
                    "sub-task {} on {} has ended ({state}) and takes no more messages: create a new sub-task instead",
                    link.task_id,
                    link.agent_id()
                ),
            ))
        }
        [link] => Ok(link),
        several => {
            let agents: Vec<&str> = several.iter().map(|l| l.agent_id()).collect();
            Err(ToolError::new(
                "subtask.ambiguous",
                format!(
                    "sub-tasks on {} all have the id {}: name the agent",
                    agents.join(", "),
                    echo(task_id)
                ),
            ))
        }
    }
}

/// `task-1 on ledger, …` for the open rows, or `(none)`.
fn open_rows(rows: &[TaskLink]) -> String {
    let open: Vec<String> = rows
        .iter()
        .filter(|l| !l.has_ended())
        .take(MAX_LISTED)
        .map(|l| format!("{} on {}", l.task_id, l.agent_id()))
        .collect();
    if open.is_empty() {
        "(none)".to_string()
    } else {
        open.join(", ")
    }
}

async fn send(
    client: &A2aClient,
    child: &str,
    text: &str,
    message_id: &str,
) -> Result<(), crate::work::agents::client::ClientError> {
    let request = SendMessageRequest {
        tenant: String::new(),
        message: Message {
            message_id: message_id.to_string(),
            task_id: child.to_string(),
            role: Role::User,
            parts: vec![Part::text(text)],
            ..Message::default()
        },
        configuration: Some(SendMessageConfiguration {
            return_immediately: true,
            ..SendMessageConfiguration::default()
        }),
        metadata: None,
    };
    client.send_message(request).await.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::records::extension::AgentRef;

    fn row(task_id: &str, agent: &str, state: &str) -> TaskLink {
        TaskLink {
            task_id: task_id.into(),
            agent: Some(AgentRef {
                kind: "agent".into(),
                id: agent.into(),
                version: None,
            }),
            state: Some(state.into()),
            ..TaskLink::default()
        }
    }

    fn rows() -> Vec<TaskLink> {
        vec![
            row("task-1", "a", "TASK_STATE_INPUT_REQUIRED"),
            row("task-1", "b", "TASK_STATE_WORKING"),
            row("task-2", "b", "TASK_STATE_COMPLETED"),
        ]
    }

    fn refusal(task_id: &str, agent: Option<&str>) -> String {
        find_row(&rows(), task_id, agent).unwrap_err().to_string()
    }

    #[test]
    fn an_id_the_model_made_up_is_echoed_escaped_and_cut() {
        let long = format!("{}\nINFO forged", "x".repeat(5_000));
        let text = find_row(&rows(), &long, Some("a")).unwrap_err().to_string();
        assert!(text.len() < 600, "{}", text.len());
        assert!(!text.contains('\n'), "{text}");
        assert!(text.contains("more characters)"), "{text}");
    }

    #[test]
    fn a_child_is_found_by_its_agent_and_its_id() {
        let rows = rows();
        assert_eq!(
            find_row(&rows, "task-1", Some("b")).unwrap().agent_id(),
            "b"
        );
        assert_eq!(
            find_row(&rows, "task-1", Some("a")).unwrap().agent_id(),
            "a"
        );
    }

    #[test]
    fn each_refusal_says_what_to_do_instead_golden() {
        assert_eq!(
            refusal("task-1", None),
            "[subtask.ambiguous] sub-tasks on a, b all have the id task-1: name the agent"
        );
        assert_eq!(
            refusal("task-9", Some("a")),
            "[subtask.unknown] this task has no sub-task task-9 on a; its open sub-tasks: task-1 on a, task-1 on b"
        );
        assert_eq!(
            refusal("task-2", None),
            "[subtask.ended] sub-task task-2 on b has ended (COMPLETED) and takes no more messages: create a new sub-task instead"
        );
        assert_eq!(
            find_row(&[], "x", None).unwrap_err().to_string(),
            "[subtask.unknown] this task has no sub-task x; its open sub-tasks: (none)"
        );
    }
}
