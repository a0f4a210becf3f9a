//! `spawn_subtask` with a model, over real HTTP on loopback: a sub-task on self asked to run on a
//! named model records it and runs on it (its brief reaches this harness's own server as from a
//! trusted delegator); an unknown name is refused with the valid ones and creates nothing.

mod delegation_support;

use std::sync::Arc;

use serde_json::json;

use delegation_support::*;
use tiny_harness::base::model::{Model, ModelRequest, ScriptedModel};
use tiny_harness::base::protocol::types::TaskState;

/// The parent's model: one `spawn_subtask` with these arguments, then "waiting" while the child
/// works, then the child's note (or the tool's error) as the answer.
fn parent_model(arguments: serde_json::Value) -> Arc<FnModel> {
    FnModel::new(move |request: &ModelRequest| {
        if let Some(note) = last_note(request) {
            return Answer::Reply(text(&format!("From the sub-task: {note}")));
        }
        if let Some(result) = last_tool_result(request) {
            if result.contains("[model.") {
                return Answer::Reply(text("the sub-task could not be made"));
            }
            return Answer::Reply(text("waiting for the sub-task"));
        }
        Answer::Reply(tool("spawn_subtask", arguments.clone()))
    })
}

/// A node whose default model is `model` and whose `[models.fast]` is a script answering
/// "fast child done"; the folder holding the script is returned to keep it alive.
async fn node_with_fast_model(model: Arc<dyn Model>) -> (Node, tempfile::TempDir) {
    let scripts = tempfile::tempdir().unwrap();
    let script = scripts.path().join("fast.toml");
    std::fs::write(&script, "[[reply]]\ntext = \"fast child done\"\n").unwrap();
    // The script must load: the harness builds every named model at start-up.
    ScriptedModel::load(&script).unwrap();
    let config = format!(
        "[models.fast]\nprovider = \"scripted\"\nscript = \"{}\"\n",
        script.display()
    );
    (Node::start(&config, model).await, scripts)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sub_task_on_self_asked_for_a_model_records_it_and_runs_on_it() {
    let model = parent_model(json!({
        "name": "Quick look", "goal": "Look quickly.", "agent": null, "model": "fast"
    }));
    let (node, _scripts) = node_with_fast_model(model.clone()).await;
    let parent = node.send("Have a quick look done", false).await;
    assert_eq!(parent.status.state, TaskState::Completed, "{parent:?}");
    assert!(
        answer(&parent).contains("fast child done"),
        "{}",
        answer(&parent)
    );
    let rows = sub_tasks(&parent);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let child = node
        .client
        .get_task(rows[0]["task_id"].as_str().unwrap(), None)
        .await
        .unwrap();
    assert_eq!(extension(&child)["model"], "fast", "the child records it");
    assert_eq!(answer(&child), "fast child done", "and runs on it");
    assert!(
        model.requests_for_goal("Look quickly.").is_empty(),
        "the default model never worked the child"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_model_for_a_sub_task_is_refused_with_the_valid_names_and_creates_nothing() {
    let model = parent_model(json!({
        "name": "Quick look", "goal": "Look quickly.", "agent": null, "model": "huge"
    }));
    let (node, _scripts) = node_with_fast_model(model.clone()).await;
    let parent = node.send("Have a quick look done", false).await;
    assert_eq!(parent.status.state, TaskState::Completed, "{parent:?}");
    assert!(sub_tasks(&parent).is_empty(), "nothing was created");
    let result = model
        .requests()
        .iter()
        .find_map(last_tool_result)
        .expect("the tool's result reached the model");
    assert!(
        result.contains(
            r#"[model.unknown] no model named "huge"; valid models: fast (or leave model out for the default)"#
        ),
        "{result}"
    );
    // Read from the store: the anonymous caller lists nothing over A2A.
    assert_eq!(node.stored_tasks_of("user"), 1, "the parent alone");
}
