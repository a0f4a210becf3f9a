//! Plugins cannot stall the server: a call that runs past its first epoch tick goes on on the
//! plugin threads (`plugin-*`), so while four plugin calls spin the agent card and another task
//! still answer over HTTP, and the spinning burns the plugin threads' CPU; canceling their tasks
//! ends them;
//! and the host's own network work for a plugin (creating a sub-task over A2A) runs on the
//! server's threads, not the plugin threads.

mod delegation_support;
mod support {
    pub mod captured_logs;
    pub mod fixtures;
}

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use delegation_support::*;
use support::captured_logs::CapturedLogs;
use support::fixtures;
use tiny_harness::base::model::ModelRequest;
use tiny_harness::base::protocol::types::TaskState;
use tiny_harness::work::plugins::THREAD_NAME_PREFIX;

/// Each call's deadline: the longest the configuration allows (ten minutes), so the spinning
/// calls are still spinning when the card and the other task have answered, however busy the
/// machine; the test ends them by canceling their tasks.
const SPIN_MS: u64 = 600_000;

/// Calls the zoo tool the task's goal names (`zoo_spin`, `zoo_echo`), or, for the goal
/// `delegate`, gives `self` a sub-task whose goal is `zoo_echo`; then answers with what it got.
fn zoo_model() -> Arc<FnModel> {
    FnModel::new(|request: &ModelRequest| {
        let delegating = has_goal(request, "delegate");
        if let Some(note) = last_note(request) {
            return Answer::Reply(text(&format!("from the sub-task: {note}")));
        }
        if let Some(result) = last_tool_result(request) {
            if delegating {
                return Answer::Reply(text("waiting for the sub-task"));
            }
            return Answer::Reply(text(&format!("tool said: {result}")));
        }
        if delegating {
            return Answer::Reply(tool(
                "spawn_subtask",
                json!({
                    "name": "echo",
                    "goal": "zoo_echo",
                    "acceptance_criteria": ["echoes"],
                    "agent": "self",
                }),
            ));
        }
        let name = ["zoo_spin", "zoo_echo"]
            .into_iter()
            .find(|name| has_goal(request, name))
            .unwrap_or("zoo_echo");
        Answer::Reply(tool(name, json!({})))
    })
}

async fn zoo_node(plugins: &tempfile::TempDir) -> Node {
    let config = format!(
        "[plugins]\ndir = \"{}\"\ncall_timeout_ms = {SPIN_MS}\nthreads = 2\n",
        plugins.path().display()
    );
    Node::start(&config, zoo_model()).await
}

/// The thread a captured log line was written on (`… INFO plugin-0 target: …`).
fn thread_of(line: &str) -> &str {
    line.split_whitespace().nth(2).unwrap_or_default()
}

/// The captured lines holding `marker`.
fn lines_with(logs: &CapturedLogs, marker: &str) -> Vec<String> {
    logs.text()
        .lines()
        .filter(|line| line.contains(marker))
        .map(str::to_string)
        .collect()
}

/// The CPU time the plugin threads (`plugin-0`, `plugin-1`, …) have used, from
/// `/proc/self/task/*/stat` (10 ms ticks).
fn plugin_threads_cpu() -> Duration {
    let mut ticks = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue; // The thread ended while the folder was read.
        };
        let Some((name, fields)) = stat
            .split_once(" (")
            .and_then(|(_, rest)| rest.rsplit_once(") "))
        else {
            continue;
        };
        let numbered = name
            .strip_prefix(THREAD_NAME_PREFIX)
            .is_some_and(|n| n.parse::<usize>().is_ok());
        if numbered {
            let fields: Vec<&str> = fields.split(' ').collect();
            ticks += fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        }
    }
    Duration::from_millis(ticks * 10)
}

/// The slowest of five fetches of the agent card, each answered 200.
async fn card_latency(http: &reqwest::Client, url: &str) -> Duration {
    let mut slowest = Duration::ZERO;
    for _ in 0..5 {
        let started = Instant::now();
        let response = http.get(url).send().await.unwrap();
        assert_eq!(response.status(), 200);
        response.bytes().await.unwrap();
        slowest = slowest.max(started.elapsed());
    }
    slowest
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_four_plugin_calls_spin_the_card_and_another_task_answer() {
    let logs = CapturedLogs::process_wide();
    let plugins = fixtures::folder(&[("zoo", "zoo.wasm")]);
    let node = zoo_node(&plugins).await;
    let http = reqwest::Client::new();
    let card = format!("{}/.well-known/agent-card.json", node.url);
    let at_rest = card_latency(&http, &card).await;

    let mut spins = Vec::new();
    for _ in 0..4 {
        spins.push(node.send("zoo_spin", true).await.id);
    }
    // Each guest logs once before it spins: then all four are inside the plugin.
    let hang_guard = Instant::now() + Duration::from_secs(60);
    while lines_with(&logs, "zoo_spin: spinning").len() < 4 {
        assert!(Instant::now() < hang_guard, "the four calls never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Each call's first slice ran on its task's thread; past the first epoch tick the spinning
    // goes on on the plugin threads, which burn CPU for it.
    let spun_before = plugin_threads_cpu();
    while plugin_threads_cpu() < spun_before + Duration::from_millis(300) {
        assert!(
            Instant::now() < hang_guard,
            "the spinning calls did not move to the plugin threads"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let busy = card_latency(&http, &card).await;
    let other = node.send("zoo_echo", false).await;
    assert_eq!(other.status.state, TaskState::Completed, "{other:?}");
    assert!(answer(&other).contains("echo: {}"), "{}", answer(&other));
    for id in &spins {
        let spin = node.client.get_task(id, None).await.unwrap();
        assert_eq!(
            spin.status.state,
            TaskState::Working,
            "the card and the other task answered while the four calls were still spinning"
        );
    }
    eprintln!(
        "agent card, slowest of 5 fetches: {at_rest:?} at rest, {busy:?} while four plugin calls spin"
    );

    // Canceling a task abandons its spinning call, which stops at its next epoch tick.
    for id in &spins {
        let canceled = node.client.cancel_task(id).await.unwrap();
        assert_eq!(canceled.status.state, TaskState::Canceled, "{canceled:?}");
    }
    let after = node.send("zoo_echo", false).await;
    assert_eq!(after.status.state, TaskState::Completed, "{after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_task_a_plugin_creates_is_sent_from_the_server_threads() {
    let logs = CapturedLogs::process_wide();
    let plugins = fixtures::folder(&[("zoo", "zoo.wasm")]);
    let node = zoo_node(&plugins).await;

    let parent = node.send("delegate", true).await;
    let done = wait_for(&node.client, &parent.id, is_terminal).await;
    assert_eq!(done.status.state, TaskState::Completed, "{done:?}");
    assert!(answer(&done).contains("echo: {}"), "{}", answer(&done));

    let child = sub_tasks(&done)[0]["task_id"].as_str().unwrap().to_string();
    let created = lines_with(&logs, &format!("child={child}"))
        .into_iter()
        .find(|line| line.contains("sub-task created"))
        .expect("the sub-task's creation is logged");
    assert!(
        !thread_of(&created).starts_with(THREAD_NAME_PREFIX),
        "the A2A request ran on a plugin thread: {created}"
    );
}
