//! Delegation over real HTTP on loopback: a front desk and a ledger (two harness servers), a stub
//! agent without the task extension, and self-delegation on one server. Every child is an A2A
//! task on its agent, created by `SendMessage` and followed by the parent's stand-in.

mod delegation_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::routing::post;
use serde_json::{Value, json};

use delegation_support::*;
use tiny_harness::base::model::ModelRequest;
use tiny_harness::base::protocol::requests::ListTasksRequest;
use tiny_harness::base::protocol::types::TaskState;
use tiny_harness::state::records::extension::ENVELOPE_MEDIA_TYPE;

const FIGURE: &str = "Balance of ACME-001 on 31 March: 1,250.00 EUR";

/// The front desk's model: delegate once to `agent`, wait, then answer with the child's note.
fn front_desk_model(agent: Value) -> Arc<FnModel> {
    FnModel::new(move |request: &ModelRequest| {
        if let Some(note) = last_note(request) {
            return Answer::Reply(text(&format!("From the sub-task: {note}")));
        }
        if last_tool_result(request).is_some() {
            return Answer::Reply(text("waiting for the sub-task"));
        }
        Answer::Reply(tool(
            "spawn_subtask",
            json!({
                "name": "March balance",
                "goal": "Report the balance of account ACME-001 on 31 March.",
                "description": "Use the closing figures.",
                "acceptance_criteria": ["States the balance in EUR"],
                "agent": agent,
            }),
        ))
    })
}

async fn ledger() -> (Node, Arc<FnModel>) {
    let model = FnModel::new(|_| Answer::Reply(text(FIGURE)));
    let node = Node::start("[card]\nname = \"ledger\"\n", model.clone()).await;
    (node, model)
}

fn front_desk_config(ledger_url: &str) -> String {
    format!("[card]\nname = \"front-desk\"\n[[agents]]\nid = \"ledger\"\nurl = \"{ledger_url}\"\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn delegation_to_the_ledger_sends_the_envelope_and_its_answer_reaches_the_parent() {
    let (ledger, _) = ledger().await;
    let model = front_desk_model(json!("ledger"));
    let desk = Node::start(&front_desk_config(&ledger.url), model.clone()).await;

    let parent = desk
        .send("What was ACME's balance at the end of March?", false)
        .await;
    assert_eq!(parent.status.state, TaskState::Completed, "{parent:?}");
    assert!(answer(&parent).contains(FIGURE), "{}", answer(&parent));

    let rows = sub_tasks(&parent);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["agent"]["id"], "ledger");
    assert_eq!(row_state(&rows[0]), Some(TaskState::Completed));
    let child_id = rows[0]["task_id"].as_str().unwrap();

    // The child is the ledger's own task, created from the envelope; its creator (the front
    // desk, by its card name) can read it directly.
    let child = ledger
        .client_as("front-desk")
        .get_task(child_id, None)
        .await
        .unwrap();
    let brief = extension(&child);
    assert_eq!(brief["name"], "March balance");
    assert_eq!(
        brief["goal"],
        "Report the balance of account ACME-001 on 31 March."
    );
    assert_eq!(brief["description"], "Use the closing figures.");
    assert_eq!(
        brief["acceptance_criteria"][0]["text"],
        "States the balance in EUR"
    );
    let first = &child.history.as_ref().unwrap()[0];
    assert_eq!(first.parts[0].media_type, ENVELOPE_MEDIA_TYPE);

    // The answer reached the parent's next model request, inside the untrusted block.
    let last = model.requests().last().cloned().unwrap();
    let notes = later_user_messages(&last);
    let note = notes
        .iter()
        .find(|m| m.contains("Sub-task "))
        .expect("a note");
    assert!(note.starts_with("<untrusted source=\"agent\">\n"), "{note}");
    assert!(
        note.contains(&format!(
            "Sub-task {child_id} on ledger is COMPLETED: {FIGURE}"
        )),
        "{note}"
    );
}

/// A stub A2A agent whose card lacks the task extension: it records each `SendMessage` and
/// answers with a completed task.
async fn plain_agent() -> (String, Arc<Mutex<Vec<Value>>>) {
    plain_agent_with(Duration::ZERO, None).await
}

/// [`plain_agent`], taking `delay` to answer each `SendMessage`.
async fn plain_agent_answering_after(delay: Duration) -> (String, Arc<Mutex<Vec<Value>>>) {
    plain_agent_with(delay, None).await
}

/// What a stub agent does when a `SendMessage` arrives, before it answers.
type OnSend = Arc<dyn Fn() + Send + Sync>;

/// [`plain_agent`], taking `delay` to answer each `SendMessage` and calling `on_send` first.
async fn plain_agent_with(
    delay: Duration,
    on_send: Option<OnSend>,
) -> (String, Arc<Mutex<Vec<Value>>>) {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    type Seen = (Arc<Mutex<Vec<Value>>>, Duration, Option<OnSend>);
    async fn rpc(
        State((seen, delay, on_send)): State<Seen>,
        Json(body): Json<Value>,
    ) -> Json<Value> {
        let task = json!({
            "id": "plain-1", "contextId": "ctx",
            "status": {"state": "TASK_STATE_COMPLETED", "message": {
                "messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "plain answer"}]}}
        });
        let result = match body["method"].as_str() {
            Some("SendMessage") => {
                if let Some(on_send) = &on_send {
                    on_send();
                }
                tokio::time::sleep(delay).await;
                seen.lock().unwrap().push(body["params"].clone());
                json!({"task": task})
            }
            _ => task,
        };
        Json(json!({"jsonrpc": "2.0", "id": body["id"], "result": result}))
    }
    let url = serve_stub_agent(
        |url| stub_card(url, "plain", false),
        post(rpc).with_state((seen.clone(), delay, on_send)),
    )
    .await;
    (url, seen)
}

/// The kinds of every journal entry in the store at `path`, task by task, read beside the
/// running node.
fn journal_kinds_in(path: &std::path::Path) -> Vec<String> {
    let db =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut rows = db
        .prepare("SELECT entry FROM journal ORDER BY task_id, seq")
        .unwrap();
    rows.query_map([], |row| row.get::<_, String>(0))
        .unwrap()
        .map(|entry| {
            let entry: Value = serde_json::from_str(&entry.unwrap()).unwrap();
            entry["kind"].as_str().unwrap().to_string()
        })
        .collect()
}

/// A child is created only once the model's call that asks for it is in the parent's journal:
/// were the process to stop right after the child was made, the restart would replay that
/// call, which names the same child, rather than ask the model for another.
#[tokio::test(flavor = "multi_thread")]
async fn a_child_is_created_only_once_the_call_that_asks_for_it_is_journaled() {
    let store: Arc<Mutex<Option<std::path::PathBuf>>> = Arc::default();
    let journal_at_send: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
    let on_send: OnSend = {
        let (store, journal_at_send) = (store.clone(), journal_at_send.clone());
        Arc::new(move || {
            let path = store.lock().unwrap().clone().expect("the node is up");
            journal_at_send
                .lock()
                .unwrap()
                .push(journal_kinds_in(&path));
        })
    };
    let (url, seen) = plain_agent_with(Duration::ZERO, Some(on_send)).await;
    let desk = Node::start(
        &format!("[[agents]]\nid = \"plain\"\nurl = \"{url}\"\n"),
        front_desk_model(json!("plain")),
    )
    .await;
    *store.lock().unwrap() = Some(desk.dir().join("harness.db"));
    let parent = desk.send("Ask the plain agent.", false).await;
    assert_eq!(parent.status.state, TaskState::Completed, "{parent:?}");
    assert_eq!(seen.lock().unwrap().len(), 1, "one child");
    assert_eq!(
        *journal_at_send.lock().unwrap(),
        [["inbound", "model_call"]],
        "the parent's journal when the child was asked for: its message and the model's call, \
         not yet the call's result"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_without_the_task_extension_receives_the_brief_as_text() {
    let (url, seen) = plain_agent().await;
    let model = front_desk_model(json!("plain"));
    let desk = Node::start(
        &format!("[[agents]]\nid = \"plain\"\nurl = \"{url}\"\n"),
        model,
    )
    .await;
    let parent = desk.send("Ask the plain agent.", false).await;
    assert_eq!(parent.status.state, TaskState::Completed, "{parent:?}");
    assert!(
        answer(&parent).contains("plain answer"),
        "{}",
        answer(&parent)
    );

    let sent = seen.lock().unwrap().clone();
    assert_eq!(sent.len(), 1);
    let parts = sent[0]["message"]["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 1, "{parts:?}");
    assert_eq!(
        parts[0]["text"],
        "Report the balance of account ACME-001 on 31 March.\n\nUse the closing figures.\n\n\
         Acceptance criteria:\n- States the balance in EUR"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_slower_than_the_plugin_deadline_still_gets_its_sub_task() {
    // The tool's plugin may run 300 ms; creating the child takes the agent 1.5 s. That time is
    // the host's network wait, not the plugin's, so the call succeeds.
    let (url, seen) = plain_agent_answering_after(Duration::from_millis(1_500)).await;
    let model = front_desk_model(json!("plain"));
    let desk = Node::start(
        &format!("[plugins]\ncall_timeout_ms = 300\n[[agents]]\nid = \"plain\"\nurl = \"{url}\"\n"),
        model.clone(),
    )
    .await;
    let parent = desk.send("Ask the slow agent.", false).await;
    let result = model
        .requests()
        .iter()
        .find_map(last_tool_result)
        .expect("the tool's result");
    assert!(
        result.contains("sub-task plain-1 created on plain"),
        "{result}"
    );
    assert_eq!(parent.status.state, TaskState::Completed, "{parent:?}");
    assert!(
        answer(&parent).contains("plain answer"),
        "{}",
        answer(&parent)
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn self_delegation_creates_a_real_task_on_the_same_server_and_a_long_answer_is_cut() {
    let long = format!("{}TAIL", "x".repeat(8_996));
    let child_answer = long.clone();
    let model = FnModel::new(move |request: &ModelRequest| {
        if has_goal(request, "Summarise the archive.") {
            return Answer::Reply(text(&child_answer));
        }
        if let Some(note) = last_note(request) {
            return Answer::Reply(text(&note));
        }
        if last_tool_result(request).is_some() {
            return Answer::Reply(text("waiting"));
        }
        Answer::Reply(tool(
            "spawn_subtask",
            json!({"name": "Archive summary", "goal": "Summarise the archive.", "agent": null}),
        ))
    });
    // A caller that proves who it is, so it lists what it may see.
    let node = Node::start_as_caller("", model.clone()).await;
    let parent = node.send("Tidy up the archive.", false).await;
    assert_eq!(parent.status.state, TaskState::Completed, "{parent:?}");

    let rows = sub_tasks(&parent);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["agent"]["id"], "self");
    let child_id = rows[0]["task_id"].as_str().unwrap().to_string();

    // A real A2A task on the same server, linked to its parent, visible to the participant.
    let listed = node
        .client
        .list_tasks(ListTasksRequest::default())
        .await
        .unwrap();
    let ids: Vec<&str> = listed.tasks.iter().map(|t| t.id.as_str()).collect();
    assert!(ids.contains(&child_id.as_str()), "{ids:?}");
    assert!(ids.contains(&parent.id.as_str()), "{ids:?}");
    let child = node.client.get_task(&child_id, None).await.unwrap();
    assert_eq!(child.status.state, TaskState::Completed);
    assert_eq!(extension(&child)["parent_tasks"][0]["task_id"], parent.id);

    // The 9,000-character answer reached the parent cut at 4,000 and marked.
    let note = last_note(
        model
            .requests_for_goal("Tidy up the archive.")
            .last()
            .unwrap(),
    )
    .expect("the parent read the child's answer");
    let cut = note.split_once("is COMPLETED: ").unwrap().1;
    assert_eq!(cut.chars().count(), 4_001, "{}", cut.len());
    assert!(cut.ends_with('…'));
    assert!(!cut.contains("TAIL"));
}

#[tokio::test(flavor = "multi_thread")]
async fn null_and_a_registered_id_go_through_the_same_path() {
    // R3.2 and R3.3: `agent: "self"`, `agent: null` and a registered id each create an A2A
    // task on their agent, recorded as a sub-task row and followed to its end.
    let (ledger, _) = ledger().await;
    for agent in [json!(null), json!("self"), json!("ledger")] {
        let model = FnModel::new({
            let agent = agent.clone();
            move |request: &ModelRequest| {
                if has_goal(
                    request,
                    "Report the balance of account ACME-001 on 31 March.",
                ) {
                    return Answer::Reply(text(FIGURE));
                }
                front_desk_answer(request, &agent)
            }
        });
        let desk = Node::start(&front_desk_config(&ledger.url), model).await;
        let parent = desk.send("Balance?", false).await;
        assert_eq!(
            parent.status.state,
            TaskState::Completed,
            "{agent}: {parent:?}"
        );
        assert!(answer(&parent).contains(FIGURE), "{agent}");
        let expected = if agent == json!("ledger") {
            "ledger"
        } else {
            "self"
        };
        assert_eq!(sub_tasks(&parent)[0]["agent"]["id"], expected, "{agent}");
    }
}

fn front_desk_answer(request: &ModelRequest, agent: &Value) -> Answer {
    if let Some(note) = last_note(request) {
        return Answer::Reply(text(&note));
    }
    if last_tool_result(request).is_some() {
        return Answer::Reply(text("waiting"));
    }
    Answer::Reply(tool(
        "spawn_subtask",
        json!({"name": "March balance",
               "goal": "Report the balance of account ACME-001 on 31 March.", "agent": agent}),
    ))
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_the_parent_cancels_each_open_child_on_its_own_server() {
    let ledger_model = FnModel::new(|_| Answer::Hang);
    let ledger = Node::start("[card]\nname = \"ledger\"\n", ledger_model).await;
    let model = FnModel::new(|request: &ModelRequest| {
        if has_goal(request, "Hang on self.") {
            return Answer::Hang;
        }
        let results = request
            .messages
            .iter()
            .filter(|m| matches!(m, tiny_harness::base::model::ChatMessage::Tool { .. }))
            .count();
        match results {
            0 => Answer::Reply(tool(
                "spawn_subtask",
                json!({"name": "remote", "goal": "Hang on the ledger.", "agent": "ledger"}),
            )),
            1 => Answer::Reply(tool(
                "spawn_subtask",
                json!({"name": "local", "goal": "Hang on self.", "agent": null}),
            )),
            _ => Answer::Reply(text("waiting for both")),
        }
    });
    let desk = Node::start(&front_desk_config(&ledger.url), model).await;
    let parent = desk.send("Start two slow sub-tasks.", true).await;
    let waiting = wait_for(&desk.client, &parent.id, |t| sub_tasks(t).len() == 2).await;
    let rows = sub_tasks(&waiting);

    desk.client.cancel_task(&parent.id).await.unwrap();

    let remote_id = rows[0]["task_id"].as_str().unwrap();
    let local_id = rows[1]["task_id"].as_str().unwrap();
    let remote = wait_for(&ledger.client_as("front-desk"), remote_id, is_terminal).await;
    assert_eq!(remote.status.state, TaskState::Canceled);
    let local = wait_for(&desk.client, local_id, is_terminal).await;
    assert_eq!(local.status.state, TaskState::Canceled);
    // The parent's record says so: both rows end CANCELED.
    let parent = wait_for(&desk.client, &parent.id, |t| {
        sub_tasks(t)
            .iter()
            .all(|row| row_state(row) == Some(TaskState::Canceled))
    })
    .await;
    assert_eq!(parent.status.state, TaskState::Canceled);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_past_the_depth_limit_is_refused_with_a_clear_error() {
    let model = FnModel::new(|request: &ModelRequest| {
        if let Some(note) = last_note(request) {
            return Answer::Reply(text(&note));
        }
        if let Some(result) = last_tool_result(request) {
            if result.contains("[subtask.too_deep]") {
                return Answer::Reply(text(&format!("stopped: {result}")));
            }
            return Answer::Reply(text("waiting"));
        }
        Answer::Reply(tool(
            "spawn_subtask",
            json!({"name": "deeper", "goal": "Go one level deeper.", "agent": null}),
        ))
    });
    // A caller that proves who it is, so it lists what it may see.
    let node = Node::start_as_caller("[limits]\nmax_subtask_depth = 2\n", model.clone()).await;
    let root = node.send("Go as deep as you can.", false).await;
    assert_eq!(root.status.state, TaskState::Completed, "{root:?}");
    // Depth 0 made depth 1, depth 1 made depth 2, and depth 2 was refused.
    let listed = node
        .client
        .list_tasks(ListTasksRequest::default())
        .await
        .unwrap();
    assert_eq!(listed.tasks.len(), 3, "{listed:?}");
    assert!(
        answer(&root).contains("[subtask.too_deep]"),
        "{}",
        answer(&root)
    );
    // The error the model reads, whole (golden).
    assert!(
        answer(&root).contains(
            "[subtask.too_deep] this task is at sub-task depth 2 and limits.max_subtask_depth is 2: \
             do this work in this task instead of creating a sub-task"
        ),
        "{}",
        answer(&root)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sub_task_command_creates_a_child_on_self_without_a_model_turn() {
    let model = FnModel::new(|request: &ModelRequest| {
        if has_goal(request, "count the open invoices") {
            return Answer::Reply(text("7 open invoices"));
        }
        match last_note(request) {
            Some(note) => Answer::Reply(text(&format!("done: {note}"))),
            None => Answer::Reply(text("unexpected turn")),
        }
    });
    let node = Node::start("", model.clone()).await;
    let parent = node.send("/sub-task count the open invoices", true).await;
    let done = wait_for(&node.client, &parent.id, is_terminal).await;
    assert_eq!(done.status.state, TaskState::Completed, "{done:?}");
    assert!(
        answer(&done).contains("7 open invoices"),
        "{}",
        answer(&done)
    );
    let parent_turns = model.requests_for_goal("/sub-task count the open invoices");
    assert_eq!(
        parent_turns.len(),
        1,
        "the parent's model ran only once the child reported"
    );
    let rows = sub_tasks(&done);
    assert_eq!(rows[0]["agent"]["id"], "self");
    // The participant can talk to the child directly: it is their task too.
    let child = node
        .client
        .get_task(rows[0]["task_id"].as_str().unwrap(), None)
        .await
        .unwrap();
    assert_eq!(child.status.state, TaskState::Completed);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_participant_task_waits_for_its_assignee_and_their_reply_is_the_answer() {
    let model = FnModel::new(|request: &ModelRequest| {
        if let Some(note) = last_note(request) {
            return Answer::Reply(text(&note));
        }
        if last_tool_result(request).is_some() {
            return Answer::Reply(text("waiting for the user"));
        }
        Answer::Reply(tool(
            "create_task_for_participant",
            json!({"participant_id": "user", "name": "Approve", "goal": "Approve the March close."}),
        ))
    });
    let node = Node::start("", model).await;
    let parent = node.send("Get the March close approved.", true).await;
    let waiting = wait_for(&node.client, &parent.id, |t| !sub_tasks(t).is_empty()).await;
    let child_id = sub_tasks(&waiting)[0]["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    let child = wait_for(&node.client, &child_id, |t| {
        t.status.state == TaskState::InputRequired
    })
    .await;
    assert_eq!(extension(&child)["lifecycle"], "participant");
    send_text(&node.client, &child_id, "Approved.", true).await;
    let done = wait_for(&node.client, &parent.id, is_terminal).await;
    assert_eq!(done.status.state, TaskState::Completed);
    assert!(
        answer(&done).contains(&format!(
            "Sub-task {child_id} on self is COMPLETED: Approved."
        )),
        "{}",
        answer(&done)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_parent_that_fails_cancels_its_open_children() {
    let ledger = Node::start(
        "[card]\nname = \"ledger\"\n",
        FnModel::new(|_| Answer::Hang),
    )
    .await;
    let model = FnModel::new(|_| {
        Answer::Reply(tool(
            "spawn_subtask",
            json!({"name": "remote", "goal": "Hang on the ledger.", "agent": "ledger"}),
        ))
    });
    // One model call allowed: the parent spawns its child, then fails at limits.max_turns.
    let desk = Node::start(
        &format!(
            "[limits]\nmax_turns = 1\n{}",
            front_desk_config(&ledger.url)
        ),
        model,
    )
    .await;
    let parent = desk.send("Start a slow sub-task.", false).await;
    assert_eq!(parent.status.state, TaskState::Failed, "{parent:?}");
    let row = sub_tasks(&parent)[0].clone();
    let child_id = row["task_id"].as_str().unwrap();
    let child = wait_for(&ledger.client_as("front-desk"), child_id, is_terminal).await;
    assert_eq!(child.status.state, TaskState::Canceled);
    wait_for(&desk.client, &parent.id, |t| {
        row_state(&sub_tasks(t)[0]) == Some(TaskState::Canceled)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_that_ends_while_the_parent_model_is_answering_is_read_before_the_parent_completes()
{
    // The parent's model takes a second to answer after the spawn and answers without a tool
    // call; the child ends during that second. That answer was written without the child's, so
    // it is not the task's: the parent's model gets another turn with the note first.
    let model = FnModel::new(|request: &ModelRequest| {
        let goal = task_section(request);
        if goal.contains("goal: Count the invoices of race") {
            // Done well inside the parent's second call.
            return Answer::After(Duration::from_millis(100), text("42 invoices"));
        }
        if let Some(note) = last_note(request) {
            return Answer::Reply(text(&format!("With the count: {note}")));
        }
        if last_tool_result(request).is_some() {
            return Answer::After(
                Duration::from_millis(1_000),
                text("answered before the count arrived"),
            );
        }
        let race = goal
            .lines()
            .find_map(|l| l.strip_prefix("goal: Close the books of race "))
            .unwrap_or("?")
            .to_string();
        Answer::Reply(tool(
            "spawn_subtask",
            json!({"name": "Invoice count", "goal": format!("Count the invoices of race {race}."), "agent": null}),
        ))
    });
    let node = Node::start("", model.clone()).await;
    for race in 1..=3 {
        let goal = format!("Close the books of race {race}.");
        let parent = node.send(&goal, false).await;
        assert_eq!(parent.status.state, TaskState::Completed, "{parent:?}");
        let answer = answer(&parent);
        assert!(
            answer.starts_with("With the count: Sub-task ")
                && answer.ends_with("is COMPLETED: 42 invoices"),
            "race {race}: the parent completed with an answer written without the child's: {answer}"
        );
        // The early answer is in the history the model read on its last turn, before the note.
        let last = model.requests_for_goal(&goal).last().cloned().unwrap();
        let transcript = serde_json::to_string(&last.messages).unwrap();
        let early = transcript
            .find("answered before the count arrived")
            .unwrap();
        let note = transcript.find("is COMPLETED: 42 invoices").unwrap();
        assert!(early < note, "race {race}: {transcript}");
    }
}
