//! Token budgets over real HTTP on loopback: a task that keeps calling tools fails once its model
//! calls have used more than `limits.task_token_budget`, with the reason; a sub-task on self gets
//! what its parent had left, sent in its brief, and fails at that; a parent that fails at its
//! budget has its open children canceled.

mod delegation_support;

use std::sync::Arc;

use serde_json::json;

use delegation_support::*;
use tiny_harness::a2a::types::TaskState;
use tiny_harness::model::{Model, ModelReply, ModelRequest, ScriptedModel, Usage};

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
    let call = "[[reply]]\nusage = { input_tokens = 300, output_tokens = 50 }\n\
                [[reply.tool_calls]]\nname = \"list_skills\"\n";
    std::fs::write(&path, call.repeat(10)).unwrap();
    let model: Arc<dyn Model> = Arc::new(ScriptedModel::load(&path).unwrap());
    let node = Node::start("[limits]\ntask_token_budget = 1000\n", model).await;

    let task = node.send("List the skills, again and again", false).await;
    assert_eq!(task.status.state, TaskState::Failed, "{task:?}");
    assert_eq!(
        answer(&task),
        "the task used 1050 tokens, over limits.task_token_budget (1000)"
    );
    let ext = extension(&task);
    assert_eq!(
        ext["usage"],
        json!({"input_tokens": 900, "output_tokens": 150}),
        "three calls of 350: the third went over and the task stopped there"
    );
    assert_eq!(ext["token_budget"], 1000);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sub_task_on_self_gets_what_its_parent_had_left_and_fails_at_it() {
    let model = FnModel::new(|request: &ModelRequest| {
        if has_goal(request, "Count the skills.") {
            return Answer::Reply(costing(tool("list_skills", json!({})), 200, 50));
        }
        if let Some(note) = last_note(request) {
            return Answer::Reply(costing(text(&format!("The child said: {note}")), 90, 10));
        }
        if last_tool_result(request).is_some() {
            return Answer::Reply(text("waiting for the sub-task"));
        }
        let spawn = tool(
            "spawn_subtask",
            json!({"name": "Count", "goal": "Count the skills.", "agent": null}),
        );
        Answer::Reply(costing(spawn, 350, 50))
    });
    let node = Node::start("[limits]\ntask_token_budget = 1000\n", model).await;

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
        ext["token_budget"], 600,
        "1000 less the 400 the parent had used"
    );
    assert_eq!(child.status.state, TaskState::Failed);
    assert_eq!(
        answer(&child),
        "the task used 750 tokens, over the token_budget its brief gave it (600)"
    );
    assert!(
        answer(&parent).contains("the task used 750 tokens"),
        "the parent heard why: {}",
        answer(&parent)
    );
    assert_eq!(
        extension(&parent)["usage"],
        json!({"input_tokens": 440, "output_tokens": 60})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_parent_past_its_budget_fails_and_its_open_child_is_canceled() {
    let model = FnModel::new(|request: &ModelRequest| {
        if has_goal(request, "Take your time.") {
            return Answer::Hang;
        }
        if last_tool_result(request).is_some() {
            return Answer::Reply(costing(text("waiting for the sub-task"), 650, 50));
        }
        let spawn = tool(
            "spawn_subtask",
            json!({"name": "Slow", "goal": "Take your time.", "agent": null}),
        );
        Answer::Reply(costing(spawn, 350, 50))
    });
    let node = Node::start("[limits]\ntask_token_budget = 1000\n", model).await;

    let parent = node.send("Start something slow", false).await;
    assert_eq!(parent.status.state, TaskState::Failed, "{parent:?}");
    assert_eq!(
        answer(&parent),
        "the task used 1100 tokens, over limits.task_token_budget (1000)"
    );
    let child_id = sub_tasks(&parent)[0]["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    let child = wait_for(&node.client, &child_id, is_terminal).await;
    assert_eq!(child.status.state, TaskState::Canceled, "{child:?}");
}
