//! Load generator: drives blocking `SendMessage` requests at a fixed concurrency over HTTP
//! against a harness on loopback (built in this process, or one already running at `--url`),
//! checks that every answer is a COMPLETED task, and prints requests per second and latency
//! percentiles. Two scenarios: a one-turn task (one model call), and a task with a tool call and
//! a sub-task on `self` (plan, spawn, the child's own model call, the answer). The model answers
//! at once, either in-process or as an OpenAI-compatible stub on loopback (`--model stub`, one
//! HTTP model call per turn). `--stub-only` serves just the stub, for a `harness serve` to use;
//! `--sink-only` an OTLP/HTTP trace sink that counts what it is sent (scripts/bench-traces);
//! `--record` and `--verify` make the durability check (see docs/performance.md). `--binding`
//! chooses JSON-RPC, gRPC (the harness built here serves it on a second loopback port), or both
//! one after the other against the same harness, so the two figures come from one run.
//!
//! `cargo run --release -p tiny-harness --example loadgen -- --scenario one-turn --model stub`

mod durability;
mod grpc;
mod model;
mod sink;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use serde_json::{Value, json};
use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;
use tiny_harness::base::model::Model;

/// Distinct failure reasons printed at the end; the rest are only counted.
const FAILURE_SAMPLES: usize = 5;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Scenario {
    /// One model call, then the answer.
    OneTurn,
    /// A plan (tool call), a sub-task on `self` (its own model call), then the answer.
    Delegating,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ModelKind {
    /// A `Model` in this process that answers at once.
    Instant,
    /// An OpenAI-compatible stub on loopback that answers at once.
    Stub,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Binding {
    /// Blocking `SendMessage` over JSON-RPC.
    Jsonrpc,
    /// Blocking `SendMessage` over gRPC.
    Grpc,
    /// JSON-RPC, then gRPC, against the same harness.
    Both,
}

/// Where requests go: the JSON-RPC endpoint, or the gRPC service.
#[derive(Clone)]
enum Target {
    Jsonrpc(reqwest::Client, String),
    Grpc(grpc::Client),
}

impl Target {
    async fn send(&self, text: &str) -> Result<String, String> {
        match self {
            Target::Jsonrpc(client, url) => send(client, url, text).await,
            Target::Grpc(client) => grpc::send(client.clone(), text).await,
        }
    }
}

#[derive(Parser)]
#[command(about = "Drives SendMessage load against a harness and checks every answer")]
struct Args {
    #[arg(long, value_enum, default_value = "one-turn")]
    scenario: Scenario,
    /// The model of the harness this process builds (ignored with --url).
    #[arg(long, value_enum, default_value = "stub")]
    model: ModelKind,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Seconds to run, after the warm-up.
    #[arg(long, default_value_t = 10)]
    duration: u64,
    /// Stop after this many requests instead of after --duration.
    #[arg(long)]
    requests: Option<usize>,
    /// Requests sent before measuring, not counted.
    #[arg(long, default_value_t = 200)]
    warmup: usize,
    /// Drive the harness listening at this URL instead of building one.
    #[arg(long)]
    url: Option<String>,
    /// Write the id of every task acknowledged COMPLETED to this file, one a line.
    #[arg(long)]
    record: Option<PathBuf>,
    /// Ask the harness at --url for every task id in this file; exit 1 if any is lost.
    #[arg(long)]
    verify: Option<PathBuf>,
    /// Serve only the stub model on this address (e.g. 127.0.0.1:9099) until killed.
    #[arg(long)]
    stub_only: Option<String>,
    /// Serve only an OTLP/HTTP trace sink on this address until killed, printing the spans
    /// and bytes received after each export.
    #[arg(long)]
    sink_only: Option<String>,
    /// The binding to drive (gRPC only against the harness built here).
    #[arg(long, value_enum, default_value = "jsonrpc")]
    binding: Binding,
}

/// What one worker saw.
#[derive(Default)]
struct Outcome {
    latencies: Vec<Duration>,
    completed_ids: Vec<String>,
    failures: Vec<String>,
}

/// Sends one task; returns its id if the answer is a COMPLETED task, else why not.
async fn send(client: &reqwest::Client, url: &str, text: &str) -> Result<String, String> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                    "parts": [{"text": text}]}}});
    let response = client
        .post(url)
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .map_err(|err| format!("transport: {err}"))?;
    let status = response.status();
    let reply: Value = response
        .json()
        .await
        .map_err(|err| format!("HTTP {status}, body not JSON: {err}"))?;
    let task = &reply["result"]["task"];
    match (task["status"]["state"].as_str(), task["id"].as_str()) {
        (Some("TASK_STATE_COMPLETED"), Some(id)) => Ok(id.to_string()),
        (Some(state), _) => Err(format!("task ended {state}")),
        _ => Err(format!("HTTP {status}, no task: {}", reply["error"])),
    }
}

/// Runs `concurrency` workers until `deadline` or until `requests` were sent.
async fn drive(
    target: &Target,
    text: &'static str,
    concurrency: usize,
    requests: Option<usize>,
    deadline: Instant,
) -> Outcome {
    let sent = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        let (target, sent) = (target.clone(), sent.clone());
        workers.push(tokio::spawn(async move {
            let mut outcome = Outcome::default();
            loop {
                let n = sent.fetch_add(1, Ordering::Relaxed);
                if requests.is_some_and(|r| n >= r) || Instant::now() >= deadline {
                    break;
                }
                let started = Instant::now();
                match target.send(text).await {
                    Ok(id) => {
                        outcome.latencies.push(started.elapsed());
                        outcome.completed_ids.push(id);
                    }
                    Err(reason) => outcome.failures.push(reason),
                }
            }
            outcome
        }));
    }
    let mut all = Outcome::default();
    for worker in workers {
        let mut mine = worker.await.expect("worker");
        all.latencies.append(&mut mine.latencies);
        all.completed_ids.append(&mut mine.completed_ids);
        all.failures.append(&mut mine.failures);
    }
    all
}

fn report(label: &str, mut outcome: Outcome, elapsed: Duration) -> Outcome {
    outcome.latencies.sort();
    let pct = |p: f64| -> f64 {
        let latencies = &outcome.latencies;
        if latencies.is_empty() {
            return 0.0;
        }
        let at = ((latencies.len() as f64 - 1.0) * p).round() as usize;
        latencies[at].as_secs_f64() * 1e3
    };
    println!(
        "{label}: {} completed, {} failed in {:.2} s: {:.0} requests/s, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        outcome.latencies.len(),
        outcome.failures.len(),
        elapsed.as_secs_f64(),
        outcome.latencies.len() as f64 / elapsed.as_secs_f64(),
        pct(0.50),
        pct(0.99),
        pct(1.0),
    );
    let mut reasons: Vec<&String> = outcome.failures.iter().collect();
    reasons.sort();
    reasons.dedup();
    for reason in reasons.iter().take(FAILURE_SAMPLES) {
        println!("  failure: {reason}");
    }
    outcome
}

/// Builds a harness on loopback with the chosen model and a fresh store, gRPC on a second port;
/// returns its URL, its gRPC target and the folder that holds its store (kept alive as long as
/// the run).
async fn start_harness(kind: ModelKind) -> (String, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let config_path = dir.path().join("config.toml");
    let (model_section, model): (String, Option<Arc<dyn Model>>) = match kind {
        ModelKind::Instant => (String::new(), Some(Arc::new(model::InstantModel))),
        ModelKind::Stub => {
            let stub = model::start_stub("127.0.0.1:0").await;
            let section = format!(
                "[model]\nprovider = \"openai\"\nbase_url = \"http://{stub}/v1\"\nmodel = \"stub\"\n"
            );
            (section, None)
        }
    };
    std::fs::write(
        &config_path,
        format!("[server]\nbind = \"127.0.0.1:0\"\ngrpc_bind = \"127.0.0.1:0\"\nrate_limit_per_minute = 0\n[store]\npath = \"load.db\"\n{model_section}"),
    )
    .expect("config written");
    let config = Config::load(&config_path).expect("config");
    let runtime = match model {
        Some(model) => Runtime::build_with_model(config, model).await,
        None => Runtime::build(config).await,
    }
    .expect("runtime");
    let url = format!("http://{}/", runtime.local_addr());
    let grpc = runtime
        .card(&url)
        .supported_interfaces
        .iter()
        .find(|interface| interface.protocol_binding == "GRPC")
        .map(|interface| interface.url.clone())
        .expect("the card lists gRPC");
    tokio::spawn(runtime.serve(std::future::pending()));
    (url, grpc, dir)
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    if let Some(bind) = &args.stub_only {
        let addr = model::start_stub(bind).await;
        println!("stub model: http://{addr}/v1/chat/completions");
        std::future::pending::<()>().await;
    }
    if let Some(bind) = &args.sink_only {
        let addr = sink::start_sink(bind).await;
        println!("trace sink: http://{addr}/v1/traces");
        std::future::pending::<()>().await;
    }
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.concurrency)
        .build()
        .expect("client");
    if let Some(path) = &args.verify {
        let url = args.url.as_deref().expect("--verify needs --url");
        let intact = durability::verify(&client, url, path).await;
        std::process::exit(if intact { 0 } else { 1 });
    }
    let (url, grpc_target, _store) = match &args.url {
        Some(url) => (url.clone(), None, None),
        None => {
            let (url, grpc, dir) = start_harness(args.model).await;
            (url, Some(grpc), Some(dir))
        }
    };
    let text = match args.scenario {
        Scenario::OneTurn => model::ONE_TURN_TEXT,
        Scenario::Delegating => model::DELEGATING_TEXT,
    };
    let mut targets = Vec::new();
    if args.binding != Binding::Grpc {
        targets.push(("jsonrpc", Target::Jsonrpc(client.clone(), url.clone())));
    }
    if args.binding != Binding::Jsonrpc {
        let target = grpc_target.expect("--binding grpc drives the harness built here, not --url");
        targets.push(("grpc", Target::Grpc(grpc::connect(&target).await)));
    }
    let mut outcome = Outcome::default();
    for (label, target) in targets {
        outcome = run(&args, &url, label, &target, text).await;
        if !outcome.failures.is_empty() && args.record.is_none() {
            std::process::exit(1);
        }
    }
    if let Some(path) = &args.record {
        durability::record(path, &outcome.completed_ids);
        println!(
            "loadgen: {} acknowledged task ids written to {}",
            outcome.completed_ids.len(),
            path.display()
        );
    }
}

/// Warms up, then drives `target` for the run's duration (or request count) and reports it.
async fn run(args: &Args, url: &str, label: &str, target: &Target, text: &'static str) -> Outcome {
    let far = Instant::now() + Duration::from_secs(3600);
    let warm = drive(target, text, args.concurrency, Some(args.warmup), far).await;
    if !warm.failures.is_empty() {
        println!("warm-up: {} of {} failed", warm.failures.len(), args.warmup);
    }
    let harness = if args.url.is_some() {
        url.to_string()
    } else {
        format!("{:?} model in this process", args.model)
    };
    println!(
        "loadgen: {:?} over {label}, concurrency {}, {}, harness {harness}",
        args.scenario,
        args.concurrency,
        match args.requests {
            Some(n) => format!("{n} requests"),
            None => format!("{} s", args.duration),
        }
    );
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.duration);
    let outcome = drive(target, text, args.concurrency, args.requests, deadline).await;
    report(&format!("loadgen {label}"), outcome, started.elapsed())
}
