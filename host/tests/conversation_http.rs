//! Conversations that span tasks: a new task that names the `contextId` of earlier ones reads
//! their exchange as its `conversation` section; a participant who took no part in them gets
//! nothing of it; a message to an ended task is told to go on in its context. A whole harness
//! (runtime, task service, SQLite store, embedded engine) on loopback, called over HTTP as
//! `alice` and `bob`, with a model that answers from what its request shows.

mod delegation_support;

use delegation_support::*;
use tiny_harness::base::model::{ChatMessage, ModelRequest};
use tiny_harness::base::protocol::requests::{SendMessageConfiguration, SendMessageRequest};
use tiny_harness::base::protocol::types::{
    Message, Part, Role, SendMessageResponse, Task, TaskState,
};
use tiny_harness::work::agents::client::A2aClient;

/// A2A `UnsupportedOperationError`.
const UNSUPPORTED_OPERATION: i32 = -32004;

/// The per-task message of a request: the sections the host writes before the history.
fn per_task(request: &ModelRequest) -> String {
    match request.messages.first() {
        Some(ChatMessage::User { content }) => content.clone(),
        _ => String::new(),
    }
}

/// The `conversation` section of a request, if it has one.
fn conversation(request: &ModelRequest) -> Option<String> {
    let text = per_task(request);
    let start = text.find("<conversation>\n")? + "<conversation>\n".len();
    let end = text.find("\n</conversation>")?;
    Some(text[start..end].to_string())
}

/// A model that remembers a colour: it answers "noted" to the first task and, to a question,
/// the colour its conversation section shows, or "I don't know" without one.
fn colour_model() -> std::sync::Arc<FnModel> {
    FnModel::new(|request| {
        let shown = conversation(request).unwrap_or_default();
        if has_goal(request, "my favourite colour is teal") {
            Answer::Reply(text("noted"))
        } else if shown.contains("teal") {
            Answer::Reply(text("your favourite colour is teal"))
        } else {
            Answer::Reply(text("I don't know"))
        }
    })
}

/// Sends `text` as a new task in `context_id` (a new context when empty) and waits for its end.
async fn send_in_context(client: &A2aClient, context_id: &str, text: &str) -> Task {
    let request = SendMessageRequest {
        tenant: String::new(),
        message: Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            context_id: context_id.to_string(),
            role: Role::User,
            parts: vec![Part::text(text)],
            ..Message::default()
        },
        configuration: None,
        metadata: None,
    };
    let task = match client.send_message(request).await.unwrap() {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(message) => panic!("expected a task, got {message:?}"),
    };
    wait_for(client, &task.id, is_terminal).await
}

#[tokio::test]
async fn a_follow_up_task_in_the_same_context_answers_from_the_earlier_exchange() {
    let model = colour_model();
    let node = Node::start("", model.clone()).await;
    let alice = node.client_as("alice");

    let first = send_in_context(&alice, "", "my favourite colour is teal").await;
    assert_eq!(first.status.state, TaskState::Completed);
    assert_eq!(answer(&first), "noted");

    let follow_up =
        send_in_context(&alice, &first.context_id, "what is my favourite colour?").await;
    assert_eq!(follow_up.context_id, first.context_id);
    assert_ne!(follow_up.id, first.id);
    assert_eq!(answer(&follow_up), "your favourite colour is teal");

    // The model request showed the earlier task's words and answer, who said them, once.
    let requests = model.requests_for_goal("what is my favourite colour?");
    let shown = conversation(&requests[0]).expect("a conversation section");
    assert!(
        shown.contains(&format!("task {} (COMPLETED)", first.id)),
        "{shown}"
    );
    assert!(
        shown.contains("[alice] my favourite colour is teal"),
        "{shown}"
    );
    assert!(shown.contains("[you] noted"), "{shown}");
    // A task that began its conversation has no such section.
    let first_request = &model.requests_for_goal("my favourite colour is teal")[0];
    assert_eq!(conversation(first_request), None);
}

#[tokio::test]
async fn another_participants_follow_up_in_the_context_does_not_see_the_exchange() {
    let model = colour_model();
    let node = Node::start("", model.clone()).await;
    let alice = node.client_as("alice");
    let bob = node.client_as("bob");

    let first = send_in_context(&alice, "", "my favourite colour is teal").await;
    let asked = send_in_context(&bob, &first.context_id, "what is alice's favourite colour?").await;
    assert_eq!(answer(&asked), "I don't know");
    let requests = model.requests_for_goal("what is alice's favourite colour?");
    assert_eq!(conversation(&requests[0]), None);
    assert!(!per_task(&requests[0]).contains("teal"));
}

#[tokio::test]
async fn a_message_to_an_ended_task_is_told_to_go_on_in_its_context() {
    let node = Node::start("", colour_model()).await;
    let alice = node.client_as("alice");
    let first = send_in_context(&alice, "", "my favourite colour is teal").await;

    let refused = alice
        .send_message(SendMessageRequest {
            tenant: String::new(),
            message: Message {
                message_id: uuid::Uuid::new_v4().to_string(),
                task_id: first.id.clone(),
                role: Role::User,
                parts: vec![Part::text("and my favourite number?")],
                ..Message::default()
            },
            configuration: None,
            metadata: None,
        })
        .await
        .expect_err("a message to a completed task is refused");
    assert_eq!(refused.rpc_code(), Some(UNSUPPORTED_OPERATION));
    let text = refused.to_string();
    assert!(
        text.contains("send the message without taskId and with contextId")
            && text.contains(&first.context_id),
        "{text}"
    );
}

#[tokio::test]
async fn a_follow_up_resumed_after_a_restart_still_reads_the_earlier_exchange() {
    // The follow-up's first model call never answers: the harness stops while it is in flight.
    let hanging = FnModel::new(|request| {
        if has_goal(request, "my favourite colour is teal") {
            Answer::Reply(text("noted"))
        } else {
            Answer::Hang
        }
    });
    let node = Node::start("", hanging.clone()).await;
    let alice = node.client_as("alice");
    let first = send_in_context(&alice, "", "my favourite colour is teal").await;
    let request = SendMessageRequest {
        tenant: String::new(),
        message: Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            context_id: first.context_id.clone(),
            role: Role::User,
            parts: vec![Part::text("what is my favourite colour?")],
            ..Message::default()
        },
        configuration: Some(SendMessageConfiguration {
            return_immediately: true,
            ..SendMessageConfiguration::default()
        }),
        metadata: None,
    };
    let SendMessageResponse::Task(follow_up) = alice.send_message(request).await.unwrap() else {
        panic!("expected a task");
    };
    while hanging
        .requests_for_goal("what is my favourite colour?")
        .is_empty()
    {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }

    let node = node.restart(colour_model()).await;
    let alice = node.client_as("alice");
    let resumed = wait_for(&alice, &follow_up.id, is_terminal).await;
    assert_eq!(answer(&resumed), "your favourite colour is teal");
}
