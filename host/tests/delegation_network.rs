//! Delegation among other agents, over real HTTP on loopback: stub A2A agents that number their
//! tasks as they please (every one of them calls its task `task-1`), one parent with a child on
//! two of them, two parents each with a `task-1` on a different agent, and a parent canceled
//! beside another whose child has the same id.

mod delegation_support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::State;
use axum::routing::post;
use serde_json::{Value, json};

use delegation_support::*;
use tiny_harness::base::model::{ChatMessage, ModelRequest};
use tiny_harness::base::protocol::types::TaskState;

/// The id every stub agent gives every task it creates.
const STUB_TASK_ID: &str = "task-1";

/// How a stub agent's one task goes.
#[derive(Clone)]
struct Script {
    /// The answer it completes with.
    answer: String,
    /// How long after its creation the task completes; `None`: never (until canceled).
    done_after: Option<Duration>,
    /// A question the task asks first (INPUT_REQUIRED); the reply it gets is added to the
    /// answer, and the task completes at once.
    question: Option<String>,
}

#[derive(Default)]
struct Stub {
    created: Option<Instant>,
    canceled: bool,
    /// The texts of the messages sent to the existing task.
    replies: Vec<String>,
    /// How many `SendMessage` requests created a task.
    creations: usize,
}

type StubState = (Script, Arc<Mutex<Stub>>);

/// A stub agent on 127.0.0.1:0 that runs `script`; returns its URL and what it saw.
async fn numbered_agent(name: &str, script: Script) -> (String, Arc<Mutex<Stub>>) {
    let seen = Arc::new(Mutex::new(Stub::default()));
    let url = serve_stub_agent(
        |url| stub_card(url, name, false),
        post(rpc).with_state((script, seen.clone())),
    )
    .await;
    (url, seen)
}

fn task_json(script: &Script, stub: &Stub) -> Value {
    let (state, text) = if stub.canceled {
        ("TASK_STATE_CANCELED", None)
    } else if let Some(question) = script.question.as_ref().filter(|_| stub.replies.is_empty()) {
        ("TASK_STATE_INPUT_REQUIRED", Some(question.clone()))
    } else if !stub.replies.is_empty() {
        (
            "TASK_STATE_COMPLETED",
            Some(format!("{} for {}", script.answer, stub.replies.join(", "))),
        )
    } else if script
        .done_after
        .zip(stub.created)
        .is_some_and(|(after, created)| created.elapsed() >= after)
    {
        ("TASK_STATE_COMPLETED", Some(script.answer.clone()))
    } else {
        ("TASK_STATE_WORKING", None)
    };
    let mut status = json!({"state": state});
    if let Some(text) = text {
        status["message"] =
            json!({"messageId": "s", "role": "ROLE_AGENT", "parts": [{"text": text}]});
    }
    json!({"id": STUB_TASK_ID, "contextId": "ctx", "status": status})
}

async fn rpc(State((script, seen)): State<StubState>, Json(body): Json<Value>) -> Json<Value> {
    let method = body["method"].as_str().unwrap_or_default();
    let reply = |result: Value| Json(json!({"jsonrpc": "2.0", "id": body["id"], "result": result}));
    let mut stub = seen.lock().unwrap();
    match method {
        "SendMessage" => {
            let message = &body["params"]["message"];
            if message["taskId"].as_str().unwrap_or_default().is_empty() {
                stub.created = Some(Instant::now());
                stub.creations += 1;
            } else {
                let text = message["parts"][0]["text"].as_str().unwrap_or_default();
                stub.replies.push(text.to_string());
            }
            reply(json!({"task": task_json(&script, &stub)}))
        }
        "CancelTask" => {
            stub.canceled = true;
            reply(task_json(&script, &stub))
        }
        "GetTask" => reply(task_json(&script, &stub)),
        _ => Json(json!({"jsonrpc": "2.0", "id": body["id"],
            "error": {"code": -32004, "message": "not supported here"}})),
    }
}

fn agents_config(agents: &[(&str, &str)]) -> String {
    agents
        .iter()
        .map(|(id, url)| format!("[[agents]]\nid = \"{id}\"\nurl = \"{url}\"\n"))
        .collect()
}

/// The notes (`Sub-task … is …`) the model has read so far in this request.
fn notes(request: &ModelRequest) -> Vec<String> {
    later_user_messages(request)
        .iter()
        .flat_map(|m| m.lines().map(str::to_string).collect::<Vec<_>>())
        .filter(|line| line.starts_with("Sub-task "))
        .collect()
}

fn delegate(agent: &str) -> Answer {
    Answer::Reply(tool(
        "spawn_subtask",
        json!({"name": format!("Ask {agent}"), "goal": "Report the balance.", "agent": agent}),
    ))
}

#[tokio::test(flavor = "multi_thread")]
async fn one_parent_with_a_task_1_on_two_agents_keeps_both_rows_and_reads_both_answers() {
    let quick = |answer: &str| Script {
        answer: answer.to_string(),
        done_after: Some(Duration::from_millis(300)),
        question: None,
    };
    let (a_url, a_seen) = numbered_agent("a", quick("a says 10 EUR")).await;
    let (b_url, b_seen) = numbered_agent("b", quick("b says 20 EUR")).await;
    let model = FnModel::new(|request: &ModelRequest| {
        let notes = notes(request);
        if notes.len() >= 2 {
            return Answer::Reply(text(&format!("Both answered: {}", notes.join(" | "))));
        }
        let calls = request
            .messages
            .iter()
            .filter(|m| matches!(m, ChatMessage::Tool { .. }))
            .count();
        match calls {
            0 => delegate("a"),
            1 => delegate("b"),
            _ => Answer::Reply(text("waiting")),
        }
    });
    let node = Node::start(
        &agents_config(&[("a", &a_url), ("b", &b_url)]),
        model.clone(),
    )
    .await;

    let task = node.send("Ask both ledgers", true).await;
    let task = wait_for(&node.client, &task.id, is_terminal).await;

    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    let rows = sub_tasks(&task);
    assert_eq!(rows.len(), 2, "one row per child: {rows:?}");
    let mut agents: Vec<&str> = rows
        .iter()
        .map(|row| {
            assert_eq!(row["task_id"], STUB_TASK_ID);
            assert_eq!(row_state(row), Some(TaskState::Completed), "{row}");
            row["agent"]["id"].as_str().unwrap()
        })
        .collect();
    agents.sort();
    assert_eq!(agents, ["a", "b"]);
    let answer = answer(&task);
    assert!(
        answer.contains("Sub-task task-1 on a is COMPLETED: a says 10 EUR"),
        "{answer}"
    );
    assert!(
        answer.contains("Sub-task task-1 on b is COMPLETED: b says 20 EUR"),
        "{answer}"
    );
    assert_eq!(a_seen.lock().unwrap().creations, 1);
    assert_eq!(b_seen.lock().unwrap().creations, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn two_parents_with_a_task_1_each_on_other_agents_are_both_followed_and_cancel_stops_only_its_own()
 {
    // `a`'s child works until it is canceled; `b`'s completes after a second.
    let (a_url, a_seen) = numbered_agent(
        "a",
        Script {
            answer: "a never finishes".into(),
            done_after: None,
            question: None,
        },
    )
    .await;
    let (b_url, _) = numbered_agent(
        "b",
        Script {
            answer: "b says 20 EUR".into(),
            done_after: Some(Duration::from_secs(1)),
            question: None,
        },
    )
    .await;
    let model = FnModel::new(|request: &ModelRequest| {
        if let Some(note) = notes(request).first() {
            return Answer::Reply(text(&format!("Heard: {note}")));
        }
        if last_tool_result(request).is_some() {
            return Answer::Reply(text("waiting"));
        }
        if has_goal(request, "Ask a") {
            delegate("a")
        } else {
            delegate("b")
        }
    });
    let node = Node::start(&agents_config(&[("a", &a_url), ("b", &b_url)]), model).await;

    let first = node.send("Ask a", true).await;
    let first = wait_for(&node.client, &first.id, |t| sub_tasks(t).len() == 1).await;
    let second = node.send("Ask b", true).await;
    wait_for(&node.client, &second.id, |t| sub_tasks(t).len() == 1).await;
    node.client.cancel_task(&first.id).await.unwrap();

    let first = wait_for(&node.client, &first.id, |t| {
        is_terminal(t) && sub_tasks(t).first().and_then(row_state) == Some(TaskState::Canceled)
    })
    .await;
    assert_eq!(first.status.state, TaskState::Canceled);
    assert!(
        a_seen.lock().unwrap().canceled,
        "a's child was canceled on a"
    );
    let second = wait_for(&node.client, &second.id, is_terminal).await;
    assert_eq!(second.status.state, TaskState::Completed, "{second:?}");
    assert_eq!(
        answer(&second),
        "Heard: Sub-task task-1 on b is COMPLETED: b says 20 EUR"
    );
    let row = &sub_tasks(&second)[0];
    assert_eq!(row["agent"]["id"], "b");
    assert_eq!(row_state(row), Some(TaskState::Completed));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_child_that_asks_a_question_is_answered_by_the_parents_model_and_completes() {
    let (a_url, a_seen) = numbered_agent(
        "a",
        Script {
            answer: "a says 10 EUR".into(),
            done_after: None,
            question: Some("Which month?".into()),
        },
    )
    .await;
    let model = FnModel::new(|request: &ModelRequest| {
        if matches!(request.messages.last(), Some(ChatMessage::Tool { .. })) {
            return Answer::Reply(text("waiting for the sub-task"));
        }
        match notes(request).last() {
            Some(note) if note.contains("is COMPLETED") => {
                Answer::Reply(text(&format!("Done: {note}")))
            }
            Some(note) if note.contains("is INPUT_REQUIRED: Which month?") => Answer::Reply(tool(
                "message_subtask",
                json!({"task_id": STUB_TASK_ID, "agent": "a", "text": "March"}),
            )),
            _ => delegate("a"),
        }
    });
    let node = Node::start(&agents_config(&[("a", &a_url)]), model.clone()).await;

    let task = node.send("Ask a for March", true).await;
    let task = wait_for(&node.client, &task.id, is_terminal).await;

    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(
        answer(&task),
        "Done: Sub-task task-1 on a is COMPLETED: a says 10 EUR for March"
    );
    assert_eq!(a_seen.lock().unwrap().replies, ["March"]);
    let row = &sub_tasks(&task)[0];
    assert_eq!(row_state(row), Some(TaskState::Completed));
    let results: Vec<String> = model
        .requests()
        .iter()
        .filter_map(last_tool_result)
        .collect();
    assert!(
        results.iter().any(|r| r.contains(
            "\nmessage sent to sub-task task-1 on a; its result will come back to this task\n"
        )),
        "{results:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_message_to_a_sub_task_the_parent_does_not_have_is_refused_and_sends_nothing() {
    let (a_url, a_seen) = numbered_agent(
        "a",
        Script {
            answer: "a says 10 EUR".into(),
            done_after: Some(Duration::from_millis(200)),
            question: None,
        },
    )
    .await;
    let model = FnModel::new(|request: &ModelRequest| match last_tool_result(request) {
        None => Answer::Reply(tool(
            "message_subtask",
            json!({"task_id": STUB_TASK_ID, "agent": "a", "text": "March"}),
        )),
        Some(result) => Answer::Reply(text(&format!("Result: {result}"))),
    });
    let node = Node::start(&agents_config(&[("a", &a_url)]), model).await;

    let task = node.send("Talk to a task that is not mine", false).await;

    assert!(
        answer(&task).contains(
            "\n[subtask.unknown] this task has no sub-task task-1 on a; its open sub-tasks: (none)\n"
        ),
        "{}",
        answer(&task)
    );
    let seen = a_seen.lock().unwrap();
    assert!(
        seen.replies.is_empty() && seen.creations == 0,
        "nothing reached the agent"
    );
}
