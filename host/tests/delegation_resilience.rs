//! Delegation when things go wrong: the child's server is killed, the parent's harness restarts
//! while its child works.

mod delegation_support;
mod support {
    pub mod harness_process;
}

use std::process::Child;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use delegation_support::*;
use tiny_harness::base::model::ModelRequest;
use tiny_harness::base::protocol::types::TaskState;

const FIGURE: &str = "Balance of ACME-001 on 31 March: 1,250.00 EUR";

fn desk_model() -> Arc<FnModel> {
    FnModel::new(|request: &ModelRequest| {
        if let Some(note) = last_note(request) {
            return Answer::Reply(text(&format!("From the ledger: {note}")));
        }
        if last_tool_result(request).is_some() {
            return Answer::Reply(text("waiting for the ledger"));
        }
        Answer::Reply(tool(
            "spawn_subtask",
            json!({"name": "March balance", "goal": "Report ACME's March balance.",
                   "agent": "ledger"}),
        ))
    })
}

/// Starts `harness serve` on `config`, written as `ledger.toml` in `dir`.
fn spawn_harness(dir: &std::path::Path, config: &str) -> (Child, String) {
    let path = dir.join("ledger.toml");
    std::fs::write(&path, config).unwrap();
    support::harness_process::serve(&path)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_whose_server_is_killed_ends_failed_for_the_parent() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("slow.toml"),
        "[[reply]]\ndelay_ms = 600000\ntext = \"too late\"\n",
    )
    .unwrap();
    let (mut ledger, url) = spawn_harness(
        dir.path(),
        "[server]\nbind = \"127.0.0.1:0\"\n[store]\npath = \"ledger.db\"\n\
         [model]\nprovider = \"scripted\"\nscript = \"slow.toml\"\n\
         [card]\nname = \"ledger\"\n",
    );
    let desk = Node::start(
        &format!(
            "[limits]\nsubtask_unreachable_secs = 1\n[[agents]]\nid = \"ledger\"\nurl = \"{url}\"\n"
        ),
        desk_model(),
    )
    .await;
    let parent = desk.send("What was ACME's balance in March?", true).await;
    wait_for(&desk.client, &parent.id, |t| {
        sub_tasks(t)
            .first()
            .is_some_and(|row| row_state(row) == Some(TaskState::Working))
    })
    .await;

    ledger.kill().unwrap();
    ledger.wait().unwrap();

    let done = wait_for(&desk.client, &parent.id, is_terminal).await;
    assert_eq!(done.status.state, TaskState::Completed, "{done:?}");
    let row = &sub_tasks(&done)[0];
    assert_eq!(row_state(row), Some(TaskState::Failed));
    let answer = answer(&done);
    assert!(
        answer.contains("is FAILED: ledger stopped answering"),
        "{answer}"
    );
    assert!(
        !answer.contains(&url),
        "the model never reads the agent's URL: {answer}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_follower_resumes_after_the_parent_harness_restarts_and_the_answer_still_arrives() {
    let ledger_model = FnModel::new(|_| Answer::After(Duration::from_secs(4), text(FIGURE)));
    let ledger = Node::start("[card]\nname = \"ledger\"\n", ledger_model).await;
    let desk = Node::start(
        &format!("[[agents]]\nid = \"ledger\"\nurl = \"{}\"\n", ledger.url),
        desk_model(),
    )
    .await;
    let parent = desk.send("What was ACME's balance in March?", true).await;
    wait_for(&desk.client, &parent.id, |t| !sub_tasks(t).is_empty()).await;

    // The parent's harness stops while the child works, and starts again on the same store.
    let desk = desk.restart(desk_model()).await;

    let done = wait_for(&desk.client, &parent.id, is_terminal).await;
    assert_eq!(done.status.state, TaskState::Completed, "{done:?}");
    assert!(answer(&done).contains(FIGURE), "{}", answer(&done));
    assert_eq!(row_state(&sub_tasks(&done)[0]), Some(TaskState::Completed));
}
