//! The tool seam: what the engine asks of whatever provides tools, and the effects a tool may
//! have on its task. Effects are data, applied by the engine in the same transaction that records
//! the tool's result, so a crash never leaves a result without its effect or the reverse.

pub mod brief;
pub mod effects;
pub mod live;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::base::model::{ToolCall, ToolSpec};
use crate::state::records::extension::{Plan, Role, TaskLink};
use crate::state::records::record::TaskRecord;
use brief::ChildBrief;
use effects::StepRequest;
pub use live::LiveToolSpecs;

/// A tool error as the model reads it: `[code] message`. Codes are stable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("[{code}] {message}")]
pub struct ToolError {
    /// Stable, dotted and lower-case (`plan.unknown_step`), so the model and tests can match it.
    pub code: String,
    /// What went wrong and what to do instead.
    pub message: String,
}

impl ToolError {
    /// An error with a stable code.
    pub fn new(code: &str, message: impl Into<String>) -> ToolError {
        ToolError {
            code: code.to_string(),
            message: message.into(),
        }
    }
}

/// A change a tool makes to its task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "effect", rename_all = "snake_case")]
pub enum Effect {
    /// Replace the task's plan.
    AttachPlan {
        /// The new plan, its step ids already assigned.
        plan: Plan,
    },
    /// Mark a step done with its output.
    CompleteStep {
        /// The step's id.
        step: String,
        /// What the step produced.
        output: String,
    },
    /// Ask a participant and wait: the task goes `INPUT_REQUIRED` with the question.
    AskParticipant {
        /// The participant asked.
        participant_id: String,
        /// The question, as the task's status message carries it.
        question: String,
        /// Answers to choose from, listed after the question; empty for a free answer.
        #[serde(default)]
        options: Vec<String>,
    },
    /// Change a participant's role.
    SetRole {
        /// The participant whose role changes.
        participant_id: String,
        /// The new role.
        role: Role,
    },
    /// Record a child just created on its agent: the sub-task row, and the plan step it serves.
    LinkSubtask {
        /// The child's row: its id, agent, deadline and reserved budget.
        link: TaskLink,
        /// The id of the plan step the child serves, which becomes active.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step: Option<String>,
    },
    /// Put a skill's body in the task's context. The journal keeps the name, not the body: the
    /// catalog holds each body once (`skills::loading::fold` applies it).
    LoadSkill {
        /// The skill's name in the catalog.
        name: String,
    },
    /// Take a loaded skill out of the task's context.
    UnloadSkill {
        /// The skill's name in the catalog.
        name: String,
    },
}

impl Effect {
    /// Whether the effect records something that already happened outside the task (a child
    /// created on its agent). Such an effect is kept even when its call fails, so nothing that
    /// exists is forgotten.
    pub fn already_happened(&self) -> bool {
        matches!(self, Effect::LinkSubtask { .. })
    }
}

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome {
    /// The text the model reads, or the error it reads as `[code] message`.
    pub result: Result<String, ToolError>,
    /// The changes to the task, applied with the result in one transaction.
    pub effects: Vec<Effect>,
}

impl ToolOutcome {
    /// A failed call with no effect.
    pub fn error(code: &str, message: impl Into<String>) -> ToolOutcome {
        ToolOutcome {
            result: Err(ToolError::new(code, message)),
            effects: Vec::new(),
        }
    }

    /// The text the model reads: the result, or `[code] message`.
    pub fn text(&self) -> String {
        match &self.result {
            Ok(text) => text.clone(),
            Err(err) => err.to_string(),
        }
    }
}

/// What a tool may know of its task while it runs.
pub struct ToolContext<'a> {
    /// The task whose call is running, as the engine holds it.
    pub record: &'a TaskRecord,
    /// The model's id for this call: stable across a restart, so what the call creates
    /// elsewhere can be named by it and not created twice.
    pub call_id: &'a str,
    /// The skills loaded on the task, as its journal says, sorted by name.
    pub skills: &'a [String],
}

/// Provides the tools the model may call.
#[async_trait]
pub trait ToolHost: Send + Sync {
    /// Every tool's definition, sorted by name.
    fn definitions(&self) -> Vec<ToolSpec>;
    /// Runs one call. An unknown tool is `[tool.not_found]`; bad arguments `[tool.invalid_arguments]`.
    async fn invoke(&self, context: &ToolContext<'_>, call: &ToolCall) -> ToolOutcome;
    /// Runs one call before its model call is journaled, if the call stays in the process: then
    /// its whole outcome is its result and the effects recorded with it, so the model call and
    /// the result share one transaction, and a stop before that commits loses only time (the
    /// model is asked again). `None` when the call asked to reach outside the process (to
    /// create a child), which it was refused: nothing happened, and it runs with
    /// [`ToolHost::invoke`] once its model call is journaled. A host that cannot tell runs
    /// nothing early.
    async fn invoke_in_process(
        &self,
        context: &ToolContext<'_>,
        call: &ToolCall,
    ) -> Option<ToolOutcome> {
        let _ = (context, call);
        None
    }

    /// The definitions as the turns read them, when they may change while the harness runs (an
    /// MCP server that was down at start-up joining): then the engine reads this list at each
    /// turn. `None` (the default) when [`ToolHost::definitions`] is read once, at start-up.
    fn live_definitions(&self) -> Option<LiveToolSpecs> {
        None
    }
}

/// A child a tool asks for: on `agent` (an id [`EffectPort::resolve_agent`] accepted), with
/// `brief`, for the task `parent`, sent with `message_id` (chosen from the call, so a replayed
/// call names the same child).
#[derive(Debug, Clone)]
pub struct ChildRequest {
    /// The task whose tool call asks for the child.
    pub parent: TaskRecord,
    /// The agent to create the child on (`self` for this harness).
    pub agent: String,
    /// What the child is asked to do.
    pub brief: ChildBrief,
    /// The creating message's id, derived from the call so a replay names the same child.
    pub message_id: String,
}

/// A message for an open child, from its parent's tool call (`message_subtask`).
#[derive(Debug, Clone)]
pub struct ChildMessage {
    /// The task whose tool call sends the message.
    pub parent: TaskRecord,
    /// The child's task id, as its agent named it.
    pub task_id: String,
    /// The child's agent; `None` when the task id alone names one of the parent's children.
    pub agent: Option<String>,
    /// The message's text.
    pub text: String,
    /// Chosen from the parent's journal, so the same call sends the same id after a restart.
    pub message_id: String,
}

/// The port through which a tool asks for effects on the task whose call is in flight: plans and
/// steps, questions to participants, roles, children, skills. The engine implements it
/// ([`crate::work::engine::HostEffects`]) and checks every request against the task as it is; the
/// plugin host knows this trait and nothing else of the engine. Each check sees the effects the
/// call has already asked for (`pending`), so a plan attached earlier in the same call counts.
#[async_trait]
pub trait EffectPort: Send + Sync {
    /// A plan from the model's steps (`create_plan`).
    fn attach_plan(&self, steps: &[StepRequest]) -> Result<Effect, ToolError>;
    /// A step of the plan done, with its output.
    fn complete_step(
        &self,
        task: &TaskRecord,
        pending: &[Effect],
        step: &str,
        output: &str,
    ) -> Result<Effect, ToolError>;
    /// A question to one of the task's participants; the task then waits for the answer.
    fn ask_participant(
        &self,
        task: &TaskRecord,
        participant_id: &str,
        question: &str,
        options: &[String],
    ) -> Result<Effect, ToolError>;
    /// A participant's new role (an admin's call only).
    fn set_participant_role(
        &self,
        task: &TaskRecord,
        participant_id: &str,
        role: &str,
    ) -> Result<Effect, ToolError>;
    /// Refuses a plan step the task's plan (with the pending effects) does not have.
    fn check_step(
        &self,
        task: &TaskRecord,
        pending: &[Effect],
        step: &str,
    ) -> Result<(), ToolError>;
    /// The registered agent an id names (`None` or `self`: this harness), without any network:
    /// an unknown id is `[agent.unknown]` with the valid ones.
    fn resolve_agent(&self, agent: Option<&str>) -> Result<String, ToolError>;
    /// Creates the child on its agent; the sub-task row for the parent.
    async fn spawn_child(&self, request: ChildRequest) -> Result<TaskLink, ToolError>;
    /// Sends a message on an open child's task on its agent; the child's row.
    async fn message_child(&self, request: ChildMessage) -> Result<TaskLink, ToolError>;
    /// The skills index as `name: description` lines.
    fn list_skills(&self) -> Vec<String>;
    /// Loads a skill on a task that has `loaded` (pending effects included): its body, and the
    /// effect to record (none when it was loaded already).
    fn load_skill(
        &self,
        loaded: &[String],
        pending: &[Effect],
        name: &str,
    ) -> Result<(String, Option<Effect>), ToolError>;
    /// Unloads a loaded skill.
    fn unload_skill(
        &self,
        loaded: &[String],
        pending: &[Effect],
        name: &str,
    ) -> Result<Effect, ToolError>;
}
