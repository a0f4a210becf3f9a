//! What waiting tasks cost in memory, and how fast they come back: a harness in this process
//! (real SQLite store on disk, a model in-process that answers at once by asking the participant
//! a question, so every task waits for input), its RSS idle, then after N tasks were created and
//! are waiting (RSS per waiting task); then a fresh process that builds a harness on the same
//! store and resumes every open task, reporting how long that took and its RSS after.
//! Figures only, read from /proc/self/status (VmRSS) and /proc/self/stat (CPU time); Linux.
//!
//! `cargo run --release -p tiny-harness --example memory -- [tasks]`

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Value, json};
use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;
use tiny_harness::base::model::{Model, ModelError, ModelReply, ModelRequest, ToolCall};

const DEFAULT_TASKS: usize = 10_000;
/// Requests in flight while the tasks are created.
const CONCURRENCY: usize = 16;
/// How often the resumed process samples its CPU time to see whether the loops settled.
const SETTLE_SAMPLE: Duration = Duration::from_millis(20);
/// How long the CPU time must stay still for the resumed loops to count as settled.
const SETTLE_QUIET: Duration = Duration::from_millis(200);
/// The argument that makes this example the restarted process.
const RESUME_FLAG: &str = "--resume";

/// Asks the task's creator a question, at once, on every turn: each task waits for input.
struct AskingModel;

#[async_trait]
impl Model for AskingModel {
    fn describe(&self) -> String {
        "asking (in-process)".into()
    }
    fn context_window(&self) -> Option<usize> {
        None
    }
    async fn complete(&self, _request: &ModelRequest) -> Result<ModelReply, ModelError> {
        Ok(ModelReply {
            tool_calls: vec![ToolCall {
                id: "ask".into(),
                name: "ask_participant".into(),
                arguments: json!({"participant_id": "user", "question": "Which month?"})
                    .to_string(),
            }],
            ..ModelReply::default()
        })
    }
}

/// Resident set size of this process in KiB (VmRSS).
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status")
}

/// CPU time this process used so far, in clock ticks (utime + stime of /proc/self/stat).
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')').expect("a command name") + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    fields[11].parse::<u64>().unwrap_or(0) + fields[12].parse::<u64>().unwrap_or(0)
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

async fn build(dir: &Path) -> Runtime {
    let config = Config::load(&dir.join("config.toml")).expect("config");
    Runtime::build_with_model(config, Arc::new(AskingModel))
        .await
        .expect("runtime")
}

/// Creates `tasks` tasks over HTTP, each answered INPUT_REQUIRED by a blocking `SendMessage`.
async fn create_waiting(url: &str, tasks: usize) {
    let client = reqwest::Client::new();
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..CONCURRENCY {
        let (client, url, next) = (client.clone(), url.to_string(), next.clone());
        workers.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < tasks {
                let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
                    "message": {"messageId": uuid::Uuid::new_v4().to_string(),
                                "role": "ROLE_USER", "parts": [{"text": "Reconcile the books"}]}}});
                let reply: Value = client
                    .post(&url)
                    .header("A2A-Version", "1.0")
                    .json(&body)
                    .send()
                    .await
                    .expect("request sent")
                    .json()
                    .await
                    .expect("JSON reply");
                let state = &reply["result"]["task"]["status"]["state"];
                assert_eq!(state, "TASK_STATE_INPUT_REQUIRED", "{reply}");
            }
        }));
    }
    for worker in workers {
        worker.await.expect("worker");
    }
}

/// The first life: idle RSS, then `tasks` waiting tasks, then a graceful stop.
async fn first_life(dir: &Path, tasks: usize) {
    let runtime = build(dir).await;
    let url = format!("http://{}/", runtime.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(runtime.serve(async {
        let _ = stopped.await;
    }));
    // One task first, so the plugin instance, SQLite pages and the HTTP stack are warm.
    create_waiting(&url, 1).await;
    let idle = rss_kib();
    println!("idle RSS (serving, one task done): {:.1} MiB", mib(idle));
    let started = Instant::now();
    create_waiting(&url, tasks).await;
    let elapsed = started.elapsed();
    let loaded = rss_kib();
    println!(
        "{tasks} tasks waiting for input, created in {:.2} s: RSS {:.1} MiB (+{:.1} MiB), {:.1} KiB a waiting task",
        elapsed.as_secs_f64(),
        mib(loaded),
        mib(loaded.saturating_sub(idle)),
        loaded.saturating_sub(idle) as f64 / tasks as f64
    );
    let _ = stop.send(());
    serving.await.expect("serve task").expect("served");
}

/// The second life, in a fresh process: build on the same store, resume every open task, and
/// wait until the loops settled (the CPU time stays still for `SETTLE_QUIET`).
async fn second_life(dir: &Path) {
    let before = rss_kib();
    let started = Instant::now();
    let runtime = build(dir).await;
    let built = started.elapsed();
    let resumed = runtime.engine.resume_open().expect("open tasks resumed");
    let spawned = started.elapsed();
    let mut last_ticks = cpu_ticks();
    let mut last_change = Instant::now();
    while last_change.elapsed() < SETTLE_QUIET {
        tokio::time::sleep(SETTLE_SAMPLE).await;
        let ticks = cpu_ticks();
        if ticks != last_ticks {
            last_ticks = ticks;
            last_change = Instant::now();
        }
    }
    let settled = last_change.duration_since(started);
    println!(
        "restart on the same store: {resumed} open tasks; built in {:.2} s, loops started at {:.2} s, settled (CPU quiet) at {:.2} s",
        built.as_secs_f64(),
        spawned.as_secs_f64(),
        settled.as_secs_f64()
    );
    println!(
        "RSS after the resume: {:.1} MiB (at process start {:.1} MiB)",
        mib(rss_kib()),
        mib(before)
    );
    runtime.engine.shutdown().await;
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, dir] = args.as_slice()
        && flag == RESUME_FLAG
    {
        second_life(Path::new(dir)).await;
        return;
    }
    let tasks: usize = args
        .first()
        .and_then(|a| a.parse().ok())
        .unwrap_or(DEFAULT_TASKS);
    let dir = tempfile::tempdir().expect("temporary folder");
    std::fs::write(
        dir.path().join("config.toml"),
        "[server]\nbind = \"127.0.0.1:0\"\nrate_limit_per_minute = 0\n[store]\npath = \"memory.db\"\n",
    )
    .expect("config written");
    first_life(dir.path(), tasks).await;
    let status = std::process::Command::new(std::env::current_exe().expect("this executable"))
        .arg(RESUME_FLAG)
        .arg(dir.path())
        .status()
        .expect("the restarted process runs");
    assert!(status.success(), "the restarted process failed: {status}");
}
