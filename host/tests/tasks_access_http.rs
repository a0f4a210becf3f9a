//! Who may see and cancel a task, against the real task service: a whole harness (runtime, task
//! service, hub, SQLite store, embedded engine) on loopback with a model the test drives, called
//! over HTTP as participants `alice` and `bob`. The same rules as the server tests check against
//! their in-memory fake, here with the code that enforces them in production.

mod delegation_support;

use std::time::Duration;

use futures::StreamExt;

use delegation_support::*;
use tiny_harness::base::protocol::requests::ListTasksRequest;
use tiny_harness::base::protocol::types::{StreamResponse, Task, TaskState};
use tiny_harness::work::agents::client::{A2aClient, ClientError};

/// A task whose goal is this stays WORKING: its model call never answers.
const HOLD: &str = "hold";
/// A2A `TaskNotFoundError`.
const TASK_NOT_FOUND: i32 = -32001;
/// A2A `TaskNotCancelableError`.
const TASK_NOT_CANCELABLE: i32 = -32002;
/// A2A `UnsupportedOperationError`.
const UNSUPPORTED_OPERATION: i32 = -32004;
/// How long a stream may take to end: a guard against a hang, not a measure.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// A harness whose model hangs on a task whose goal is [`HOLD`] and answers "done" otherwise.
async fn harness() -> Node {
    let model = FnModel::new(|request| {
        if has_goal(request, HOLD) {
            Answer::Hang
        } else {
            Answer::Reply(text("done"))
        }
    });
    Node::start("", model).await
}

/// A task of `owner`'s, WORKING on its model call.
async fn working_task(owner: &A2aClient) -> Task {
    let task = send_text(owner, "", HOLD, true).await;
    wait_for(owner, &task.id, |t| t.status.state == TaskState::Working).await
}

/// The JSON-RPC error code of a failed call.
fn code<T>(result: Result<T, ClientError>) -> i32 {
    match result {
        Ok(_) => panic!("the call was not refused"),
        Err(err) => err
            .rpc_code()
            .unwrap_or_else(|| panic!("not a JSON-RPC error: {err}")),
    }
}

/// The ids of the tasks `client` sees listed.
async fn listed(client: &A2aClient) -> Vec<String> {
    let page = client
        .list_tasks(ListTasksRequest::default())
        .await
        .unwrap();
    page.tasks.into_iter().map(|t| t.id).collect()
}

/// A REST request as `participant`; the HTTP status.
async fn rest_status(node: &Node, participant: &str, method: &str, path: &str) -> u16 {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    reqwest::Client::new()
        .request(method, format!("{}{path}", node.url))
        .header("A2A-Version", "1.0")
        .header("X-Participant-Id", participant)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn a_task_is_seen_and_canceled_by_its_owner_only_on_every_method_and_binding() {
    let node = harness().await;
    let alice = node.client_as("alice");
    let bob = node.client_as("bob");
    let task = working_task(&alice).await;

    assert_eq!(alice.get_task(&task.id, None).await.unwrap().id, task.id);
    assert_eq!(code(bob.get_task(&task.id, None).await), TASK_NOT_FOUND);
    assert_eq!(code(bob.cancel_task(&task.id).await), TASK_NOT_FOUND);
    assert_eq!(code(bob.subscribe(&task.id).await), TASK_NOT_FOUND);
    // Neither proved who it is: an unproven caller lists nothing and reaches its task by id
    // (listing as a token caller: tests/callers_http.rs).
    assert!(listed(&alice).await.is_empty());
    assert!(listed(&bob).await.is_empty());
    let path = format!("/tasks/{}", task.id);
    assert_eq!(rest_status(&node, "alice", "GET", &path).await, 200);
    assert_eq!(rest_status(&node, "bob", "GET", &path).await, 404);
    let cancel = format!("/tasks/{}:cancel", task.id);
    assert_eq!(rest_status(&node, "bob", "POST", &cancel).await, 404);

    // Bob's refused cancels changed nothing: the task is still working for Alice.
    let still = alice.get_task(&task.id, None).await.unwrap();
    assert_eq!(still.status.state, TaskState::Working, "{still:?}");
    let canceled = alice.cancel_task(&task.id).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
}

#[tokio::test]
async fn an_unknown_task_id_is_task_not_found_for_get_cancel_and_subscribe() {
    let node = harness().await;
    let alice = node.client_as("alice");
    assert_eq!(
        code(alice.get_task("no-such-task", None).await),
        TASK_NOT_FOUND
    );
    assert_eq!(
        code(alice.cancel_task("no-such-task").await),
        TASK_NOT_FOUND
    );
    assert_eq!(code(alice.subscribe("no-such-task").await), TASK_NOT_FOUND);
}

#[tokio::test]
async fn canceling_a_working_task_ends_it_canceled_by_the_caller_and_a_second_cancel_is_not_cancelable()
 {
    let node = harness().await;
    let alice = node.client_as("alice");
    let task = working_task(&alice).await;

    let canceled = alice.cancel_task(&task.id).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    assert_eq!(answer(&canceled), "canceled by alice");
    let stored = alice.get_task(&task.id, None).await.unwrap();
    assert_eq!(stored.status.state, TaskState::Canceled, "{stored:?}");
    assert_eq!(code(alice.cancel_task(&task.id).await), TASK_NOT_CANCELABLE);
}

#[tokio::test]
async fn canceling_a_completed_task_is_not_cancelable_and_leaves_it_completed() {
    let node = harness().await;
    let alice = node.client_as("alice");
    let task = send_text(&alice, "", "answer at once", false).await;
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(code(alice.cancel_task(&task.id).await), TASK_NOT_CANCELABLE);
    let stored = alice.get_task(&task.id, None).await.unwrap();
    assert_eq!(stored.status.state, TaskState::Completed);
    assert_eq!(answer(&stored), "done");
}

#[tokio::test]
async fn subscribing_follows_a_task_until_it_is_canceled() {
    let node = harness().await;
    let alice = node.client_as("alice");
    let task = working_task(&alice).await;
    let mut stream = alice.subscribe(&task.id).await.unwrap();
    match tokio::time::timeout(HANG_GUARD, stream.next())
        .await
        .unwrap()
    {
        Some(Ok(StreamResponse::Task(first))) => assert_eq!(first.id, task.id),
        other => panic!("expected the task first, got {other:?}"),
    }
    alice.cancel_task(&task.id).await.unwrap();
    let rest: Vec<StreamResponse> = tokio::time::timeout(HANG_GUARD, stream.collect::<Vec<_>>())
        .await
        .expect("the stream ends with the task")
        .into_iter()
        .map(Result::unwrap)
        .collect();
    match rest.last() {
        Some(StreamResponse::StatusUpdate(update)) => {
            assert_eq!(update.status.state, TaskState::Canceled)
        }
        other => panic!("expected a final CANCELED update, got {other:?}"),
    }
}

#[tokio::test]
async fn subscribing_to_a_finished_task_is_an_unsupported_operation() {
    let node = harness().await;
    let alice = node.client_as("alice");
    let task = send_text(&alice, "", "answer at once", false).await;
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(code(alice.subscribe(&task.id).await), UNSUPPORTED_OPERATION);
}
