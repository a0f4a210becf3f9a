//! The engine's side of the effect port: every effect a tool asks for, checked against the task
//! (`tools::effects`), the registry (agent ids, no network), the skills catalog, and children
//! created through `engine::children`. The plugin host sees only [`EffectPort`].

use std::sync::Arc;

use async_trait::async_trait;

use super::children::{Children, SpawnRequest};
use crate::state::records::extension::{Lifecycle, TaskLink};
use crate::state::records::record::TaskRecord;
use crate::work::agents::{LiveRegistry, SELF_ID, UnknownAgent};
use crate::work::skills::{Catalog, loading};
use crate::work::tools::effects::{self, StepRequest};
use crate::work::tools::{ChildMessage, ChildRequest, Effect, EffectPort, ToolError};

/// The effects a tool call may have, as this harness allows them.
pub struct HostEffects {
    /// `None` where no registry exists (tools run outside a server): only `self` is known.
    registry: Option<Arc<LiveRegistry>>,
    /// `None` where children cannot be created (tools run outside a server).
    children: Option<Arc<Children>>,
    skills: Arc<Catalog>,
}

impl HostEffects {
    /// The effects of a serving harness: agent ids checked against `registry`, children created
    /// by `children`, skills from `skills`.
    pub fn new(
        registry: Arc<LiveRegistry>,
        children: Arc<Children>,
        skills: Arc<Catalog>,
    ) -> HostEffects {
        HostEffects {
            registry: Some(registry),
            children: Some(children),
            skills,
        }
    }

    /// The effects of tools that run outside a server (`harness check`, tests, benchmarks):
    /// plans, steps, questions and roles are checked as usual; only `self` is a known agent, no
    /// child can be created, and there are no skills.
    pub fn offline() -> HostEffects {
        HostEffects {
            registry: None,
            children: None,
            skills: Arc::default(),
        }
    }

    /// [`HostEffects::offline`] with a skills catalog.
    pub fn offline_with_skills(skills: Arc<Catalog>) -> HostEffects {
        HostEffects {
            skills,
            ..HostEffects::offline()
        }
    }
}

#[async_trait]
impl EffectPort for HostEffects {
    fn attach_plan(&self, steps: &[StepRequest]) -> Result<Effect, ToolError> {
        let plan = effects::plan_from_steps(steps)?;
        Ok(Effect::AttachPlan { plan })
    }

    fn complete_step(
        &self,
        task: &TaskRecord,
        pending: &[Effect],
        step: &str,
        output: &str,
    ) -> Result<Effect, ToolError> {
        effects::complete_step(task, pending, step, output)
    }

    fn ask_participant(
        &self,
        task: &TaskRecord,
        participant_id: &str,
        question: &str,
        options: &[String],
    ) -> Result<Effect, ToolError> {
        effects::ask_participant(task, participant_id, question, options)
    }

    fn set_participant_role(
        &self,
        task: &TaskRecord,
        participant_id: &str,
        role: &str,
    ) -> Result<Effect, ToolError> {
        effects::set_participant_role(task, participant_id, role)
    }

    fn check_step(
        &self,
        task: &TaskRecord,
        pending: &[Effect],
        step: &str,
    ) -> Result<(), ToolError> {
        effects::check_step(task, pending, step)
    }

    fn resolve_agent(&self, agent: Option<&str>) -> Result<String, ToolError> {
        let resolved = match &self.registry {
            Some(registry) => registry.current().resolve(agent).map(|a| a.id.clone()),
            None => match agent {
                None => Ok(SELF_ID.to_string()),
                Some(id) if id == SELF_ID => Ok(SELF_ID.to_string()),
                Some(id) => Err(UnknownAgent::new(id, vec![SELF_ID.to_string()])),
            },
        };
        resolved.map_err(|unknown| ToolError::new(unknown.code(), unknown.message()))
    }

    async fn spawn_child(&self, request: ChildRequest) -> Result<TaskLink, ToolError> {
        let Some(children) = &self.children else {
            let what = match request.brief.lifecycle {
                Lifecycle::Participant => "participant tasks are".to_string(),
                Lifecycle::Agent => format!("delegation to {} is", request.agent),
            };
            return Err(ToolError::new(
                "tool.unavailable",
                format!("{what} not available where this tool runs"),
            ));
        };
        children
            .spawn(SpawnRequest {
                parent: &request.parent,
                agent: Some(&request.agent),
                brief: request.brief,
                message_id: request.message_id,
            })
            .await
    }

    async fn message_child(&self, request: ChildMessage) -> Result<TaskLink, ToolError> {
        let Some(children) = &self.children else {
            return Err(ToolError::new(
                "tool.unavailable",
                "sub-tasks are not available where this tool runs",
            ));
        };
        children.message(&request).await
    }

    fn list_skills(&self) -> Vec<String> {
        self.skills
            .skills()
            .map(|s| format!("{}: {}", s.name, s.description))
            .collect()
    }

    fn load_skill(
        &self,
        loaded: &[String],
        pending: &[Effect],
        name: &str,
    ) -> Result<(String, Option<Effect>), ToolError> {
        let loaded = loading::loaded_after(loaded, pending);
        let (skill, effect) = loading::load(&self.skills, &loaded, name)?;
        Ok((skill.body.clone(), effect))
    }

    fn unload_skill(
        &self,
        loaded: &[String],
        pending: &[Effect],
        name: &str,
    ) -> Result<Effect, ToolError> {
        let loaded = loading::loaded_after(loaded, pending);
        loading::unload(&self.skills, &loaded, name)
    }
}
