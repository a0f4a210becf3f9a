//! What a client can read of a harness whose model endpoint misbehaves. Every secret the harness
//! holds is a canary (the model's API key, a trusted delegator's token, an agent's token), and so
//! is the model URL's path; the model endpoint refuses the key and echoes it, fails with the key
//! in its body, or is down. Tasks are driven to FAILED over every binding, then every answer a
//! client can get (both bindings, streams, the card, errors to bad requests) is searched for the
//! canaries, and the failure reason is checked word for word. The harness is the real binary with
//! the secrets in its environment; its log is read too, where the endpoint's words may appear
//! but never a secret.

mod redaction_support;
mod support {
    pub mod harness_process;
}

use serde_json::{Value, json};

use redaction_support::{
    AGENT_TOKEN, Caller, DELEGATOR_TOKEN, Endpoint, Harness, MODEL_KEY, bearer, events, message,
};

/// Asserts a task (as JSON) failed with exactly `reason`, its last history message saying it too.
fn assert_failed_with(task: &Value, reason: &str) {
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED", "{task}");
    assert_eq!(task["status"]["message"]["parts"][0]["text"], reason);
    if let Some(history) = task["history"].as_array() {
        assert_eq!(history.last().unwrap()["parts"][0]["text"], reason);
    }
}

/// Drives tasks to FAILED over every binding and reads everything a client can read; returns
/// each answer as `(what, text)`. Every task is checked to fail with exactly `reason`.
async fn read_everything(harness: &Harness, reason: &str) -> Vec<(String, String)> {
    let delegator = bearer(DELEGATOR_TOKEN);
    let carol = Caller::Participant("carol".to_string());
    let anyone = Caller::Anonymous;
    let mut read = Vec::new();

    // Created over JSON-RPC by the trusted delegator, blocking until it fails.
    let sent = harness
        .rpc(&delegator, "SendMessage", message("summarise the ledger"))
        .await;
    let by_delegator: Value = serde_json::from_str(&sent).unwrap();
    let by_delegator = &by_delegator["result"]["task"];
    assert_failed_with(by_delegator, reason);
    let delegator_task = by_delegator["id"].as_str().unwrap().to_string();
    read.push(("JSON-RPC SendMessage".to_string(), sent));

    // Streamed over JSON-RPC by an anonymous caller.
    let streamed = harness
        .rpc(&anyone, "SendStreamingMessage", message("stream it"))
        .await;
    let last = events(&streamed).last().cloned().unwrap();
    let status = &last["result"]["statusUpdate"]["status"];
    assert_eq!(status["state"], "TASK_STATE_FAILED", "{streamed}");
    assert_eq!(status["message"]["parts"][0]["text"], reason);
    let anonymous_task = last["result"]["statusUpdate"]["taskId"]
        .as_str()
        .unwrap()
        .to_string();
    read.push(("JSON-RPC SendStreamingMessage".to_string(), streamed));

    // Created and streamed over REST by an untrusted participant.
    let sent = harness
        .rest(&carol, "POST", "/message:send", Some(message("rest task")))
        .await;
    let by_carol: Value = serde_json::from_str(&sent).unwrap();
    assert_failed_with(&by_carol["task"], reason);
    let carol_task = by_carol["task"]["id"].as_str().unwrap().to_string();
    read.push(("REST message:send".to_string(), sent));
    let streamed = harness
        .rest(
            &carol,
            "POST",
            "/message:stream",
            Some(message("rest stream")),
        )
        .await;
    let last = events(&streamed).last().cloned().unwrap();
    assert_eq!(
        last["statusUpdate"]["status"]["message"]["parts"][0]["text"],
        reason
    );
    read.push(("REST message:stream".to_string(), streamed));

    // Every way of reading the tasks back.
    let got = harness
        .rpc(&delegator, "GetTask", json!({"id": delegator_task}))
        .await;
    let task: Value = serde_json::from_str(&got).unwrap();
    assert_failed_with(&task["result"], reason);
    read.push(("JSON-RPC GetTask".to_string(), got));
    let got = harness
        .rpc(&anyone, "GetTask", json!({"id": anonymous_task}))
        .await;
    read.push(("JSON-RPC GetTask, anonymous".to_string(), got));
    for (who, caller) in [("delegator", &delegator), ("anonymous", &anyone)] {
        let listed = harness.rpc(caller, "ListTasks", json!({})).await;
        read.push((format!("JSON-RPC ListTasks, {who}"), listed));
    }
    let subscribed = harness
        .rpc(&delegator, "SubscribeToTask", json!({"id": delegator_task}))
        .await;
    read.push(("JSON-RPC SubscribeToTask".to_string(), subscribed));
    let legacy = harness
        .rpc_raw(
            &delegator,
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"id": delegator_task}})
                .to_string(),
        )
        .await;
    assert!(legacy.contains(reason), "{legacy}");
    read.push(("JSON-RPC 0.3 tasks/get".to_string(), legacy));
    let legacy_message = json!({"kind": "message", "messageId": uuid::Uuid::new_v4().to_string(),
        "role": "user", "parts": [{"kind": "text", "text": "a 0.3 client's task"}]});
    let legacy_send = json!({"jsonrpc": "2.0", "id": 4, "method": "message/send",
        "params": {"message": legacy_message}});
    let sent = harness.rpc_raw(&carol, &legacy_send.to_string()).await;
    let answer: Value = serde_json::from_str(&sent).unwrap();
    assert_eq!(answer["result"]["status"]["state"], "failed", "{sent}");
    assert_eq!(
        answer["result"]["status"]["message"]["parts"][0]["text"],
        reason
    );
    read.push(("JSON-RPC 0.3 message/send".to_string(), sent));
    let got = harness
        .rest(&carol, "GET", &format!("/tasks/{carol_task}"), None)
        .await;
    let task: Value = serde_json::from_str(&got).unwrap();
    assert_failed_with(&task, reason);
    read.push(("REST GET /tasks/{id}".to_string(), got));
    for (what, method, path) in [
        ("REST GET /tasks", "GET", "/tasks".to_string()),
        (
            "REST subscribe",
            "POST",
            format!("/tasks/{carol_task}:subscribe"),
        ),
        ("REST cancel", "POST", format!("/tasks/{carol_task}:cancel")),
    ] {
        read.push((
            what.to_string(),
            harness.rest(&carol, method, &path, None).await,
        ));
    }

    // The card, and errors to bad requests, some of them carrying a secret of the harness
    // where it does not belong.
    for path in [
        "/.well-known/agent-card.json",
        "/extendedAgentCard",
        "/nowhere",
    ] {
        read.push((
            path.to_string(),
            harness.rest(&anyone, "GET", path, None).await,
        ));
    }
    let bad_bodies = [
        "{not json",
        r#"{"jsonrpc":"2.0","id":1,"method":"NoSuchMethod"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":7}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":""}}"#,
        r#"[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]"#,
    ];
    for body in bad_bodies {
        read.push((
            format!("JSON-RPC {body}"),
            harness.rpc_raw(&anyone, body).await,
        ));
    }
    let get =
        json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": delegator_task}})
            .to_string();
    for (what, caller) in [
        ("an agent's token as a bearer", bearer(AGENT_TOKEN)),
        ("the model key as a bearer", bearer(MODEL_KEY)),
        (
            "a delegator's token as Basic credentials",
            Caller::Authorization(format!("Basic {DELEGATOR_TOKEN}")),
        ),
        (
            "someone else's task",
            Caller::Participant("mallory".to_string()),
        ),
    ] {
        let refused = harness.rpc_raw(&caller, &get).await;
        assert!(refused.contains("\"error\""), "{what}: {refused}");
        read.push((format!("JSON-RPC GetTask with {what}"), refused));
        let path = format!("/tasks/{delegator_task}");
        let refused = harness.rest(&caller, "GET", &path, None).await;
        read.push((format!("REST GET /tasks/{{id}} with {what}"), refused));
    }
    read
}

/// Asserts no canary appears in any answer, naming the answer and the canary when one does.
fn assert_no_canary(harness: &Harness, read: &[(String, String)]) {
    for (what, text) in read {
        for canary in &harness.canaries {
            assert!(
                !text.contains(canary.as_str()),
                "{what} reveals {canary}:\n{text}"
            );
        }
    }
}

/// Asserts the log names no secret (the model URL is the operator's own and may appear).
fn assert_log_keeps_secrets(log: &str) {
    for secret in [MODEL_KEY, DELEGATOR_TOKEN, AGENT_TOKEN] {
        assert!(!log.contains(secret), "the log reveals {secret}:\n{log}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_refuses_the_key_and_echoes_it_reveals_nothing_to_clients() {
    let (harness, stub) = Harness::start(Endpoint::RefusesTheKey).await;
    let reason = "the model endpoint refused the API key (HTTP 401)";
    let read = read_everything(&harness, reason).await;
    assert_no_canary(&harness, &read);
    let stub = stub.unwrap();
    let sent = stub.authorizations.lock().unwrap().clone();
    assert!(
        sent.iter()
            .all(|header| *header == format!("Bearer {MODEL_KEY}"))
    );
    let log = harness.log();
    assert_log_keeps_secrets(&log);
    assert!(
        log.contains("Incorrect API key provided: [redacted]."),
        "the log keeps the masked body:\n{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_fails_with_the_key_in_its_body_reveals_nothing_to_clients() {
    let (harness, _stub) = Harness::start(Endpoint::FailsWithTheKey).await;
    let reason = "the model endpoint answered HTTP 500 after 1 retry";
    let read = read_everything(&harness, reason).await;
    assert_no_canary(&harness, &read);
    let log = harness.log();
    assert_log_keeps_secrets(&log);
    assert!(
        log.contains("upstream failure while serving key [redacted]\\\\n at /srv/"),
        "the log keeps the masked body, escaped:\n{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_is_down_reveals_neither_its_url_nor_a_secret_to_clients() {
    let (harness, _stub) = Harness::start(Endpoint::Down).await;
    let reason = "the model endpoint could not be reached after 1 retry";
    let read = read_everything(&harness, reason).await;
    assert_no_canary(&harness, &read);
    let log = harness.log();
    assert_log_keeps_secrets(&log);
    assert!(
        log.contains("could not reach the model endpoint after 1 retry"),
        "{log}"
    );
}
