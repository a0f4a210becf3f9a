//! The A2A server over real HTTP on loopback, against an in-memory task service: the card, each
//! method, every JSON-RPC error class, the version and extension headers, and the limits. The
//! access and cancel rules are checked against the real task service in tasks_access_http.rs.

mod a2a_support;

use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{Value, json};

use a2a_support::{HOLD, PANIC_ID, Server, error_code, error_message, send_request, task_of};
use tiny_harness::base::protocol::requests::ListTasksRequest;
use tiny_harness::base::protocol::types::{StreamResponse, TaskState};
use tiny_harness::state::records::extension::{ENVELOPE_MEDIA_TYPE, EXTENSION_URI};

#[tokio::test]
async fn the_card_describes_a_streaming_jsonrpc_agent_with_the_optional_task_extension() {
    let server = Server::start().await;
    let card = server.client().fetch_card().await.unwrap();
    assert_eq!(card.name, "tiny-harness");
    assert_eq!(card.version, "0.1.0");
    assert_eq!(card.supported_interfaces[0].url, server.base);
    assert_eq!(card.supported_interfaces[0].protocol_binding, "JSONRPC");
    assert_eq!(card.supported_interfaces[0].protocol_version, "1.0");
    assert_eq!(card.capabilities.streaming, Some(true));
    assert_eq!(card.capabilities.push_notifications, Some(false));
    assert_eq!(card.capabilities.extensions[0].uri, EXTENSION_URI);
    assert!(!card.capabilities.extensions[0].required);
    assert_eq!(
        card.default_input_modes,
        ["text/plain", "application/json", ENVELOPE_MEDIA_TYPE]
    );
    assert_eq!(card.default_output_modes, ["text/plain"]);
    assert!(card.skills.is_empty() && card.security_schemes.is_empty());
}

#[tokio::test]
async fn a_blocking_send_returns_the_completed_task() {
    let server = Server::start().await;
    let task = task_of(
        server
            .client()
            .send_message(send_request("hi", false))
            .await
            .unwrap(),
    );
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(task.status.message.unwrap().text(), "done");
}

#[tokio::test]
async fn a_send_that_returns_immediately_returns_the_task_before_it_completes() {
    let server = Server::start().await;
    let task = task_of(
        server
            .client()
            .send_message(send_request("hi", true))
            .await
            .unwrap(),
    );
    assert!(matches!(
        task.status.state,
        TaskState::Submitted | TaskState::Working
    ));
}

#[tokio::test]
async fn a_streamed_send_yields_the_task_then_working_then_completed_and_ends() {
    let server = Server::start().await;
    let stream = server
        .client()
        .send_streaming_message(send_request("hi", false))
        .await
        .unwrap();
    let items: Vec<StreamResponse> = stream.map(Result::unwrap).collect().await;
    let states: Vec<TaskState> = items
        .iter()
        .map(|item| match item {
            StreamResponse::Task(task) => task.status.state,
            StreamResponse::StatusUpdate(update) => update.status.state,
            other => panic!("unexpected event {other:?}"),
        })
        .collect();
    assert!(matches!(items[0], StreamResponse::Task(_)));
    assert_eq!(
        states,
        [
            TaskState::Submitted,
            TaskState::Working,
            TaskState::Completed
        ]
    );
}

#[tokio::test]
async fn stream_events_are_jsonrpc_responses_carrying_the_request_id() {
    let server = Server::start().await;
    let params = serde_json::to_value(send_request("hi", false)).unwrap();
    let body = json!({"jsonrpc":"2.0","id":"s-1","method":"SendStreamingMessage","params":params});
    let response = reqwest::Client::new()
        .post(&server.base)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let text = response.text().await.unwrap();
    let events: Vec<Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str(data.trim()).unwrap())
        .collect();
    assert_eq!(events.len(), 3);
    assert!(
        events
            .iter()
            .all(|event| event["jsonrpc"] == "2.0" && event["id"] == "s-1")
    );
    assert!(events[0]["result"]["task"].is_object());
    assert_eq!(
        events[2]["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}

#[tokio::test]
async fn subscribing_follows_a_task_until_it_is_canceled() {
    let server = Server::start().await;
    let client = server.client();
    let task = task_of(client.send_message(send_request(HOLD, true)).await.unwrap());
    let mut stream = client.subscribe(&task.id).await.unwrap();
    assert!(matches!(
        stream.next().await,
        Some(Ok(StreamResponse::Task(_)))
    ));
    let canceled = client.cancel_task(&task.id).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    let rest: Vec<StreamResponse> = stream.map(Result::unwrap).collect().await;
    match rest.last() {
        Some(StreamResponse::StatusUpdate(update)) => {
            assert_eq!(update.status.state, TaskState::Canceled)
        }
        other => panic!("expected a final CANCELED update, got {other:?}"),
    }
}

#[tokio::test]
async fn malformed_json_is_a_parse_error_with_a_null_id() {
    let response = Server::start().await.post("{\"jsonrpc\":", &[]).await;
    assert_eq!(error_code(&response), -32700);
    assert_eq!(response["id"], Value::Null);
}

#[tokio::test]
async fn a_request_without_a_method_is_an_invalid_request() {
    let response = Server::start()
        .await
        .post(r#"{"jsonrpc":"2.0","id":3}"#, &[])
        .await;
    assert_eq!(error_code(&response), -32600);
    assert_eq!(response["id"], 3);
    let response = Server::start()
        .await
        .post(r#"{"jsonrpc":"2.0"}"#, &[])
        .await;
    assert_eq!(error_code(&response), -32600);
}

#[tokio::test]
async fn an_unknown_method_is_method_not_found() {
    let server = Server::start().await;
    for method in ["Frobnicate", "tasks/frobnicate"] {
        let response = server.rpc(method, json!({})).await;
        assert_eq!(error_code(&response), -32601);
        assert!(error_message(&response).contains(method));
    }
}

#[tokio::test]
async fn a_send_without_a_message_is_invalid_params_naming_the_field() {
    let response = Server::start().await.rpc("SendMessage", json!({})).await;
    assert_eq!(error_code(&response), -32602);
    assert!(error_message(&response).contains("message"), "{response}");
}

#[tokio::test]
async fn a_part_with_two_contents_is_invalid_params_naming_the_part() {
    let message = json!({"messageId":"m1","role":"ROLE_USER",
        "parts":[{"text":"fine"},{"text":"a","url":"https://example.com/a"}]});
    let response = Server::start()
        .await
        .rpc("SendMessage", json!({"message": message}))
        .await;
    assert_eq!(error_code(&response), -32602);
    assert!(
        error_message(&response).contains("message.parts[1]"),
        "{response}"
    );
    assert_eq!(
        response["error"]["data"][1]["fieldViolations"][0]["field"],
        "message.parts[1]"
    );
}

#[tokio::test]
async fn a2a_version_0_3_is_refused_as_not_supported() {
    let body = json!({"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}).to_string();
    let response = Server::start()
        .await
        .post(body, &[("A2A-Version", "0.3")])
        .await;
    assert_eq!(error_code(&response), -32009);
    let message = error_message(&response);
    assert!(
        message.contains("0.3") && message.contains("1.0"),
        "{message}"
    );
}

#[tokio::test]
async fn a2a_version_1_0_with_a_patch_or_absent_is_accepted() {
    let server = Server::start().await;
    let body = json!({"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}).to_string();
    let response = server.post(body.clone(), &[("A2A-Version", "1.0.2")]).await;
    assert!(response["result"]["tasks"].is_array(), "{response}");
    let response = server.post(body, &[]).await;
    assert!(response["result"]["tasks"].is_array(), "{response}");
}

#[tokio::test]
async fn an_unknown_extension_is_ignored_and_the_task_extension_accepted() {
    let server = Server::start().await;
    let body = json!({"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}).to_string();
    let unknown = "https://example.com/ext/geo/v1";
    let both = format!("{EXTENSION_URI}, {unknown}");
    // §4.6.3: an extension the agent does not implement is ignored, not refused.
    let response = server
        .post(body.clone(), &[("A2A-Extensions", &both)])
        .await;
    assert!(response.get("result").is_some(), "{response}");
    let response = server
        .post(body, &[("A2A-Extensions", EXTENSION_URI)])
        .await;
    assert!(response.get("result").is_some(), "{response}");
}

#[tokio::test]
async fn push_notification_config_methods_are_not_supported() {
    let server = Server::start().await;
    for method in [
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    ] {
        let response = server.rpc(method, json!({"taskId":"t"})).await;
        assert_eq!(error_code(&response), -32003, "{method}");
    }
}

#[tokio::test]
async fn the_extended_agent_card_is_an_unsupported_operation() {
    let response = Server::start()
        .await
        .rpc("GetExtendedAgentCard", json!({}))
        .await;
    assert_eq!(error_code(&response), -32004);
}

#[tokio::test]
async fn a_body_over_the_limit_gets_http_413_with_or_without_a_content_length() {
    let server = Server::with_limits(1024, 0).await;
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{{"x":"{}"}}}}"#,
        "a".repeat(4096)
    );
    let http = reqwest::Client::new();
    let response = http
        .post(&server.base)
        .body(big.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let chunks = futures::stream::iter(
        big.into_bytes()
            .chunks(512)
            .map(|c| Ok::<_, std::io::Error>(c.to_vec()))
            .collect::<Vec<_>>(),
    );
    let response = http
        .post(&server.base)
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn the_sixth_request_in_a_minute_from_one_address_gets_http_429() {
    let server = Server::with_limits(64 * 1024, 5).await;
    let http = reqwest::Client::new();
    let card_url = format!("{}/.well-known/agent-card.json", server.base);
    for _ in 0..5 {
        assert_eq!(
            http.get(&card_url).send().await.unwrap().status(),
            StatusCode::OK
        );
    }
    let refused = http.get(&card_url).send().await.unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry_after: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry_after));
}

#[tokio::test]
async fn getting_an_unknown_task_is_task_not_found() {
    let error = Server::start()
        .await
        .client()
        .get_task("nope", None)
        .await
        .unwrap_err();
    assert_eq!(error.rpc_code(), Some(-32001));
}

#[tokio::test]
async fn a_task_is_invisible_to_another_participant() {
    let server = Server::start().await;
    let alice = server.client().with_participant("alice");
    let task = task_of(alice.send_message(send_request("hi", true)).await.unwrap());
    assert_eq!(alice.get_task(&task.id, None).await.unwrap().id, task.id);
    let bob = server.client().with_participant("bob");
    assert_eq!(
        bob.get_task(&task.id, None).await.unwrap_err().rpc_code(),
        Some(-32001)
    );
    assert_eq!(
        alice
            .list_tasks(ListTasksRequest::default())
            .await
            .unwrap()
            .tasks
            .len(),
        1
    );
    assert!(
        bob.list_tasks(ListTasksRequest::default())
            .await
            .unwrap()
            .tasks
            .is_empty()
    );
}

#[tokio::test]
async fn canceling_a_completed_task_is_not_cancelable() {
    let server = Server::start().await;
    let client = server.client();
    let task = task_of(
        client
            .send_message(send_request("hi", false))
            .await
            .unwrap(),
    );
    assert_eq!(
        client.cancel_task(&task.id).await.unwrap_err().rpc_code(),
        Some(-32002)
    );
}

#[tokio::test]
async fn a_list_with_page_size_zero_is_invalid_params() {
    let response = Server::start()
        .await
        .rpc("ListTasks", json!({"pageSize":0}))
        .await;
    assert_eq!(error_code(&response), -32602);
    assert!(error_message(&response).contains("pageSize"));
}

#[tokio::test]
async fn a_panicking_service_yields_an_internal_error_not_a_dropped_connection() {
    let response = Server::start()
        .await
        .rpc("GetTask", json!({"id": PANIC_ID}))
        .await;
    assert_eq!(error_code(&response), -32603);
}

#[tokio::test]
async fn hostile_bodies_get_jsonrpc_errors_never_a_server_error() {
    let server = Server::start().await;
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let bodies: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"null".to_vec(),
        b"[]".to_vec(),
        b"\"x\"".to_vec(),
        b"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"GetTask\"}".to_vec(),
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\",\"params\":\"x\"}".to_vec(),
        vec![0xff, 0xfe, b'{'],
        deep.into_bytes(),
    ];
    for body in bodies {
        let response = server.post(body.clone(), &[]).await;
        let code = error_code(&response);
        assert!(
            [-32700, -32600, -32602].contains(&code),
            "{code} for {:?}",
            String::from_utf8_lossy(&body)
        );
    }
}
