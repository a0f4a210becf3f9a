//! Callers who prove who they are, over real HTTP on loopback (design trust boundary 6,
//! "Caller → server"): token callers (`[[server.callers]]`) see only their own tasks whatever
//! they name, ids that stand for a credential cannot be claimed without it on any binding,
//! `allow_anonymous = false` answers 401 everywhere but the card, anonymous callers list nothing,
//! limits count a proven caller by its id, no credential reaches a log line or a response, and a
//! network `bind` without authentication stops start-up. Tokens come from an environment closure,
//! not the process environment, so tests cannot race on it.

mod support {
    pub mod captured_logs;
    pub mod harness_process;
    pub mod served;
}

use std::time::Duration;
use support::served::Served;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;
use tiny_harness::base::model::build_model;

const LEDGER_TOKEN: &str = "callers-http-ledger-token-1f3870be274f6c49";
const ALICE_TOKEN: &str = "callers-http-alice-token-b6d767d2f8ed5d21";
const BOB_TOKEN: &str = "callers-http-bob-token-a87ff679a2f3e71d91";
/// A token this server does not know.
const FORGED_TOKEN: &str = "callers-http-forged-token-e4da3b7fbbce2345";
/// A model that asks its creator a question, so the task stays open (INPUT_REQUIRED).
const ASK: &str = "[[reply]]\n[[reply.tool_calls]]\nname = \"ask_participant\"\narguments = { participant_id = \"alice\", question = \"Which month?\" }\n";
/// A model that answers every task at once.
const ANSWER: &str = "[[reply]]\ntext = \"ok\"\n";
/// How long a test waits for something that must happen: a guard against a hang, not a measure.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// Who a request is sent as.
#[derive(Clone, Copy, Debug)]
enum As<'a> {
    /// No credential, no header.
    Anonymous,
    /// No credential; `X-Participant-Id` names this id.
    Claiming(&'a str),
    /// `Authorization: Bearer {token}`.
    Bearer(&'a str),
    /// A bearer token, and `X-Participant-Id` naming someone.
    BearerClaiming(&'a str, &'a str),
}

struct Server {
    base_url: String,
    http: reqwest::Client,
    served: Served,
    _dir: tempfile::TempDir,
}

impl Server {
    /// A harness with `ledger` as trusted delegator and `alice`, `bob` as token callers; `server`
    /// holds extra `[server]` lines.
    async fn start(script: &str, server: &str) -> Server {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("script.toml"), script).unwrap();
        let text = format!(
            "[server]\nbind = \"127.0.0.1:0\"\n{server}\n\
             [[server.trusted_delegators]]\nid = \"ledger\"\ntoken_env = \"LEDGER_TOKEN\"\n\
             [[server.callers]]\nid = \"alice\"\ntoken_env = \"ALICE_TOKEN\"\n\
             [[server.callers]]\nid = \"bob\"\ntoken_env = \"BOB_TOKEN\"\n\
             [store]\npath = \"harness.db\"\n\
             [model]\nprovider = \"scripted\"\nscript = \"script.toml\"\n"
        );
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).unwrap();
        let config = Config::load(&path).unwrap();
        let model = build_model(&config.model, |p| config.resolve(p), |_| None).unwrap();
        let env = |name: &str| {
            let token = match name {
                "LEDGER_TOKEN" => LEDGER_TOKEN,
                "ALICE_TOKEN" => ALICE_TOKEN,
                "BOB_TOKEN" => BOB_TOKEN,
                _ => return None,
            };
            Some(token.to_string())
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
        let request = self
            .http
            .request(method, format!("{}{path}", self.base_url));
        match who {
            As::Anonymous => request,
            As::Claiming(id) => request.header("X-Participant-Id", id),
            As::Bearer(token) => request.bearer_auth(token),
            As::BearerClaiming(token, id) => {
                request.bearer_auth(token).header("X-Participant-Id", id)
            }
        }
    }

    /// One JSON-RPC call (a 0.3 method name is sent without `A2A-Version`): the HTTP status, the
    /// `WWW-Authenticate` header and the body (a stream's body as text in `"stream"`).
    async fn rpc(&self, who: As<'_>, method: &str, params: Value) -> Reply {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut request = self.request(who, reqwest::Method::POST, "/");
        if !method.contains('/') {
            request = request.header("A2A-Version", "1.0");
        }
        Reply::read(request.json(&body).send().await.unwrap()).await
    }

    /// One REST request (with a JSON body when given).
    async fn rest(&self, who: As<'_>, method: &str, path: &str, body: Option<Value>) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self.request(who, method, path).header("A2A-Version", "1.0");
        if let Some(body) = body {
            request = request.json(&body);
        }
        Reply::read(request.send().await.unwrap()).await
    }

    /// A new task of `who`'s, created without waiting for its model; its id.
    async fn create(&self, who: As<'_>, text: &str) -> String {
        let reply = self.rpc(who, "SendMessage", send(text, "", None)).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        reply.body["result"]["task"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("no task in {}", reply.body))
            .to_string()
    }

    /// The ids `who` sees listed over JSON-RPC.
    async fn listed(&self, who: As<'_>) -> Vec<String> {
        let reply = self.rpc(who, "ListTasks", json!({})).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        reply.body["result"]["tasks"]
            .as_array()
            .unwrap_or_else(|| panic!("no listing in {}", reply.body))
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_string())
            .collect()
    }

    /// The task's state as `who` reads it, waiting until it is `state`.
    async fn wait_for(&self, who: As<'_>, id: &str, state: &str) {
        tokio::time::timeout(HANG_GUARD, async {
            loop {
                let reply = self.rpc(who, "GetTask", json!({"id": id})).await;
                if reply.body["result"]["status"]["state"] == state {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("task {id} never reached {state}"));
    }
}

/// What came back.
#[derive(Debug)]
struct Reply {
    status: StatusCode,
    challenge: Option<String>,
    body: Value,
    text: String,
}

impl Reply {
    async fn read(response: reqwest::Response) -> Reply {
        let status = response.status();
        let challenge = response
            .headers()
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap().to_string());
        let headers = format!("{:?}", response.headers());
        let is_stream = response
            .headers()
            .get("content-type")
            .is_some_and(|v| v.to_str().unwrap().starts_with("text/event-stream"));
        let text = if is_stream {
            // A stream is not read to its end: its first bytes say what it is.
            String::new()
        } else {
            response.text().await.unwrap()
        };
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Reply {
            status,
            challenge,
            body,
            text: format!("{headers}\n{text}"),
        }
    }

    /// HTTP 401 with `WWW-Authenticate: Bearer`.
    fn is_unauthenticated(&self) -> bool {
        self.status == StatusCode::UNAUTHORIZED && self.challenge.as_deref() == Some("Bearer")
    }

    /// The JSON-RPC error code, if the body is a JSON-RPC error.
    fn rpc_code(&self) -> Option<i64> {
        self.body["error"]["code"].as_i64()
    }
}

/// `SendMessage` params: a text message, to `task_id` when not empty, its metadata naming
/// `sender` when given; it returns at once.
fn send(text: &str, task_id: &str, sender: Option<&str>) -> Value {
    let mut message = json!({"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
        "parts": [{"text": text}]});
    if !task_id.is_empty() {
        message["taskId"] = json!(task_id);
    }
    if let Some(sender) = sender {
        message["metadata"] = json!({"participant_id": sender});
    }
    json!({"message": message, "configuration": {"returnImmediately": true}})
}

/// `message/send` params in the 0.3 shape.
fn send_03(text: &str, sender: Option<&str>) -> Value {
    let mut message = json!({"kind": "message", "messageId": uuid::Uuid::new_v4().to_string(),
        "role": "user", "parts": [{"kind": "text", "text": text}]});
    if let Some(sender) = sender {
        message["metadata"] = json!({"participant_id": sender});
    }
    json!({"message": message, "configuration": {"blocking": false}})
}

const TASK_NOT_FOUND: i64 = -32001;

#[tokio::test]
async fn two_token_callers_cannot_see_each_others_tasks_whoever_they_name() {
    let server = Server::start(ASK, "").await;
    let (alice, bob) = (As::Bearer(ALICE_TOKEN), As::Bearer(BOB_TOKEN));
    let id = server.create(alice, "Reconcile March").await;
    server
        .wait_for(alice, &id, "TASK_STATE_INPUT_REQUIRED")
        .await;
    let own = server.create(bob, "Count receipts").await;
    assert_eq!(server.listed(alice).await, std::slice::from_ref(&id));
    assert_eq!(server.listed(bob).await, std::slice::from_ref(&own));

    // Without naming alice, bob finds nothing of hers on any method.
    let by_id = json!({"id": id});
    for method in ["GetTask", "CancelTask", "SubscribeToTask"] {
        let reply = server.rpc(bob, method, by_id.clone()).await;
        assert_eq!(
            reply.rpc_code(),
            Some(TASK_NOT_FOUND),
            "{method}: {}",
            reply.body
        );
    }
    let reply = server.rpc(bob, "SendMessage", send("hi", &id, None)).await;
    assert_eq!(reply.rpc_code(), Some(TASK_NOT_FOUND), "{}", reply.body);
    let legacy = server.rpc(bob, "tasks/get", by_id.clone()).await;
    assert_eq!(legacy.rpc_code(), Some(TASK_NOT_FOUND), "{}", legacy.body);
    let path = format!("/tasks/{id}");
    assert_eq!(
        server.rest(bob, "GET", &path, None).await.status,
        StatusCode::NOT_FOUND
    );
    let cancel = format!("/tasks/{id}:cancel");
    let reply = server.rest(bob, "POST", &cancel, None).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);

    // Naming alice, in a header or a message, is refused before anything runs.
    let posing = As::BearerClaiming(BOB_TOKEN, "alice");
    for method in ["ListTasks", "GetTask", "CancelTask", "SubscribeToTask"] {
        let reply = server.rpc(posing, method, by_id.clone()).await;
        assert_eq!(
            reply.status,
            StatusCode::FORBIDDEN,
            "{method}: {}",
            reply.body
        );
    }
    let reply = server.rest(posing, "GET", "/tasks", None).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    assert_eq!(reply.body["error"]["status"], "PERMISSION_DENIED");
    let reply = server
        .rpc(bob, "SendMessage", send("hi", &id, Some("alice")))
        .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.body);
    let reply = server
        .rest(
            bob,
            "POST",
            "/message:send",
            Some(send("hi", &id, Some("alice"))),
        )
        .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.body);
    let reply = server
        .rpc(bob, "message/send", send_03("hi", Some("alice")))
        .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.body);

    // Alice's task is as she left it, and still only hers.
    server
        .wait_for(alice, &id, "TASK_STATE_INPUT_REQUIRED")
        .await;
    assert_eq!(server.listed(alice).await, [id]);
    assert_eq!(server.listed(bob).await, [own]);
    server.stop().await;
}

#[tokio::test]
async fn self_and_reserved_ids_are_refused_without_their_credential_on_every_binding() {
    let server = Server::start(ANSWER, "").await;
    for reserved in ["self", "ledger", "alice"] {
        let claiming = As::Claiming(reserved);
        let replies = [
            server.rpc(claiming, "ListTasks", json!({})).await,
            server
                .rpc(claiming, "SendMessage", send("hi", "", None))
                .await,
            server.rpc(claiming, "tasks/get", json!({"id": "t"})).await,
            server
                .rpc(claiming, "message/send", send_03("hi", None))
                .await,
            server.rest(claiming, "GET", "/tasks", None).await,
            server
                .rest(
                    claiming,
                    "POST",
                    "/message:send",
                    Some(send("hi", "", None)),
                )
                .await,
            // In the message alone, from a caller that names no one in its headers.
            server
                .rpc(As::Anonymous, "SendMessage", send("hi", "", Some(reserved)))
                .await,
            server
                .rpc(As::Anonymous, "message/send", send_03("hi", Some(reserved)))
                .await,
            server
                .rest(
                    As::Anonymous,
                    "POST",
                    "/message:send",
                    Some(send("hi", "", Some(reserved))),
                )
                .await,
        ];
        for (index, reply) in replies.iter().enumerate() {
            assert!(reply.is_unauthenticated(), "{reserved} #{index}: {reply:?}");
        }
        assert!(
            replies[0].body["error"]["message"]
                .as_str()
                .unwrap()
                .contains(&format!(
                    "`{reserved}` is claimed by a credential of this server"
                )),
            "{}",
            replies[0].body
        );
    }
    // Nothing was created for anyone.
    assert!(server.listed(As::Bearer(LEDGER_TOKEN)).await.is_empty());
    assert!(server.listed(As::Bearer(ALICE_TOKEN)).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn without_anonymous_callers_every_binding_answers_401_and_the_card_is_still_served() {
    let server = Server::start(ANSWER, "allow_anonymous = false").await;
    for who in [
        As::Anonymous,
        As::Claiming("mallory"),
        As::Bearer(FORGED_TOKEN),
    ] {
        let replies = [
            server.rpc(who, "ListTasks", json!({})).await,
            server
                .rpc(who, "SendStreamingMessage", send("hi", "", None))
                .await,
            server.rpc(who, "SubscribeToTask", json!({"id": "t"})).await,
            server.rpc(who, "message/stream", send_03("hi", None)).await,
            server.rpc(who, "tasks/get", json!({"id": "t"})).await,
            server.rest(who, "GET", "/tasks", None).await,
            server
                .rest(who, "POST", "/message:send", Some(send("hi", "", None)))
                .await,
            server
                .rest(who, "POST", "/message:stream", Some(send("hi", "", None)))
                .await,
            server.rest(who, "GET", "/tasks/t:subscribe", None).await,
            server.rest(who, "GET", "/extendedAgentCard", None).await,
        ];
        for (index, reply) in replies.iter().enumerate() {
            assert!(reply.is_unauthenticated(), "{who:?} #{index}: {reply:?}");
        }
        assert_eq!(replies[0].rpc_code(), Some(-32600), "a JSON-RPC error body");
        assert_eq!(replies[5].body["error"]["status"], "UNAUTHENTICATED");
    }
    let card = server
        .request(
            As::Anonymous,
            reqwest::Method::GET,
            "/.well-known/agent-card.json",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(card.status(), StatusCode::OK);
    let id = server.create(As::Bearer(ALICE_TOKEN), "hello").await;
    assert_eq!(server.listed(As::Bearer(ALICE_TOKEN)).await, [id]);
    let stream = server
        .rpc(
            As::Bearer(ALICE_TOKEN),
            "SendStreamingMessage",
            send("hi", "", None),
        )
        .await;
    assert_eq!(stream.status, StatusCode::OK, "a token caller streams");
    server.stop().await;
}

#[tokio::test]
async fn an_anonymous_caller_lists_nothing_and_reaches_what_it_created_by_id() {
    let server = Server::start(ANSWER, "").await;
    let id = server.create(As::Anonymous, "hello").await;
    let named = server.create(As::Claiming("carol"), "hello").await;
    for who in [As::Anonymous, As::Claiming("carol")] {
        assert!(
            server.listed(who).await.is_empty(),
            "{who:?} proved nothing"
        );
    }
    let reply = server
        .rpc(As::Anonymous, "GetTask", json!({"id": id}))
        .await;
    assert_eq!(reply.body["result"]["id"], id.as_str(), "{}", reply.body);
    let reply = server
        .rpc(As::Claiming("carol"), "GetTask", json!({"id": named}))
        .await;
    assert_eq!(reply.body["result"]["id"], named.as_str(), "{}", reply.body);
    // A token caller's listing holds only its own, never the anonymous pool.
    assert!(server.listed(As::Bearer(ALICE_TOKEN)).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn a_proven_caller_is_rate_limited_by_its_id_not_its_address() {
    let server = Server::start(ANSWER, "rate_limit_per_minute = 3").await;
    for _ in 0..3 {
        server.listed(As::Bearer(ALICE_TOKEN)).await;
    }
    let limited = server
        .rpc(As::Bearer(ALICE_TOKEN), "ListTasks", json!({}))
        .await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
    // Same address, other callers: each has its own quota.
    assert!(server.listed(As::Bearer(BOB_TOKEN)).await.is_empty());
    assert!(server.listed(As::Anonymous).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn no_credential_appears_in_any_log_line_or_response() {
    // Every thread's log, the server's connection tasks included.
    let logs = support::captured_logs::CapturedLogs::process_wide();
    let server = Server::start(ASK, "").await;
    let mut seen = String::new();
    let alice = As::Bearer(ALICE_TOKEN);
    let id = server.create(alice, "Reconcile March").await;
    server
        .wait_for(alice, &id, "TASK_STATE_INPUT_REQUIRED")
        .await;
    let who = [
        alice,
        As::Bearer(LEDGER_TOKEN),
        As::Bearer(FORGED_TOKEN),
        As::BearerClaiming(BOB_TOKEN, "alice"),
        As::Claiming("self"),
    ];
    for who in who {
        seen += &server.rpc(who, "GetTask", json!({"id": id})).await.text;
        seen += &server
            .rpc(who, "SendMessage", send("hi", &id, Some("bob")))
            .await
            .text;
        seen += &server.rest(who, "GET", "/tasks", None).await.text;
        seen += &server
            .rpc(who, "message/send", send_03("hi", None))
            .await
            .text;
    }
    server.stop().await;
    let logged = logs.text();
    assert!(
        logged.contains("refused for its identity"),
        "the refusals were logged"
    );
    for token in [LEDGER_TOKEN, ALICE_TOKEN, BOB_TOKEN, FORGED_TOKEN] {
        assert!(!logged.contains(token), "a token in the log");
        assert!(!seen.contains(token), "a token in a response");
        // Nor a recognisable part of one.
        assert!(!logged.contains(&token[..24]) && !seen.contains(&token[..24]));
    }
}

#[test]
fn a_network_bind_without_caller_authentication_stops_start_up_with_exit_2() {
    // Refused while the configuration is read, before anything is bound.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    let text = "[server]\nbind = \"0.0.0.0:0\"\n[store]\npath = \"harness.db\"\n";
    std::fs::write(&path, text).unwrap();
    let output = std::process::Command::new(support::harness_process::HARNESS)
        .args(["serve", "--config"])
        .arg(&path)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("server.allow_anonymous: server.bind 0.0.0.0:0 is not a loopback address"),
        "{stderr}"
    );
    assert!(
        !dir.path().join("harness.db").exists(),
        "nothing was opened"
    );
}
