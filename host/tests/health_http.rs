//! `/healthz` and `/readyz` over real HTTP on loopback, on a whole harness with a real SQLite
//! store: probers are answered without a token and outside the rate limit, the answers name
//! no configuration, and `/readyz` is 503 naming the store while the store cannot take a write.

mod support {
    pub mod served;
}

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::served::Served;
use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;

/// How long a test waits for something that must happen: a guard against a hang, not a measure.
const HANG_GUARD: Duration = Duration::from_secs(30);
const CALLER_TOKEN: &str = "health-http-caller-token-5d41402abc4b2a76";

/// A harness on `127.0.0.1:0` with its store in `dir`, `extra` appended to its `[server]`.
async fn serve(dir: &tempfile::TempDir, server_extra: &str) -> Served {
    let text = format!(
        "[server]\nbind = \"127.0.0.1:0\"\n{server_extra}\n[store]\npath = \"harness.db\"\n"
    );
    let path = dir.path().join("config.toml");
    std::fs::write(&path, text).unwrap();
    let config = Config::load(&path).unwrap();
    let env = |name: &str| (name == "HEALTH_HTTP_CALLER").then(|| CALLER_TOKEN.to_string());
    Served::start(Runtime::build_with_env(config, env).await.unwrap())
}

async fn get(base_url: &str, path: &str) -> (StatusCode, Value) {
    let response = reqwest::get(format!("{base_url}{path}")).await.unwrap();
    let status = response.status();
    assert_eq!(
        response.headers()["cache-control"],
        "no-store",
        "{path}: a probe sees now"
    );
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn probers_are_answered_without_a_token_and_outside_the_rate_limit_where_callers_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let served = serve(
        &dir,
        "allow_anonymous = false\nrate_limit_per_minute = 2\n[[server.callers]]\nid = \"alice\"\ntoken_env = \"HEALTH_HTTP_CALLER\"\n",
    )
    .await;
    let refused = reqwest::Client::new()
        .post(format!("{}/", served.base_url))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        refused.status(),
        StatusCode::UNAUTHORIZED,
        "a caller without a token is refused"
    );
    // Ten probes of each: five times the rate a caller gets in a minute.
    for _ in 0..10 {
        let (status, body) = get(&served.base_url, "/healthz").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, json!({"status": "ok"}));
        let (status, body) = get(&served.base_url, "/readyz").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            body,
            json!({"status": "ready", "checks": {"store": "ok", "engine": "ok"}}),
            "fixed words only: no path, address or version"
        );
    }
    served.stop().await;
}

#[tokio::test]
async fn readyz_is_503_naming_the_store_while_it_cannot_take_a_write_and_200_once_it_can() {
    let dir = tempfile::tempdir().unwrap();
    let served = serve(&dir, "").await;
    let (status, _) = get(&served.base_url, "/readyz").await;
    assert_eq!(status, StatusCode::OK);

    // Another connection holds the database's write lock: no commit of the harness can land.
    let blocker = rusqlite::Connection::open(dir.path().join("harness.db")).unwrap();
    blocker.execute_batch("BEGIN EXCLUSIVE;").unwrap();
    let asked = Instant::now();
    let (status, body) = loop {
        let (status, body) = get(&served.base_url, "/readyz").await;
        // The answer before the lock may still be cached for a moment.
        if status != StatusCode::OK || asked.elapsed() > HANG_GUARD {
            break (status, body);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let took = asked.elapsed();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(
        body,
        json!({"status": "not ready", "checks": {"store": "not writable", "engine": "ok"}})
    );
    eprintln!("/readyz said the store was not writable after {took:?}");
    let (status, _) = get(&served.base_url, "/healthz").await;
    assert_eq!(status, StatusCode::OK, "the process still serves");

    blocker.execute_batch("ROLLBACK;").unwrap();
    drop(blocker);
    let released = Instant::now();
    loop {
        let (status, body) = get(&served.base_url, "/readyz").await;
        if status == StatusCode::OK {
            assert_eq!(body["checks"]["store"], "ok");
            break;
        }
        assert!(
            released.elapsed() < HANG_GUARD,
            "ready again once the lock is gone: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    served.stop().await;
}
