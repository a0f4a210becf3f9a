//! The host functions a plugin may call. Each task effect is checked against the task whose tool
//! call is in flight and recorded; the engine applies the recorded effects only if the call as a
//! whole succeeds. Outside a call (start-up) every effect fails with `host.no_task`. A guest runs
//! on the plugin threads; the host's network work (creating a child over A2A) runs on the
//! caller's runtime, so no connection, pool or follower ever depends on the plugin threads.

use tokio_util::task::AbortOnDropHandle;

use super::bindings::host::{self, Level, StepInput, SubtaskBrief, SubtaskRef};
use super::bindings::types::{self, ToolError as WitToolError};
use super::call_state::CallState;
use super::sandbox::StoreData;
use crate::base::telemetry;
use crate::state::records::extension::{Lifecycle, Role};
use crate::state::records::record::TaskRecord;
use crate::work::agents::SELF_ID;
use crate::work::tools::brief::ChildBrief;
use crate::work::tools::effects::StepRequest;
use crate::work::tools::{ChildMessage, ChildRequest, Effect, ToolError};

/// Effects one call may request: enough for any honest tool, a bound for a runaway one.
pub const MAX_EFFECTS_PER_CALL: usize = 64;

fn to_wit(err: ToolError) -> WitToolError {
    WitToolError {
        code: err.code,
        message: err.message,
    }
}

fn wit_error(code: &str, message: impl Into<String>) -> WitToolError {
    WitToolError {
        code: code.to_string(),
        message: message.into(),
    }
}

impl StoreData {
    /// Checks and records one effect of the call in flight.
    fn effect(
        &mut self,
        check: impl FnOnce(&TaskRecord, &[Effect]) -> Result<Effect, ToolError>,
    ) -> Result<(), WitToolError> {
        let Some(call) = self.call.as_mut() else {
            return Err(wit_error(
                "host.no_task",
                "task effects are only available while a tool call runs",
            ));
        };
        if call.effects.len() >= MAX_EFFECTS_PER_CALL {
            return Err(wit_error(
                "host.too_many_effects",
                format!("one call may request at most {MAX_EFFECTS_PER_CALL} effects"),
            ));
        }
        let effect = check(&call.record, &call.effects).map_err(to_wit)?;
        call.effects.push(effect);
        Ok(())
    }
}

impl StoreData {
    fn in_call(&mut self) -> Result<&mut CallState, WitToolError> {
        let call = self.call.as_mut().ok_or_else(|| {
            wit_error(
                "host.no_task",
                "task effects are only available while a tool call runs",
            )
        })?;
        if call.effects.len() >= MAX_EFFECTS_PER_CALL {
            return Err(wit_error(
                "host.too_many_effects",
                format!("one call may request at most {MAX_EFFECTS_PER_CALL} effects"),
            ));
        }
        Ok(call)
    }

    /// Creates the child over A2A and records its row. The request runs on the caller's runtime
    /// (a connection it opens is driven there and pooled for the followers), and its time is the
    /// host's, not the guest's: it does not count against the call's deadline.
    async fn create_child(
        &mut self,
        agent: String,
        brief: ChildBrief,
        step: Option<String>,
    ) -> Result<SubtaskRef, WitToolError> {
        let (record, message_id, host, port) = {
            let call = self.in_call()?;
            if call.in_process_only {
                call.asked_outside = true;
                return Err(wit_error(
                    "host.not_yet",
                    "a sub-task cannot be created before the call is recorded; the harness runs \
                     the call again",
                ));
            }
            (
                call.record.clone(),
                call.next_message_id(),
                call.host.clone(),
                call.port.clone(),
            )
        };
        let Some(host) = host else {
            return Err(wit_error(
                "subtask.unavailable",
                "sub-tasks cannot be created where this tool runs",
            ));
        };
        let agent_id = agent.clone();
        let spawn = async move {
            let request = ChildRequest {
                parent: record,
                agent,
                brief,
                message_id,
            };
            port.spawn_child(request).await
        };
        let link = {
            let _waiting = self.host_wait.begin();
            // Aborted with the guest's call, as the request would be were it awaited in place.
            let spawn = telemetry::within(telemetry::current(), spawn);
            AbortOnDropHandle::new(host.spawn(spawn))
                .await
                .map_err(|_| {
                    wit_error(
                        "subtask.unavailable",
                        "the harness is stopping; the sub-task was not created",
                    )
                })?
                .map_err(to_wit)?
        };
        let reference = SubtaskRef {
            task_id: link.task_id.clone(),
            agent: agent_id,
        };
        if let Some(call) = self.call.as_mut() {
            call.effects.push(Effect::LinkSubtask { link, step });
        }
        Ok(reference)
    }
}

/// Refuses a step the plan (as the call's earlier effects leave it) does not have.
fn check_step(call: &CallState, step: Option<&str>) -> Result<(), WitToolError> {
    match step {
        Some(step) => call
            .port
            .check_step(&call.record, &call.effects, step)
            .map_err(to_wit),
        None => Ok(()),
    }
}

impl types::Host for StoreData {}

impl host::Host for StoreData {
    async fn log(&mut self, level: Level, message: String) {
        super::guest_output::lock(&self.log).write(level, &message);
    }

    async fn attach_plan(&mut self, steps: Vec<StepInput>) -> Result<Vec<String>, WitToolError> {
        let requests: Vec<StepRequest> = steps
            .into_iter()
            .map(|s| StepRequest {
                name: s.name,
                description: s.description,
                depends_on: s.depends_on,
            })
            .collect();
        let port = self.in_call()?.port.clone();
        let effect = port.attach_plan(&requests).map_err(to_wit)?;
        let ids = match &effect {
            Effect::AttachPlan { plan } => plan.steps.iter().map(|s| s.id.clone()).collect(),
            _ => Vec::new(),
        };
        self.effect(|_, _| Ok(effect))?;
        Ok(ids)
    }

    async fn complete_step(&mut self, step: String, output: String) -> Result<(), WitToolError> {
        let port = self.in_call()?.port.clone();
        self.effect(|record, pending| port.complete_step(record, pending, &step, &output))
    }

    async fn ask_participant(
        &mut self,
        participant_id: String,
        question: String,
        options: Vec<String>,
    ) -> Result<(), WitToolError> {
        let port = self.in_call()?.port.clone();
        self.effect(|record, _| port.ask_participant(record, &participant_id, &question, &options))
    }

    async fn spawn_subtask(&mut self, brief: SubtaskBrief) -> Result<SubtaskRef, WitToolError> {
        let request = {
            let call = self.in_call()?;
            // The host checks the id itself, whatever the plugin did: an unknown id (a guess, a
            // URL, an id copied from a message) fails here, before anything is created or
            // contacted.
            let agent = call
                .port
                .resolve_agent(brief.agent.as_deref())
                .map_err(to_wit)?;
            check_step(call, brief.step.as_deref())?;
            let child = ChildBrief {
                name: brief.name,
                goal: brief.goal,
                description: brief.description,
                acceptance_criteria: brief.acceptance_criteria,
                participants: call.record.ext.participants.clone(),
                lifecycle: Lifecycle::Agent,
                model: call.requested_model.clone(),
            };
            (agent, child, brief.step)
        };
        let (agent, child, step) = request;
        self.create_child(agent, child, step).await
    }

    async fn message_subtask(
        &mut self,
        task_id: String,
        agent: Option<String>,
        text: String,
    ) -> Result<SubtaskRef, WitToolError> {
        let (request, host, port) = {
            let call = self.in_call()?;
            if call.in_process_only {
                call.asked_outside = true;
                return Err(wit_error(
                    "host.not_yet",
                    "a message to a sub-task cannot be sent before the call is recorded; the \
                     harness runs the call again",
                ));
            }
            let request = ChildMessage {
                parent: call.record.clone(),
                task_id,
                agent,
                text,
                message_id: call.next_message_id(),
            };
            (request, call.host.clone(), call.port.clone())
        };
        let Some(host) = host else {
            return Err(wit_error(
                "subtask.unavailable",
                "sub-tasks cannot be reached where this tool runs",
            ));
        };
        let link = {
            let _waiting = self.host_wait.begin();
            AbortOnDropHandle::new(host.spawn(async move { port.message_child(request).await }))
                .await
                .map_err(|_| {
                    wit_error(
                        "subtask.unavailable",
                        "the harness is stopping; the message was not sent",
                    )
                })?
                .map_err(to_wit)?
        };
        Ok(SubtaskRef {
            agent: link.agent_id().to_string(),
            task_id: link.task_id,
        })
    }

    async fn create_task_for_participant(
        &mut self,
        participant_id: String,
        name: String,
        goal: String,
        acceptance_criteria: Vec<String>,
        step: Option<String>,
    ) -> Result<SubtaskRef, WitToolError> {
        let child = {
            let call = self.in_call()?;
            if call.record.ext.participant(&participant_id).is_none() {
                return Err(wit_error(
                    "channel.not_a_member",
                    format!("{participant_id} is not a participant of this task"),
                ));
            }
            check_step(call, step.as_deref())?;
            // The child's participants are the parent's, the one asked as its assignee: they
            // can all see it, and the assignee's reply is its answer.
            let participants = call
                .record
                .ext
                .participants
                .iter()
                .cloned()
                .map(|mut p| {
                    if p.id == participant_id {
                        p.role = Role::Assignee;
                    }
                    p
                })
                .collect();
            ChildBrief {
                name,
                goal,
                description: None,
                acceptance_criteria,
                participants,
                lifecycle: Lifecycle::Participant,
                model: None,
            }
        };
        self.create_child(SELF_ID.to_string(), child, step).await
    }

    async fn set_participant_role(
        &mut self,
        participant_id: String,
        role: String,
    ) -> Result<(), WitToolError> {
        let port = self.in_call()?.port.clone();
        self.effect(|record, _| port.set_participant_role(record, &participant_id, &role))
    }

    async fn list_skills(&mut self) -> Vec<String> {
        match &self.call {
            Some(call) => call.port.list_skills(),
            None => Vec::new(),
        }
    }

    async fn load_skill(&mut self, name: String) -> Result<String, WitToolError> {
        let call = self.in_call()?;
        let (body, effect) = call
            .port
            .load_skill(&call.loaded_skills, &call.effects, &name)
            .map_err(to_wit)?;
        call.effects.extend(effect);
        Ok(body)
    }

    async fn config(&mut self, key: String) -> Option<host::Setting> {
        let value = self.grant.as_ref()?.config.get(&key)?;
        Some(match value {
            toml::Value::String(text) => host::Setting::Text(text.clone()),
            toml::Value::Integer(n) => host::Setting::Integer(*n),
            toml::Value::Float(x) => host::Setting::Number(*x),
            toml::Value::Boolean(b) => host::Setting::Flag(*b),
            // Refused by the configuration's checks (`plugins.grants.<name>.config`).
            _ => return None,
        })
    }

    async fn config_keys(&mut self) -> Vec<String> {
        self.grant
            .as_ref()
            .map(|g| g.config.keys().cloned().collect())
            .unwrap_or_default()
    }

    async fn unload_skill(&mut self, name: String) -> Result<(), WitToolError> {
        let call = self.in_call()?;
        let effect = call
            .port
            .unload_skill(&call.loaded_skills, &call.effects, &name)
            .map_err(to_wit)?;
        call.effects.push(effect);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::state::records::extension::TaskExtension;

    fn call(task: &str, call_id: &str) -> CallState {
        CallState {
            record: TaskRecord {
                id: task.to_string(),
                context_id: "ctx".to_string(),
                status: Default::default(),
                artifacts: Vec::new(),
                metadata: Default::default(),
                ext: TaskExtension::from_text("goal"),
                owner: "user".to_string(),
            },
            call_id: call_id.to_string(),
            effects: Vec::new(),
            port: Arc::new(crate::work::engine::HostEffects::offline()),
            host: None,
            spawned: 0,
            requested_model: None,
            loaded_skills: Vec::new(),
            in_process_only: false,
            asked_outside: false,
        }
    }

    #[test]
    fn a_replayed_call_names_its_children_as_it_did_the_first_time() {
        let mut first = call("t-1", "call-7");
        let mut replay = call("t-1", "call-7");
        let ids: Vec<String> = (0..2).map(|_| first.next_message_id()).collect();
        let again: Vec<String> = (0..2).map(|_| replay.next_message_id()).collect();
        assert_eq!(ids, again);
        assert_ne!(ids[0], ids[1], "two children of one call have two ids");
        assert_ne!(ids[0], call("t-1", "call-8").next_message_id());
        assert_ne!(ids[0], call("t-2", "call-7").next_message_id());
    }
}
