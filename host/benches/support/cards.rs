//! Agent card servers on loopback for the benches that build a roster.

use std::time::Duration;

use axum::Json;
use axum::routing::get;
use serde_json::{Value, json};

/// The card of agent `i` served at `url`: four skills, a description of a realistic length.
pub fn card(url: &str, i: usize) -> Value {
    json!({
        "name": format!("Agent {i}"),
        "description": "Answers questions about one thing. ".repeat(8),
        "version": "1.0.0",
        "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": (0..4).map(|s| json!({"id": format!("s{s}"), "name": format!("Skill {s}"),
            "description": "Does one thing well.", "tags": []})).collect::<Vec<_>>(),
    })
}

/// Starts a card server for agent `i` that answers after `delay`; returns its base URL.
pub async fn card_server(i: usize, delay: Duration) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let url = format!("http://{}", listener.local_addr().expect("local address"));
    let body = card(&url, i);
    let app = axum::Router::new().route(
        "/.well-known/agent-card.json",
        get(move || {
            let body = body.clone();
            async move {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                Json(body)
            }
        }),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    url
}
