//! Trusted delegators over real HTTP (design trust boundary 5, abuse cases 5–7): who may shape a
//! new task's brief, what a wrong token gets, and one task per resent message id. The harness
//! runs whole on loopback with a scripted model; the delegator's token comes from an environment
//! closure, not the process environment, so tests cannot race on it.

mod support {
    pub mod served;
}

use std::time::Duration;
use support::served::Served;

use serde_json::{Value, json};
use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;
use tiny_harness::base::model::build_model;
use tiny_harness::base::protocol::requests::{SendMessageConfiguration, SendMessageRequest};
use tiny_harness::base::protocol::types::{Message, Part, Role};
use tiny_harness::state::records::extension::EXTENSION_URI;

/// The delegator configured on every test server.
const DELEGATOR: &str = "ledger";
/// The environment variable its token is read from.
const TOKEN_ENV: &str = "TRUST_HTTP_LEDGER_TOKEN";
/// Its token.
const TOKEN: &str = "trust-http-ledger-token-5d41402abc4b2a76";
const ENVELOPE: &str = "application/vnd.tiny-harness.event+json";
const EXT: &str = "io.github.madarauchiha-314.tiny-harness/task";
/// Two token callers some tests configure, and their tokens.
const ALICE_TOKEN_ENV: &str = "TRUST_HTTP_ALICE_TOKEN";
const ALICE_TOKEN: &str = "trust-http-alice-token-7c4a8d09ca3762af";
const BOB_TOKEN_ENV: &str = "TRUST_HTTP_BOB_TOKEN";
const BOB_TOKEN: &str = "trust-http-bob-token-e4da3b7fbbce2345d7";
/// A scripted model that answers every task at once.
const ANSWER: &str = "[[reply]]\ntext = \"ok\"\n";
/// How long a test waits for something that must happen: a guard against a hang, not a measure.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// Who a request is sent as.
#[derive(Clone, Copy)]
enum As<'a> {
    /// The anonymous caller: no identity header.
    Anonymous,
    /// An untrusted participant, named by `X-Participant-Id`.
    Participant(&'a str),
    /// `Authorization: Bearer {token}`.
    Bearer(&'a str),
}

struct Server {
    base_url: String,
    http: reqwest::Client,
    served: Served,
    _dir: tempfile::TempDir,
}

impl Server {
    /// A harness with `ledger` as its trusted delegator, its model playing `script`.
    async fn start(script: &str) -> Server {
        Server::start_with(script, "").await
    }

    /// [`Server::start`] with `alice` and `bob` as token callers: they list what they see only
    /// when they prove who they are.
    async fn start_with_callers(script: &str) -> Server {
        let callers = format!(
            "[[server.callers]]\nid = \"alice\"\ntoken_env = \"{ALICE_TOKEN_ENV}\"\n\
             [[server.callers]]\nid = \"bob\"\ntoken_env = \"{BOB_TOKEN_ENV}\"\n"
        );
        Server::start_with(script, &callers).await
    }

    async fn start_with(script: &str, callers: &str) -> Server {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("script.toml"), script).unwrap();
        let text = format!(
            "[server]\nbind = \"127.0.0.1:0\"\n\
             [[server.trusted_delegators]]\nid = \"{DELEGATOR}\"\ntoken_env = \"{TOKEN_ENV}\"\n\
             {callers}\
             [store]\npath = \"harness.db\"\n\
             [model]\nprovider = \"scripted\"\nscript = \"script.toml\"\n\
             [models.small-model]\nprovider = \"scripted\"\nscript = \"script.toml\"\n"
        );
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).unwrap();
        let config = Config::load(&path).unwrap();
        let model = build_model(&config.model, |p| config.resolve(p), |_| None).unwrap();
        let env = |name: &str| match name {
            TOKEN_ENV => Some(TOKEN.to_string()),
            ALICE_TOKEN_ENV => Some(ALICE_TOKEN.to_string()),
            BOB_TOKEN_ENV => Some(BOB_TOKEN.to_string()),
            _ => None,
        };
        let runtime = Runtime::build_with_model_and_env(config, model, env)
            .await
            .unwrap();
        let served = Served::start(runtime);
        Server {
            base_url: served.base_url.clone(),
            http: reqwest::Client::new(),
            served,
            _dir: dir,
        }
    }

    async fn stop(self) {
        self.served.stop().await;
    }

    fn request(&self, who: As<'_>, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        // Every request activates the task extension: these tests read the brief it carries.
        let request = self
            .http
            .request(method, format!("{}{path}", self.base_url))
            .header("A2A-Extensions", EXTENSION_URI);
        match who {
            As::Anonymous => request,
            As::Participant(id) => request.header("X-Participant-Id", id),
            As::Bearer(token) => request.bearer_auth(token),
        }
    }

    /// One JSON-RPC call; the whole response object (HTTP 200 is asserted). A 0.3 method name
    /// is sent without `A2A-Version`, as 0.3 clients do.
    async fn rpc(&self, who: As<'_>, method: &str, params: Value) -> Value {
        let (status, response) = self.rpc_status(who, method, params).await;
        assert_eq!(status, reqwest::StatusCode::OK, "{response}");
        response
    }

    /// One JSON-RPC call; the HTTP status and the response object.
    async fn rpc_status(
        &self,
        who: As<'_>,
        method: &str,
        params: Value,
    ) -> (reqwest::StatusCode, Value) {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut request = self.request(who, reqwest::Method::POST, "/");
        if !method.contains('/') {
            request = request.header("A2A-Version", "1.0");
        }
        let response = request.json(&body).send().await.unwrap();
        (response.status(), response.json().await.unwrap())
    }

    /// `SendMessage`; the created or continued task, or the JSON-RPC error.
    async fn send(&self, who: As<'_>, request: SendMessageRequest) -> Result<Value, Value> {
        let params = serde_json::to_value(&request).unwrap();
        let response = self.rpc(who, "SendMessage", params).await;
        match response.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(response["result"]["task"].clone()),
        }
    }

    async fn get_task(&self, who: As<'_>, id: &str) -> Result<Value, Value> {
        let response = self.rpc(who, "GetTask", json!({"id": id})).await;
        match response.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(response["result"].clone()),
        }
    }

    /// How many tasks the caller sees in `ListTasks`.
    async fn task_count(&self, who: As<'_>) -> u64 {
        let response = self.rpc(who, "ListTasks", json!({})).await;
        response["result"]["totalSize"]
            .as_u64()
            .unwrap_or_else(|| panic!("no listing in {response}"))
    }
}

/// A message that creates a task (or continues `task_id`) with a task envelope; it returns at
/// once rather than waiting for the model.
fn envelope(task_id: &str, payload: Value) -> SendMessageRequest {
    message(
        task_id,
        Part::data(json!({"kind": "task", "payload": payload}), ENVELOPE),
        true,
    )
}

fn message(task_id: &str, part: Part, return_immediately: bool) -> SendMessageRequest {
    SendMessageRequest {
        tenant: String::new(),
        message: Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            task_id: task_id.to_string(),
            role: Role::User,
            parts: vec![part],
            ..Message::default()
        },
        configuration: Some(SendMessageConfiguration {
            return_immediately,
            ..SendMessageConfiguration::default()
        }),
        metadata: None,
    }
}

fn error_text(error: &Value) -> String {
    error["message"].as_str().unwrap_or_default().to_string()
}

/// Polls until the task reaches `state` (a wire name), or fails after [`HANG_GUARD`].
async fn wait_for(server: &Server, who: As<'_>, id: &str, state: &str) -> Value {
    tokio::time::timeout(HANG_GUARD, async {
        loop {
            let task = server.get_task(who, id).await.unwrap();
            if task["status"]["state"] == state {
                return task;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("task {id} never reached {state}"))
}

#[tokio::test]
async fn an_untrusted_creator_naming_another_participant_is_refused_and_nothing_is_created() {
    let server = Server::start(ANSWER).await;
    let alice = As::Participant("alice");
    let error = server
        .send(
            alice,
            envelope(
                "",
                json!({"name": "n", "goal": "g", "participants": [
                    {"id": "alice", "kind": "human", "role": "admin"},
                    {"id": "bob", "kind": "human", "role": "assignee"}]}),
            ),
        )
        .await
        .unwrap_err();
    assert_eq!(error["code"], -32602);
    assert!(
        error_text(&error).contains(
            "task.participants: only a trusted delegator may name participants other than itself (found `bob`)"
        ),
        "{error}"
    );
    assert_eq!(server.task_count(alice).await, 0);
    assert_eq!(server.task_count(As::Participant("bob")).await, 0);
    server.stop().await;
}

#[tokio::test]
async fn an_untrusted_creator_asking_for_what_only_delegators_may_set_is_refused_whole() {
    let server = Server::start(ANSWER).await;
    let cases = [
        ("model", json!("bigger-model")),
        ("reasoning_effort", json!("high")),
        ("lifecycle", json!("participant")),
        ("parent_tasks", json!([{"task_id": "t0"}])),
    ];
    for (field, value) in cases {
        let mut payload = json!({"name": "n", "goal": "g"});
        payload[field] = value;
        let error = server
            .send(As::Participant("alice"), envelope("", payload))
            .await
            .unwrap_err();
        assert_eq!(error["code"], -32602, "{field}");
        assert!(
            error_text(&error).contains(&format!(
                "task.{field}: only a trusted delegator may set this on a new task"
            )),
            "{error}"
        );
    }
    assert_eq!(server.task_count(As::Participant("alice")).await, 0);
    server.stop().await;
}

#[tokio::test]
async fn a_trusted_delegator_creates_a_task_for_others_who_can_then_get_it() {
    let server = Server::start(ANSWER).await;
    let brief = json!({
        "name": "Reconcile March", "goal": "Totals match the bank statement",
        "lifecycle": "participant", "model": "small-model", "reasoning_effort": "low",
        "parent_tasks": [{"task_id": "parent-1", "agent": {"kind": "agent", "id": "front-desk"}}],
        "participants": [
            {"id": "alice", "kind": "human", "role": "assignee"},
            {"id": "bob", "kind": "human", "role": "watcher"}]});
    let task = server
        .send(As::Bearer(TOKEN), envelope("", brief))
        .await
        .expect("a trusted delegator may set every field");
    let ext = &task["metadata"][EXT];
    assert_eq!(ext["lifecycle"], "participant");
    assert_eq!(ext["model"], "small-model");
    assert_eq!(ext["reasoning_effort"], "low");
    assert_eq!(ext["parent_tasks"][0]["task_id"], "parent-1");
    assert_eq!(
        ext["participants"][0],
        json!({"id": DELEGATOR, "kind": "agent", "role": "admin"}),
        "the trusted creator joins as an admin agent"
    );
    let id = task["id"].as_str().unwrap();
    for participant in ["alice", "bob"] {
        let seen = server.get_task(As::Participant(participant), id).await;
        assert_eq!(seen.unwrap()["id"], id, "{participant} sees the task");
    }
    let stranger = server
        .get_task(As::Participant("mallory"), id)
        .await
        .unwrap_err();
    assert_eq!(stranger["code"], -32001);
    assert_eq!(server.task_count(As::Bearer(TOKEN)).await, 1);
    // Once a token has said who the caller is, a header naming someone else is refused (it
    // used to be ignored): a credential never speaks for another participant.
    let mut spoofing = server
        .request(As::Bearer(TOKEN), reqwest::Method::POST, "/")
        .header("A2A-Version", "1.0")
        .header("X-Participant-Id", "alice");
    spoofing = spoofing.json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks"}));
    let refused = spoofing.send().await.unwrap();
    assert_eq!(refused.status(), reqwest::StatusCode::FORBIDDEN);
    let refused: Value = refused.json().await.unwrap();
    assert!(
        error_text(&refused["error"]).contains("a caller speaks only as itself"),
        "{refused}"
    );
    // Nor can a delegator's message speak for someone else.
    let mut relayed = message(id, Part::text("from alice, honestly"), true);
    let mut metadata = serde_json::Map::new();
    metadata.insert("participant_id".into(), "alice".into());
    relayed.message.metadata = Some(metadata);
    let params = serde_json::to_value(&relayed).unwrap();
    let (status, error) = server
        .rpc_status(As::Bearer(TOKEN), "SendMessage", params)
        .await;
    assert_eq!(status, reqwest::StatusCode::FORBIDDEN);
    assert!(
        error_text(&error["error"]).contains("a caller speaks only as itself"),
        "{error}"
    );
    server.stop().await;
}

#[tokio::test]
async fn lifecycle_on_an_existing_task_is_refused_even_for_its_trusted_creator() {
    let server = Server::start(
        "[[reply]]\n[[reply.tool_calls]]\nname = \"ask_participant\"\narguments = { participant_id = \"ledger\", question = \"Which month?\" }\n",
    )
    .await;
    let ledger = As::Bearer(TOKEN);
    let task = server
        .send(
            ledger,
            envelope(
                "",
                json!({"name": "n", "goal": "g", "participants": [
                    {"id": "alice", "kind": "human", "role": "admin"}]}),
            ),
        )
        .await
        .unwrap();
    let id = task["id"].as_str().unwrap();
    let before = wait_for(&server, ledger, id, "TASK_STATE_INPUT_REQUIRED").await;
    for who in [ledger, As::Participant("alice")] {
        for change in [
            json!({"lifecycle": "participant"}),
            json!({"model": "m"}),
            json!({"parent_tasks": [{"task_id": "p"}]}),
        ] {
            let error = server.send(who, envelope(id, change)).await.unwrap_err();
            assert_eq!(error["code"], -32602);
            assert!(
                error_text(&error).contains("cannot be changed on an existing task"),
                "{error}"
            );
        }
    }
    let after = server.get_task(ledger, id).await.unwrap();
    assert_eq!(after["metadata"][EXT], before["metadata"][EXT]);
    assert_eq!(after["metadata"][EXT]["lifecycle"], "agent");
    server.stop().await;
}

#[tokio::test]
async fn a_wrong_bearer_is_refused_on_every_binding_without_echoing_it() {
    let server = Server::start(ANSWER).await;
    let wrong = As::Bearer("not-the-ledger-token-at-all");
    // A refused credential is HTTP 401 on JSON-RPC too (it used to be a JSON-RPC error under
    // HTTP 200), its body still the JSON-RPC error.
    let params = serde_json::to_value(message("", Part::text("hello"), true)).unwrap();
    let (status, response) = server.rpc_status(wrong, "SendMessage", params).await;
    assert_eq!(status, reqwest::StatusCode::UNAUTHORIZED);
    let refused = &response["error"];
    assert_eq!(refused["code"], -32600);
    let text = error_text(refused);
    assert!(text.contains("server.trusted_delegators"), "{text}");
    assert!(!text.contains("not-the-ledger-token-at-all"), "{text}");
    let (status, legacy) = server
        .rpc_status(
            wrong,
            "message/send",
            json!({"message": {"kind": "message", "messageId": "m-03", "role": "user",
                "parts": [{"kind": "text", "text": "hello"}]}}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::UNAUTHORIZED);
    assert_eq!(legacy["error"]["code"], -32600, "{legacy}");
    let (status, streaming) = server
        .rpc_status(
            wrong,
            "SendStreamingMessage",
            serde_json::to_value(message("", Part::text("hello"), false)).unwrap(),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::UNAUTHORIZED);
    assert_eq!(streaming["error"]["code"], -32600, "{streaming}");
    let rest = server
        .request(wrong, reqwest::Method::GET, "/tasks")
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status(), reqwest::StatusCode::UNAUTHORIZED);
    assert_eq!(rest.headers()["www-authenticate"], "Bearer");
    let body: Value = rest.json().await.unwrap();
    assert_eq!(body["error"]["status"], "UNAUTHENTICATED");
    let rest_send = server
        .request(wrong, reqwest::Method::POST, "/message:send")
        .json(&message("", Part::text("hello"), true))
        .send()
        .await
        .unwrap();
    assert_eq!(rest_send.status(), reqwest::StatusCode::UNAUTHORIZED);
    assert_eq!(server.task_count(As::Bearer(TOKEN)).await, 0);
    assert_eq!(server.task_count(As::Participant("user")).await, 0);
    // The right token is recognised on the 0.3 dialect too.
    let trusted = server
        .rpc(
            As::Bearer(TOKEN),
            "message/send",
            json!({"message": {"kind": "message", "messageId": "m-03", "role": "user",
                "parts": [{"kind": "text", "text": "hello"}]}}),
        )
        .await;
    assert!(trusted.get("error").is_none(), "{trusted}");
    assert_eq!(server.task_count(As::Bearer(TOKEN)).await, 1);
    server.stop().await;
}

#[tokio::test]
async fn a_resent_message_id_makes_one_task_per_owner() {
    // Owners that prove who they are, so their listings count their tasks.
    let server = Server::start_with_callers(ANSWER).await;
    let (alice, bob) = (As::Bearer(ALICE_TOKEN), As::Bearer(BOB_TOKEN));
    let first = message("", Part::text("Count the invoices"), false);
    let created = server.send(alice, first.clone()).await.unwrap();
    assert_eq!(created["status"]["state"], "TASK_STATE_COMPLETED");
    let resent = tokio::time::timeout(HANG_GUARD, server.send(alice, first.clone()))
        .await
        .expect("a resend of a settled task answers")
        .unwrap();
    assert_eq!(resent["id"], created["id"]);
    assert_eq!(resent["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(server.task_count(alice).await, 1);
    // Two resends racing each other still make one task.
    let racing = message("", Part::text("Count the receipts"), true);
    let (one, two) = tokio::join!(
        server.send(alice, racing.clone()),
        server.send(alice, racing.clone())
    );
    assert_eq!(one.unwrap()["id"], two.unwrap()["id"]);
    assert_eq!(server.task_count(alice).await, 2);
    let theirs = server.send(bob, first).await.unwrap();
    assert_ne!(
        theirs["id"], created["id"],
        "another owner's message is its own"
    );
    assert_eq!(server.task_count(bob).await, 1);
    assert_eq!(server.task_count(alice).await, 2);
    server.stop().await;
}

#[tokio::test]
async fn a_blocking_send_whose_sender_is_named_in_the_metadata_returns_the_task_it_created() {
    let server = Server::start(ANSWER).await;
    let mut request = message("", Part::text("Count the invoices"), false);
    let mut metadata = serde_json::Map::new();
    metadata.insert("participant_id".into(), "alice".into());
    request.message.metadata = Some(metadata);
    // No X-Participant-Id: the headers name the anonymous caller, the message names alice.
    let response = server
        .rpc(
            As::Anonymous,
            "SendMessage",
            serde_json::to_value(&request).unwrap(),
        )
        .await;
    assert!(response.get("error").is_none(), "{response}");
    let task = &response["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_COMPLETED",
        "{response}"
    );
    let id = task["id"].as_str().unwrap();
    let alice = server.get_task(As::Participant("alice"), id).await.unwrap();
    assert_eq!(alice["id"], id);
    let anonymous = server.get_task(As::Anonymous, id).await.unwrap_err();
    assert_eq!(
        anonymous["code"], -32001,
        "the task is alice's, not the header's"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_participant_an_admin_removes_no_longer_sees_the_task_listed_or_by_id() {
    let server = Server::start_with_callers(
        "[[reply]]\n[[reply.tool_calls]]\nname = \"ask_participant\"\narguments = { participant_id = \"ledger\", question = \"Which month?\" }\n",
    )
    .await;
    let ledger = As::Bearer(TOKEN);
    // Participants that prove who they are, so their listings show what they may see.
    let (alice, bob) = (As::Bearer(ALICE_TOKEN), As::Bearer(BOB_TOKEN));
    let task = server
        .send(
            ledger,
            envelope(
                "",
                json!({"name": "n", "goal": "g", "participants": [
                    {"id": "alice", "kind": "human", "role": "assignee"},
                    {"id": "bob", "kind": "human", "role": "watcher"}]}),
            ),
        )
        .await
        .unwrap();
    let id = task["id"].as_str().unwrap();
    wait_for(&server, ledger, id, "TASK_STATE_INPUT_REQUIRED").await;
    assert_eq!(server.task_count(bob).await, 1);
    assert_eq!(server.get_task(bob, id).await.unwrap()["id"], id);

    server
        .send(
            ledger,
            envelope(
                id,
                json!({"participants": [
                    {"id": DELEGATOR, "kind": "agent", "role": "admin"},
                    {"id": "alice", "kind": "human", "role": "assignee"}]}),
            ),
        )
        .await
        .expect("the creator is an admin and may change participants");
    assert_eq!(server.task_count(bob).await, 0, "bob is no longer listed");
    let refused = server.get_task(bob, id).await.unwrap_err();
    assert_eq!(refused["code"], -32001);
    assert_eq!(server.task_count(alice).await, 1, "alice stays");
    assert_eq!(server.get_task(alice, id).await.unwrap()["id"], id);
    server.stop().await;
}
