//! Traces across a delegation tree, from two real `harness serve` processes to a loopback
//! OTLP/HTTP receiver: a task on harness A delegates to A itself and to harness B, and one trace
//! holds both processes' spans (`invoke_agent`, `chat`, `execute_tool`, A2A server and client),
//! each child's `invoke_agent` under the server span of the request that created it, under A's
//! client span. No prompt text is in any span unless `capture_content` is on (B has it on).
//! With no endpoint, no exporter thread runs.

mod support {
    pub mod harness_process;
}

use std::collections::HashMap;
use std::path::Path;
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use prost::Message as _;
use support::harness_process::serve_with_env;
use tiny_harness::base::protocol::requests::{SendMessageConfiguration, SendMessageRequest};
use tiny_harness::base::protocol::types::{Message, Part, Role, SendMessageResponse};
use tiny_harness::work::agents::client::A2aClient;

/// What the user sends harness A: no span may hold it.
const PROMPT_CANARY: &str = "prompt-canary-5d1c: reconcile the March ledger";
/// The goal A's model gives its children: in B's spans only, where content is captured.
const GOAL_CANARY: &str = "goal-canary-9e2b: count the invoices";
/// How long the whole tree may take to end and be exported: a liveness bound, not a timing.
const TREE_WITHIN: Duration = Duration::from_secs(90);
/// The token that makes A a trusted delegator of B.
const A_TOKEN: &str = "traces-test-token-for-harness-a-0123456789";
/// The name the exporter's thread has, as Linux keeps it (15 characters).
const EXPORT_THREAD_COMM: &str = "OpenTelemetry.T";

/// A: the first reply delegates to itself and to B (a child on A, one level down, has those
/// calls refused by `max_subtask_depth` and ends at its second reply); then it waits and ends.
const SCRIPT_A: &str = r#"
[[reply]]
text = "Delegating."
usage = { input_tokens = 101, output_tokens = 11 }
[[reply.tool_calls]]
name = "spawn_subtask"
arguments = { name = "own part", goal = "goal-canary-9e2b: count the invoices", agent = "self" }
[[reply.tool_calls]]
name = "spawn_subtask"
arguments = { name = "b part", goal = "goal-canary-9e2b: count the invoices", agent = "b" }

[[reply]]
text = "Waiting for the others."
usage = { input_tokens = 102, output_tokens = 12 }

[[reply]]
text = "Done."
[[reply]]
text = "Done."
[[reply]]
text = "Done."
"#;

const SCRIPT_B: &str = r#"
[[reply]]
text = "B counted 12 invoices."
usage = { input_tokens = 201, output_tokens = 21 }
"#;

/// One span as the receiver got it.
#[derive(Debug, Clone)]
struct Got {
    service: String,
    trace: Vec<u8>,
    id: Vec<u8>,
    parent: Vec<u8>,
    name: String,
    kind: i32,
    attrs: HashMap<String, String>,
    failed: bool,
}

impl Got {
    fn attr(&self, key: &str) -> Option<&str> {
        self.attrs.get(key).map(String::as_str)
    }
}

type Spans = Arc<Mutex<Vec<Got>>>;

/// A loopback OTLP/HTTP receiver: every `ExportTraceServiceRequest` posted to `/v1/traces`,
/// decoded and kept.
async fn receiver() -> (String, Spans) {
    let spans: Spans = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .route("/v1/traces", axum::routing::post(receive))
        .with_state(spans.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, spans)
}

async fn receive(State(spans): State<Spans>, body: Bytes) -> impl axum::response::IntoResponse {
    let request = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf body");
    let mut got = spans.lock().unwrap();
    for resource in request.resource_spans {
        let attrs = resource.resource.map(|r| r.attributes).unwrap_or_default();
        let service = attrs
            .iter()
            .find(|kv| kv.key == "service.name")
            .and_then(|kv| text(kv.value.as_ref()?.value.as_ref()?))
            .unwrap_or_default();
        for span in resource.scope_spans.into_iter().flat_map(|s| s.spans) {
            let mut attrs: HashMap<String, String> = span
                .attributes
                .iter()
                .filter_map(|kv| Some((kv.key.clone(), text(kv.value.as_ref()?.value.as_ref()?)?)))
                .collect();
            for event in &span.events {
                for kv in &event.attributes {
                    if let Some(value) = kv.value.as_ref().and_then(|v| text(v.value.as_ref()?)) {
                        attrs.insert(format!("event.{}.{}", event.name, kv.key), value);
                    }
                }
            }
            got.push(Got {
                service: service.clone(),
                trace: span.trace_id,
                id: span.span_id,
                parent: span.parent_span_id,
                name: span.name,
                kind: span.kind,
                attrs,
                failed: span
                    .status
                    .is_some_and(|s| s.code == StatusCode::Error as i32),
            });
        }
    }
    (
        [("content-type", "application/x-protobuf")],
        Vec::<u8>::new(),
    )
}

fn text(value: &AnyValue) -> Option<String> {
    match value {
        AnyValue::StringValue(s) => Some(s.clone()),
        AnyValue::IntValue(i) => Some(i.to_string()),
        AnyValue::BoolValue(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A harness process, killed when dropped.
struct Harness {
    child: Child,
    url: String,
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts a scripted harness in `dir` with `extra` configuration; spans go to `otlp` if given.
fn start(dir: &Path, script: &str, extra: &str) -> Harness {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("script.toml"), script).unwrap();
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nbind = \"127.0.0.1:0\"\n[model]\nprovider = \"scripted\"\nscript = \"script.toml\"\n\
             [store]\npath = \"harness.db\"\n{extra}"
        ),
    )
    .unwrap();
    let (child, url) = serve_with_env(
        &config,
        &[("A_TOKEN", A_TOKEN), ("OTEL_BSP_SCHEDULE_DELAY", "100")],
    );
    Harness { child, url }
}

/// The names of the process's threads, as `/proc` keeps them.
fn thread_names(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|entry| std::fs::read_to_string(entry.ok()?.path().join("comm")).ok())
        .map(|name| name.trim().to_string())
        .collect()
}

fn new_task(text: &str) -> SendMessageRequest {
    SendMessageRequest {
        tenant: String::new(),
        message: Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            role: Role::User,
            parts: vec![Part::text(text)],
            ..Message::default()
        },
        configuration: Some(SendMessageConfiguration {
            return_immediately: true,
            ..SendMessageConfiguration::default()
        }),
        metadata: None,
    }
}

/// The spans the receiver holds once `done` holds of them, within [`TREE_WITHIN`].
async fn spans_when(spans: &Spans, done: impl Fn(&[Got]) -> bool) -> Vec<Got> {
    let started = Instant::now();
    loop {
        let now = spans.lock().unwrap().clone();
        if done(&now) {
            return now;
        }
        assert!(
            started.elapsed() < TREE_WITHIN,
            "the spans never arrived; got: {:#?}",
            now.iter()
                .map(|s| (&s.service, &s.name))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn is_invoke(span: &Got) -> bool {
    span.name.starts_with("invoke_agent")
}

/// Walks up from `span` by parent ids; the spans met, nearest first.
fn ancestors<'a>(spans: &'a [Got], span: &Got) -> Vec<&'a Got> {
    let mut chain = Vec::new();
    let mut parent = span.parent.clone();
    while !parent.is_empty() && chain.len() < 32 {
        let Some(found) = spans
            .iter()
            .find(|s| s.id == parent && s.trace == span.trace)
        else {
            break;
        };
        chain.push(found);
        parent = found.parent.clone();
    }
    chain
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_delegating_to_itself_and_another_harness_makes_one_trace_of_both_processes() {
    let (otlp, spans) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let b = start(
        &dir.path().join("b"),
        SCRIPT_B,
        &format!(
            "[card]\nname = \"Ledger B\"\n[[server.trusted_delegators]]\nid = \"harness-a\"\ntoken_env = \"A_TOKEN\"\n\
             [telemetry]\notlp_endpoint = \"{otlp}\"\nservice_name = \"harness-b\"\ncapture_content = true\n"
        ),
    );
    let a = start(
        &dir.path().join("a"),
        SCRIPT_A,
        &format!(
            "[card]\nname = \"Desk A\"\n[limits]\nmax_subtask_depth = 1\n\
             [[agents]]\nid = \"b\"\nurl = \"{}\"\ntoken_env = \"A_TOKEN\"\n\
             [telemetry]\notlp_endpoint = \"{otlp}\"\nservice_name = \"harness-a\"\n",
            b.url
        ),
    );
    assert!(
        thread_names(a.child.id())
            .iter()
            .any(|n| n == EXPORT_THREAD_COMM),
        "harness A, with an endpoint, runs its exporter thread"
    );

    let client = A2aClient::new(&a.url).unwrap();
    let SendMessageResponse::Task(task) =
        client.send_message(new_task(PROMPT_CANARY)).await.unwrap()
    else {
        panic!("SendMessage answered with a message");
    };
    let root_id = task.id.clone();
    let spans = spans_when(&spans, |spans| {
        let invokes = spans.iter().filter(|s| is_invoke(s)).count();
        invokes >= 3
            && spans
                .iter()
                .any(|s| is_invoke(s) && s.attr("a2a.task.id") == Some(&root_id))
    })
    .await;

    // The root task's run, and its trace.
    let root = spans
        .iter()
        .find(|s| is_invoke(s) && s.attr("a2a.task.id") == Some(root_id.as_str()))
        .unwrap();
    assert_eq!(root.service, "harness-a");
    assert_eq!(root.name, "invoke_agent Desk A");
    assert_eq!(root.attr("gen_ai.operation.name"), Some("invoke_agent"));
    assert_eq!(root.attr("gen_ai.agent.name"), Some("Desk A"));
    assert_eq!(
        root.attr("gen_ai.conversation.id"),
        Some(task.context_id.as_str())
    );
    assert_eq!(root.kind, SpanKind::Internal as i32);
    let trace: Vec<&Got> = spans.iter().filter(|s| s.trace == root.trace).collect();
    let services: std::collections::BTreeSet<&str> =
        trace.iter().map(|s| s.service.as_str()).collect();
    assert_eq!(services, ["harness-a", "harness-b"].into_iter().collect());

    // Under the root: the server span of the request that created it (the test's, no parent).
    let created_by = ancestors(&spans, root);
    assert_eq!(created_by.len(), 1, "{created_by:#?}");
    assert_eq!(created_by[0].kind, SpanKind::Server as i32);
    assert_eq!(created_by[0].name, "SendMessage");
    assert_eq!(created_by[0].attr("a2a.task.id"), Some(root_id.as_str()));

    // The model calls: chat spans with the provider, the model and the tokens of each reply.
    let root_chats: Vec<&&Got> = trace
        .iter()
        .filter(|s| s.name.starts_with("chat ") && s.parent == root.id)
        .collect();
    assert!(root_chats.len() >= 2, "{root_chats:#?}");
    let first = root_chats
        .iter()
        .find(|s| s.attr("gen_ai.usage.input_tokens") == Some("101"))
        .expect("the first call's tokens");
    assert_eq!(first.kind, SpanKind::Client as i32);
    assert_eq!(first.attr("gen_ai.operation.name"), Some("chat"));
    assert_eq!(first.attr("gen_ai.provider.name"), Some("scripted"));
    assert_eq!(first.attr("gen_ai.request.model"), Some("default"));
    assert_eq!(first.attr("gen_ai.usage.output_tokens"), Some("11"));

    // Each child: its invoke_agent under the server span that created it, under A's client
    // span, under A's execute_tool span, under the root's invoke_agent.
    let children: Vec<&&Got> = trace
        .iter()
        .filter(|s| is_invoke(s) && s.id != root.id)
        .collect();
    assert_eq!(children.len(), 2, "{children:#?}");
    for child in &children {
        let chain = ancestors(&spans, child);
        let shape: Vec<(&str, &str, i32)> = chain
            .iter()
            .map(|s| (s.service.as_str(), s.name.as_str(), s.kind))
            .collect();
        assert_eq!(
            shape[..4],
            [
                (
                    child.service.as_str(),
                    "SendMessage",
                    SpanKind::Server as i32
                ),
                ("harness-a", "SendMessage", SpanKind::Client as i32),
                (
                    "harness-a",
                    "execute_tool spawn_subtask",
                    SpanKind::Internal as i32
                ),
                ("harness-a", root.name.as_str(), SpanKind::Internal as i32),
            ],
            "{shape:#?}"
        );
        assert_eq!(chain[0].attr("a2a.task.id"), child.attr("a2a.task.id"));
        assert_eq!(chain[2].attr("gen_ai.tool.name"), Some("spawn_subtask"));
        assert_eq!(chain[3].id, root.id);
    }
    let on_b = children.iter().find(|c| c.service == "harness-b").unwrap();
    assert_eq!(on_b.name, "invoke_agent Ledger B");
    let b_chat = trace
        .iter()
        .find(|s| s.service == "harness-b" && s.name.starts_with("chat ") && s.parent == on_b.id)
        .expect("B's model call under B's task");
    assert_eq!(b_chat.attr("gen_ai.usage.input_tokens"), Some("201"));

    // The child on A had its own calls refused: a failed tool call is an error status.
    let on_a = children.iter().find(|c| c.service == "harness-a").unwrap();
    let refused = trace
        .iter()
        .find(|s| s.name == "execute_tool spawn_subtask" && s.parent == on_a.id)
        .expect("the child's refused spawn");
    assert!(refused.failed, "{refused:#?}");
    assert_eq!(
        refused.attr("gen_ai.tool.error.code"),
        Some("subtask.too_deep")
    );

    // No prompt text anywhere by default; B captures content, so its chat spans hold the goal.
    for span in &spans {
        for value in span.attrs.values() {
            assert!(!value.contains(PROMPT_CANARY), "prompt text in {span:#?}");
            if span.service == "harness-a" {
                assert!(
                    !value.contains(GOAL_CANARY),
                    "content in A's span {span:#?}"
                );
            }
        }
    }
    let captured = b_chat.attr("gen_ai.input.messages").unwrap_or_default();
    assert!(captured.contains(GOAL_CANARY), "{b_chat:#?}");
    assert!(
        b_chat
            .attr("gen_ai.output.messages")
            .unwrap_or_default()
            .contains("12 invoices")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn with_no_endpoint_no_exporter_thread_runs_and_the_harness_serves() {
    let dir = tempfile::tempdir().unwrap();
    let harness = start(dir.path(), SCRIPT_B, "");
    let client = A2aClient::new(&harness.url).unwrap();
    client.send_message(new_task("hello")).await.unwrap();
    let names = thread_names(harness.child.id());
    assert!(!names.is_empty());
    assert!(
        !names.iter().any(|n| n.starts_with("OpenTelemetry")),
        "{names:?}"
    );
}
