//! Traces, following the OpenTelemetry GenAI conventions: an `invoke_agent` span per task, a
//! `chat {model}` span per model call, an `execute_tool {name}` span per tool call, and A2A
//! server and client spans, joined across processes by W3C trace context ([`traceparent`]).
//!
//! Off unless `app::runtime` installs a tracer ([`install`]): then every function here is one
//! branch on a `OnceLock` and returns [`TraceSpan::none`], with no allocation and no exporter.
//!
//! A task's `invoke_agent` span outlives any one process: the embedded engine may resume the
//! task after a restart and the Temporal engine runs its steps wherever an activity lands. So
//! its ids are derived from the task ([`task_context`]): its trace is the one the creating
//! request carried (kept with the task as a `traceparent`), its span id a digest of the task
//! id. Any step, anywhere, can then parent its spans under it, and the span itself is written
//! once, when the task ends ([`task_ended`]), with the start time its id records.

mod ids;
pub mod traceparent;

use std::borrow::Cow;
use std::sync::OnceLock;
use std::time::SystemTime;

use opentelemetry::trace::{
    Span as _, SpanBuilder, SpanContext, SpanKind, Status, TraceContextExt, TraceFlags, TraceState,
    Tracer as _,
};
use opentelemetry::{Context, KeyValue, Value};
use opentelemetry_sdk::trace::{SdkTracer, Span};

use crate::base::text::log_field::escape_capped;
pub use ids::{TaskIdGenerator, TaskIds};

/// The most characters of a string a span attribute carries when it came from a peer or the
/// model (a tool name, a context id, an agent id): one line, escaped, capped, like a log field.
pub const MAX_ATTRIBUTE_CHARS: usize = 256;
/// The most characters of prompt or completion text one span carries with
/// `telemetry.capture_content`: enough to read a turn, not a copy of the whole history.
pub const MAX_CAPTURED_CHARS: usize = 16 * 1024;

/// What [`install`] keeps: the tracer and what every span of this process says of it.
struct Installed {
    tracer: SdkTracer,
    agent_name: String,
    /// `invoke_agent {agent_name}`: every task's span name, made once.
    invoke_agent: String,
    capture_content: bool,
}

static INSTALLED: OnceLock<Installed> = OnceLock::new();

/// Turns traces on for the rest of the process: `tracer` records every span, `agent_name`
/// (this harness's card name) is each `invoke_agent` span's `gen_ai.agent.name`. The first
/// call wins; false when traces were already on.
pub fn install(tracer: SdkTracer, agent_name: &str, capture_content: bool) -> bool {
    let agent_name = escape_capped(agent_name, MAX_ATTRIBUTE_CHARS);
    INSTALLED
        .set(Installed {
            tracer,
            invoke_agent: format!("invoke_agent {agent_name}"),
            agent_name,
            capture_content,
        })
        .is_ok()
}

/// Whether traces are on: the one branch every span site takes when they are off.
#[inline]
pub fn enabled() -> bool {
    INSTALLED.get().is_some()
}

/// Whether prompt and completion text go into spans (`telemetry.capture_content`).
pub fn captures_content() -> bool {
    INSTALLED.get().is_some_and(|i| i.capture_content)
}

/// A peer's or the model's string as an attribute: one line, escaped, capped.
pub fn clean(text: &str) -> String {
    escape_capped(text, MAX_ATTRIBUTE_CHARS)
}

/// A span being recorded, or nothing (traces off, or a parent not sampled). Ended when dropped.
#[derive(Debug, Default)]
pub struct TraceSpan(Option<Span>);

impl TraceSpan {
    /// No span: what every constructor returns when traces are off.
    pub const fn none() -> TraceSpan {
        TraceSpan(None)
    }

    /// Whether a span is being recorded.
    pub fn is_recording(&self) -> bool {
        self.0.as_ref().is_some_and(|s| s.is_recording())
    }

    /// Sets an attribute.
    pub fn set(&mut self, key: &'static str, value: impl Into<Value>) {
        if let Some(span) = &mut self.0 {
            span.set_attribute(KeyValue::new(key, value));
        }
    }

    /// Sets an attribute to a string from a peer or the model, cleaned ([`clean`]).
    pub fn set_untrusted(&mut self, key: &'static str, value: &str) {
        if let Some(span) = &mut self.0 {
            span.set_attribute(KeyValue::new(key, clean(value)));
        }
    }

    /// Sets prompt or completion text, capped at [`MAX_CAPTURED_CHARS`], only with
    /// `telemetry.capture_content`; `text` is not even built otherwise.
    pub fn capture(&mut self, key: &'static str, text: impl FnOnce() -> String) {
        if self.0.is_some() && captures_content() {
            self.set(key, escape_capped(&text(), MAX_CAPTURED_CHARS));
        }
    }

    /// Renames the span (a server span learns its operation once the request is decoded).
    pub fn rename(&mut self, name: impl Into<Cow<'static, str>>) {
        if let Some(span) = &mut self.0 {
            span.update_name(name);
        }
    }

    /// Marks the span failed, with `error.type` (a stable code, not a peer's words).
    pub fn fail(&mut self, error_type: &'static str) {
        if let Some(span) = &mut self.0 {
            span.set_attribute(KeyValue::new("error.type", error_type));
            span.set_status(Status::error(error_type));
        }
    }

    /// The context children of this span start under; `None` without a span.
    pub fn context(&self) -> Option<Context> {
        let context = self.0.as_ref()?.span_context().clone();
        Some(Context::new().with_remote_span_context(context))
    }

    /// The `traceparent` (and `tracestate`) a request made within this span carries.
    pub fn headers(&self) -> Option<(String, Option<String>)> {
        let context = self.0.as_ref()?.span_context();
        Some((
            traceparent::format(context)?,
            traceparent::format_state(context),
        ))
    }
}

/// Starts a span under `parent` (none: a new trace) with `attributes`: given at the start,
/// in one vector, rather than set one by one (each set may grow the span's list).
fn start(
    name: Cow<'static, str>,
    kind: SpanKind,
    parent: Option<&Context>,
    attributes: Vec<KeyValue>,
) -> TraceSpan {
    let Some(installed) = INSTALLED.get() else {
        return TraceSpan::none();
    };
    let builder = SpanBuilder::from_name(name)
        .with_kind(kind)
        .with_attributes(attributes);
    let root = Context::new();
    let span = installed
        .tracer
        .build_with_context(builder, parent.unwrap_or(&root));
    TraceSpan(Some(span))
}

/// The context of the current request or call, when a span is open there (see
/// [`opentelemetry::context::FutureExt::with_context`]); `None` when traces are off.
pub fn current() -> Option<Context> {
    if !enabled() {
        return None;
    }
    let context = Context::current();
    context.span().span_context().is_valid().then_some(context)
}

/// The `traceparent` of the current span: what a new task keeps, so that its run, however
/// late and in whichever process, joins the trace of the request that created it.
pub fn current_traceparent() -> Option<String> {
    let context = current()?;
    traceparent::format(context.span().span_context())
}

/// The context of the `invoke_agent` span of task `id`, whose creating request's trace
/// context is `kept` (see [`current_traceparent`]): the parent of the task's model calls, tool
/// calls and requests to its children. `None` when traces are off.
pub fn task_context(id: &str, kept: Option<&str>) -> Option<Context> {
    if !enabled() {
        return None;
    }
    let parent = kept.and_then(|kept| traceparent::parse(kept.as_bytes(), None));
    let ids = TaskIds::of(id);
    let trace_id = parent.as_ref().map_or(ids.trace, |p| p.trace_id());
    let sampled = parent.as_ref().is_none_or(SpanContext::is_sampled);
    let context = SpanContext::new(
        trace_id,
        ids.span,
        TraceFlags::default().with_sampled(sampled),
        false,
        TraceState::NONE,
    );
    Some(Context::new().with_remote_span_context(context))
}

/// A `chat {model}` span (kind client) under the task's context: `gen_ai.request.model` and
/// `gen_ai.provider.name` from the model's description (`openai gpt-4o at …`), or the name
/// the harness knows the model by.
pub fn chat(
    task: Option<&Context>,
    described: impl FnOnce() -> String,
    configured: &str,
) -> TraceSpan {
    let Some(task) = task else {
        return TraceSpan::none();
    };
    let described = described();
    let mut words = described.split_whitespace();
    let provider = words.next().unwrap_or("unknown");
    let model = match provider {
        "openai" | "anthropic" => words.next().unwrap_or(configured),
        _ => configured,
    };
    let model = clean(model);
    let name = format!("chat {model}");
    let attributes = vec![
        KeyValue::new("gen_ai.operation.name", "chat"),
        KeyValue::new("gen_ai.provider.name", clean(provider)),
        KeyValue::new("gen_ai.request.model", model),
    ];
    start(name.into(), SpanKind::Client, Some(task), attributes)
}

/// An `execute_tool {name}` span (kind internal) under the task's context, started now or at
/// `since` (a call traced once it is known to have run).
pub fn execute_tool(
    task: Option<&Context>,
    tool: &str,
    call_id: &str,
    since: Option<SystemTime>,
) -> TraceSpan {
    let (Some(task), Some(installed)) = (task, INSTALLED.get()) else {
        return TraceSpan::none();
    };
    let tool = clean(tool);
    let mut builder =
        SpanBuilder::from_name(format!("execute_tool {tool}")).with_kind(SpanKind::Internal);
    if let Some(since) = since {
        builder = builder.with_start_time(since);
    }
    let mut span = TraceSpan(Some(installed.tracer.build_with_context(builder, task)));
    span.set("gen_ai.operation.name", "execute_tool");
    span.set("gen_ai.tool.name", tool);
    span.set_untrusted("gen_ai.tool.call.id", call_id);
    span
}

/// An A2A client span (kind client) for a request to the agent at `server`, under the current
/// context (a task's, when the caller attached it with [`within`]) or starting a trace.
pub fn a2a_client(method: &str, server: &str) -> TraceSpan {
    if !enabled() {
        return TraceSpan::none();
    }
    let parent = current();
    let method = clean(method);
    let attributes = vec![
        KeyValue::new("rpc.system", "jsonrpc"),
        KeyValue::new("rpc.method", method.clone()),
        KeyValue::new("server.address", clean(authority(server))),
    ];
    start(method.into(), SpanKind::Client, parent.as_ref(), attributes)
}

/// The host and port of `url`, without its scheme, path or any credentials in it.
fn authority(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    host.rsplit_once('@').map_or(host, |(_, host)| host)
}

/// An A2A server span (kind server) for a request that carried `traceparent` and
/// `tracestate` (both hostile: read by [`traceparent::parse`]), as the context the request is
/// served within: the span is in it, so the operation can name it ([`name_current`]) and
/// [`end_served`] end it. `None` when traces are off.
pub fn a2a_server(
    http_method: &str,
    traceparent: Option<&[u8]>,
    tracestate: Option<&[u8]>,
) -> Option<Context> {
    if !enabled() {
        return None;
    }
    let remote = traceparent.and_then(|header| traceparent::parse(header, tracestate));
    let parent = remote.map(|remote| Context::new().with_remote_span_context(remote));
    let http_method: Value = match http_method {
        "POST" => "POST".into(),
        "GET" => "GET".into(),
        other => clean(other).into(),
    };
    let attributes = vec![
        KeyValue::new("rpc.system", "jsonrpc"),
        KeyValue::new("http.request.method", http_method),
    ];
    let span = start("A2A".into(), SpanKind::Server, parent.as_ref(), attributes);
    Some(Context::new().with_span(span.0?))
}

/// Ends the server span of [`a2a_server`] with the response's HTTP status (a 5xx fails it).
pub fn end_served(context: &Context, status: u16) {
    let span = context.span();
    span.set_attribute(KeyValue::new(
        "http.response.status_code",
        i64::from(status),
    ));
    if status >= 500 {
        span.set_attribute(KeyValue::new("error.type", status.to_string()));
        span.set_status(Status::error("server error"));
    }
    span.end();
}

/// Runs `work` within `context` (its spans and requests are its children), or as it is.
pub async fn within<F: std::future::Future>(context: Option<Context>, work: F) -> F::Output {
    use opentelemetry::context::FutureExt as _;
    match context {
        Some(context) => work.with_context(context).await,
        None => work.await,
    }
}

/// Names the server span of the request being served after its operation, with the task it
/// is about when known; nothing outside a traced request.
pub fn name_current(method: &'static str, task_id: Option<&str>) {
    let Some(context) = current() else {
        return;
    };
    let span = context.span();
    span.update_name(method);
    span.set_attribute(KeyValue::new("rpc.method", method));
    if let Some(id) = task_id {
        span.set_attribute(KeyValue::new("a2a.task.id", clean(id)));
    }
}

/// A task that ended, as its `invoke_agent` span says it.
#[derive(Debug)]
pub struct TaskEnd<'a> {
    /// The task's id (`a2a.task.id`).
    pub id: &'a str,
    /// Its context id (`gen_ai.conversation.id`).
    pub context_id: &'a str,
    /// The `traceparent` kept when it was created.
    pub kept: Option<&'a str>,
    /// When it was created, when known.
    pub started: Option<SystemTime>,
    /// Its final state's wire name (`a2a.task.state`).
    pub state: &'static str,
    /// Whether that state is a failure (failed, rejected).
    pub failed: bool,
    /// Its model calls and tokens.
    pub turns: usize,
    /// Input tokens used.
    pub input_tokens: u64,
    /// Output tokens used.
    pub output_tokens: u64,
}

/// Writes the task's `invoke_agent {agent}` span (kind internal) with the ids
/// [`task_context`] gave its children, under the span of the request that created it.
pub fn task_ended(end: &TaskEnd<'_>) {
    let Some(installed) = INSTALLED.get() else {
        return;
    };
    let parent = end
        .kept
        .and_then(|kept| traceparent::parse(kept.as_bytes(), None))
        .map(|remote| Context::new().with_remote_span_context(remote))
        .unwrap_or_default();
    let agent_name: &'static str = &installed.agent_name;
    let attributes = vec![
        KeyValue::new("gen_ai.operation.name", "invoke_agent"),
        KeyValue::new("gen_ai.agent.name", agent_name),
        KeyValue::new("gen_ai.conversation.id", clean(end.context_id)),
        KeyValue::new("a2a.task.id", clean(end.id)),
        KeyValue::new("a2a.task.state", end.state),
        KeyValue::new("a2a.task.turns", end.turns as i64),
        KeyValue::new("gen_ai.usage.input_tokens", end.input_tokens as i64),
        KeyValue::new("gen_ai.usage.output_tokens", end.output_tokens as i64),
    ];
    let name: &'static str = &installed.invoke_agent;
    let mut builder = SpanBuilder::from_name(name)
        .with_kind(SpanKind::Internal)
        .with_attributes(attributes);
    if let Some(started) = end.started {
        builder = builder.with_start_time(started);
    }
    let mut span = TraceSpan(Some(
        TaskIds::of(end.id).forced(|| installed.tracer.build_with_context(builder, &parent)),
    ));
    if end.failed {
        span.fail("task_failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_address_is_the_host_and_port_alone() {
        assert_eq!(
            authority("https://u:secret@agent.example:8443/a2a?x=1"),
            "agent.example:8443"
        );
        assert_eq!(authority("http://127.0.0.1:9000"), "127.0.0.1:9000");
        assert_eq!(authority("no-scheme/path"), "no-scheme");
    }

    #[test]
    fn with_traces_off_nothing_is_recorded_and_no_context_is_made() {
        // No test of this crate installs a tracer: installing one is the runtime's, once.
        assert!(!enabled());
        assert!(task_context("t", None).is_none());
        assert!(!a2a_client("GetTask", "http://x").is_recording());
        assert!(a2a_server("POST", Some(b"garbage"), None).is_none());
        assert!(current_traceparent().is_none());
        assert!(chat(None, || unreachable!(), "default").headers().is_none());
    }
}
