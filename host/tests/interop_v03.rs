//! A2A 0.3 on the JSON-RPC endpoint of a real harness: a round trip of every 0.3 method in its
//! 0.3 shapes (`kind` tags, lower-case roles and states, `final`), and this crate's client
//! speaking 0.3 when told the agent does.

mod interop_support;

use std::time::Duration;

use futures::StreamExt;
use interop_support::{Harness, STREAM_DEADLINE, scenario};
use serde_json::{Value, json};
use tiny_harness::base::protocol::requests::SendMessageRequest;
use tiny_harness::base::protocol::types::{
    Message, Part, Role, SendMessageResponse, StreamResponse, TaskState,
};
use tiny_harness::work::agents::client::{A2aClient, Dialect};

/// A 0.3 user message; `task_id` continues a task when not empty.
fn message(prefix: &str, task_id: &str) -> Value {
    let mut message = json!({
        "kind": "message", "messageId": scenario(prefix), "role": "user",
        "parts": [{"kind": "text", "text": "hello"}]
    });
    if !task_id.is_empty() {
        message["taskId"] = json!(task_id);
    }
    message
}

async fn send(harness: &Harness, prefix: &str) -> Value {
    let response = harness
        .rpc("", "message/send", json!({"message": message(prefix, "")}))
        .await;
    assert!(response.get("error").is_none(), "{response}");
    response["result"].clone()
}

#[tokio::test]
async fn message_send_answers_a_0_3_task_with_kinds_and_lower_case_names() {
    let harness = Harness::conformance().await;
    let task = send(&harness, "tck-artifact-file").await;
    assert_eq!(task["kind"], "task");
    assert_eq!(task["status"]["state"], "completed");
    assert_eq!(task["status"]["message"]["role"], "agent");
    assert_eq!(task["status"]["message"]["kind"], "message");
    let part = &task["artifacts"][0]["parts"][0];
    assert_eq!(part["kind"], "file");
    assert_eq!(part["file"]["bytes"], "dGNr");
    assert_eq!(part["file"]["mimeType"], "text/plain");
    assert_eq!(part["file"]["name"], "output.txt");
    assert_eq!(
        task["history"][0]["parts"][0],
        json!({"kind": "text", "text": "hello"})
    );
}

#[tokio::test]
async fn message_send_answers_a_direct_reply_as_a_0_3_message() {
    let harness = Harness::conformance().await;
    let reply = send(&harness, "tck-message-response").await;
    assert_eq!(reply["kind"], "message");
    assert_eq!(reply["role"], "agent");
    assert_eq!(reply["parts"][0]["text"], "Direct message response");
}

#[tokio::test]
async fn message_send_without_blocking_returns_at_once_and_tasks_get_sees_it_finish() {
    let harness = Harness::conformance().await;
    let params = json!({
        "message": message("test-resubscribe-message-id", ""),
        "configuration": {"blocking": false}
    });
    let started = harness.rpc("0.3", "message/send", params).await["result"].clone();
    assert_eq!(started["status"]["state"], "submitted");
    let id = started["id"].as_str().unwrap();
    // Polled until it completes; the deadline guards against a hang only.
    let deadline = tokio::time::Instant::now() + STREAM_DEADLINE;
    loop {
        let task = harness
            .rpc("", "tasks/get", json!({"id": id, "historyLength": 1}))
            .await;
        let state = &task["result"]["status"]["state"];
        if state == "completed" {
            assert_eq!(task["result"]["history"].as_array().unwrap().len(), 1);
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the task did not complete: {task}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn message_stream_streams_0_3_events_and_marks_the_last_final() {
    let harness = Harness::conformance().await;
    let params = json!({"message": message("tck-stream-003", "")});
    let events = harness.rpc_stream("", "message/stream", params).await;
    let results: Vec<&Value> = events.iter().map(|e| &e["result"]).collect();
    let kinds: Vec<&str> = results
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    // Working, the progress note of the model call, the artifact, completed.
    assert_eq!(
        kinds,
        [
            "task",
            "status-update",
            "status-update",
            "artifact-update",
            "status-update"
        ]
    );
    assert_eq!(results[1]["status"]["state"], "working");
    assert_eq!(results[1]["final"], false);
    assert_eq!(results[2]["status"]["state"], "working");
    assert_eq!(
        results[2]["status"]["message"]["metadata"]["progress"],
        true
    );
    assert_eq!(results[2]["final"], false);
    assert_eq!(
        results[3]["artifact"]["parts"][0]["text"],
        "Stream task lifecycle"
    );
    assert_eq!(results[4]["status"]["state"], "completed");
    assert_eq!(results[4]["final"], true);
    assert!(events.iter().all(|e| e["id"] == 7));
}

#[tokio::test]
async fn tasks_cancel_cancels_and_tasks_resubscribe_follows_a_waiting_task() {
    let harness = Harness::conformance().await;
    let waiting = send(&harness, "tck-input-required").await;
    assert_eq!(waiting["status"]["state"], "input-required");
    let id = waiting["id"].as_str().unwrap().to_string();
    let answer = json!({"message": message("tck-complete-task", &id)});
    let mut events = harness
        .rpc_stream_open("", "tasks/resubscribe", json!({"id": id}))
        .await;
    // The subscription is open once its first event, the task as it is, has come: only then is
    // the task answered.
    let first = events.next().await;
    assert_eq!(first["result"]["status"]["state"], "input-required");
    let answered = harness.rpc("", "message/send", answer).await;
    assert!(answered["error"].is_null(), "{answered}");
    let events = events.rest().await;
    assert_eq!(events.last().unwrap()["result"]["final"], true);
    let other = send(&harness, "tck-input-required").await;
    let canceled = harness
        .rpc("", "tasks/cancel", json!({"id": other["id"]}))
        .await;
    assert_eq!(canceled["result"]["kind"], "task");
    assert_eq!(canceled["result"]["status"]["state"], "canceled");
    let again = harness
        .rpc("", "tasks/cancel", json!({"id": other["id"]}))
        .await;
    assert_eq!(again["error"]["code"], -32002);
}

#[tokio::test]
async fn push_configs_are_not_supported_and_unknown_tasks_are_not_found_in_0_3() {
    let harness = Harness::conformance().await;
    for method in ["set", "get", "list", "delete"] {
        let method = format!("tasks/pushNotificationConfig/{method}");
        let response = harness.rpc("", &method, json!({"id": "t"})).await;
        assert_eq!(response["error"]["code"], -32003, "{method}");
    }
    let response = harness.rpc("", "tasks/get", json!({"id": "missing"})).await;
    assert_eq!(response["error"]["code"], -32001);
    let response = harness
        .rpc("1.0", "tasks/get", json!({"id": "missing"}))
        .await;
    assert_eq!(
        response["error"]["code"], -32009,
        "0.3 names need a 0.3 version"
    );
    let bad_part = json!({"message": {"messageId": "m", "role": "user", "parts": [{"kind": "file", "file": {}}]}});
    let response = harness.rpc("", "message/send", bad_part).await;
    assert_eq!(response["error"]["code"], -32602);
}

fn request(prefix: &str) -> SendMessageRequest {
    SendMessageRequest {
        tenant: String::new(),
        message: Message {
            message_id: scenario(prefix),
            role: Role::User,
            parts: vec![Part::text("hello")],
            ..Message::default()
        },
        configuration: None,
        metadata: None,
    }
}

#[tokio::test]
async fn the_client_in_0_3_sends_gets_cancels_and_streams_with_1_0_types() {
    let harness = Harness::conformance().await;
    let client = A2aClient::new(harness.base.clone())
        .unwrap()
        .with_dialect(Dialect::V0_3);
    let SendMessageResponse::Task(task) = client
        .send_message(request("tck-artifact-data"))
        .await
        .unwrap()
    else {
        panic!("a task");
    };
    assert_eq!(task.status.state, TaskState::Completed);
    let fetched = client.get_task(&task.id, None).await.unwrap();
    let artifacts = fetched.artifacts.unwrap();
    assert_eq!(
        artifacts[0].parts[0].data,
        Some(json!({"key": "value", "count": 42}))
    );
    let reply = client
        .send_message(request("tck-message-response"))
        .await
        .unwrap();
    assert!(matches!(reply, SendMessageResponse::Message(m) if m.role == Role::Agent));
    let SendMessageResponse::Task(waiting) = client
        .send_message(request("tck-input-required"))
        .await
        .unwrap()
    else {
        panic!("a task");
    };
    let canceled = client.cancel_task(&waiting.id).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    let stream = client
        .send_streaming_message(request("tck-stream-001"))
        .await
        .unwrap();
    let events: Vec<StreamResponse> = stream.map(Result::unwrap).collect().await;
    assert!(
        matches!(events.last(), Some(StreamResponse::StatusUpdate(u)) if u.status.state == TaskState::Completed)
    );
    assert!(client.list_tasks(Default::default()).await.is_err());
}

#[tokio::test]
async fn connect_reads_the_card_and_speaks_1_0_to_this_harness() {
    let harness = Harness::conformance().await;
    let client = A2aClient::connect(harness.base.clone()).await.unwrap();
    assert_eq!(client.dialect(), Dialect::V1_0);
    assert_eq!(client.endpoint(), harness.base);
    let reply = client
        .send_message(request("tck-complete-task"))
        .await
        .unwrap();
    assert!(
        matches!(reply, SendMessageResponse::Task(t) if t.status.state == TaskState::Completed)
    );
}
