//! Creating a child: the checks that refuse one before anything is sent (agent, depth, fan-out,
//! hops, model, budget), the A2A `SendMessage` that carries its brief, and the sub-task row made
//! of the agent's answer. Apart from following and cancelling children, which run for longer.

use super::{Children, SpawnRequest, choice, deadline, hops, report};
use crate::base::protocol::requests::{SendMessageConfiguration, SendMessageRequest};
use crate::base::protocol::types::{SendMessageResponse, TaskState};
use crate::base::telemetry;
use crate::state::records::extension::{AgentRef, EXTENSION_URI, TaskLink};
use crate::state::records::record::TaskRecord;
use crate::state::store::Store;
use crate::work::agents::SELF_ID;
use crate::work::engine::budget;
use crate::work::tools::ToolError;
use crate::work::tools::brief::{Delivery, child_message};

/// Parent links followed when measuring a task's depth; a longer chain is treated as too deep
/// rather than walked further, so a corrupt cycle cannot loop.
const MAX_DEPTH_WALK: u32 = 64;
/// The longest task id an agent may give a child: a UUID is 36 characters, and an id far
/// longer is no id but a way to fill the parent's context and logs.
const MAX_CHILD_TASK_ID_CHARS: usize = 256;

impl Children {
    /// Creates the child with an A2A `SendMessage` to its agent and returns the sub-task row
    /// for the parent. Fails, creating nothing and contacting nothing, for an unknown agent, a
    /// parent already at `limits.max_subtask_depth`, `limits.max_children_per_task` or
    /// `limits.max_parallel_children`, a model this harness does not have (or any model for
    /// another agent), or a parent with no token budget left to give a child. A parent with a
    /// budget sets a share of what it has free aside for the child (`budget::reservation`),
    /// kept on the row; a child on this harness is given it as its own budget.
    pub async fn spawn(&self, request: SpawnRequest<'_>) -> Result<TaskLink, ToolError> {
        let registry = self.registry.current();
        let agent = registry
            .resolve(request.agent)
            .map_err(|unknown| ToolError::new(unknown.code(), unknown.message()))?;
        let depth = depth_of(self.hub.store(), request.parent);
        if depth >= self.settings.max_depth {
            return Err(ToolError::new(
                "subtask.too_deep",
                format!(
                    "this task is at sub-task depth {depth} and limits.max_subtask_depth is {}: do this work in this task instead of creating a sub-task",
                    self.settings.max_depth
                ),
            ));
        }
        choice::check_fan_out(
            &request.parent.ext.sub_tasks,
            self.settings.max_children,
            self.settings.max_parallel,
        )?;
        let agent_id = agent.id.clone();
        let delegation = hops::for_child(&self.settings.hops, request.parent, &agent_id)?;
        let own = agent_id == SELF_ID;
        let reserved = budget::reservation(request.parent);
        choice::check(
            &self.settings.models,
            &agent_id,
            request.brief.model.as_deref(),
            reserved,
        )?;
        let budget = own.then_some(reserved).flatten();
        let client = self.client(&agent_id)?;
        let delivery = Delivery {
            envelope: agent
                .card
                .capabilities
                .extensions
                .iter()
                .any(|e| e.uri == EXTENSION_URI),
            trusted: self.is_trusted_by(&agent_id),
            parent: Some((
                &request.parent.id,
                &self.settings.participant_id_for(&agent_id),
            )),
            own,
            budget,
            delegation: Some(&delegation),
        };
        let message = child_message(&request.brief, &request.message_id, delivery);
        let send = SendMessageRequest {
            tenant: String::new(),
            message,
            configuration: Some(SendMessageConfiguration {
                return_immediately: true,
                ..SendMessageConfiguration::default()
            }),
            metadata: None,
        };
        // Under the tool call that asked for it when this runs within it, else the task.
        let trace = telemetry::current().or_else(|| {
            telemetry::task_context(&request.parent.id, request.parent.ext.trace.as_deref())
        });
        let sent = telemetry::within(trace, client.send_message(send)).await;
        let response = sent.map_err(|err| {
            hops::refused_by_agent(&agent_id, &err)
                .unwrap_or_else(|| self.unreachable_error(&agent_id, "create the sub-task", &err))
        })?;
        match response {
            SendMessageResponse::Task(task) if !is_usable_task_id(&task.id) => {
                tracing::warn!(parent = %request.parent.id, agent = %agent_id, id = %crate::base::text::log_field::escape(&task.id), "the agent named its task with an unusable id");
                Err(ToolError::new(
                    "subtask.failed",
                    format!(
                        "could not create the sub-task: {agent_id} named its task with an unusable id"
                    ),
                ))
            }
            SendMessageResponse::Task(task) => {
                tracing::info!(parent = %request.parent.id, child = %task.id, agent = %agent_id, "sub-task created");
                Ok(TaskLink {
                    task_id: task.id,
                    agent: Some(AgentRef {
                        kind: "agent".to_string(),
                        id: agent_id,
                        version: Some(agent.card.version.clone()).filter(|v| !v.is_empty()),
                    }),
                    // Not yet heard: the follower's first look records the state, and
                    // reports a child that ended (or asks) at once like any other.
                    state: None,
                    deadline: Some(deadline::from_now(self.settings.deadline)),
                    reserved,
                    spent: None,
                })
            }
            SendMessageResponse::Message(message) => Err(ToolError::new(
                "subtask.no_task",
                format!(
                    "{agent_id} answered at once instead of creating a task, so there is nothing to follow; its answer: {}",
                    report::note_text(
                        "-",
                        &agent_id,
                        TaskState::Completed,
                        &self.mask(&message.text())
                    )
                ),
            )),
        }
    }
}

/// Whether an agent's id for a child task can be kept and shown: the id is the agent's word, and
/// it goes into the parent's rows, its `task` section, notes and logs. Up to
/// [`MAX_CHILD_TASK_ID_CHARS`] visible characters, none of them a space, a control, an
/// invisible character or an angle bracket.
fn is_usable_task_id(id: &str) -> bool {
    !id.is_empty()
        && id.chars().count() <= MAX_CHILD_TASK_ID_CHARS
        && id.chars().all(|c| {
            !c.is_whitespace()
                && !c.is_control()
                && !crate::base::text::untrusted::is_invisible(c)
                && !matches!(c, '<' | '>')
        })
}

/// How many parent links lead up from this task through tasks of this harness: 0 for a task a
/// participant created, 1 for its child, and so on.
pub fn depth_of(store: &Store, record: &TaskRecord) -> u32 {
    let mut depth = 0;
    let mut current = record.clone();
    // Only a parent on this harness is walked: a link to a parent on another agent names that
    // agent's task, whose id may be any local task's too.
    while let Some(link) = current
        .ext
        .parent_tasks
        .first()
        .filter(|link| link.agent_id() == SELF_ID)
    {
        depth += 1;
        if depth >= MAX_DEPTH_WALK {
            break;
        }
        match store.task(&link.task_id) {
            Ok(Some(parent)) => current = parent,
            _ => break,
        }
    }
    depth
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agents_task_id_is_kept_only_when_it_is_short_and_plain() {
        assert!(is_usable_task_id("9b2e4c1e-3f0a-4d9e-8a57-2c1f0e6b7d21"));
        assert!(is_usable_task_id("tasks/42:ledger.v1"));
        for bad in [
            "",
            "a b",
            "a\nINFO forged",
            "</untrusted>",
            "id\u{202E}",
            &"x".repeat(MAX_CHILD_TASK_ID_CHARS + 1),
        ] {
            assert!(!is_usable_task_id(bad), "{bad:?}");
        }
    }
}
