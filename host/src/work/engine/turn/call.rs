//! What a turn's model calls are told beside their messages, and how each is made: shared by
//! the turn's call and the summary call of a compaction, so both are traced, logged and counted
//! alike (a summary costs tokens like any turn).

use std::time::Instant;

use crate::base::model::{Effort, Model, ModelError, ModelReply, ModelRequest, Origin};
use crate::base::telemetry;
use crate::work::engine::progress;

/// What a turn's calls are told beside their messages: the task's effort and the turn they are
/// for. The summary call of a compaction is made at the same.
pub(super) struct Call {
    /// How hard to reason, as the task's brief set it.
    pub(super) effort: Option<Effort>,
    /// The task, the message answered and the turn.
    pub(super) origin: Origin,
    /// The name the task's model is known by (`default`, or the brief's choice): the log's,
    /// the metrics' and the span's.
    pub(super) model_name: String,
    /// The task's kept trace context (`TaskExt::trace`), so the call's `chat` span is a child
    /// of the task's `invoke_agent`.
    pub(super) trace: Option<String>,
}

impl Call {
    /// Sends `request` to `model` for the task `id`: a `chat` span around it, then its DEBUG
    /// line and its metrics.
    pub(super) async fn complete(
        &self,
        model: &dyn Model,
        request: &ModelRequest,
        id: &str,
    ) -> Result<ModelReply, ModelError> {
        let task = telemetry::task_context(id, self.trace.as_deref());
        let mut span = telemetry::chat(task.as_ref(), || model.describe(), &self.model_name);
        span.capture("gen_ai.input.messages", || {
            serde_json::to_string(&request.messages).unwrap_or_default()
        });
        let started = Instant::now();
        let answered = model.complete(request).await;
        let usage = answered.as_ref().ok().map(|reply| reply.usage);
        progress::model_called(id, &self.model_name, usage, started.elapsed());
        progress::model_traced(&mut span, answered.as_ref().ok());
        answered
    }
}
