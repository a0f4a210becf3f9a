//! The card declares how callers authenticate, and `GetExtendedAgentCard` serves the extended
//! card on every binding (JSON-RPC 1.0, its 0.3 dialect, HTTP+JSON) to an authenticated caller
//! only: a whole harness on loopback, asked over HTTP.

mod support {
    pub mod served;
}

use serde_json::{Value, json};
use support::served::Served;
use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;
use tiny_harness::base::model::build_model;

const TOKEN_ENV: &str = "CARD_SECURITY_HTTP_DESK_TOKEN";
const TOKEN: &str = "card-security-http-desk-token-8f14e45fceea167a";
const DELEGATOR: &str =
    "[[server.trusted_delegators]]\nid = \"desk\"\ntoken_env = \"CARD_SECURITY_HTTP_DESK_TOKEN\"\n";
const OIDC: &str = "[server.oidc]\nissuer = \"https://id.example/realms/a2a\"\naudience = \"harness\"\nrequired_scopes = [\"a2a:tasks\"]\n";
const EXTENDED: &str = "[card.extended]\ndescription = \"The ledger, with the tools only its team may ask for.\"\n\
     [[card.extended.skills]]\nid = \"adjustments\"\nname = \"Adjustments\"\ndescription = \"Books a correcting entry.\"\n";

struct Server {
    base_url: String,
    http: reqwest::Client,
    served: Served,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn start(extra: &str) -> Server {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("script.toml"), "[[reply]]\ntext = \"ok\"\n").unwrap();
        let text = format!(
            "[server]\nbind = \"127.0.0.1:0\"\n{extra}\
             [store]\npath = \"harness.db\"\n\
             [model]\nprovider = \"scripted\"\nscript = \"script.toml\"\n"
        );
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).unwrap();
        let config = Config::load(&path).unwrap();
        let model = build_model(&config.model, |p| config.resolve(p), |_| None).unwrap();
        let env = |name: &str| (name == TOKEN_ENV).then(|| TOKEN.to_string());
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

    async fn card(&self) -> Value {
        let url = format!("{}/.well-known/agent-card.json", self.base_url);
        self.http
            .get(url)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// The extended card asked on each binding, `token` as bearer when given: for each, the
    /// HTTP status, the `WWW-Authenticate` header and the body.
    async fn extended(
        &self,
        token: Option<&str>,
    ) -> Vec<(&'static str, u16, Option<String>, Value)> {
        let mut answers = Vec::new();
        for (binding, method) in [
            ("jsonrpc", "GetExtendedAgentCard"),
            ("0.3", "agent/getAuthenticatedExtendedCard"),
            ("rest", ""),
        ] {
            let mut request = if method.is_empty() {
                self.http
                    .get(format!("{}/extendedAgentCard", self.base_url))
            } else {
                let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": {}});
                self.http.post(&self.base_url).json(&body)
            };
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let challenge = response
                .headers()
                .get("www-authenticate")
                .map(|v| v.to_str().unwrap().to_string());
            answers.push((binding, status, challenge, response.json().await.unwrap()));
        }
        answers
    }
}

/// The card's security fields, as one golden object.
fn security_of(card: &Value) -> Value {
    json!({
        "securitySchemes": card.get("securitySchemes"),
        "securityRequirements": card.get("securityRequirements"),
        "extendedAgentCard": card["capabilities"].get("extendedAgentCard"),
    })
}

#[tokio::test]
async fn a_card_without_any_authentication_declares_no_security_and_no_extended_card() {
    let server = Server::start("").await;
    let card = server.card().await;
    assert_eq!(
        security_of(&card),
        json!({"securitySchemes": null, "securityRequirements": null, "extendedAgentCard": null})
    );
    for (binding, status, challenge, body) in server.extended(None).await {
        let code = if binding == "rest" {
            &body["error"]["details"][0]["reason"]
        } else {
            &body["error"]["data"][0]["reason"]
        };
        assert_eq!(code, "UNSUPPORTED_OPERATION", "{binding}: {body}");
        assert_ne!(status, 401, "{binding}");
        assert!(challenge.is_none(), "{binding}");
    }
    server.stop().await;
}

#[tokio::test]
async fn delegators_and_an_issuer_are_declared_as_bearer_and_openid_connect_schemes() {
    let server = Server::start(&format!("{DELEGATOR}{OIDC}")).await;
    let card = server.card().await;
    assert_eq!(
        security_of(&card),
        json!({
            "securitySchemes": {
                "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}},
                "oidc": {"openIdConnectSecurityScheme": {
                    "openIdConnectUrl": "https://id.example/realms/a2a/.well-known/openid-configuration"
                }}
            },
            "securityRequirements": [
                {"schemes": {"bearer": {"list": []}}},
                {"schemes": {"oidc": {"list": ["a2a:tasks"]}}}
            ],
            "extendedAgentCard": true
        })
    );
    server.stop().await;

    let server = Server::start(DELEGATOR).await;
    let card = server.card().await;
    assert_eq!(
        security_of(&card),
        json!({
            "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
            "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
            "extendedAgentCard": true
        })
    );
    server.stop().await;
}

#[tokio::test]
async fn a_trusted_delegator_reads_the_extended_card_on_every_binding() {
    let server = Server::start(&format!("{DELEGATOR}{EXTENDED}")).await;
    let public = server.card().await;
    for (binding, status, _, body) in server.extended(Some(TOKEN)).await {
        assert_eq!(status, 200, "{binding}: {body}");
        let card = if binding == "rest" {
            body.clone()
        } else {
            body["result"].clone()
        };
        assert_eq!(
            card["description"], "The ledger, with the tools only its team may ask for.",
            "{binding}"
        );
        let ids: Vec<&str> = card["skills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["general", "adjustments"], "{binding}");
        assert_eq!(security_of(&card), security_of(&public), "{binding}");
    }
    // The public card keeps the public description and skills.
    assert_ne!(
        public["description"],
        "The ledger, with the tools only its team may ask for."
    );
    assert_eq!(public["skills"].as_array().unwrap().len(), 1);
    server.stop().await;
}

#[tokio::test]
async fn an_anonymous_or_named_caller_is_refused_the_extended_card_on_every_binding() {
    let server = Server::start(&format!("{DELEGATOR}{EXTENDED}")).await;
    for (binding, status, challenge, body) in server.extended(None).await {
        assert_eq!(status, 401, "{binding}: {body}");
        assert_eq!(challenge.as_deref(), Some("Bearer"), "{binding}");
        let text = body.to_string();
        assert!(!text.contains("adjustments"), "{binding}: {text}");
        assert!(
            text.contains("only to authenticated callers"),
            "{binding}: {text}"
        );
        if binding == "rest" {
            assert_eq!(body["error"]["status"], "UNAUTHENTICATED");
        } else {
            assert_eq!(body["id"], 7, "{binding}");
            assert_eq!(body["error"]["code"], -32600, "{binding}");
        }
    }
    // Naming a participant in the header proves nothing.
    let response = server
        .http
        .get(format!("{}/extendedAgentCard", server.base_url))
        .header("X-Participant-Id", "desk")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    server.stop().await;
}
