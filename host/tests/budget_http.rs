//! Token budgets over real HTTP on loopback: a task that keeps calling tools stops before the
//! model call that would pass `limits.task_token_budget`, with the reason; a sub-task on self gets
//! a share of what its parent had free, sent in its brief, and stops at that, its spending
//! charged to its parent; a parent that fails at its budget has its open children canceled; a
//! tree of sub-tasks under fan-out limits spends no more than its root's budget and one call.

mod delegation_support;

use std::sync::Arc;

use serde_json::json;

use delegation_support::*;
use tiny_harness::base::model::{
    ChatMessage, Model, ModelReply, ModelRequest, ScriptedModel, Usage,
};
use tiny_harness::base::protocol::types::TaskState;

/// `reply` reporting `input_tokens` and `output_tokens` used.
fn costing(mut reply: ModelReply, input_tokens: u64, output_tokens: u64) -> ModelReply {
    reply.usage = Usage {
        input_tokens,
        output_tokens,
    };
    reply
}

#[tokio::test(flavor = "multi_thread")]
async fn a_scripted_task_that_keeps_calling_tools_fails_at_its_token_budget_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.toml");
    let call = "[[reply]]\nusage = { input_tokens = 5000, output_tokens = 500 }\n\
                [[reply.tool_calls]]\nname = \"list_skills\"\n";
    std::fs::write(&path, call.repeat(10)).unwrap();
    let model: Arc<dyn Model> = Arc::new(ScriptedModel::load(&path).unwrap());
    let node = Node::start("[limits]\ntask_token_budget = 20000\n", model).await;

    let task = node.send("List the skills, again and again", false).await;
    assert_eq!(task.status.state, TaskState::Failed, "{task:?}");
    assert_eq!(
        answer(&task),
        "the task has used 16500 tokens of limits.task_token_budget (20000), and its next model call would take about 5500 more"
    );
    let ext = extension(&task);
    assert_eq!(
        ext["usage"],
        json!({"input_tokens": 15000, "output_tokens": 1500}),
        "three calls of 5,500: a fourth would have passed the budget, so the task stopped before it"
    );
    assert_eq!(ext["token_budget"], 20000);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sub_task_on_self_gets_half_of_what_its_parent_had_free_and_is_charged_to_it() {
    let model = FnModel::new(|request: &ModelRequest| {
        if has_goal(request, "Count the skills.") {
            return Answer::Reply(costing(tool("list_skills", json!({})), 5000, 1000));
        }
        if let Some(note) = last_note(request) {
            return Answer::Reply(costing(text(&format!("The child said: {note}")), 900, 100));
        }
        if last_tool_result(request).is_some() {
            return Answer::Reply(text("waiting for the sub-task"));
        }
        let spawn = tool(
            "spawn_subtask",
            json!({"name": "Count", "goal": "Count the skills.", "agent": null}),
        );
        Answer::Reply(costing(spawn, 3500, 500))
    });
    let node = Node::start("[limits]\ntask_token_budget = 40000\n", model).await;

    let parent = node.send("Have the skills counted", false).await;
    assert_eq!(parent.status.state, TaskState::Completed, "{parent:?}");
    let rows = sub_tasks(&parent);
    assert_eq!(row_state(&rows[0]), Some(TaskState::Failed));
    let child = node
        .client
        .get_task(rows[0]["task_id"].as_str().unwrap(), None)
        .await
        .unwrap();
    let ext = extension(&child);
    assert_eq!(
        ext["token_budget"], 18000,
        "half of the 36,000 the parent had free after its first call"
    );
    assert_eq!(child.status.state, TaskState::Failed);
    assert_eq!(
        answer(&child),
        "the task has used 18000 tokens of the token_budget its brief gave it (18000), and its next model call would take about 6000 more"
    );
    assert!(
        answer(&parent).contains("the task has used 18000 tokens"),
        "the parent heard why: {}",
        answer(&parent)
    );
    assert_eq!(rows[0]["reserved"], 18000);
    assert_eq!(
        rows[0]["spent"], 18000,
        "the child's own report of its usage"
    );
    assert_eq!(
        extension(&parent)["usage"],
        json!({"input_tokens": 4400, "output_tokens": 600})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_parent_past_its_budget_fails_and_its_open_child_is_canceled() {
    let model = FnModel::new(|request: &ModelRequest| {
        if has_goal(request, "Take your time.") {
            return Answer::Hang;
        }
        if last_tool_result(request).is_some() {
            return Answer::Reply(costing(text("waiting for the sub-task"), 9000, 1000));
        }
        let spawn = tool(
            "spawn_subtask",
            json!({"name": "Slow", "goal": "Take your time.", "agent": null}),
        );
        Answer::Reply(costing(spawn, 3500, 500))
    });
    let node = Node::start("[limits]\ntask_token_budget = 20000\n", model).await;

    let parent = node.send("Start something slow", false).await;
    assert_eq!(parent.status.state, TaskState::Failed, "{parent:?}");
    assert_eq!(
        answer(&parent),
        "the task and its sub-tasks used 22000 tokens (14000 by its own model calls), over limits.task_token_budget (20000)",
        "its own 14,000 and the 8,000 its open child holds"
    );
    let child_id = sub_tasks(&parent)[0]["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    let child = wait_for(&node.client, &child_id, is_terminal).await;
    assert_eq!(child.status.state, TaskState::Canceled, "{child:?}");
}

/// A tool result as the tool wrote it, without the untrusted block around it.
fn bare(content: &str) -> String {
    let body = content.trim_end_matches("\n</untrusted>");
    body.split_once(&format!(
        "{}\n",
        tiny_harness::work::context::UNTRUSTED_PREAMBLE
    ))
    .map(|(_, text)| text.to_string())
    .unwrap_or_else(|| body.to_string())
}

/// A model that reports what a real one would: the request's estimated size as its input, and
/// a hundred tokens of output.
fn realistic(reply: ModelReply, request: &ModelRequest) -> ModelReply {
    let input = tiny_harness::work::context::estimate_tokens(request) as u64;
    costing(reply, input, 100)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_budgeted_tree_with_bounded_fan_out_spends_no_more_than_its_root_budget_and_one_call() {
    const ROOT_BUDGET: u64 = 200_000;
    let model = FnModel::new(|request: &ModelRequest| {
        if has_goal(request, "Keep counting the skills.") {
            // A child works until its budget stops it.
            return Answer::Reply(realistic(tool("list_skills", json!({})), request));
        }
        let results: Vec<String> = request
            .messages
            .iter()
            .filter_map(|m| match m {
                ChatMessage::Tool { content, .. } => Some(content.clone()),
                _ => None,
            })
            .collect();
        let created = results
            .iter()
            .filter(|r| r.contains("created on self"))
            .count();
        let ended = later_user_messages(request)
            .iter()
            .filter(|m| {
                m.contains("Sub-task ") && (m.contains("is FAILED") || m.contains("is COMPLETED"))
            })
            .count();
        let refused_last = matches!(request.messages.last(), Some(ChatMessage::Tool { content, .. }) if bare(content).starts_with('['));
        let reply = if created > 0 && ended >= created && refused_last {
            text("every sub-task has ended")
        } else if refused_last {
            text("waiting for the sub-tasks")
        } else {
            let mut spawn = tool(
                "spawn_subtask",
                json!({"name": "Count", "goal": "Keep counting the skills.", "agent": null}),
            );
            // Each call its own id, as a model gives them: the id names the child it creates.
            spawn.tool_calls[0].id = format!("call-{}", results.len());
            spawn
        };
        Answer::Reply(realistic(reply, request))
    });
    let node = Node::start(
        &format!(
            "[limits]\ntask_token_budget = {ROOT_BUDGET}\nmax_children_per_task = 4\nmax_parallel_children = 3\n"
        ),
        model.clone(),
    )
    .await;

    let root = node.send("Have the skills counted many times", true).await;
    let root = wait_for(&node.client, &root.id, is_terminal).await;

    let rows = sub_tasks(&root);
    assert_eq!(rows.len(), 4, "limits.max_children_per_task: {rows:?}");
    let mut spent = extension(&root)["usage"]
        .as_object()
        .map(|u| u.values().filter_map(|v| v.as_u64()).sum::<u64>())
        .unwrap();
    let mut reserved = 0;
    for row in &rows {
        let child = node
            .client
            .get_task(row["task_id"].as_str().unwrap(), None)
            .await
            .unwrap();
        let ext = extension(&child);
        let used: u64 = ext["usage"]
            .as_object()
            .map(|u| u.values().filter_map(|v| v.as_u64()).sum())
            .unwrap_or(0);
        assert_eq!(
            row["reserved"], ext["token_budget"],
            "the child was given its reservation"
        );
        assert_eq!(
            row["spent"], used,
            "the row charges what the child reported, also when it ended after its parent"
        );
        assert!(is_terminal(&child), "{child:?}");
        spent += used;
        reserved += row["reserved"].as_u64().unwrap();
    }
    let largest_call = model
        .requests()
        .iter()
        .map(|r| tiny_harness::work::context::estimate_tokens(r) as u64 + 100)
        .max()
        .unwrap();
    let results: Vec<String> = model
        .requests()
        .iter()
        .flat_map(|r| r.messages.clone())
        .filter_map(|m| match m {
            ChatMessage::Tool { content, .. } => Some(bare(&content)),
            _ => None,
        })
        .collect();
    assert!(
        results
            .iter()
            .any(|r| r.starts_with("[subtask.limit]")
                && r.contains("limits.max_children_per_task (4)")),
        "a fifth child was refused: {results:?}"
    );
    println!(
        "tree: root budget {ROOT_BUDGET}, spent {spent} by the root and 4 children (reserved in all {reserved}), largest call {largest_call}, root {}",
        root.status.state.short_name()
    );
    assert!(
        spent <= ROOT_BUDGET + largest_call,
        "the tree spent {spent}, more than {ROOT_BUDGET} and one call ({largest_call})"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spawn_past_max_parallel_children_is_refused_and_creates_nothing() {
    let model = FnModel::new(|request: &ModelRequest| {
        if has_goal(request, "Wait for ever.") {
            return Answer::Hang;
        }
        let results: Vec<String> = request
            .messages
            .iter()
            .filter_map(|m| match m {
                ChatMessage::Tool { content, .. } => Some(bare(content)),
                _ => None,
            })
            .collect();
        match results.last() {
            Some(last) if last.starts_with('[') => Answer::Reply(text(&format!("Refused: {last}"))),
            _ => {
                let mut spawn = tool(
                    "spawn_subtask",
                    json!({"name": "Wait", "goal": "Wait for ever.", "agent": null}),
                );
                spawn.tool_calls[0].id = format!("call-{}", results.len());
                Answer::Reply(spawn)
            }
        }
    });
    let node = Node::start(
        "[limits]\nmax_children_per_task = 5\nmax_parallel_children = 2\n",
        model.clone(),
    )
    .await;

    let parent = node.send("Start three waits", true).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let refusal = loop {
        let found = model
            .requests()
            .iter()
            .find_map(|r| match r.messages.last() {
                Some(ChatMessage::Tool { content, .. }) if bare(content).starts_with('[') => {
                    Some(bare(content))
                }
                _ => None,
            });
        if let Some(found) = found {
            break found;
        }
        assert!(std::time::Instant::now() < deadline, "no spawn was refused");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };

    assert_eq!(
        refusal,
        "[subtask.limit] this task has 2 sub-tasks open, as many as limits.max_parallel_children (2) allows: wait for one to end before creating another"
    );
    let parent = node.client.get_task(&parent.id, None).await.unwrap();
    assert_eq!(
        sub_tasks(&parent).len(),
        2,
        "the third spawn created nothing"
    );
    node.client.cancel_task(&parent.id).await.unwrap();
}
