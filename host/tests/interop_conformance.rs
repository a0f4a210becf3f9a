//! The conformance model end to end (engine, store, task service, JSON-RPC): each TCK scenario
//! a `messageId` prefix names ends its task the way the TCK checks, through the real engine's
//! mapping of a model's `Finish`.

mod interop_support;

use futures::StreamExt;
use interop_support::{Harness, scenario};
use tiny_harness::base::protocol::requests::SendMessageRequest;
use tiny_harness::base::protocol::types::{
    Message, Part, Role, SendMessageResponse, StreamResponse, Task, TaskState,
};
use tiny_harness::work::agents::client::A2aClient;

fn request(prefix: &str, task_id: &str) -> SendMessageRequest {
    SendMessageRequest {
        tenant: String::new(),
        message: Message {
            message_id: scenario(prefix),
            task_id: task_id.to_string(),
            role: Role::User,
            parts: vec![Part::text("conformance")],
            ..Message::default()
        },
        configuration: None,
        metadata: None,
    }
}

async fn task(client: &A2aClient, prefix: &str, task_id: &str) -> Task {
    match client.send_message(request(prefix, task_id)).await.unwrap() {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(message) => panic!("a task, not {message:?}"),
    }
}

fn first_part(task: &Task) -> &Part {
    &task.artifacts.as_ref().unwrap()[0].parts[0]
}

#[tokio::test]
async fn completion_ends_with_the_tck_message_and_no_artifact() {
    let harness = Harness::conformance().await;
    let client = A2aClient::new(harness.base.clone()).unwrap();
    let done = task(&client, "tck-complete-task", "").await;
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(done.status.message.unwrap().text(), "Hello from TCK");
    assert_eq!(done.artifacts, Some(vec![]));
}

#[tokio::test]
async fn artifact_scenarios_put_their_part_first() {
    let harness = Harness::conformance().await;
    let client = A2aClient::new(harness.base.clone()).unwrap();
    let text = task(&client, "tck-artifact-text", "").await;
    assert_eq!(
        first_part(&text).text.as_deref(),
        Some("Generated text content")
    );
    let file = task(&client, "tck-artifact-file", "").await;
    assert_eq!(first_part(&file).raw.as_deref(), Some("dGNr"));
    assert_eq!(first_part(&file).filename, "output.txt");
    let url = task(&client, "tck-artifact-file-url", "").await;
    assert_eq!(
        first_part(&url).url.as_deref(),
        Some("https://example.com/output.txt")
    );
    let data = task(&client, "tck-artifact-data", "").await;
    assert_eq!(first_part(&data).data.as_ref().unwrap()["count"], 42);
}

#[tokio::test]
async fn a_direct_reply_comes_back_as_a_message() {
    let harness = Harness::conformance().await;
    let client = A2aClient::new(harness.base.clone()).unwrap();
    match client
        .send_message(request("tck-message-response", ""))
        .await
        .unwrap()
    {
        SendMessageResponse::Message(message) => {
            assert_eq!(message.text(), "Direct message response");
            assert_eq!(message.role, Role::Agent);
        }
        SendMessageResponse::Task(task) => panic!("a message, not {task:?}"),
    }
}

#[tokio::test]
async fn a_task_waits_for_input_until_a_later_message_completes_it() {
    let harness = Harness::conformance().await;
    let client = A2aClient::new(harness.base.clone()).unwrap();
    let waiting = task(&client, "tck-input-required", "").await;
    assert_eq!(waiting.status.state, TaskState::InputRequired);
    let still = task(&client, "tck-input-required", &waiting.id).await;
    assert_eq!(still.status.state, TaskState::InputRequired);
    let done = task(&client, "tck-complete-task", &waiting.id).await;
    assert_eq!(done.status.state, TaskState::Completed);
    let history = client
        .get_task(&done.id, None)
        .await
        .unwrap()
        .history
        .unwrap();
    let users = history.iter().filter(|m| m.role == Role::User).count();
    assert_eq!((history.len(), users), (6, 3));
}

#[tokio::test]
async fn a_rejected_task_is_terminal_in_the_rejected_state() {
    let harness = Harness::conformance().await;
    let client = A2aClient::new(harness.base.clone()).unwrap();
    let rejected = task(&client, "tck-reject-task", "").await;
    assert_eq!(rejected.status.state, TaskState::Rejected);
    let again = client
        .send_message(request("tck-complete-task", &rejected.id))
        .await;
    assert_eq!(again.unwrap_err().rpc_code(), Some(-32004));
}

#[tokio::test]
async fn a_streamed_task_works_then_produces_its_artifact_then_completes() {
    let harness = Harness::conformance().await;
    let client = A2aClient::new(harness.base.clone()).unwrap();
    let stream = client
        .send_streaming_message(request("tck-stream-ordering-001", ""))
        .await
        .unwrap();
    let events: Vec<StreamResponse> = stream.map(Result::unwrap).collect().await;
    let steps: Vec<String> = events
        .iter()
        .map(|event| match event {
            StreamResponse::Task(task) => format!("task {}", task.status.state.short_name()),
            // A progress note says what the work does; the task's own status is the other.
            StreamResponse::StatusUpdate(u)
                if u.status.message.as_ref().is_some_and(|m| {
                    m.metadata.as_ref().and_then(|m| m.get("progress"))
                        == Some(&serde_json::Value::Bool(true))
                }) =>
            {
                format!("progress {}", u.status.message.as_ref().unwrap().text())
            }
            StreamResponse::StatusUpdate(u) => format!("status {}", u.status.state.short_name()),
            StreamResponse::ArtifactUpdate(u) => format!(
                "artifact {}",
                u.artifact.parts[0].text.clone().unwrap_or_default()
            ),
            StreamResponse::Message(_) => "message".to_string(),
        })
        .collect();
    assert_eq!(
        steps,
        [
            "task SUBMITTED",
            "status WORKING",
            "progress Calling the model",
            "artifact Ordered output",
            "status COMPLETED"
        ]
    );
}
