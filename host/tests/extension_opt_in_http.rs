//! The task extension is opt-in, over real HTTP on loopback against the whole harness: a client
//! that does not name it in `A2A-Extensions` never finds its data in an answer (JSON-RPC 1.0 and
//! 0.3, streams, REST), and one that does finds it in every answer and sees it echoed back.

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;
use tiny_harness::state::records::extension::{ENVELOPE_MEDIA_TYPE, EXTENSION_URI, METADATA_KEY};
use tokio::sync::oneshot;

/// Every task asks its participant a question, so it waits (input required) and can be
/// subscribed to and canceled.
const ASKS: &str = "[[reply]]\n[[reply.tool_calls]]\nname = \"ask_participant\"\n\
                    arguments = { participant_id = \"reader\", question = \"Which month?\" }\n";
/// Every request comes from the token caller `reader`, which proves who it is and so lists the
/// tasks it created (a caller that proves nothing lists none).
const READER_TOKEN: &str = "extension-opt-in-reader-token-c9f0f895fb98ab91";
/// The task's text, and so the name the extension gives it.
const BRIEF: &str = "Reconcile the March statements";
/// How long one answer may take before the test calls it hung.
const HANG_GUARD: Duration = Duration::from_secs(20);

struct Server {
    base_url: String,
    http: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn start() -> Server {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("script.toml"), ASKS).unwrap();
        let text = "[server]\nbind = \"127.0.0.1:0\"\n\
                    [[server.callers]]\nid = \"reader\"\ntoken_env = \"READER_TOKEN\"\n\
                    [store]\npath = \"harness.db\"\n\
                    [model]\nprovider = \"scripted\"\nscript = \"script.toml\"\n";
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).unwrap();
        let env = |name: &str| (name == "READER_TOKEN").then(|| READER_TOKEN.to_string());
        let runtime = Runtime::build_with_env(Config::load(&path).unwrap(), env)
            .await
            .unwrap();
        let base_url = format!("http://{}", runtime.local_addr());
        let (stop, stopped) = oneshot::channel::<()>();
        let done = tokio::spawn(async move {
            let stopped = async {
                let _ = stopped.await;
            };
            runtime.serve(stopped).await.unwrap();
        });
        Server {
            base_url,
            http: reqwest::Client::new(),
            stop: Some(stop),
            done,
            _dir: dir,
        }
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = self.done.await;
    }
}

/// Whether (and how) a request activates the task extension.
#[derive(Clone, Copy, PartialEq)]
enum Activation {
    None,
    /// `A2A-Extensions` (and, on a 0.3 method, 0.3's `X-A2A-Extensions`).
    TaskExtension,
}

/// One answer: its body (a stream's events joined) and the extensions header it came with.
struct Answer {
    what: &'static str,
    body: String,
    echoed: Option<String>,
}

/// A request as a client that activates (or not) the extension would send it. A 0.3 method
/// names it as 0.3 clients do, and expects the echo under that name.
fn request(
    server: &Server,
    activation: Activation,
    legacy: bool,
    method: reqwest::Method,
    path: &str,
) -> reqwest::RequestBuilder {
    let mut request = server
        .http
        .request(method, format!("{}{path}", server.base_url))
        .bearer_auth(READER_TOKEN)
        .timeout(HANG_GUARD);
    if !legacy {
        request = request.header("A2A-Version", "1.0");
    }
    if activation == Activation::TaskExtension {
        let name = if legacy {
            "X-A2A-Extensions"
        } else {
            "A2A-Extensions"
        };
        request = request.header(name, EXTENSION_URI);
    }
    request
}

fn echo_header(legacy: bool) -> &'static str {
    if legacy {
        "x-a2a-extensions"
    } else {
        "a2a-extensions"
    }
}

/// A whole answer (a stream is read until the server ends it).
async fn answer(what: &'static str, legacy: bool, request: reqwest::RequestBuilder) -> Answer {
    let response = request.send().await.unwrap();
    assert!(
        response.status().is_success(),
        "{what}: {}",
        response.status()
    );
    let echoed = response
        .headers()
        .get(echo_header(legacy))
        .map(|value| value.to_str().unwrap().to_string());
    let body = response.text().await.unwrap();
    Answer { what, body, echoed }
}

/// The first event of a stream that stays open (a subscription to a waiting task).
async fn first_event(what: &'static str, request: reqwest::RequestBuilder) -> Answer {
    let response = request.send().await.unwrap();
    assert!(
        response.status().is_success(),
        "{what}: {}",
        response.status()
    );
    let echoed = response
        .headers()
        .get(echo_header(false))
        .map(|value| value.to_str().unwrap().to_string());
    let mut chunks = response.bytes_stream();
    let mut body = String::new();
    while !body.contains("\n\n") {
        let chunk = tokio::time::timeout(HANG_GUARD, chunks.next())
            .await
            .unwrap_or_else(|_| panic!("{what}: no event"))
            .unwrap_or_else(|| panic!("{what}: the stream ended before its first event"))
            .unwrap();
        body.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(body.contains("data:"), "{what}: {body}");
    Answer { what, body, echoed }
}

fn rpc(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

fn message(text: &str) -> Value {
    json!({"message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
        "parts": [{"text": text}]}})
}

/// Every way a task reaches a client: a blocking send, get, list, a streamed send and a
/// subscription over JSON-RPC 1.0; get over 0.3; get, list, a streamed send and a subscription
/// over REST; and last a cancel. Returns the answers, in that order.
async fn every_answer(server: &Server, activation: Activation) -> Vec<Answer> {
    use reqwest::Method;
    let post = |legacy| request(server, activation, legacy, Method::POST, "/");
    let sent = answer(
        "JSON-RPC SendMessage",
        false,
        post(false).json(&rpc("SendMessage", message(BRIEF))),
    )
    .await;
    let task: Value = serde_json::from_str(&sent.body).unwrap();
    let id = task["result"]["task"]["id"].as_str().unwrap().to_string();
    assert_eq!(
        task["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{}",
        sent.body
    );
    let mut answers = vec![sent];
    let get = rpc("GetTask", json!({"id": id}));
    answers.push(answer("JSON-RPC GetTask", false, post(false).json(&get)).await);
    let list = rpc("ListTasks", json!({}));
    answers.push(answer("JSON-RPC ListTasks", false, post(false).json(&list)).await);
    let stream = rpc("SendStreamingMessage", message(BRIEF));
    let stream = post(false).json(&stream);
    answers.push(answer("JSON-RPC SendStreamingMessage", false, stream).await);
    let subscribe = rpc("SubscribeToTask", json!({"id": id}));
    let subscribe = post(false).json(&subscribe);
    answers.push(first_event("JSON-RPC SubscribeToTask", subscribe).await);
    let legacy_get = rpc("tasks/get", json!({"id": id}));
    answers.push(answer("JSON-RPC 0.3 tasks/get", true, post(true).json(&legacy_get)).await);
    let rest = |method, path: &str| request(server, activation, false, method, path);
    let rest_get = rest(Method::GET, &format!("/tasks/{id}"));
    answers.push(answer("REST GET /tasks/{id}", false, rest_get).await);
    answers.push(answer("REST GET /tasks", false, rest(Method::GET, "/tasks")).await);
    let rest_stream = rest(Method::POST, "/message:stream").json(&message(BRIEF));
    answers.push(answer("REST POST /message:stream", false, rest_stream).await);
    let rest_subscribe = rest(Method::POST, &format!("/tasks/{id}:subscribe"));
    answers.push(first_event("REST POST /tasks/{id}:subscribe", rest_subscribe).await);
    let cancel = rpc("CancelTask", json!({"id": id}));
    answers.push(answer("JSON-RPC CancelTask", false, post(false).json(&cancel)).await);
    answers
}

#[tokio::test]
async fn a_client_that_does_not_activate_the_extension_never_sees_its_data() {
    let server = Server::start().await;
    let answers = every_answer(&server, Activation::None).await;
    for Answer { what, body, echoed } in &answers {
        assert!(
            body.contains("TASK_STATE_") || body.contains("input-required"),
            "{what}: {body}"
        );
        assert!(
            !body.contains(METADATA_KEY),
            "{what} carried the extension: {body}"
        );
        assert!(!body.contains("acceptance_criteria"), "{what}: {body}");
        assert_eq!(echoed, &None, "{what} echoed an extension nobody activated");
    }
    let cancel = answers.last().unwrap();
    assert!(
        cancel.body.contains("TASK_STATE_CANCELED"),
        "{}",
        cancel.body
    );
    server.stop().await;
}

#[tokio::test]
async fn a_client_that_activates_the_extension_sees_it_in_every_answer_and_the_echo() {
    let server = Server::start().await;
    let answers = every_answer(&server, Activation::TaskExtension).await;
    let name = format!("\"name\":\"{BRIEF}\"");
    for Answer { what, body, echoed } in &answers {
        assert!(
            body.contains(METADATA_KEY),
            "{what} lacks the extension: {body}"
        );
        assert!(body.contains(&name), "{what} lacks the task's name: {body}");
        assert_eq!(echoed.as_deref(), Some(EXTENSION_URI), "{what}");
    }
    server.stop().await;
}

#[tokio::test]
async fn an_envelope_shapes_the_new_task_whether_or_not_the_extension_is_activated() {
    let server = Server::start().await;
    let envelope = |text: &str| {
        json!({"message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
            "parts": [{"data": {"kind": "task", "payload": {"name": text,
                "goal": "Check invoice 42", "acceptance_criteria": [{"text": "amount matches"}]}},
                "mediaType": ENVELOPE_MEDIA_TYPE}]}})
    };
    let plain = request(&server, Activation::None, false, reqwest::Method::POST, "/");
    let plain = answer(
        "a plain envelope",
        false,
        plain.json(&rpc("SendMessage", envelope("Invoice check"))),
    )
    .await;
    let created: Value = serde_json::from_str(&plain.body).unwrap();
    let id = created["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"));
    assert!(!plain.body.contains(METADATA_KEY), "{}", plain.body);
    let activated = request(
        &server,
        Activation::TaskExtension,
        false,
        reqwest::Method::POST,
        "/",
    );
    let fetched = answer(
        "the same task, read with the extension",
        false,
        activated.json(&rpc("GetTask", json!({"id": id}))),
    )
    .await;
    let fetched: Value = serde_json::from_str(&fetched.body).unwrap();
    let brief = &fetched["result"]["metadata"][METADATA_KEY];
    assert_eq!(brief["name"], "Invoice check");
    assert_eq!(brief["goal"], "Check invoice 42");
    assert_eq!(brief["acceptance_criteria"][0]["text"], "amount matches");
    server.stop().await;
}
