//! OpenID Connect bearer JWTs against an issuer served by the test on loopback: its JWKS (an
//! RS256, an ES256 and an EdDSA key, test-only keys under tests/fixtures/oidc) and its discovery
//! document, with every fetch counted at the stub. Each refusal is checked for its public reason
//! and for never repeating the token.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tokio::sync::Mutex;

mod support {
    pub mod harness_process;
}

use tiny_harness::app::server::oidc::{Oidc, OidcRefusal, OidcTuning};
use tiny_harness::base::config::OidcConfig;

const AUDIENCE: &str = "harness";

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/oidc/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|err| panic!("{path}: {err}"))
}

/// A signing key of the test issuer: its algorithm, `kid` and private half.
struct TestKey {
    alg: Algorithm,
    kid: &'static str,
    key: EncodingKey,
}

impl TestKey {
    fn rsa_a() -> TestKey {
        let key = EncodingKey::from_rsa_pem(&fixture("test-only-rsa-a.pem")).unwrap();
        TestKey {
            alg: Algorithm::RS256,
            kid: "rsa-a",
            key,
        }
    }
    fn rsa_b() -> TestKey {
        let key = EncodingKey::from_rsa_pem(&fixture("test-only-rsa-b.pem")).unwrap();
        TestKey {
            alg: Algorithm::RS256,
            kid: "rsa-b",
            key,
        }
    }
    fn ec() -> TestKey {
        let key = EncodingKey::from_ec_pem(&fixture("test-only-ec-p256.pem")).unwrap();
        TestKey {
            alg: Algorithm::ES256,
            kid: "ec-1",
            key,
        }
    }
    fn ed() -> TestKey {
        let key = EncodingKey::from_ed_pem(&fixture("test-only-ed25519.pem")).unwrap();
        TestKey {
            alg: Algorithm::EdDSA,
            kid: "ed-1",
            key,
        }
    }

    /// The public half as a JWK with its `kid`.
    fn jwk(&self) -> Value {
        let mut jwk = Jwk::from_encoding_key(&self.key, self.alg).unwrap();
        jwk.common.key_id = Some(self.kid.to_string());
        serde_json::to_value(jwk).unwrap()
    }

    /// A token with these claims, signed by this key and naming its `kid`.
    fn sign(&self, claims: &Value) -> String {
        self.sign_as(self.kid, claims)
    }

    fn sign_as(&self, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(kid.to_string());
        jsonwebtoken::encode(&header, claims, &self.key).unwrap()
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The stub issuer's state: the JWKS it serves, whether it answers, and what was fetched.
struct Issuer {
    base: String,
    jwks: Mutex<Value>,
    up: AtomicBool,
    jwks_fetches: AtomicUsize,
    discovery_fetches: AtomicUsize,
}

impl Issuer {
    async fn start(keys: &[&TestKey]) -> Arc<Issuer> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let issuer = Arc::new(Issuer {
            base,
            jwks: Mutex::new(json!({"keys": []})),
            up: AtomicBool::new(true),
            jwks_fetches: AtomicUsize::new(0),
            discovery_fetches: AtomicUsize::new(0),
        });
        issuer.publish(keys).await;
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/jwks", get(jwks))
            .route("/moved", get(moved))
            .route("/huge", get(huge))
            .with_state(issuer.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        issuer
    }

    async fn publish(&self, keys: &[&TestKey]) {
        let keys: Vec<Value> = keys.iter().map(|k| k.jwk()).collect();
        *self.jwks.lock().await = json!({ "keys": keys });
    }

    fn jwks_fetches(&self) -> usize {
        self.jwks_fetches.load(Ordering::SeqCst)
    }

    fn config(&self, discover: bool) -> OidcConfig {
        OidcConfig {
            issuer: self.base.clone(),
            jwks_url: (!discover).then(|| format!("{}/jwks", self.base)),
            audience: AUDIENCE.to_string(),
            participant_claim: "sub".to_string(),
            required_scopes: Vec::new(),
        }
    }

    /// Claims a valid token of this issuer carries for `sub`.
    fn claims(&self, sub: &str) -> Value {
        json!({
            "iss": self.base,
            "aud": AUDIENCE,
            "sub": sub,
            "iat": now(),
            "exp": now() + 600,
        })
    }
}

async fn discovery(State(issuer): State<Arc<Issuer>>) -> Json<Value> {
    issuer.discovery_fetches.fetch_add(1, Ordering::SeqCst);
    Json(json!({
        "issuer": issuer.base,
        "jwks_uri": format!("{}/jwks", issuer.base),
        "id_token_signing_alg_values_supported": ["RS256", "ES256", "EdDSA"],
    }))
}

async fn jwks(State(issuer): State<Arc<Issuer>>) -> Response {
    issuer.jwks_fetches.fetch_add(1, Ordering::SeqCst);
    if !issuer.up.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    Json(issuer.jwks.lock().await.clone()).into_response()
}

/// A redirect to the real JWKS: keys are read only from the URL configured.
async fn moved(State(issuer): State<Arc<Issuer>>) -> Response {
    issuer.jwks_fetches.fetch_add(1, Ordering::SeqCst);
    axum::response::Redirect::temporary("/jwks").into_response()
}

/// A JWKS past the size cap: a long list of junk keys.
async fn huge() -> String {
    let junk = format!(
        "{{\"kty\":\"RSA\",\"n\":\"{}\",\"e\":\"AQAB\"}}",
        "A".repeat(1000)
    );
    format!("{{\"keys\":[{}]}}", vec![junk; 300].join(","))
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn verifier(issuer: &Issuer) -> Oidc {
    Oidc::start(&issuer.config(false), client()).await
}

/// The token is refused for `expected`, and the public reason repeats no part of it.
async fn assert_refused(oidc: &Oidc, token: &str, expected: OidcRefusal) {
    let refusal = oidc.participant(token).await.unwrap_err();
    assert_eq!(refusal, expected, "{refusal}");
    let message = refusal.to_string();
    for part in token.split('.').filter(|part| part.len() > 8) {
        assert!(
            !message.contains(part),
            "the reason repeats the token: {message}"
        );
    }
    assert!(!format!("{refusal:?}").contains(token));
}

#[tokio::test]
async fn valid_rs256_es256_and_eddsa_tokens_name_their_subjects() {
    let (rsa, ec, ed) = (TestKey::rsa_a(), TestKey::ec(), TestKey::ed());
    let issuer = Issuer::start(&[&rsa, &ec, &ed]).await;
    let oidc = verifier(&issuer).await;
    assert_eq!(oidc.key_count().await, 3);
    for (key, sub) in [(&rsa, "alice"), (&ec, "bob@example.com"), (&ed, "carol")] {
        let token = key.sign(&issuer.claims(sub));
        assert_eq!(
            oidc.participant(&token).await.unwrap(),
            sub,
            "{:?}",
            key.alg
        );
    }
    assert_eq!(issuer.jwks_fetches(), 1, "known keys need no second fetch");
}

#[tokio::test]
async fn expired_and_not_yet_valid_tokens_are_refused() {
    let rsa = TestKey::rsa_a();
    let issuer = Issuer::start(&[&rsa]).await;
    let oidc = verifier(&issuer).await;
    let mut expired = issuer.claims("alice");
    expired["exp"] = json!(now() - 3600);
    assert_refused(&oidc, &rsa.sign(&expired), OidcRefusal::Expired).await;
    let mut early = issuer.claims("alice");
    early["nbf"] = json!(now() + 3600);
    assert_refused(&oidc, &rsa.sign(&early), OidcRefusal::NotYetValid).await;
    // Within the clock-skew leeway, both are still good.
    let mut skewed = issuer.claims("alice");
    skewed["exp"] = json!(now() - 10);
    skewed["nbf"] = json!(now() + 10);
    assert_eq!(oidc.participant(&rsa.sign(&skewed)).await.unwrap(), "alice");
}

#[tokio::test]
async fn a_wrong_issuer_or_audience_or_a_missing_claim_is_refused() {
    let rsa = TestKey::rsa_a();
    let issuer = Issuer::start(&[&rsa]).await;
    let oidc = verifier(&issuer).await;
    let mut other_issuer = issuer.claims("alice");
    other_issuer["iss"] = json!("https://issuer.invalid");
    assert_refused(&oidc, &rsa.sign(&other_issuer), OidcRefusal::Issuer).await;
    let mut other_audience = issuer.claims("alice");
    other_audience["aud"] = json!(["someone-else"]);
    assert_refused(&oidc, &rsa.sign(&other_audience), OidcRefusal::Audience).await;
    let mut no_issuer = issuer.claims("alice");
    no_issuer.as_object_mut().unwrap().remove("iss");
    assert_refused(
        &oidc,
        &rsa.sign(&no_issuer),
        OidcRefusal::Claim("iss".into()),
    )
    .await;
    for bad in [
        json!(7),
        json!(""),
        json!("a\u{0}b"),
        json!("self"),
        json!("x".repeat(257)),
    ] {
        let mut claims = issuer.claims("alice");
        claims["sub"] = bad;
        assert_refused(
            &oidc,
            &rsa.sign(&claims),
            OidcRefusal::Participant("sub".into()),
        )
        .await;
    }
}

#[tokio::test]
async fn unsigned_hmac_and_tampered_tokens_are_refused() {
    let rsa = TestKey::rsa_a();
    let issuer = Issuer::start(&[&rsa]).await;
    let oidc = verifier(&issuer).await;
    let claims = issuer.claims("alice");
    let b64 = |v: &Value| {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let none = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "kid": "rsa-a"})),
        b64(&claims)
    );
    assert_refused(&oidc, &none, OidcRefusal::Algorithm).await;
    // The classic confusion: HS256 with the RSA public key (as its PEM text) as the secret.
    let public = EncodingKey::from_secret(&fixture("test-only-rsa-a.pub.pem")).unwrap();
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("rsa-a".into());
    let hs256 = jsonwebtoken::encode(&header, &claims, &public).unwrap();
    assert_refused(&oidc, &hs256, OidcRefusal::Algorithm).await;
    // A token signed by the EC key but claiming the RSA key's id.
    let ec = TestKey::ec();
    assert_refused(
        &oidc,
        &ec.sign_as("rsa-a", &claims),
        OidcRefusal::KeyMismatch,
    )
    .await;
    let mut other_claims = claims.clone();
    other_claims["sub"] = json!("mallory");
    let good = rsa.sign(&claims);
    let forged = rsa.sign(&other_claims);
    let mut parts: Vec<&str> = forged.split('.').collect();
    parts[2] = good.split('.').nth(2).unwrap();
    assert_refused(&oidc, &parts.join("."), OidcRefusal::Signature).await;
    assert_refused(&oidc, "not-a-jwt", OidcRefusal::Malformed).await;
    assert_eq!(
        issuer.jwks_fetches(),
        1,
        "no refusal above fetched the keys again"
    );
}

#[tokio::test]
async fn an_unknown_kid_is_refused_after_one_refresh_and_a_rotated_key_is_found() {
    let (a, b) = (TestKey::rsa_a(), TestKey::rsa_b());
    let issuer = Issuer::start(&[&a]).await;
    let oidc = verifier(&issuer).await;
    assert_eq!(issuer.jwks_fetches(), 1);
    // The issuer rotates key b in: the first token signed with it makes one refresh and passes.
    issuer.publish(&[&a, &b]).await;
    let token = b.sign(&issuer.claims("alice"));
    assert_eq!(oidc.participant(&token).await.unwrap(), "alice");
    assert_eq!(
        issuer.jwks_fetches(),
        2,
        "one refresh found the rotated key"
    );
    assert_eq!(oidc.participant(&token).await.unwrap(), "alice");
    assert_eq!(issuer.jwks_fetches(), 2, "a known key needs no refresh");

    let fresh = Issuer::start(&[&a]).await;
    let oidc = verifier(&fresh).await;
    let unknown = b.sign(&fresh.claims("alice"));
    assert_refused(&oidc, &unknown, OidcRefusal::UnknownKey).await;
    assert_eq!(
        fresh.jwks_fetches(),
        2,
        "exactly one refresh before refusing"
    );
}

#[tokio::test]
async fn a_second_unknown_kid_within_the_interval_does_not_fetch_again() {
    let (a, b) = (TestKey::rsa_a(), TestKey::rsa_b());
    let issuer = Issuer::start(&[&a]).await;
    let oidc = verifier(&issuer).await;
    let claims = issuer.claims("alice");
    assert_refused(
        &oidc,
        &b.sign_as("made-up-1", &claims),
        OidcRefusal::UnknownKey,
    )
    .await;
    assert_eq!(issuer.jwks_fetches(), 2);
    for n in 2..20 {
        let token = b.sign_as(&format!("made-up-{n}"), &claims);
        assert_refused(&oidc, &token, OidcRefusal::UnknownKey).await;
    }
    assert_eq!(
        issuer.jwks_fetches(),
        2,
        "18 more unknown kids, no more fetches"
    );
    // Even a real rotation waits out the interval: the limit is on fetches, not on kids.
    issuer.publish(&[&a, &b]).await;
    assert_refused(&oidc, &b.sign(&claims), OidcRefusal::UnknownKey).await;
    assert_eq!(issuer.jwks_fetches(), 2);

    // With no interval (a test's tuning), each miss may fetch.
    let tuning = OidcTuning {
        min_refresh_interval: Duration::ZERO,
        ..OidcTuning::default()
    };
    let eager = Oidc::start_with(&issuer.config(false), client(), tuning).await;
    let before = issuer.jwks_fetches();
    assert_refused(
        &eager,
        &b.sign_as("made-up-x", &claims),
        OidcRefusal::UnknownKey,
    )
    .await;
    assert_refused(
        &eager,
        &b.sign_as("made-up-y", &claims),
        OidcRefusal::UnknownKey,
    )
    .await;
    assert_eq!(issuer.jwks_fetches(), before + 2);
}

#[tokio::test]
async fn a_token_without_every_required_scope_is_refused() {
    let rsa = TestKey::rsa_a();
    let issuer = Issuer::start(&[&rsa]).await;
    let mut config = issuer.config(false);
    config.required_scopes = vec!["a2a:tasks".into(), "a2a:read".into()];
    let oidc = Oidc::start(&config, client()).await;
    let mut claims = issuer.claims("alice");
    claims["scope"] = json!("openid a2a:tasks");
    assert_refused(
        &oidc,
        &rsa.sign(&claims),
        OidcRefusal::Scope("a2a:read".into()),
    )
    .await;
    assert_eq!(
        OidcRefusal::Scope("a2a:read".into()).to_string(),
        "the bearer token lacks the scope `a2a:read`, which this server requires"
    );
    claims["scope"] = json!("openid a2a:tasks a2a:read");
    assert_eq!(oidc.participant(&rsa.sign(&claims)).await.unwrap(), "alice");
    claims.as_object_mut().unwrap().remove("scope");
    claims["scp"] = json!(["a2a:read", "a2a:tasks"]);
    assert_eq!(oidc.participant(&rsa.sign(&claims)).await.unwrap(), "alice");
}

#[tokio::test]
async fn without_jwks_url_the_keys_are_found_through_discovery() {
    let ec = TestKey::ec();
    let issuer = Issuer::start(&[&ec]).await;
    let oidc = Oidc::start(&issuer.config(true), client()).await;
    assert_eq!(issuer.discovery_fetches.load(Ordering::SeqCst), 1);
    assert_eq!(issuer.jwks_fetches(), 1);
    let token = ec.sign(&issuer.claims("dave"));
    assert_eq!(oidc.participant(&token).await.unwrap(), "dave");
}

#[tokio::test]
async fn an_issuer_that_is_down_at_start_refuses_tokens_until_a_refresh_succeeds() {
    let rsa = TestKey::rsa_a();
    let issuer = Issuer::start(&[&rsa]).await;
    issuer.up.store(false, Ordering::SeqCst);
    let tuning = OidcTuning {
        min_refresh_interval: Duration::ZERO,
        ..OidcTuning::default()
    };
    let oidc = Oidc::start_with(&issuer.config(false), client(), tuning).await;
    assert_eq!(oidc.key_count().await, 0);
    let token = rsa.sign(&issuer.claims("alice"));
    assert_refused(&oidc, &token, OidcRefusal::KeysUnavailable).await;
    issuer.up.store(true, Ordering::SeqCst);
    assert_eq!(oidc.participant(&token).await.unwrap(), "alice");
}

#[tokio::test]
async fn keys_behind_a_redirect_or_past_the_size_cap_are_not_used() {
    let rsa = TestKey::rsa_a();
    let issuer = Issuer::start(&[&rsa]).await;
    let token = rsa.sign(&issuer.claims("alice"));
    for (path, following) in [("/moved", false), ("/moved", true), ("/huge", false)] {
        let mut config = issuer.config(false);
        config.jwks_url = Some(format!("{}{path}", issuer.base));
        // Even a client that follows redirects does not take keys from another URL.
        let http = if following {
            reqwest::Client::new()
        } else {
            client()
        };
        let oidc = Oidc::start(&config, http).await;
        assert_eq!(oidc.key_count().await, 0, "{path}, following: {following}");
        assert_refused(&oidc, &token, OidcRefusal::KeysUnavailable).await;
    }
}

#[test]
fn every_public_reason_reads_as_written() {
    let reasons = [
        (
            OidcRefusal::Malformed,
            "the bearer token is not a JWT this server can read",
        ),
        (
            OidcRefusal::Algorithm,
            "the bearer token's algorithm is not accepted; this server accepts JWTs signed with RS256, ES256 or EdDSA",
        ),
        (
            OidcRefusal::UnknownKey,
            "the bearer token names a signing key (kid) the issuer does not publish",
        ),
        (OidcRefusal::Expired, "the bearer token has expired"),
        (
            OidcRefusal::NotYetValid,
            "the bearer token is not valid yet (nbf)",
        ),
        (
            OidcRefusal::Issuer,
            "the bearer token's issuer (iss) is not the one this server trusts",
        ),
        (
            OidcRefusal::Audience,
            "the bearer token's audience (aud) does not name this server",
        ),
        (
            OidcRefusal::Participant("sub".into()),
            "the bearer token's `sub` claim is not a usable participant id: a non-empty string of at most 256 characters without control characters, and not `self`",
        ),
    ];
    for (refusal, text) in reasons {
        assert_eq!(refusal.to_string(), text);
    }
}

/// Sends a JSON-RPC request to a harness with an optional bearer token; the status and body.
async fn rpc(base: &str, token: Option<&str>, method: &str, params: Value) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .post(base)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The ids of the tasks `ListTasks` shows the bearer of `token`.
async fn listed(base: &str, token: &str) -> Vec<String> {
    let (status, body) = rpc(base, Some(token), "ListTasks", json!({})).await;
    assert_eq!(status, 200, "{body}");
    body["result"]["tasks"]
        .as_array()
        .map(|tasks| {
            tasks
                .iter()
                .filter_map(|t| t["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_harness_configured_with_server_oidc_serves_a_jwt_as_the_participant_it_names() {
    let key = TestKey::rsa_a();
    let issuer = Issuer::start(&[&key]).await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    let text = format!(
        "[server]\nbind = \"127.0.0.1:0\"\nallow_anonymous = false\n[server.oidc]\n\
         issuer = \"{base}\"\njwks_url = \"{base}/jwks\"\naudience = \"{AUDIENCE}\"\n\
         [store]\npath = \"harness.db\"\n",
        base = issuer.base
    );
    std::fs::write(&config, text).unwrap();
    let (mut child, base) =
        tokio::task::spawn_blocking(move || support::harness_process::serve(&config))
            .await
            .unwrap();
    let alice = key.sign(&issuer.claims("alice"));
    let bob = key.sign(&issuer.claims("bob"));
    let send = json!({"message": {"messageId": "m-1", "role": "ROLE_USER",
        "parts": [{"text": "hello"}]}, "configuration": {"returnImmediately": true}});

    let (status, body) = rpc(&base, Some(&alice), "SendMessage", send).await;
    assert_eq!(status, 200, "{body}");
    let task = body["result"]["task"]["id"].as_str().unwrap().to_string();
    assert_eq!(listed(&base, &alice).await, std::slice::from_ref(&task));
    assert!(
        listed(&base, &bob).await.is_empty(),
        "bob sees nothing of alice's"
    );
    let (status, body) = rpc(&base, Some(&bob), "GetTask", json!({"id": task})).await;
    assert!(
        body["error"].is_object(),
        "bob cannot read it: {status} {body}"
    );

    // Refused tokens are never served, and the answer repeats none of the token.
    let mut expired = issuer.claims("alice");
    expired["exp"] = json!(now() - 3_600);
    let mut other_audience = issuer.claims("alice");
    other_audience["aud"] = json!("another-service");
    for token in [
        key.sign(&expired),
        key.sign(&other_audience),
        key.sign(&issuer.claims("self")),
    ] {
        let (status, body) = rpc(&base, Some(&token), "ListTasks", json!({})).await;
        assert!(status == 401 || status == 403, "{status} {body}");
        let text = body.to_string();
        for part in token.split('.').filter(|part| part.len() > 8) {
            assert!(!text.contains(part), "the answer repeats the token: {text}");
        }
    }
    let (status, _) = rpc(&base, None, "ListTasks", json!({})).await;
    assert_eq!(status, 401, "no token, no anonymous callers");
    child.kill().unwrap();
    child.wait().unwrap();
}
