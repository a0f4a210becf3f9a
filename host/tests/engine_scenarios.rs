//! The engine-level scenarios, one set of test bodies run on every engine this build has: the
//! embedded engine always, and the Temporal engine in a build with `--features temporal` against
//! the dev server whose address is in `TINY_HARNESS_TEMPORAL_ADDRESS` (`scripts/temporal-dev
//! start` prints it). Each scenario is a real harness served on loopback with a model decided by
//! the test. The static prefix and the first model request of one scenario are compared across
//! the engines byte for byte.

mod delegation_support;

use std::sync::Arc;

use serde_json::json;

use delegation_support::*;
use futures::StreamExt;
use tiny_harness::base::model::ModelRequest;
use tiny_harness::base::protocol::requests::{ListTasksRequest, SendMessageRequest};
use tiny_harness::base::protocol::types::{Message, Part, Role, StreamResponse, TaskState};

/// Where the Temporal dev server is, for the Temporal runs.
const TEMPORAL_ADDRESS_VAR: &str = "TINY_HARNESS_TEMPORAL_ADDRESS";

/// An engine a scenario runs on, as the configuration names it.
#[derive(Debug, Clone)]
enum EngineUnderTest {
    Embedded,
    #[cfg_attr(not(feature = "temporal"), allow(dead_code))]
    Temporal {
        address: String,
    },
}

impl EngineUnderTest {
    /// The `[engine]` section for a harness on this engine; each harness gets a task queue of
    /// its own, so parallel tests never take each other's work.
    fn config(&self) -> String {
        match self {
            EngineUnderTest::Embedded => String::new(),
            EngineUnderTest::Temporal { address } => format!(
                "[engine]\nkind = \"temporal\"\n[engine.temporal]\naddress = \"{address}\"\ntask_queue = \"scenario-{}\"\n",
                uuid::Uuid::new_v4()
            ),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            EngineUnderTest::Embedded => "embedded",
            EngineUnderTest::Temporal { .. } => "temporal",
        }
    }
}

/// Every engine of this build. A build with the `temporal` feature and no dev server address
/// fails under CI (a green run there means the Temporal runs happened) and runs embedded only
/// elsewhere, saying so.
fn engines() -> Vec<EngineUnderTest> {
    let mut engines = vec![EngineUnderTest::Embedded];
    if cfg!(feature = "temporal") {
        match std::env::var(TEMPORAL_ADDRESS_VAR) {
            Ok(address) if !address.is_empty() => {
                engines.push(EngineUnderTest::Temporal { address })
            }
            _ if std::env::var_os("CI").is_some() => panic!(
                "{TEMPORAL_ADDRESS_VAR} is not set: start a dev server with scripts/temporal-dev start"
            ),
            _ => eprintln!(
                "SKIPPED on Temporal: {TEMPORAL_ADDRESS_VAR} is not set (scripts/temporal-dev start)"
            ),
        }
    }
    engines
}

async fn node(engine: &EngineUnderTest, extra: &str, model: Arc<FnModel>) -> Node {
    Node::start(&format!("{}{extra}", engine.config()), model).await
}

/// [`node`], its client a token caller, which lists its tasks (one that proves no identity
/// lists none).
async fn caller_node(engine: &EngineUnderTest, extra: &str, model: Arc<FnModel>) -> Node {
    Node::start_as_caller(&format!("{}{extra}", engine.config()), model).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_one_turn_answer_completes_the_task_with_it() {
    for engine in engines() {
        let model = FnModel::new(|_| Answer::Reply(text("Paris.")));
        let node = node(&engine, "", model.clone()).await;
        let task = node.send("What is the capital of France?", false).await;
        assert_eq!(task.status.state, TaskState::Completed, "{}", engine.name());
        assert_eq!(answer(&task), "Paris.", "{}", engine.name());
        assert_eq!(model.requests().len(), 1, "{}", engine.name());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plan_and_its_tool_calls_are_made_and_read_back_in_order() {
    for engine in engines() {
        let model = FnModel::new(|request: &ModelRequest| match turns(request) {
            0 => Answer::Reply(tool(
                "create_plan",
                json!({"steps": [{"name": "Count", "description": "count them"}]}),
            )),
            1 => Answer::Reply(tool(
                "complete_step",
                json!({"step": "count", "output": "3 invoices"}),
            )),
            _ => Answer::Reply(text(&format!(
                "Done; the last tool said: {}",
                last_tool_result(request).unwrap_or_default()
            ))),
        });
        let node = node(&engine, "", model.clone()).await;
        let task = node.send("Count the invoices.", false).await;
        assert_eq!(task.status.state, TaskState::Completed, "{}", engine.name());
        assert!(
            answer(&task).contains("step count done"),
            "{}",
            answer(&task)
        );
        let plan = &extension(&task)["plan"]["steps"][0];
        assert_eq!(plan["state"], "done", "{}", engine.name());
        assert_eq!(plan["output"], "3 invoices");
        assert_eq!(model.requests().len(), 3, "{}", engine.name());
    }
}

/// How many model replies the request's history holds: the turn it asks for.
fn turns(request: &ModelRequest) -> usize {
    request
        .messages
        .iter()
        .filter(|m| matches!(m, tiny_harness::base::model::ChatMessage::Assistant { .. }))
        .count()
}

/// A parent that delegates to `agent` once, waits, and answers with the child's note.
fn delegating_model(agent: serde_json::Value, child_goal: &'static str) -> Arc<FnModel> {
    FnModel::new(move |request: &ModelRequest| {
        if has_goal(request, child_goal) {
            return Answer::Reply(text("The child's figure: 7."));
        }
        if let Some(note) = last_note(request) {
            return Answer::Reply(text(&format!("From the child: {note}")));
        }
        if last_tool_result(request).is_some() {
            return Answer::Reply(text("waiting"));
        }
        Answer::Reply(tool(
            "spawn_subtask",
            json!({"name": "Figure", "goal": child_goal, "agent": agent}),
        ))
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sub_task_on_self_reports_back_to_its_parent() {
    for engine in engines() {
        let model = delegating_model(json!(null), "Find the figure.");
        let node = node(&engine, "", model).await;
        let parent = node.send("Work out the total.", false).await;
        assert_eq!(
            parent.status.state,
            TaskState::Completed,
            "{}",
            engine.name()
        );
        assert!(
            answer(&parent).ends_with("is COMPLETED: The child's figure: 7."),
            "{}: {}",
            engine.name(),
            answer(&parent)
        );
        assert_eq!(
            row_state(&sub_tasks(&parent)[0]),
            Some(TaskState::Completed)
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sub_task_on_a_second_harness_reports_back_to_its_parent() {
    for engine in engines() {
        let ledger_model = FnModel::new(|_| Answer::Reply(text("The ledger's figure: 9.")));
        let ledger = node(&engine, "[card]\nname = \"ledger\"\n", ledger_model).await;
        let agents = format!("[[agents]]\nid = \"ledger\"\nurl = \"{}\"\n", ledger.url);
        let desk = node(
            &engine,
            &agents,
            delegating_model(json!("ledger"), "unused"),
        )
        .await;
        let parent = desk.send("Ask the ledger.", false).await;
        assert_eq!(
            parent.status.state,
            TaskState::Completed,
            "{}",
            engine.name()
        );
        assert!(
            answer(&parent).ends_with("is COMPLETED: The ledger's figure: 9."),
            "{}: {}",
            engine.name(),
            answer(&parent)
        );
        assert_eq!(sub_tasks(&parent)[0]["agent"]["id"], "ledger");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_a_parent_cancels_its_open_child() {
    for engine in engines() {
        let model = FnModel::new(|request: &ModelRequest| {
            if has_goal(request, "Take your time.") {
                return Answer::Hang;
            }
            if last_tool_result(request).is_some() {
                return Answer::Reply(text("waiting"));
            }
            Answer::Reply(tool(
                "spawn_subtask",
                json!({"name": "Slow", "goal": "Take your time.", "agent": null}),
            ))
        });
        let node = node(&engine, "", model).await;
        let t0 = std::time::Instant::now();
        let parent = node.send("Start something slow.", true).await;
        eprintln!("{} sent {:?}", engine.name(), t0.elapsed());
        let waiting = wait_for(&node.client, &parent.id, |t| {
            sub_tasks(t)
                .first()
                .is_some_and(|row| row_state(row) == Some(TaskState::Working))
        })
        .await;
        let child = sub_tasks(&waiting)[0]["task_id"]
            .as_str()
            .unwrap()
            .to_string();
        eprintln!("{} child working {:?}", engine.name(), t0.elapsed());
        let canceled = node.client.cancel_task(&parent.id).await.unwrap();
        eprintln!("{} parent {}", engine.name(), parent.id);
        eprintln!("{} canceled {:?}", engine.name(), t0.elapsed());
        assert_eq!(
            canceled.status.state,
            TaskState::Canceled,
            "{}",
            engine.name()
        );
        eprintln!("{} child {child}", engine.name());
        let child = wait_for(&node.client, &child, is_terminal).await;
        eprintln!("{} child ended {:?}", engine.name(), t0.elapsed());
        assert_eq!(child.status.state, TaskState::Canceled, "{}", engine.name());
        wait_for(&node.client, &parent.id, |t| {
            row_state(&sub_tasks(t)[0]) == Some(TaskState::Canceled)
        })
        .await;
        eprintln!("{} row settled {:?}", engine.name(), t0.elapsed());
    }
    eprintln!("all engines done");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_waits_for_input_and_the_reply_completes_the_task() {
    for engine in engines() {
        let model = FnModel::new(|request: &ModelRequest| {
            let later = later_user_messages(request);
            if later.iter().any(|m| m.contains("March")) {
                return Answer::Reply(text("March it is."));
            }
            Answer::Reply(tool(
                "ask_participant",
                json!({"participant_id": "user", "question": "Which month?"}),
            ))
        });
        let node = node(&engine, "", model).await;
        let task = node.send("Close the month.", false).await;
        assert_eq!(
            task.status.state,
            TaskState::InputRequired,
            "{}",
            engine.name()
        );
        let done = send_text(&node.client, &task.id, "March", false).await;
        assert_eq!(done.status.state, TaskState::Completed, "{}", engine.name());
        assert_eq!(answer(&done), "March it is.");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_that_keeps_calling_tools_fails_at_max_turns() {
    for engine in engines() {
        let model = FnModel::new(|_| {
            Answer::Reply(tool(
                "create_plan",
                json!({"steps": [{"name": "Again", "description": "again"}]}),
            ))
        });
        let node = node(&engine, "[limits]\nmax_turns = 3\n", model.clone()).await;
        let task = node.send("Loop.", false).await;
        assert_eq!(task.status.state, TaskState::Failed, "{}", engine.name());
        assert_eq!(
            answer(&task),
            "the task reached limits.max_turns (3) without finishing"
        );
        assert_eq!(model.requests().len(), 3, "{}", engine.name());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_streamed_task_sends_its_events_and_is_listed() {
    for engine in engines() {
        let model = FnModel::new(|request: &ModelRequest| match turns(request) {
            0 => Answer::Reply(tool(
                "create_plan",
                json!({"steps": [{"name": "Answer", "description": "answer"}]}),
            )),
            _ => Answer::Reply(text("Streamed.")),
        });
        let node = caller_node(&engine, "", model).await;
        let request = SendMessageRequest {
            tenant: String::new(),
            message: Message {
                message_id: uuid::Uuid::new_v4().to_string(),
                role: Role::User,
                parts: vec![Part::text("Stream it.")],
                ..Message::default()
            },
            configuration: None,
            metadata: None,
        };
        let mut events = node.client.send_streaming_message(request).await.unwrap();
        let mut states = Vec::new();
        let mut id = String::new();
        while let Some(event) = events.next().await {
            match event.unwrap() {
                StreamResponse::Task(task) => {
                    id = task.id.clone();
                    states.push(task.status.state);
                }
                StreamResponse::StatusUpdate(update) => states.push(update.status.state),
                _ => {}
            }
        }
        assert_eq!(
            states.first(),
            Some(&TaskState::Submitted),
            "{}",
            engine.name()
        );
        assert_eq!(
            states.last(),
            Some(&TaskState::Completed),
            "{}",
            engine.name()
        );
        assert!(
            states.contains(&TaskState::Working),
            "{}: {states:?}",
            engine.name()
        );
        let listed = node
            .client
            .list_tasks(ListTasksRequest::default())
            .await
            .unwrap();
        assert!(
            listed
                .tasks
                .iter()
                .any(|t| t.id == id && t.status.state == TaskState::Completed),
            "{}",
            engine.name()
        );
        // An ended task takes no subscription (A2A 1.0: unsupported operation).
        let refused = node.client.subscribe(&id).await.err().unwrap();
        assert_eq!(refused.rpc_code(), Some(-32004), "{}", engine.name());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_static_prefix_and_the_first_request_are_the_same_bytes_on_every_engine() {
    let mut first_requests = Vec::new();
    for engine in engines() {
        let model = FnModel::new(|_| Answer::Reply(text("ok")));
        let node = node(&engine, "", model.clone()).await;
        let task = node.send("Say ok.", false).await;
        assert_eq!(task.status.state, TaskState::Completed, "{}", engine.name());
        let request = model.requests().remove(0);
        first_requests.push((engine.name(), serde_json::to_string(&request).unwrap()));
    }
    let (first_engine, first) = &first_requests[0];
    for (engine, request) in &first_requests[1..] {
        // The task's own ids differ between runs; everything else must not.
        assert_eq!(
            without_ids(request),
            without_ids(first),
            "{engine} and {first_engine} differ"
        );
    }
}

/// A request with its UUIDs (task and context ids) blanked.
fn without_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let window: String = chars[i..(i + 36).min(chars.len())].iter().collect();
        if uuid::Uuid::parse_str(&window).is_ok() && window.len() == 36 {
            out.push_str("<id>");
            i += 36;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

#[test]
fn ids_are_blanked_and_nothing_else() {
    assert_eq!(
        without_ids("a 9b2e4c1e-3f0a-4d9e-8a57-2c1f0e6b7d21 b"),
        "a <id> b"
    );
    assert_eq!(without_ids("no ids here"), "no ids here");
}
