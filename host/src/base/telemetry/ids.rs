//! The ids of a task's `invoke_agent` span, derived from the task id so that every process
//! that runs one of the task's steps names the same span, and the id generator that lets the
//! tracer use them (the SDK takes a span's ids only from its generator).

use std::cell::Cell;

use opentelemetry::trace::{SpanId, TraceId};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator};
use sha2::{Digest, Sha256};

/// The ids a task's `invoke_agent` span has: its span id always, its trace id when the task
/// was created outside any trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskIds {
    /// The trace of a task created outside any trace.
    pub trace: TraceId,
    /// The span id of its `invoke_agent` span.
    pub span: SpanId,
}

thread_local! {
    /// The ids the next span built on this thread takes, set only around one synchronous build.
    static FORCED: Cell<Option<TaskIds>> = const { Cell::new(None) };
}

impl TaskIds {
    /// The ids of task `id`: a SHA-256 of it, split (never zero: a zero id is invalid).
    pub fn of(id: &str) -> TaskIds {
        let digest = Sha256::digest(id.as_bytes());
        let mut trace = [0u8; 16];
        let mut span = [0u8; 8];
        trace.copy_from_slice(&digest[..16]);
        span.copy_from_slice(&digest[16..24]);
        trace[15] |= 1;
        span[7] |= 1;
        TaskIds {
            trace: TraceId::from_bytes(trace),
            span: SpanId::from_bytes(span),
        }
    }

    /// Runs `build` with these ids given to the span it builds on this thread.
    pub(super) fn forced<T>(self, build: impl FnOnce() -> T) -> T {
        FORCED.with(|forced| forced.set(Some(self)));
        let built = build();
        FORCED.with(|forced| forced.set(None));
        built
    }
}

/// The process's id generator: random ids, except within [`TaskIds::forced`] (the SDK asks
/// for the span id first, the trace id after, only when there is no parent).
#[derive(Debug, Default)]
pub struct TaskIdGenerator {
    random: RandomIdGenerator,
}

impl IdGenerator for TaskIdGenerator {
    fn new_trace_id(&self) -> TraceId {
        match FORCED.with(Cell::get) {
            Some(ids) => ids.trace,
            None => self.random.new_trace_id(),
        }
    }

    fn new_span_id(&self) -> SpanId {
        match FORCED.with(Cell::get) {
            Some(ids) => ids.span,
            None => self.random.new_span_id(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_always_has_the_same_valid_ids_and_another_task_others() {
        let a = TaskIds::of("0190c2b4-7d1e-7000-8000-000000000001");
        assert_eq!(a, TaskIds::of("0190c2b4-7d1e-7000-8000-000000000001"));
        assert_ne!(a, TaskIds::of("0190c2b4-7d1e-7000-8000-000000000002"));
        assert!(a.trace != TraceId::INVALID && a.span != SpanId::INVALID);
    }

    #[test]
    fn the_generator_gives_forced_ids_within_a_forced_build_and_random_ones_after() {
        let generator = TaskIdGenerator::default();
        let ids = TaskIds::of("t");
        let (trace, span) = ids.forced(|| (generator.new_trace_id(), generator.new_span_id()));
        assert_eq!((trace, span), (ids.trace, ids.span));
        assert_ne!(generator.new_span_id(), ids.span);
    }
}
