//! What a working task is doing, told two ways: to its followers as a WORKING status update
//! (calling the model, running a tool, waiting on a sub-task), so a client can show progress,
//! and to the operator as the task's story in the log (each model call and tool call at DEBUG,
//! each child and the task's end at INFO). Neither is journaled. Names come from the model's
//! calls and from peers: each is escaped and capped before it is said anywhere, and no prompt,
//! answer or argument is. Beside each point of the story, its span ([`crate::base::telemetry`]):
//! a model call's usage, a tool call's outcome, the task's `invoke_agent` at its end; prompt
//! and completion text only with `telemetry.capture_content`.

use std::time::Duration;

use crate::base::metrics::METRICS;
use crate::base::model::{ModelReply, ToolCall, Usage};
use crate::base::protocol::types::TaskState;
use crate::base::telemetry::{self, TaskEnd, TraceSpan};
use crate::base::text::log_field::escape_capped;
use crate::state::records::record::TaskRecord;
use crate::state::tasks::hub::TaskHub;
use crate::state::tasks::ids::age_of;
use crate::work::tools::ToolOutcome;

/// The most characters of a name (tool, sub-task, agent) a progress note or log line carries:
/// a name is short; a longer one is the model's or a peer's noise.
pub const MAX_NAME_CHARS: usize = 80;

/// What the task's work is doing now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Doing<'a> {
    /// Waiting for the model's next reply.
    CallingModel,
    /// Running the tool the model called.
    RunningTool(&'a str),
    /// Waiting for a sub-task on an agent.
    WaitingOnSubTask {
        /// The sub-task's id on its agent.
        task: &'a str,
        /// The agent it runs on.
        agent: &'a str,
    },
}

impl Doing<'_> {
    /// The note a follower reads.
    pub fn text(&self) -> String {
        match self {
            Doing::CallingModel => "Calling the model".to_string(),
            Doing::RunningTool(tool) => format!("Running tool `{}`", name(tool)),
            Doing::WaitingOnSubTask { task, agent } => format!(
                "Waiting on sub-task `{}` on agent `{}`",
                name(task),
                name(agent)
            ),
        }
    }
}

/// A name as a note or a log line may carry it: one line, no control or invisible character,
/// capped.
fn name(text: &str) -> String {
    escape_capped(text, MAX_NAME_CHARS)
}

/// Tells the task's followers what it is doing; nothing when nobody follows it.
pub(crate) fn announce(hub: &TaskHub, record: &TaskRecord, doing: Doing<'_>) {
    hub.announce_progress(&record.id, &record.context_id, doing.text());
}

/// The log line and the metrics of one model call: the model, whether it answered, its tokens
/// and how long it took.
pub(crate) fn model_called(task: &str, model: &str, usage: Option<Usage>, took: Duration) {
    let ok = usage.is_some();
    let usage = usage.unwrap_or_default();
    METRICS.model_call(model, ok, took, usage.input_tokens, usage.output_tokens);
    tracing::debug!(
        task,
        model,
        input_tokens = usage.input_tokens,
        output_tokens = usage.output_tokens,
        duration_ms = took.as_millis() as u64,
        outcome = if ok { "ok" } else { "error" },
        "model call"
    );
}

/// What a model call's `chat` span records of its reply: the tokens, or the failure; the
/// reply's text and calls only with `telemetry.capture_content`.
pub(crate) fn model_traced(span: &mut TraceSpan, reply: Option<&ModelReply>) {
    if !span.is_recording() {
        return;
    }
    let Some(reply) = reply else {
        span.fail("model_error");
        return;
    };
    span.set("gen_ai.usage.input_tokens", reply.usage.input_tokens as i64);
    span.set(
        "gen_ai.usage.output_tokens",
        reply.usage.output_tokens as i64,
    );
    span.capture("gen_ai.output.messages", || {
        serde_json::json!([{ "role": "assistant", "text": reply.text, "tool_calls": reply.tool_calls }])
            .to_string()
    });
}

/// What a tool call's `execute_tool` span records of its outcome: a failure is the span's error
/// status, with the tool error's stable code (cleaned: an MCP server or plugin chose it).
pub(crate) fn tool_traced(span: &mut TraceSpan, outcome: &ToolOutcome) {
    if let Err(err) = &outcome.result
        && span.is_recording()
    {
        span.set_untrusted("gen_ai.tool.error.code", &err.code);
        span.fail("tool_error");
    }
}

/// The log line of one tool call: its name, whether it succeeded and how long it took.
pub(crate) fn tool_ran(task: &str, call: &ToolCall, ok: bool, took: Duration) {
    METRICS.tool_call(&call.name, ok);
    tracing::debug!(
        task,
        tool = %name(&call.name),
        outcome = if ok { "ok" } else { "error" },
        duration_ms = took.as_millis() as u64,
        "tool call"
    );
}

/// The log line of a child the task created: the agent and the child's id there.
pub(crate) fn child_created(task: &str, agent: &str, child: &str) {
    METRICS.subtask(agent, "created");
    tracing::info!(task, agent = %name(agent), child = %name(child), "sub-task created");
}

/// The log line of the task's end: its state, its model turns, its tokens and how long it
/// lived (from the time its id was minted; absent for an id this harness did not mint).
pub(crate) fn task_ended(record: &TaskRecord, turns: usize) {
    let usage = record.ext.usage.unwrap_or_default();
    let age = age_of(&record.id);
    if telemetry::enabled() {
        let state = record.state();
        telemetry::task_ended(&TaskEnd {
            id: &record.id,
            context_id: &record.context_id,
            kept: record.ext.trace.as_deref(),
            started: age.and_then(|age| std::time::SystemTime::now().checked_sub(age)),
            state: state.wire_name(),
            failed: matches!(state, TaskState::Failed | TaskState::Rejected),
            turns,
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
        });
    }
    let lived = age.map(|d| d.as_millis() as u64);
    tracing::info!(
        task = %record.id,
        context = %name(&record.context_id),
        state = record.state().wire_name(),
        turns,
        input_tokens = usage.input_tokens,
        output_tokens = usage.output_tokens,
        duration_ms = lived,
        "task ended"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_name_what_the_work_does_golden() {
        assert_eq!(Doing::CallingModel.text(), "Calling the model");
        assert_eq!(
            Doing::RunningTool("attach_plan").text(),
            "Running tool `attach_plan`"
        );
        assert_eq!(
            Doing::WaitingOnSubTask {
                task: "0190c2b4-7d1e",
                agent: "ledger"
            }
            .text(),
            "Waiting on sub-task `0190c2b4-7d1e` on agent `ledger`"
        );
    }

    #[test]
    fn a_hostile_name_stays_on_one_line_and_is_capped() {
        let text =
            Doing::RunningTool(&format!("x\n2026 INFO forged\u{1b}[31m{}", "y".repeat(500))).text();
        assert!(!text.contains('\n') && !text.contains('\u{1b}'), "{text}");
        assert!(text.chars().count() < MAX_NAME_CHARS + 60, "{text}");
    }
}
