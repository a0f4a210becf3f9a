//! The durability check: the ids of the tasks the harness acknowledged as COMPLETED are written
//! to a file during a run; after the harness was killed and restarted on the same store, each is
//! asked for with `GetTask`, and any the store lost is counted.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

/// `GetTask` requests in flight at once while verifying.
const VERIFY_CONCURRENCY: usize = 16;

/// Writes one acknowledged task id a line.
pub fn record(path: &Path, ids: &[String]) {
    let mut text = ids.join("\n");
    text.push('\n');
    std::fs::write(path, text).expect("the acknowledged ids are written");
}

/// What `GetTask` said of the acknowledged tasks.
#[derive(Default)]
struct Tally {
    completed: AtomicUsize,
    other_state: AtomicUsize,
    missing: AtomicUsize,
}

/// Asks the harness at `url` for every task id in `path`; prints how many it holds, completed,
/// and how many it lost. Returns whether every one is there, still COMPLETED.
pub async fn verify(client: &reqwest::Client, url: &str, path: &Path) -> bool {
    let text = std::fs::read_to_string(path).expect("the acknowledged ids are readable");
    let ids: Arc<Vec<String>> = Arc::new(text.lines().map(str::to_string).collect());
    let tally = Arc::new(Tally::default());
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..VERIFY_CONCURRENCY {
        let (client, url, ids, tally, next) = (
            client.clone(),
            url.to_string(),
            ids.clone(),
            tally.clone(),
            next.clone(),
        );
        workers.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                let Some(id) = ids.get(n) else { break };
                let body = json!({"jsonrpc": "2.0", "id": n, "method": "GetTask",
                    "params": {"id": id}});
                let reply: Option<Value> = match client
                    .post(&url)
                    .header("A2A-Version", "1.0")
                    .json(&body)
                    .send()
                    .await
                {
                    Ok(response) => response.json().await.ok(),
                    Err(_) => None,
                };
                let state = reply
                    .as_ref()
                    .and_then(|r| r["result"]["status"]["state"].as_str());
                match state {
                    Some("TASK_STATE_COMPLETED") => &tally.completed,
                    Some(_) => &tally.other_state,
                    None => &tally.missing,
                }
                .fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for worker in workers {
        worker.await.expect("verify worker");
    }
    let missing = tally.missing.load(Ordering::Relaxed);
    let other = tally.other_state.load(Ordering::Relaxed);
    println!(
        "durability: {} acknowledged, {} found COMPLETED, {other} found in another state, {missing} missing",
        ids.len(),
        tally.completed.load(Ordering::Relaxed),
    );
    missing == 0 && other == 0
}
