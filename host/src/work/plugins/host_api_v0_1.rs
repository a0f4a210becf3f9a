//! The host functions of plugins built against 0.1.0 of the contract: the same functions as
//! the current version's (`host_api`), their records converted, so an old plugin is checked
//! exactly as a new one is.

use super::bindings::host as current;
use super::bindings::types::ToolError as WitToolError;
use super::bindings::v0_1::tiny_harness::plugin::host::{
    self as old, Level, StepInput, SubtaskBrief, SubtaskRef,
};
use super::sandbox::StoreData;

fn level(level: Level) -> current::Level {
    match level {
        Level::Debug => current::Level::Debug,
        Level::Info => current::Level::Info,
        Level::Warn => current::Level::Warn,
        Level::Error => current::Level::Error,
    }
}

fn subtask_ref(r: current::SubtaskRef) -> SubtaskRef {
    SubtaskRef {
        task_id: r.task_id,
        agent: r.agent,
    }
}

impl old::Host for StoreData {
    async fn log(&mut self, l: Level, message: String) {
        current::Host::log(self, level(l), message).await
    }

    async fn attach_plan(&mut self, steps: Vec<StepInput>) -> Result<Vec<String>, WitToolError> {
        let steps = steps
            .into_iter()
            .map(|s| current::StepInput {
                name: s.name,
                description: s.description,
                depends_on: s.depends_on,
            })
            .collect();
        current::Host::attach_plan(self, steps).await
    }

    async fn complete_step(&mut self, step: String, output: String) -> Result<(), WitToolError> {
        current::Host::complete_step(self, step, output).await
    }

    async fn ask_participant(
        &mut self,
        participant_id: String,
        question: String,
        options: Vec<String>,
    ) -> Result<(), WitToolError> {
        current::Host::ask_participant(self, participant_id, question, options).await
    }

    async fn spawn_subtask(&mut self, brief: SubtaskBrief) -> Result<SubtaskRef, WitToolError> {
        let brief = current::SubtaskBrief {
            name: brief.name,
            goal: brief.goal,
            description: brief.description,
            acceptance_criteria: brief.acceptance_criteria,
            agent: brief.agent,
            step: brief.step,
        };
        current::Host::spawn_subtask(self, brief)
            .await
            .map(subtask_ref)
    }

    async fn create_task_for_participant(
        &mut self,
        participant_id: String,
        name: String,
        goal: String,
        acceptance_criteria: Vec<String>,
        step: Option<String>,
    ) -> Result<SubtaskRef, WitToolError> {
        current::Host::create_task_for_participant(
            self,
            participant_id,
            name,
            goal,
            acceptance_criteria,
            step,
        )
        .await
        .map(subtask_ref)
    }

    async fn message_subtask(
        &mut self,
        task_id: String,
        agent: Option<String>,
        text: String,
    ) -> Result<SubtaskRef, WitToolError> {
        current::Host::message_subtask(self, task_id, agent, text)
            .await
            .map(subtask_ref)
    }

    async fn set_participant_role(
        &mut self,
        participant_id: String,
        role: String,
    ) -> Result<(), WitToolError> {
        current::Host::set_participant_role(self, participant_id, role).await
    }

    async fn list_skills(&mut self) -> Vec<String> {
        current::Host::list_skills(self).await
    }

    async fn load_skill(&mut self, name: String) -> Result<String, WitToolError> {
        current::Host::load_skill(self, name).await
    }

    async fn unload_skill(&mut self, name: String) -> Result<(), WitToolError> {
        current::Host::unload_skill(self, name).await
    }
}
