//! Delegating to agents that require authentication, over real HTTP on loopback: a front desk
//! (an in-process harness node with a scripted model that calls `spawn_subtask`) and a ledger (a
//! stub A2A agent whose card declares a security scheme and which answers 401 without the right
//! credential): an HTTP bearer token, an API key in a header, and OAuth2 client credentials
//! against a token endpoint served by the test. Without the credential the ledger is not
//! registered and the log names the setting to add; no credential ever reaches a log line, the
//! model's context or the task's JSON.

mod delegation_support;
mod support {
    pub mod captured_logs;
}

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use delegation_support::*;
use support::captured_logs::CapturedLogs;
use tiny_harness::base::model::ModelRequest;
use tiny_harness::base::protocol::types::{Task, TaskState};
use tiny_harness::work::agents::client::oauth2::{OAuth2Client, TokenError, TokenSource};

const TOKEN: &str = "ledger-bearer-canary-0123456789";
const API_KEY: &str = "ledger-api-key-canary-0123456789";
const CLIENT_ID: &str = "front-desk";
/// With `/` and `+`, which RFC 6749 §2.3.1 has form-encoded before Basic authentication.
const CLIENT_SECRET: &str = "client-secret/canary+0123456789";
const CLIENT_SECRET_FORM_ENCODED: &str = "client-secret%2Fcanary%2B0123456789";
/// Every access token the test's endpoint issues starts with this.
const ACCESS_TOKEN_PREFIX: &str = "access-token-canary-";

/// What the ledger demands.
#[derive(Clone)]
enum Guard {
    Bearer,
    ApiKey,
    /// A token the endpoint issued and has not revoked.
    OAuth2(Arc<Mutex<Endpoint>>),
}

/// What the ledger saw.
#[derive(Default)]
struct Ledger {
    /// Requests let through, with the access token they carried (OAuth2).
    accepted: Vec<Option<String>>,
    /// Requests answered 401.
    refused: usize,
    /// Requests that named a participant (`X-Participant-Id`).
    named_participant: usize,
}

type LedgerState = (Guard, Arc<Mutex<Ledger>>);

fn bearer_of(headers: &HeaderMap) -> Option<String> {
    headers
        .get("authorization")?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::to_string)
}

async fn ledger_rpc(
    State((guard, seen)): State<LedgerState>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let token = bearer_of(&headers);
    let allowed = match &guard {
        Guard::Bearer => token.as_deref() == Some(TOKEN),
        Guard::ApiKey => {
            headers.get("x-ledger-key").and_then(|v| v.to_str().ok()) == Some(API_KEY)
                && token.is_none()
        }
        Guard::OAuth2(endpoint) => token
            .as_ref()
            .is_some_and(|t| endpoint.lock().unwrap().valid.contains(t)),
    };
    let mut ledger = seen.lock().unwrap();
    if !allowed {
        ledger.refused += 1;
        return (
            StatusCode::UNAUTHORIZED,
            [("www-authenticate", "Bearer")],
            "credentials required",
        )
            .into_response();
    }
    ledger.named_participant += usize::from(headers.contains_key("x-participant-id"));
    ledger.accepted.push(token.clone());
    // An agent that quotes the token it was sent: the front desk must not pass it on.
    let echo = match &guard {
        Guard::OAuth2(_) => format!(" (seen {})", token.unwrap_or_default()),
        _ => String::new(),
    };
    let task = json!({"id": "ledger-task", "contextId": "ctx", "status": {
        "state": "TASK_STATE_COMPLETED",
        "message": {"messageId": "m", "role": "ROLE_AGENT",
                    "parts": [{"text": format!("Balance: 10 EUR{echo}")}]}}});
    let result = match body["method"].as_str() {
        Some("SendMessage") => json!({"task": task}),
        _ => task,
    };
    Json(json!({"jsonrpc": "2.0", "id": body["id"], "result": result})).into_response()
}

/// A ledger whose card declares `schemes` (required as `requirement`) and which lets through
/// only what `guard` accepts.
async fn ledger(guard: Guard, schemes: Value, requirement: Value) -> (String, Arc<Mutex<Ledger>>) {
    let seen = Arc::new(Mutex::new(Ledger::default()));
    let url = serve_stub_agent(
        move |url| {
            let mut card = stub_card(url, "Ledger", true);
            card["securitySchemes"] = schemes;
            card["securityRequirements"] = json!([{ "schemes": requirement }]);
            card
        },
        post(ledger_rpc).with_state((guard, seen.clone())),
    )
    .await;
    (url, seen)
}

/// The test's OAuth2 token endpoint.
#[derive(Default)]
struct Endpoint {
    /// Token requests with the right client credentials.
    fetches: usize,
    /// Token requests with wrong or missing client credentials.
    bad_client: usize,
    /// `expires_in` of the next tokens.
    expires_in: u64,
    /// Tokens the ledger accepts.
    valid: HashSet<String>,
    /// The `scope` of the last request.
    scope: String,
}

async fn token_endpoint(
    State(endpoint): State<Arc<Mutex<Endpoint>>>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let expected = reqwest::Client::new()
        .get("http://x")
        .basic_auth(CLIENT_ID, Some(CLIENT_SECRET_FORM_ENCODED))
        .build()
        .unwrap()
        .headers()["authorization"]
        .clone();
    let mut endpoint = endpoint.lock().unwrap();
    let is_form = headers
        .get("content-type")
        .is_some_and(|v| v.as_bytes() == b"application/x-www-form-urlencoded");
    if headers.get("authorization") != Some(&expected)
        || !is_form
        || !body
            .split('&')
            .any(|p| p == "grant_type=client_credentials")
    {
        endpoint.bad_client += 1;
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "invalid_client"})),
        )
            .into_response();
    }
    endpoint.fetches += 1;
    endpoint.scope = body
        .split('&')
        .find_map(|p| p.strip_prefix("scope="))
        .unwrap_or_default()
        .to_string();
    let token = format!("{ACCESS_TOKEN_PREFIX}{}", endpoint.fetches);
    endpoint.valid.insert(token.clone());
    Json(json!({"access_token": token, "token_type": "Bearer", "expires_in": endpoint.expires_in}))
        .into_response()
}

/// Serves the token endpoint on 127.0.0.1:0; returns its URL.
async fn serve_token_endpoint(endpoint: Arc<Mutex<Endpoint>>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/token", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .route("/token", post(token_endpoint))
        .with_state(endpoint);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

fn endpoint(expires_in: u64) -> Arc<Mutex<Endpoint>> {
    Arc::new(Mutex::new(Endpoint {
        expires_in,
        ..Endpoint::default()
    }))
}

/// A front desk model: delegates its task to the ledger once, then answers with what it heard.
fn front_desk_model() -> Arc<FnModel> {
    FnModel::new(|request: &ModelRequest| {
        if let Some(note) = later_user_messages(request)
            .iter()
            .flat_map(|m| m.lines().map(str::to_string).collect::<Vec<_>>())
            .find(|line| line.starts_with("Sub-task "))
        {
            return Answer::Reply(text(&format!("Heard: {note}")));
        }
        match last_tool_result(request) {
            Some(result) if result.contains("[agent.") || result.contains("[subtask.") => {
                Answer::Reply(text(&format!("Could not delegate: {result}")))
            }
            Some(_) => Answer::Reply(text("waiting")),
            None => Answer::Reply(tool(
                "spawn_subtask",
                json!({"name": "Ask the ledger", "goal": "Report the balance.", "agent": "ledger"}),
            )),
        }
    })
}

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Sends a task to the front desk and waits for it to end.
async fn ask(front_desk: &Node) -> Task {
    let task = front_desk.send("What is the balance?", true).await;
    wait_for(&front_desk.client, &task.id, is_terminal).await
}

/// Every place a credential must never be: the log, the model's every request (context and
/// roster), and the task as a client reads it.
fn assert_nowhere(secret: &str, logs: &CapturedLogs, model: &FnModel, tasks: &[&Task]) {
    let log = logs.text();
    assert!(!log.contains(secret), "in the log: {log}");
    let requests = format!("{:?}", model.requests());
    assert!(!requests.contains(secret), "in the context: {requests}");
    for task in tasks {
        let json = serde_json::to_string(task).unwrap();
        assert!(!json.contains(secret), "in the task JSON: {json}");
    }
}

/// The roster the model reads names the ledger and nothing of its security.
fn assert_roster_is_clean(model: &FnModel) {
    let instructions = model.requests()[0].instructions.to_string();
    assert!(instructions.contains("Ledger"), "{instructions}");
    for word in [
        "security",
        "Bearer",
        "bearer",
        "x-ledger-key",
        "oauth",
        "token",
    ] {
        assert!(!instructions.contains(word), "{word} in: {instructions}");
    }
}

fn bearer_schemes() -> (Value, Value) {
    (
        json!({"ledgerAuth": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}),
        json!({"ledgerAuth": {"list": []}}),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ledger_requiring_a_bearer_token_gets_the_configured_token_and_completes_the_task() {
    let logs = CapturedLogs::process_wide();
    let (schemes, requirement) = bearer_schemes();
    let (url, seen) = ledger(Guard::Bearer, schemes, requirement).await;
    let model = front_desk_model();
    let config =
        format!("[[agents]]\nid = \"ledger\"\nurl = \"{url}\"\ntoken_env = \"LEDGER_TOKEN\"\n");
    let front_desk =
        Node::start_with_env(&config, model.clone(), env(&[("LEDGER_TOKEN", TOKEN)])).await;

    let task = ask(&front_desk).await;

    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert!(
        answer(&task).contains("COMPLETED: Balance: 10 EUR"),
        "{}",
        answer(&task)
    );
    assert_eq!(row_state(&sub_tasks(&task)[0]), Some(TaskState::Completed));
    let ledger = seen.lock().unwrap();
    assert!(!ledger.accepted.is_empty());
    assert_eq!(ledger.refused, 0);
    assert_roster_is_clean(&model);
    assert_nowhere(TOKEN, &logs, &model, &[&task]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ledger_requiring_a_bearer_token_is_not_registered_without_one_and_the_log_names_the_setting()
 {
    let logs = CapturedLogs::process_wide();
    let (schemes, requirement) = bearer_schemes();
    let (url, seen) = ledger(Guard::Bearer, schemes, requirement).await;
    let model = front_desk_model();
    let config = format!("[[agents]]\nid = \"ledger-b\"\nurl = \"{url}\"\n");
    let front_desk = Node::start_with_env(&config, model.clone(), Vec::new()).await;

    let log = logs.text();
    assert!(
        log.lines().any(|line| line.contains("agent=ledger-b")
            && line.contains("agents: not registered: the card requires authentication")
            && line.contains("set agents[0].token_env")),
        "{log}"
    );
    let task = ask(&front_desk).await;
    assert!(
        answer(&task).contains("Could not delegate"),
        "{}",
        answer(&task)
    );
    assert!(answer(&task).contains("agent.unknown"), "{}", answer(&task));
    let instructions = model.requests()[0].instructions.to_string();
    assert!(!instructions.contains("Ledger"), "{instructions}");
    let ledger = seen.lock().unwrap();
    assert_eq!((ledger.accepted.len(), ledger.refused), (0, 0));
}

fn api_key_schemes() -> (Value, Value) {
    (
        json!({"key": {"apiKeySecurityScheme": {"location": "header", "name": "X-Ledger-Key"}}}),
        json!({"key": {"list": []}}),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ledger_requiring_an_api_key_gets_it_in_the_header_its_card_names() {
    let logs = CapturedLogs::process_wide();
    let (schemes, requirement) = api_key_schemes();
    let (url, seen) = ledger(Guard::ApiKey, schemes, requirement).await;
    let model = front_desk_model();
    let config =
        format!("[[agents]]\nid = \"ledger\"\nurl = \"{url}\"\napi_key_env = \"LEDGER_KEY\"\n");
    let front_desk =
        Node::start_with_env(&config, model.clone(), env(&[("LEDGER_KEY", API_KEY)])).await;

    let task = ask(&front_desk).await;

    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert!(
        answer(&task).contains("COMPLETED: Balance: 10 EUR"),
        "{}",
        answer(&task)
    );
    let ledger = seen.lock().unwrap();
    assert!(!ledger.accepted.is_empty());
    assert_eq!(ledger.refused, 0);
    // The key says who is calling; no participant id is claimed beside it.
    assert_eq!(ledger.named_participant, 0);
    assert_roster_is_clean(&model);
    assert_nowhere(API_KEY, &logs, &model, &[&task]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ledger_requiring_an_api_key_is_refused_without_one_or_in_the_query() {
    let logs = CapturedLogs::process_wide();
    let (schemes, requirement) = api_key_schemes();
    let (header_url, _) = ledger(Guard::ApiKey, schemes, requirement).await;
    let (query_url, _) = ledger(
        Guard::ApiKey,
        json!({"key": {"apiKeySecurityScheme": {"location": "query", "name": "key"}}}),
        json!({"key": {}}),
    )
    .await;
    let config = format!(
        "[[agents]]\nid = \"ledger-k\"\nurl = \"{header_url}\"\n[[agents]]\nid = \"ledger-q\"\nurl = \"{query_url}\"\napi_key_env = \"LEDGER_KEY\"\n"
    );
    let front_desk =
        Node::start_with_env(&config, front_desk_model(), env(&[("LEDGER_KEY", API_KEY)])).await;

    let log = logs.text();
    assert!(
        log.lines().any(|line| line.contains("agent=ledger-k")
            && line.contains("scheme \"key\" (an API key in the header \"x-ledger-key\") needs a key: set agents[0].api_key_env")),
        "{log}"
    );
    assert!(
        log.lines().any(|line| line.contains("agent=ledger-q")
            && line.contains(
                "is an API key in the \"query\" (only API keys in a header are supported)"
            )),
        "{log}"
    );
    let task = ask(&front_desk).await;
    assert!(answer(&task).contains("agent.unknown"), "{}", answer(&task));
}

fn oauth2_schemes() -> (Value, Value) {
    (
        json!({"ledgerOAuth": {"oauth2SecurityScheme": {"flows": {"clientCredentials": {
            "tokenUrl": "https://card-says-elsewhere.example/token",
            "scopes": {"ledger.read": "read balances"}}}}}}),
        json!({"ledgerOAuth": {"list": ["ledger.read"]}}),
    )
}

fn oauth2_config(url: &str, token_url: &str) -> String {
    format!(
        "[[agents]]\nid = \"ledger\"\nurl = \"{url}\"\n[agents.oauth2]\ntoken_url = \"{token_url}\"\nclient_id = \"{CLIENT_ID}\"\nclient_secret_env = \"LEDGER_SECRET\"\nscopes = [\"ledger.read\"]\n"
    )
}

async fn oauth2_front_desk(
    expires_in: u64,
) -> (Node, Arc<FnModel>, Arc<Mutex<Endpoint>>, Arc<Mutex<Ledger>>) {
    let endpoint = endpoint(expires_in);
    let token_url = serve_token_endpoint(endpoint.clone()).await;
    let (schemes, requirement) = oauth2_schemes();
    let (url, seen) = ledger(Guard::OAuth2(endpoint.clone()), schemes, requirement).await;
    let model = front_desk_model();
    let front_desk = Node::start_with_env(
        &oauth2_config(&url, &token_url),
        model.clone(),
        env(&[("LEDGER_SECRET", CLIENT_SECRET)]),
    )
    .await;
    (front_desk, model, endpoint, seen)
}

#[tokio::test(flavor = "multi_thread")]
async fn oauth2_client_credentials_fetch_one_token_that_is_reused_until_it_nears_expiry() {
    let logs = CapturedLogs::process_wide();
    let (front_desk, model, endpoint, seen) = oauth2_front_desk(3600).await;
    // Registered without a token fetch: the endpoint is asked on the first call.
    assert_eq!(endpoint.lock().unwrap().fetches, 0);

    let first = ask(&front_desk).await;
    let second = ask(&front_desk).await;

    for task in [&first, &second] {
        assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
        let answer = answer(task);
        assert!(
            answer.contains("COMPLETED: Balance: 10 EUR (seen [redacted])"),
            "{answer}"
        );
    }
    let endpoint = endpoint.lock().unwrap();
    assert_eq!((endpoint.fetches, endpoint.bad_client), (1, 0));
    assert_eq!(endpoint.scope, "ledger.read");
    let ledger = seen.lock().unwrap();
    assert_eq!(ledger.refused, 0);
    assert_eq!(ledger.named_participant, 0);
    let token = format!("{ACCESS_TOKEN_PREFIX}1");
    assert!(ledger.accepted.len() >= 2);
    assert!(
        ledger
            .accepted
            .iter()
            .all(|t| t.as_deref() == Some(token.as_str()))
    );
    assert_roster_is_clean(&model);
    for secret in [
        CLIENT_SECRET,
        CLIENT_SECRET_FORM_ENCODED,
        ACCESS_TOKEN_PREFIX,
    ] {
        assert_nowhere(secret, &logs, &model, &[&first, &second]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oauth2_token_within_the_refresh_margin_is_replaced_before_it_is_used() {
    let logs = CapturedLogs::process_wide();
    // Valid for less than the refresh margin: every use needs a new one.
    let expires_in = tiny_harness::work::agents::client::oauth2::REFRESH_MARGIN.as_secs() / 2;
    let (front_desk, model, endpoint, seen) = oauth2_front_desk(expires_in).await;

    let first = ask(&front_desk).await;
    let second = ask(&front_desk).await;

    assert_eq!(first.status.state, TaskState::Completed, "{first:?}");
    assert_eq!(second.status.state, TaskState::Completed, "{second:?}");
    let endpoint = endpoint.lock().unwrap();
    let ledger = seen.lock().unwrap();
    assert_eq!(ledger.refused, 0);
    // One fresh token per request the ledger saw, none of them reused.
    assert_eq!(endpoint.fetches, ledger.accepted.len());
    let distinct: HashSet<_> = ledger.accepted.iter().collect();
    assert_eq!(distinct.len(), ledger.accepted.len());
    assert!(endpoint.fetches >= 2);
    for secret in [CLIENT_SECRET, ACCESS_TOKEN_PREFIX] {
        assert_nowhere(secret, &logs, &model, &[&first, &second]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_401_from_the_ledger_fetches_one_new_token_and_retries_once() {
    let logs = CapturedLogs::process_wide();
    let (front_desk, model, endpoint, seen) = oauth2_front_desk(3600).await;
    let first = ask(&front_desk).await;
    assert_eq!(first.status.state, TaskState::Completed, "{first:?}");
    assert_eq!(endpoint.lock().unwrap().fetches, 1);

    // The authorization server revokes every token it issued; the cached one is now refused.
    endpoint.lock().unwrap().valid.clear();
    let second = ask(&front_desk).await;

    assert_eq!(second.status.state, TaskState::Completed, "{second:?}");
    assert_eq!(endpoint.lock().unwrap().fetches, 2);
    let ledger = seen.lock().unwrap();
    assert_eq!(ledger.refused, 1);
    assert_eq!(
        ledger.accepted.last().cloned().flatten(),
        Some(format!("{ACCESS_TOKEN_PREFIX}2"))
    );
    for secret in [CLIENT_SECRET, ACCESS_TOKEN_PREFIX] {
        assert_nowhere(secret, &logs, &model, &[&first, &second]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oauth2_ledger_is_not_registered_without_a_client_and_the_log_names_the_setting() {
    let logs = CapturedLogs::process_wide();
    let (schemes, requirement) = oauth2_schemes();
    let (url, _) = ledger(Guard::OAuth2(endpoint(60)), schemes, requirement).await;
    let config =
        format!("[[agents]]\nid = \"ledger-o\"\nurl = \"{url}\"\ntoken_env = \"LEDGER_TOKEN\"\n");
    let _front_desk =
        Node::start_with_env(&config, front_desk_model(), env(&[("LEDGER_TOKEN", TOKEN)])).await;
    let log = logs.text();
    assert!(
        log.lines().any(|line| line.contains("agent=ledger-o")
            && line.contains("(OAuth2 client credentials) needs a client: set agents[0].oauth2")),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_endpoint_that_refuses_the_client_fails_the_sub_task_and_nothing_reaches_the_ledger()
 {
    let logs = CapturedLogs::process_wide();
    let endpoint = endpoint(3600);
    let token_url = serve_token_endpoint(endpoint.clone()).await;
    let (schemes, requirement) = oauth2_schemes();
    let (url, seen) = ledger(Guard::OAuth2(endpoint.clone()), schemes, requirement).await;
    let model = front_desk_model();
    let wrong_secret = "wrong-client-secret-canary-0123456789";
    let front_desk = Node::start_with_env(
        &oauth2_config(&url, &token_url),
        model.clone(),
        env(&[("LEDGER_SECRET", wrong_secret)]),
    )
    .await;

    let task = ask(&front_desk).await;

    let answer = answer(&task);
    // The error the model reads, golden: what failed, never the endpoint's words nor a secret.
    assert!(
        answer.contains(
            "[subtask.failed] could not create the sub-task: ledger could not be authenticated: no access token"
        ),
        "{answer}"
    );
    assert_eq!(endpoint.lock().unwrap().bad_client, 1);
    let ledger = seen.lock().unwrap();
    assert_eq!((ledger.accepted.len(), ledger.refused), (0, 0));
    assert!(logs.text().contains("invalid_client"));
    assert_nowhere("wrong-client-secret", &logs, &model, &[&task]);
}

fn source(token_url: &str, secret: &str) -> Arc<TokenSource> {
    Arc::new(
        TokenSource::new(OAuth2Client {
            token_url: token_url.to_string(),
            client_id: CLIENT_ID.to_string(),
            client_secret: secret.to_string(),
            scopes: vec!["ledger.read".into()],
        })
        .unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_calls_wait_for_one_token_fetch() {
    let endpoint = endpoint(3600);
    let token_url = serve_token_endpoint(endpoint.clone()).await;
    let source = source(&token_url, CLIENT_SECRET);
    let calls: Vec<_> = (0..16)
        .map(|_| {
            let source = source.clone();
            tokio::spawn(async move { source.token().await.unwrap() })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap(), format!("{ACCESS_TOKEN_PREFIX}1"));
    }
    assert_eq!(endpoint.lock().unwrap().fetches, 1);
    assert_eq!(source.fetches(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_endpoint_refusal_is_reported_cleaned_and_without_the_secret() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let token_url = format!("http://{}/token", listener.local_addr().unwrap());
    // An endpoint that quotes the secret it refused, with a line break to forge a log line.
    let echo = format!(
        "bad secret {CLIENT_SECRET_FORM_ENCODED} or {CLIENT_SECRET}\nFAKE LOG LINE {}",
        "x".repeat(5000)
    );
    let app = axum::Router::new().route(
        "/token",
        post(move || {
            let echo = echo.clone();
            async move {
                (
                    StatusCode::BAD_REQUEST,
                    Json(json!({"error": "invalid_client", "error_description": echo})),
                )
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let err = source(&token_url, CLIENT_SECRET).token().await.unwrap_err();

    assert!(
        matches!(err, TokenError::Refused { status: 400, .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.starts_with(&format!("the token endpoint {token_url} refused the client with HTTP 400: invalid_client (bad secret ")), "{text}");
    assert!(!text.contains("client-secret"), "{text}");
    assert!(!text.contains('\n'), "{text}");
    assert!(text.len() < 1_000, "{}", text.len());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_endpoint_that_cannot_be_reached_is_reported_without_the_secret() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let token_url = format!("http://{}/token", listener.local_addr().unwrap());
    drop(listener);
    let err = source(&token_url, CLIENT_SECRET).token().await.unwrap_err();
    assert!(matches!(err, TokenError::Unreachable { .. }), "{err:?}");
    assert!(!err.to_string().contains("client-secret"), "{err}");
}

/// A ledger harness that knows the front desk as a token caller (`[[server.callers]]`), not as
/// a trusted delegator, and answers every task with its balance.
async fn ledger_knowing_the_desk_as_a_caller() -> Node {
    let ledger_model = FnModel::new(|_: &ModelRequest| Answer::Reply(text("Balance: 10 EUR")));
    Node::start_with_env(
        "[[server.callers]]\nid = \"desk\"\ntoken_env = \"DESK_TOKEN\"\n",
        ledger_model,
        env(&[("DESK_TOKEN", TOKEN)]),
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_harness_that_knows_the_desk_as_a_caller_runs_its_sub_task_when_the_desk_is_no_delegator_there()
 {
    let logs = CapturedLogs::process_wide();
    let ledger = ledger_knowing_the_desk_as_a_caller().await;
    let model = front_desk_model();
    let config = format!(
        "[[agents]]\nid = \"ledger\"\nurl = \"{}\"\ntoken_env = \"LEDGER_TOKEN\"\ndelegator = false\n",
        ledger.url
    );
    let front_desk =
        Node::start_with_env(&config, model.clone(), env(&[("LEDGER_TOKEN", TOKEN)])).await;

    let task = ask(&front_desk).await;

    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert!(
        answer(&task).contains("Balance: 10 EUR"),
        "{}",
        answer(&task)
    );
    assert_eq!(row_state(&sub_tasks(&task)[0]), Some(TaskState::Completed));
    // Made by the caller its token proves, with no parent link to a task the ledger cannot see.
    assert_eq!(ledger.stored_tasks_of("desk"), 1);
    assert_nowhere(TOKEN, &logs, &model, &[&task]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_desk_that_takes_itself_for_a_delegator_is_refused_and_the_log_names_the_setting() {
    let logs = CapturedLogs::process_wide();
    let ledger = ledger_knowing_the_desk_as_a_caller().await;
    let model = front_desk_model();
    let config = format!(
        "[[agents]]\nid = \"ledger\"\nurl = \"{}\"\ntoken_env = \"LEDGER_TOKEN\"\n",
        ledger.url
    );
    let front_desk =
        Node::start_with_env(&config, model.clone(), env(&[("LEDGER_TOKEN", TOKEN)])).await;

    let task = ask(&front_desk).await;

    let said = answer(&task);
    assert!(said.contains("Could not delegate"), "{said}");
    assert!(said.contains("only a trusted delegator may"), "{said}");
    assert_eq!(ledger.stored_tasks_of("desk"), 0);
    let log = logs.text();
    assert!(log.contains("set `delegator = false`"), "{log}");
    assert_nowhere(TOKEN, &logs, &model, &[&task]);
}
