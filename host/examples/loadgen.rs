//! Load generator: starts a harness on loopback with the scripted model (one tool call, then an
//! answer) and drives blocking `SendMessage` requests at a fixed concurrency over HTTP, then
//! prints requests per second and latency percentiles.
//!
//! `cargo run --release -p tiny-harness --example loadgen -- [requests] [concurrency]`

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tiny_harness::config::Config;
use tiny_harness::runtime::Runtime;

const DEFAULT_REQUESTS: usize = 2_000;
const DEFAULT_CONCURRENCY: usize = 32;

const SCRIPT: &str = r#"
[[reply]]
text = "planning"
[[reply.tool_calls]]
name = "create_plan"
arguments = { steps = [{ name = "Answer", description = "answer the question" }] }
[[reply]]
text = "42"
"#;

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let requests: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(DEFAULT_REQUESTS);
    let concurrency: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(DEFAULT_CONCURRENCY);

    let dir = tempfile::tempdir().expect("temporary folder");
    std::fs::write(dir.path().join("script.toml"), SCRIPT).expect("script written");
    let config_path = dir.path().join("config.toml");
    std::fs::write(
        &config_path,
        "[server]\nbind = \"127.0.0.1:0\"\nrate_limit_per_minute = 0\n[model]\nprovider = \"scripted\"\nscript = \"script.toml\"\n[store]\npath = \"load.db\"\n",
    )
    .expect("config written");
    let runtime = Runtime::build(Config::load(&config_path).expect("config"))
        .await
        .expect("runtime");
    let url = format!("http://{}/", runtime.local_addr());
    tokio::spawn(runtime.serve(std::future::pending()));

    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .build()
        .expect("client");
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let client = client.clone();
        let url = url.clone();
        let next = next.clone();
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut failures = 0usize;
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < requests {
                let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
                    "message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                                "parts": [{"text": "What is the answer?"}]}}});
                let sent = Instant::now();
                let ok = match client
                    .post(&url)
                    .header("A2A-Version", "1.0")
                    .json(&body)
                    .send()
                    .await
                {
                    Ok(response) => response
                        .json::<serde_json::Value>()
                        .await
                        .map(|v| v["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED")
                        .unwrap_or(false),
                    Err(_) => false,
                };
                if ok {
                    latencies.push(sent.elapsed());
                } else {
                    failures += 1;
                }
            }
            (latencies, failures)
        }));
    }
    let mut latencies: Vec<Duration> = Vec::new();
    let mut failures = 0;
    for worker in workers {
        let (mine, failed) = worker.await.expect("worker");
        latencies.extend(mine);
        failures += failed;
    }
    let elapsed = started.elapsed();
    latencies.sort();
    let pct = |p: f64| -> Duration {
        if latencies.is_empty() {
            return Duration::ZERO;
        }
        latencies[((latencies.len() as f64 - 1.0) * p).round() as usize]
    };
    println!(
        "loadgen: {} completed, {failures} failed, concurrency {concurrency}, {:.2} s",
        latencies.len(),
        elapsed.as_secs_f64()
    );
    println!(
        "loadgen: {:.0} requests/s (each a task with 2 model calls and 1 tool call)",
        latencies.len() as f64 / elapsed.as_secs_f64()
    );
    println!(
        "loadgen: latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        pct(0.50).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        pct(1.0).as_secs_f64() * 1e3
    );
    if failures > 0 {
        std::process::exit(1);
    }
}
