//! `GET /metrics` over loopback HTTP: the Prometheus text a scraper reads, whose values move as
//! tasks run (tasks created and ended, model calls and tokens, tool calls, rate-limit refusals,
//! open connections), served by default on a loopback bind, without a token, and not at all
//! when `[telemetry] metrics = false`. The registry is the process's: checks read how values
//! move between two scrapes.

mod support {
    pub mod served;
}

use std::collections::BTreeMap;

use serde_json::json;
use support::served::Served;
use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;

/// A plan (an in-process tool call), then the answer, with the tokens each reply reports.
const SCRIPT: &str = r#"
[[reply]]
text = "Let me plan."
usage = { input_tokens = 120, output_tokens = 7 }
[[reply.tool_calls]]
name = "create_plan"
arguments = { steps = [{ name = "Add", description = "add the numbers" }] }

[[reply]]
text = "4"
usage = { input_tokens = 150, output_tokens = 5 }
"#;

async fn start(extra: &str) -> (Served, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("script.toml"), SCRIPT).unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        format!(
            "[server]\nbind = \"127.0.0.1:0\"\n{extra}\n[store]\npath = \"harness.db\"\n\
             [model]\nprovider = \"scripted\"\nscript = \"script.toml\"\n"
        ),
    )
    .unwrap();
    let runtime = Runtime::build(Config::load(&path).unwrap()).await.unwrap();
    (Served::start(runtime), dir)
}

/// Every sample of a scrape by its name and labels, checking each line is a comment or a
/// sample of the text format.
fn samples(text: &str) -> BTreeMap<String, f64> {
    let mut samples = BTreeMap::new();
    for line in text.lines() {
        if line.starts_with("# HELP ") || line.starts_with("# TYPE ") {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{line}"));
        assert!(series.starts_with("tiny_harness_"), "{line}");
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("{line}"));
        samples.insert(series.to_string(), value);
    }
    samples
}

async fn scrape(base: &str) -> BTreeMap<String, f64> {
    let response = reqwest::get(format!("{base}/metrics")).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    samples(&response.text().await.unwrap())
}

fn moved(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>, series: &str) -> f64 {
    after.get(series).copied().unwrap_or(0.0) - before.get(series).copied().unwrap_or(0.0)
}

async fn send(base: &str, message_id: &str) -> serde_json::Value {
    reqwest::Client::new()
        .post(format!("{base}/"))
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "2+2?"}]}
        }}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_values_move_as_a_task_runs() {
    let (served, _dir) = start("").await;
    let before = scrape(&served.base_url).await;

    let answer = send(&served.base_url, "metrics-1").await;
    assert_eq!(
        answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{answer}"
    );
    let after = scrape(&served.base_url).await;

    for (series, by) in [
        ("tiny_harness_tasks_created_total", 1.0),
        (
            "tiny_harness_tasks_ended_total{state=\"TASK_STATE_COMPLETED\"}",
            1.0,
        ),
        (
            "tiny_harness_model_calls_total{model=\"default\",outcome=\"ok\"}",
            2.0,
        ),
        (
            "tiny_harness_model_tokens_total{model=\"default\",direction=\"input\"}",
            270.0,
        ),
        (
            "tiny_harness_model_tokens_total{model=\"default\",direction=\"output\"}",
            12.0,
        ),
        (
            "tiny_harness_tool_calls_total{tool=\"create_plan\",outcome=\"ok\"}",
            1.0,
        ),
        (
            "tiny_harness_model_call_duration_seconds_count{model=\"default\",outcome=\"ok\"}",
            2.0,
        ),
    ] {
        assert_eq!(moved(&before, &after, series), by, "{series}: {after:#?}");
    }
    assert!(
        moved(
            &before,
            &after,
            "tiny_harness_store_write_duration_seconds_count"
        ) >= 2.0
    );
    // This scrape's own connection is open while it is answered.
    assert!(after["tiny_harness_open_connections"] >= 1.0, "{after:#?}");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn refusals_by_the_rate_limit_are_counted_and_the_scraper_is_never_limited() {
    let (served, _dir) = start("rate_limit_per_minute = 1").await;
    let before = scrape(&served.base_url).await;
    let card = format!("{}/.well-known/agent-card.json", served.base_url);
    let mut refused = 0;
    for _ in 0..3 {
        let status = reqwest::get(&card).await.unwrap().status();
        if status == 429 {
            refused += 1;
        }
    }
    assert!(refused >= 2, "{refused}");
    let after = scrape(&served.base_url).await;
    assert_eq!(
        moved(&before, &after, "tiny_harness_rate_limited_total"),
        f64::from(refused)
    );
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_turned_off_are_not_served() {
    let (served, _dir) = start("[telemetry]\nmetrics = false").await;
    let response = reqwest::get(format!("{}/metrics", served.base_url))
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    served.stop().await;
}
