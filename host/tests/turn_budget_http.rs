//! Every model request within the turn budget, over HTTP on loopback: a message, an envelope
//! brief or a message to an open task too big for the task's model is refused whole (JSON-RPC
//! -32602, HTTP 400) naming the field, its size and the limit; the goal reaches the model once;
//! a task whose context cannot be brought under its budget fails, naming it, after a bounded
//! number of calls. A recording model measures every request it is sent, summaries included.

mod delegation_support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Value, json};

use delegation_support::{Node, answer, is_terminal, send_text, wait_for};
use tiny_harness::base::model::{
    ChatMessage, Model, ModelError, ModelReply, ModelRequest, Purpose, ToolCall,
};
use tiny_harness::base::protocol::types::TaskState;
use tiny_harness::state::records::extension::ENVELOPE_MEDIA_TYPE;
use tiny_harness::work::context::estimate_tokens;

/// `context.turn_budget_tokens` by default; the test models report no window of their own.
const BUDGET: usize = 12_000;
/// What one message or one brief may bring: a quarter of the budget.
const SHARE: usize = BUDGET / 4;
/// The message of the issue: 900 KB.
const HUGE: usize = 900 * 1024;

type Decide = dyn Fn(&ModelRequest) -> ModelReply + Send + Sync;

/// A model that answers each turn with what `decide` makes of the request and a summary request
/// with a short summary, and records every request it is sent with its size estimate.
struct Recording {
    decide: Box<Decide>,
    sent: Mutex<Vec<ModelRequest>>,
}

impl Recording {
    fn new(decide: impl Fn(&ModelRequest) -> ModelReply + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(Recording {
            decide: Box::new(decide),
            sent: Mutex::new(Vec::new()),
        })
    }

    fn requests(&self) -> Vec<ModelRequest> {
        self.sent.lock().unwrap().clone()
    }

    /// Each request's purpose and estimated tokens, in order.
    fn sizes(&self) -> Vec<(Purpose, usize)> {
        self.requests()
            .iter()
            .map(|r| (r.purpose, estimate_tokens(r)))
            .collect()
    }

    fn assert_all_within_budget(&self) {
        let sizes = self.sizes();
        assert!(
            sizes.iter().all(|(_, tokens)| *tokens <= BUDGET),
            "a request over the budget of {BUDGET} tokens: {sizes:?}"
        );
    }
}

#[async_trait]
impl Model for Recording {
    fn describe(&self) -> String {
        "recording".into()
    }
    fn context_window(&self) -> Option<usize> {
        None
    }
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        self.sent.lock().unwrap().push(request.clone());
        if request.purpose == Purpose::Summary {
            return Ok(text("SUMMARY"));
        }
        Ok((self.decide)(request))
    }
}

fn text(text: &str) -> ModelReply {
    ModelReply {
        text: text.to_string(),
        ..ModelReply::default()
    }
}

fn tool(reply_text: &str, name: &str, arguments: Value) -> ModelReply {
    ModelReply {
        text: reply_text.to_string(),
        tool_calls: vec![ToolCall {
            id: format!("call-{name}"),
            name: name.to_string(),
            arguments: arguments.to_string(),
        }],
        ..ModelReply::default()
    }
}

fn has_tool_result(request: &ModelRequest) -> bool {
    request
        .messages
        .iter()
        .any(|m| matches!(m, ChatMessage::Tool { .. }))
}

/// Every text the request carries: instructions, messages, tool calls' arguments.
fn all_text(request: &ModelRequest) -> String {
    let mut all = request.instructions.to_string();
    for message in &request.messages {
        match message {
            ChatMessage::User { content } | ChatMessage::Tool { content, .. } => {
                all.push_str(content)
            }
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                all.push_str(content);
                for call in tool_calls {
                    all.push_str(&call.arguments);
                }
            }
        }
    }
    all
}

/// A JSON-RPC `SendMessage` with these parts, to `task_id` when not empty; the reply's body.
async fn rpc_send(node: &Node, task_id: &str, parts: Value) -> Value {
    let mut message = json!({
        "messageId": uuid::Uuid::new_v4().to_string(),
        "role": "ROLE_USER",
        "parts": parts,
    });
    if !task_id.is_empty() {
        message["taskId"] = task_id.into();
    }
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": message, "configuration": {"returnImmediately": true}},
    });
    reqwest::Client::new()
        .post(&node.url)
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The tasks the anonymous caller is on, read from the store (it lists none over A2A: it
/// proved no identity).
async fn task_count(node: &Node) -> usize {
    node.stored_tasks_of("user")
}

/// The error message of a refused request; fails the test, with what the model was sent, when
/// the request was accepted.
async fn refusal(reply: &Value, model: &Recording) -> String {
    if reply.get("error").is_none() {
        // Let the accepted task reach its model, so the failure says what it was sent.
        tokio::time::sleep(Duration::from_millis(500)).await;
        panic!(
            "accepted: {}; requests sent (purpose, estimated tokens): {:?}",
            reply["result"]["task"]["id"],
            model.sizes()
        );
    }
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    message
        .strip_prefix("invalid params: ")
        .unwrap_or_else(|| panic!("not an invalid-params message: {message}"))
        .to_string()
}

fn envelope(payload: Value) -> Value {
    json!({"data": {"kind": "task", "payload": payload}, "mediaType": ENVELOPE_MEDIA_TYPE})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_900_kb_message_is_refused_naming_the_part_its_size_and_the_limit_and_creates_nothing() {
    let model = Recording::new(|_| text("done"));
    let node = Node::start("", model.clone()).await;
    let huge = "x".repeat(HUGE);

    let started = Instant::now();
    let reply = rpc_send(&node, "", json!([{"text": huge}])).await;
    let took = started.elapsed();
    let message = refusal(&reply, &model).await;
    assert_eq!(
        message,
        format!(
            "message.parts[0].text: {HUGE} bytes, about {} tokens, over the {SHARE} tokens one message may bring to this task's model (the default model, whose turn budget is {BUDGET} tokens: context.turn_budget_tokens, or the model's context_window_tokens when smaller); send less, or split it over several messages",
            HUGE / 4
        )
    );
    eprintln!("a {HUGE}-byte message refused over JSON-RPC in {took:?}");

    // The same over HTTP+JSON: 400, with the same reason.
    let started = Instant::now();
    let response = reqwest::Client::new()
        .post(format!("{}/message:send", node.url))
        .header("A2A-Version", "1.0")
        .json(&json!({"message": {
            "messageId": "m-rest", "role": "ROLE_USER", "parts": [{"text": "x".repeat(HUGE)}]
        }}))
        .send()
        .await
        .unwrap();
    let took = started.elapsed();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!(
                "invalid params: message.parts[0].text: {HUGE} bytes"
            )),
        "{body}"
    );
    eprintln!("a {HUGE}-byte message refused over HTTP+JSON in {took:?}");

    assert_eq!(task_count(&node).await, 0, "nothing was created");
    assert!(model.requests().is_empty(), "{:?}", model.sizes());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_900_kb_goal_in_an_envelope_brief_is_refused_naming_the_field_and_creates_nothing() {
    let model = Recording::new(|_| text("done"));
    let node = Node::start("", model.clone()).await;

    let brief = json!({"name": "Read this", "goal": "y".repeat(HUGE)});
    let reply = rpc_send(&node, "", json!([envelope(brief)])).await;
    let message = refusal(&reply, &model).await;
    assert!(
        message.starts_with(&format!(
            "message.parts[0].data.payload.goal: {HUGE} bytes, and the brief about {} tokens, over the {SHARE} tokens a task's brief may take",
            (HUGE + "Read this".len()).div_ceil(4)
        )),
        "{message}"
    );

    // No one field over the share, but together they are.
    let brief = json!({
        "name": "Read this",
        "goal": "g".repeat(SHARE * 2),
        "description": "d".repeat(SHARE * 3),
        "acceptance_criteria": [{"text": "c".repeat(SHARE)}],
    });
    let reply = rpc_send(&node, "", json!([envelope(brief)])).await;
    let message = refusal(&reply, &model).await;
    assert!(
        message.starts_with(&format!(
            "message.parts[0].data.payload.description: {} bytes, and the brief about",
            SHARE * 3
        )),
        "the largest field is named: {message}"
    );

    assert_eq!(task_count(&node).await, 0, "nothing was created");
    assert!(model.requests().is_empty(), "{:?}", model.sizes());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_900_kb_message_to_an_open_task_is_refused_and_the_task_goes_on_within_its_budget() {
    let model = Recording::new(|request| {
        let said = all_text(request);
        if said.contains("the figure is 42") {
            return text("The answer is 42.");
        }
        if has_tool_result(request) {
            return text("waiting");
        }
        tool(
            "",
            "ask_participant",
            json!({"participant_id": "user", "question": "Which figure?"}),
        )
    });
    let node = Node::start("", model.clone()).await;
    let task = send_text(&node.client, "", "Report the figure.", true).await;
    let id = task.id.clone();
    wait_for(&node.client, &id, |t| {
        t.status.state == TaskState::InputRequired
    })
    .await;

    let reply = rpc_send(&node, &id, json!([{"text": "z".repeat(HUGE)}])).await;
    let message = refusal(&reply, &model).await;
    assert!(
        message.starts_with(&format!("message.parts[0].text: {HUGE} bytes, about")),
        "{message}"
    );
    // A brief change that would make the brief too big is refused the same way.
    let change = envelope(json!({"description": "w".repeat(HUGE)}));
    let reply = rpc_send(&node, &id, json!([change])).await;
    let message = refusal(&reply, &model).await;
    assert!(
        message.starts_with(&format!(
            "message.parts[0].data.payload.description: {HUGE} bytes, and the brief about"
        )),
        "{message}"
    );

    let waiting = node.client.get_task(&id, Some(10)).await.unwrap();
    assert_eq!(waiting.status.state, TaskState::InputRequired);
    assert!(
        waiting
            .history
            .as_deref()
            .unwrap_or_default()
            .iter()
            .all(|m| m.text().len() < 1_000),
        "no refused message joined the history"
    );
    send_text(&node.client, &id, "the figure is 42", true).await;
    let done = wait_for(&node.client, &id, is_terminal).await;
    assert_eq!(done.status.state, TaskState::Completed, "{}", answer(&done));
    model.assert_all_within_budget();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_message_within_its_share_is_worked_and_its_goal_reaches_the_model_once() {
    let model = Recording::new(|_| text("read"));
    let node = Node::start("", model.clone()).await;
    let marker = "GOAL-MARKER-7f3a";
    let body = format!("{marker} {}", "q".repeat(SHARE * 4 - 200));

    let task = send_text(&node.client, "", &body, false).await;
    assert_eq!(task.status.state, TaskState::Completed, "{}", answer(&task));
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let sent = all_text(&requests[0]);
    assert_eq!(
        sent.matches(marker).count(),
        2,
        "once as the task's name, once as its goal; not again in the history"
    );
    assert_eq!(sent.matches(&body).count(), 1, "the goal is sent once");
    model.assert_all_within_budget();
    eprintln!(
        "a {}-byte message: request of about {} tokens",
        body.len(),
        estimate_tokens(&requests[0])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_whose_history_cannot_be_compacted_under_its_budget_fails_naming_it_after_one_call()
{
    // The model's one reply is bigger than the whole budget: nothing can fold it away. The
    // history is that reply and its tool's result (the goal is in the task section).
    let model = Recording::new(|request| {
        if has_tool_result(request) {
            return text("done");
        }
        tool(
            &"r".repeat(BUDGET * 5),
            "create_plan",
            json!({"steps": [{"name": "Read", "description": "read it"}]}),
        )
    });
    let node = Node::start("", model.clone()).await;
    let task = send_text(&node.client, "", "Write at length.", true).await;
    let done = wait_for(&node.client, &task.id, is_terminal).await;
    model.assert_all_within_budget();
    assert_eq!(done.status.state, TaskState::Failed, "{}", answer(&done));
    let reason = answer(&done);
    assert!(
        reason.starts_with("the task cannot fit its turn budget: its next model call would need about ")
            && reason.contains(&format!(
                "over the turn budget of {BUDGET} tokens (context.turn_budget_tokens, or the model's context_window_tokens when smaller), and its history (2 items, about "
            ))
            && reason.ends_with("tokens) cannot be compacted further"),
        "{reason}"
    );
    assert_eq!(model.requests().len(), 1, "{:?}", model.sizes());
    model.assert_all_within_budget();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_whose_sections_alone_are_over_its_budget_fails_without_compacting() {
    // A plan is never compacted: one whose step names are bigger than the budget cannot fit.
    let steps: Vec<Value> = (0..6)
        .map(|i| json!({"name": format!("step {i} {}", "n".repeat(BUDGET)), "description": "d"}))
        .collect();
    let model = Recording::new(move |request| {
        if has_tool_result(request) {
            return text("done");
        }
        tool("", "create_plan", json!({"steps": steps}))
    });
    let node = Node::start("", model.clone()).await;
    let task = send_text(&node.client, "", "Plan at length.", true).await;
    let done = wait_for(&node.client, &task.id, is_terminal).await;
    model.assert_all_within_budget();
    assert_eq!(done.status.state, TaskState::Failed, "{}", answer(&done));
    let reason = answer(&done);
    assert!(
        reason.starts_with("the task cannot fit its turn budget: the parts of its context that are never compacted (instructions, tool definitions, the task, its plan, loaded skills and the summary) come to about ")
            && reason.ends_with(&format!(
                "tokens, over the turn budget of {BUDGET} tokens (context.turn_budget_tokens, or the model's context_window_tokens when smaller)"
            )),
        "{reason}"
    );
    let sizes = model.sizes();
    assert_eq!(sizes.len(), 1, "no summary, no second turn: {sizes:?}");
    model.assert_all_within_budget();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_task_is_compacted_with_every_request_and_every_summary_within_its_budget() {
    // Eight replies that each add about a fifth of the budget to the history, then the answer.
    let turns = std::sync::atomic::AtomicUsize::new(0);
    let model = Recording::new(move |_| {
        let turn = turns.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if turn == 8 {
            return text("done");
        }
        tool(
            &"a".repeat(BUDGET * 4 / 5),
            "create_plan",
            json!({"steps": [{"name": format!("step {turn}"), "description": "d"}]}),
        )
    });
    let node = Node::start("", model.clone()).await;
    let task = send_text(&node.client, "", "Work in steps.", true).await;
    let done = wait_for(&node.client, &task.id, is_terminal).await;
    assert_eq!(done.status.state, TaskState::Completed, "{}", answer(&done));
    let sizes = model.sizes();
    assert!(
        sizes
            .iter()
            .any(|(purpose, _)| *purpose == Purpose::Summary),
        "{sizes:?}"
    );
    model.assert_all_within_budget();
    eprintln!("a long task's requests (purpose, estimated tokens): {sizes:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sub_task_brief_too_big_for_self_is_refused_and_the_parent_reads_why() {
    let model = Recording::new(|request| {
        if let Some(ChatMessage::Tool { content, .. }) = request.messages.last() {
            return text(&format!("the sub-task failed: {content}"));
        }
        tool(
            "",
            "spawn_subtask",
            json!({"name": "Huge", "goal": "h".repeat(SHARE * 4 + 1), "agent": null}),
        )
    });
    let node = Node::start("", model.clone()).await;
    let task = send_text(&node.client, "", "Delegate a big goal.", true).await;
    let done = wait_for(&node.client, &task.id, is_terminal).await;
    assert_eq!(done.status.state, TaskState::Completed, "{}", answer(&done));
    let said = answer(&done);
    assert!(
        said.contains(&format!(
            "[subtask.failed] could not create the sub-task: self refused: invalid params: message.parts[0].data.payload.goal: {} bytes, and the brief about",
            SHARE * 4 + 1
        )),
        "{said}"
    );
    assert_eq!(task_count(&node).await, 1, "no child was created");
    model.assert_all_within_budget();
}
