//! The HTTP+JSON (REST) binding against a real harness on loopback: every route, its bodies,
//! its SSE streams, and the HTTP status and `google.rpc.Status` body of each error (§5.4, §11.6).

mod interop_support;

use interop_support::{Harness, message, scenario};
use serde_json::{Value, json};

/// The reason of the `ErrorInfo` in a §11.6 error body.
fn reason(body: &Value) -> &str {
    body["error"]["details"]
        .as_array()
        .and_then(|details| {
            details
                .iter()
                .find(|d| d["@type"] == "type.googleapis.com/google.rpc.ErrorInfo")
        })
        .and_then(|info| info["reason"].as_str())
        .unwrap_or_default()
}

/// Sends a blocking message; the task it settles in.
async fn task(harness: &Harness, prefix: &str) -> Value {
    let body = json!({"message": message(&scenario(prefix), "hello")});
    let (status, reply) = harness.rest("POST", "/message:send", Some(body)).await;
    assert_eq!(status, 200, "{reply}");
    reply["task"].clone()
}

#[tokio::test]
async fn the_card_lists_http_json_and_json_rpc_0_3_beside_json_rpc_1_0() {
    let harness = Harness::conformance().await;
    let (status, card) = harness
        .rest("GET", "/.well-known/agent-card.json", None)
        .await;
    assert_eq!(status, 200);
    let interfaces: Vec<String> = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| format!("{} {}", i["protocolBinding"], i["protocolVersion"]))
        .collect();
    let expected = [
        r#""JSONRPC" "1.0""#,
        r#""HTTP+JSON" "1.0""#,
        r#""JSONRPC" "0.3""#,
    ];
    assert_eq!(interfaces, expected);
    assert_eq!(card["supportedInterfaces"][1]["url"], harness.base.as_str());
}

#[tokio::test]
async fn post_message_send_answers_with_the_completed_task() {
    let harness = Harness::conformance().await;
    let task = task(&harness, "tck-complete-task").await;
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        task["status"]["message"]["parts"][0]["text"],
        "Hello from TCK"
    );
    assert!(!task["contextId"].as_str().unwrap().is_empty());
}

#[tokio::test]
async fn post_message_send_answers_a_direct_reply_with_a_message() {
    let harness = Harness::conformance().await;
    let body = json!({"message": message(&scenario("tck-message-response"), "hi")});
    let (status, reply) = harness.rest("POST", "/message:send", Some(body)).await;
    assert_eq!(status, 200);
    assert!(reply.get("task").is_none(), "{reply}");
    assert_eq!(reply["message"]["role"], "ROLE_AGENT");
    assert_eq!(
        reply["message"]["parts"][0]["text"],
        "Direct message response"
    );
}

#[tokio::test]
async fn post_message_stream_streams_bare_events_until_the_task_completes() {
    let harness = Harness::conformance().await;
    let body = json!({"message": message(&scenario("tck-stream-001"), "go")});
    let events = harness
        .rest_stream("POST", "/message:stream", Some(body))
        .await;
    assert!(events.iter().all(|event| event.get("jsonrpc").is_none()));
    assert_eq!(events[0]["task"]["status"]["state"], "TASK_STATE_SUBMITTED");
    let kinds: Vec<&str> = events[1..]
        .iter()
        .map(|e| e.as_object().unwrap().keys().next().unwrap().as_str())
        .collect();
    // Working, the progress note of the model call, the artifact, completed.
    assert_eq!(
        kinds,
        [
            "statusUpdate",
            "statusUpdate",
            "artifactUpdate",
            "statusUpdate"
        ]
    );
    let note = &events[2]["statusUpdate"]["status"]["message"];
    assert_eq!(note["metadata"]["progress"], true, "{note}");
    assert_eq!(note["parts"][0]["text"], "Calling the model");
    let artifact = &events[3]["artifactUpdate"]["artifact"];
    assert_eq!(artifact["parts"][0]["text"], "Stream hello from TCK");
    let last = events.last().unwrap();
    assert_eq!(
        last["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}

#[tokio::test]
async fn get_task_returns_the_task_with_at_most_history_length_messages() {
    let harness = Harness::conformance().await;
    let id = task(&harness, "tck-complete-task").await["id"].clone();
    let (status, full) = harness
        .rest("GET", &format!("/tasks/{}", id.as_str().unwrap()), None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(full["history"].as_array().unwrap().len(), 2);
    let path = format!("/tasks/{}?historyLength=1", id.as_str().unwrap());
    let (_, trimmed) = harness.rest("GET", &path, None).await;
    assert_eq!(trimmed["history"].as_array().unwrap().len(), 1);
    assert_eq!(trimmed["history"][0]["role"], "ROLE_AGENT");
}

#[tokio::test]
async fn get_tasks_lists_the_tasks_of_a_context_without_artifacts() {
    let harness = Harness::conformance().await;
    let context = task(&harness, "tck-artifact-text").await["contextId"].clone();
    let path = format!("/tasks?contextId={}&pageSize=10", context.as_str().unwrap());
    let (status, page) = harness.rest("GET", &path, None).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["tasks"].as_array().unwrap().len(), 1);
    assert!(page["tasks"][0].get("artifacts").is_none());
    assert_eq!(page["nextPageToken"], "");
    let (_, with) = harness
        .rest("GET", &format!("{path}&includeArtifacts=true"), None)
        .await;
    assert_eq!(
        with["tasks"][0]["artifacts"][0]["parts"][0]["text"],
        "Generated text content"
    );
}

#[tokio::test]
async fn post_cancel_cancels_a_waiting_task_and_a_second_cancel_is_refused_as_not_cancelable() {
    let harness = Harness::conformance().await;
    let waiting = task(&harness, "tck-input-required").await;
    assert_eq!(waiting["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let path = format!("/tasks/{}:cancel", waiting["id"].as_str().unwrap());
    let (status, canceled) = harness.rest("POST", &path, None).await;
    assert_eq!(status, 200, "{canceled}");
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    let (status, again) = harness.rest("POST", &path, Some(json!({}))).await;
    // A2A 1.0.1: 400 with FAILED_PRECONDITION (1.0.0 said 409).
    assert_eq!(status, 400);
    assert_eq!(again["error"]["status"], "FAILED_PRECONDITION");
    assert_eq!(reason(&again), "TASK_NOT_CANCELABLE");
}

#[tokio::test]
async fn subscribe_follows_a_waiting_task_to_its_end_by_post_and_by_get() {
    let harness = Harness::conformance().await;
    for method in ["POST", "GET"] {
        let waiting = task(&harness, "tck-input-required").await;
        let id = waiting["id"].as_str().unwrap().to_string();
        let answer = json!({"message": {
            "messageId": scenario("tck-complete-task"), "role": "ROLE_USER", "taskId": id,
            "parts": [{"text": "here you are"}]
        }});
        let path = format!("/tasks/{id}:subscribe");
        let mut events = harness.rest_stream_open(method, &path, None).await;
        // The subscription is open once its first event, the task as it is, has come: only
        // then is the task answered.
        let first = events.next().await;
        assert_eq!(
            first["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
            "{method}"
        );
        let (status, _) = harness.rest("POST", "/message:send", Some(answer)).await;
        assert_eq!(status, 200);
        let events = events.rest().await;
        let last = events.last().unwrap();
        assert_eq!(
            last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{method}"
        );
    }
}

#[tokio::test]
async fn an_unknown_task_is_404_with_a_google_rpc_status_naming_task_not_found() {
    let harness = Harness::conformance().await;
    let (status, body) = harness.rest("GET", "/tasks/no-such-task", None).await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], 404);
    assert_eq!(body["error"]["status"], "NOT_FOUND");
    assert_eq!(reason(&body), "TASK_NOT_FOUND");
    let (status, _) = harness
        .rest("POST", "/tasks/no-such-task:cancel", None)
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_body_that_is_not_json_or_a_part_of_an_unknown_media_type_is_400_content_type_not_supported()
 {
    let harness = Harness::conformance().await;
    let response = harness
        .http
        .post(harness.url("/message:send"))
        .header("Content-Type", "text/plain")
        .body(r#"{"message":{}}"#)
        .send()
        .await
        .unwrap();
    // A2A 1.0.1: 400 with INVALID_ARGUMENT (1.0.0 said 415).
    assert_eq!(response.status(), 400);
    assert_eq!(response.headers()["content-type"], "application/json");
    let part = json!({"raw": "dGNr", "mediaType": "application/x-unknown"});
    let body = json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [part]}});
    let (status, error) = harness.rest("POST", "/message:send", Some(body)).await;
    assert_eq!(status, 400);
    assert_eq!(error["error"]["status"], "INVALID_ARGUMENT");
    assert_eq!(reason(&error), "CONTENT_TYPE_NOT_SUPPORTED");
}

#[tokio::test]
async fn an_unsupported_version_is_400_version_not_supported() {
    let harness = Harness::conformance().await;
    let response = harness
        .http
        .get(harness.url("/tasks"))
        .header("A2A-Version", "99.0")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(reason(&body), "VERSION_NOT_SUPPORTED");
    let (status, _) = harness.rest("GET", "/tasks?A2A-Version=0.3", None).await;
    assert_eq!(status, 200, "the header wins over the query parameter");
}

#[tokio::test]
async fn push_configs_are_400_and_the_extended_card_is_served_as_the_card_says() {
    let harness = Harness::conformance().await;
    let config = Some(json!({"url": "https://example.com/hook"}));
    let calls = [
        ("POST", "/tasks/t/pushNotificationConfigs", config),
        ("GET", "/tasks/t/pushNotificationConfigs", None),
        ("GET", "/tasks/t/pushNotificationConfigs/c", None),
        ("DELETE", "/tasks/t/pushNotificationConfigs/c", None),
    ];
    for (method, path, body) in calls {
        let (status, error) = harness.rest(method, path, body).await;
        assert_eq!(
            (status, reason(&error)),
            (400, "PUSH_NOTIFICATION_NOT_SUPPORTED")
        );
    }
    // The harness is served with a token caller, so its card offers the extended card, which
    // the caller (proven by its token) reads.
    let (status, card) = harness
        .rest("GET", "/.well-known/agent-card.json", None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(card["capabilities"]["extendedAgentCard"], true);
    let (status, extended) = harness.rest("GET", "/extendedAgentCard", None).await;
    assert_eq!(status, 200, "{extended}");
    assert_eq!(extended["name"], card["name"]);
}

#[tokio::test]
async fn invalid_params_and_unknown_routes_get_status_bodies_too() {
    let harness = Harness::conformance().await;
    let (status, error) = harness.rest("GET", "/tasks?pageSize=0", None).await;
    assert_eq!((status, reason(&error)), (400, "INVALID_PARAMS"));
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("pageSize")
    );
    let (status, error) = harness.rest("POST", "/message:send", Some(json!({}))).await;
    assert_eq!((status, reason(&error)), (400, "INVALID_PARAMS"));
    let (status, error) = harness.rest("GET", "/no/such/route", None).await;
    assert_eq!((status, error["error"]["code"].as_i64()), (404, Some(404)));
    let (status, _) = harness.rest("POST", "/tasks/x:frobnicate", None).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_finished_task_takes_no_message_and_no_subscription() {
    let harness = Harness::conformance().await;
    let done = task(&harness, "tck-complete-task").await;
    let id = done["id"].as_str().unwrap();
    let followup = json!({"message": {
        "messageId": "again", "role": "ROLE_USER", "taskId": id, "parts": [{"text": "more"}]
    }});
    let (status, error) = harness.rest("POST", "/message:send", Some(followup)).await;
    assert_eq!((status, reason(&error)), (400, "UNSUPPORTED_OPERATION"));
    let (status, error) = harness
        .rest("POST", &format!("/tasks/{id}:subscribe"), None)
        .await;
    assert_eq!((status, reason(&error)), (400, "UNSUPPORTED_OPERATION"));
}

#[tokio::test]
async fn a_client_that_asks_for_a2a_json_gets_it_and_others_get_application_json() {
    let harness = Harness::conformance().await;
    let get = |accept: Option<&'static str>| {
        let mut request = harness
            .http
            .get(harness.url("/tasks"))
            .header("A2A-Version", "1.0");
        if let Some(accept) = accept {
            request = request.header("Accept", accept);
        }
        request.send()
    };
    let asked = get(Some("application/a2a+json")).await.unwrap();
    assert_eq!(asked.status(), 200);
    assert_eq!(asked.headers()["content-type"], "application/a2a+json");
    let plain = get(None).await.unwrap();
    assert_eq!(plain.headers()["content-type"], "application/json");
    // An error is a google.rpc.Status, application/json whatever was asked.
    let missing = harness
        .http
        .get(harness.url("/tasks/no-such-task"))
        .header("A2A-Version", "1.0")
        .header("Accept", "application/a2a+json")
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    assert_eq!(missing.headers()["content-type"], "application/json");
}
