//! The seam for bearer tokens that are none of this harness's own credentials (JWTs): over real
//! HTTP on loopback, a token the verifier accepts is the participant it names, one it refuses
//! gets 401 with the verifier's public reason, and one naming `self` gets 403, identified once
//! per request before every binding.

mod a2a_support;

use std::sync::Arc;

use async_trait::async_trait;
use reqwest::StatusCode;
use serde_json::{Value, json};

use a2a_support::Server;
use tiny_harness::app::server::identity::BearerVerifier;

/// A token the fake verifier maps to `carol`.
const CAROL_JWT: &str = "eyJhbGciOiJFUzI1NiJ9.carol.signature";
/// A token the fake verifier maps to `self`, an id reserved for this harness.
const SELF_JWT: &str = "eyJhbGciOiJFUzI1NiJ9.self.signature";
/// A token the fake verifier maps to `user`, the id of every caller that names no one.
const USER_JWT: &str = "eyJhbGciOiJFUzI1NiJ9.user.signature";
/// A token the fake verifier refuses.
const EXPIRED_JWT: &str = "eyJhbGciOiJFUzI1NiJ9.expired.signature";

/// Stands in for a JWT verifier: knows two tokens, refuses any other as expired.
struct FakeVerifier;

#[async_trait]
impl BearerVerifier for FakeVerifier {
    async fn participant(&self, token: &str) -> Result<String, String> {
        match token {
            CAROL_JWT => Ok("carol".to_string()),
            SELF_JWT => Ok("self".to_string()),
            USER_JWT => Ok("user".to_string()),
            _ => Err("the token has expired".to_string()),
        }
    }
}

async fn call(
    server: &Server,
    token: &str,
    participant: Option<&str>,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Option<String>, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = reqwest::Client::new()
        .request(method, format!("{}{path}", server.base))
        .header("A2A-Version", "1.0")
        .bearer_auth(token);
    if let Some(id) = participant {
        request = request.header("X-Participant-Id", id);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_string());
    (
        status,
        challenge,
        response.json().await.unwrap_or(Value::Null),
    )
}

fn list() -> Option<Value> {
    Some(json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}))
}

#[tokio::test]
async fn a_token_the_verifier_accepts_is_the_participant_it_names_on_every_binding() {
    let server = Server::with_verifier(Arc::new(FakeVerifier)).await;
    let send = json!({"message": {"messageId": "m-1", "role": "ROLE_USER",
        "parts": [{"text": "hello"}]}, "configuration": {"returnImmediately": true}});
    let (status, _, sent) = call(
        &server,
        CAROL_JWT,
        None,
        "POST",
        "/message:send",
        Some(send),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{sent}");
    let id = sent["task"]["id"].as_str().unwrap().to_string();
    let (status, _, listed) = call(&server, CAROL_JWT, None, "POST", "/", list()).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert_eq!(listed["result"]["tasks"][0]["id"], id.as_str(), "{listed}");
    let (status, _, rest) = call(&server, CAROL_JWT, Some("carol"), "GET", "/tasks", None).await;
    assert_eq!(status, StatusCode::OK, "naming itself is fine: {rest}");
    assert_eq!(rest["tasks"][0]["id"], id.as_str(), "{rest}");
}

#[tokio::test]
async fn a_token_the_verifier_refuses_or_that_names_a_reserved_id_is_never_served() {
    let server = Server::with_verifier(Arc::new(FakeVerifier)).await;
    for (path, method, body) in [("/", "POST", list()), ("/tasks", "GET", None)] {
        let (status, challenge, refused) =
            call(&server, EXPIRED_JWT, None, method, path, body.clone()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}: {refused}");
        assert_eq!(challenge.as_deref(), Some("Bearer"));
        let text = refused.to_string();
        assert!(
            text.contains("the bearer token was refused: the token has expired"),
            "{text}"
        );
        assert!(
            !text.contains(EXPIRED_JWT),
            "the token is never echoed: {text}"
        );
        let (status, _, refused) = call(&server, SELF_JWT, None, method, path, body.clone()).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {refused}");
        let (status, _, refused) = call(&server, USER_JWT, None, method, path, body.clone()).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {refused}");
        let (status, _, refused) = call(&server, CAROL_JWT, Some("dave"), method, path, body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {refused}");
    }
}
