//! What every step of every task's loop works with and answers (`Shared`, `Step`, `StepError`),
//! kept below the loop, the inbox and participant tasks so that each imports it without
//! importing the others.

use std::sync::Arc;

use super::children::Children;
use crate::base::model::{ModelError, Models};
use crate::state::store::StoreError;
use crate::state::tasks::hub::TaskHub;
use crate::work::context::LivePrefix;
use crate::work::skills::Catalog;
use crate::work::tools::{LiveToolSpecs, ToolHost};

/// Settings of the turn loop, from `[context]`, `[limits]` and `[model]`.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// `limits.max_turns`: model calls a task may make before it fails, so that a model that
    /// never answers cannot spend without end.
    pub max_turns: u32,
    /// `context.turn_budget_tokens`: what one model call may hold, before the model's own
    /// context window cuts it further.
    pub turn_budget_tokens: usize,
    /// `context.compaction_fraction`: the share of the turn budget past which the oldest
    /// history is summarised, so that compaction happens before a call would not fit.
    pub compaction_fraction: f64,
    /// The output limit sent with each call (and each compaction's summary request); `None`
    /// leaves it to each model's own `max_output_tokens`.
    pub max_output_tokens: Option<u32>,
    /// `limits.task_token_budget`: no task uses more, whatever its brief says.
    pub task_token_budget: Option<u64>,
}

/// What every loop shares: computed once at start-up.
pub(crate) struct Shared {
    /// The task service every step reads and writes its task through.
    pub hub: Arc<TaskHub>,
    /// The default model and the named ones; each task runs on the one its brief names.
    pub models: Models,
    /// What runs the model's tool calls.
    pub tools: Arc<dyn ToolHost>,
    /// The start of every request, computed at start-up (again once when an agent joins late).
    pub prefix: LivePrefix,
    /// The tool definitions, sorted by name, as sent on every turn (replaced once when an MCP
    /// server that was down at start-up joins).
    pub tool_specs: LiveToolSpecs,
    /// The turn loop's limits.
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

/// Why a step could not be taken: each ends the step differently (`turn::step`).
#[derive(Debug, thiserror::Error)]
pub(crate) enum StepError {
    /// The store failed: the loop stops, and the task resumes from its journal later.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The model call failed: the task fails with the reason a client may read.
    #[error("{0}")]
    Model(#[from] ModelError),
}
