//! MCP tool servers over streamable HTTP (the real Python MCP server on 127.0.0.1:0), and the
//! operator's view: `harness check` and `harness plugins` listing MCP tools, a required server
//! that cannot be reached stopping start-up with exit 2 naming its entry, and an optional one
//! down at start-up joining once it answers.

mod mcp_support;
mod support {
    pub mod harness_process;
    pub mod play_model;
}

use std::process::Command;

use mcp_support::{
    Gate, SHARED_TOKEN, caller, completed, python, quoted, runtime_with_env, settled,
    shared_http_server, start_task, stdio_entry, tool_results, user_message,
};
use serde_json::json;
use support::harness_process::HARNESS;
use support::play_model::{PlayModel, reply, tool_reply};
use tiny_harness::state::tasks::TaskService;

/// Exit status of a start-up refused for its configuration (see `main.rs`).
const EXIT_CONFIG: i32 = 2;

#[tokio::test]
async fn a_streamable_http_server_answers_calls_and_check_lists_its_tools() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let server = shared_http_server(&python);
    let mcp = format!(
        "[[mcp]]\nname = \"web\"\nurl = \"{}\"\nheaders_env = {{ X-Fixture-Token = \"FIXTURE_TOKEN\" }}\ntools = [\"echo\", \"weather\"]\n",
        server.url
    );
    let model = PlayModel::new(vec![
        tool_reply("mcp__web__weather", json!({"city": "Lima"})),
        reply("done"),
    ]);
    let h = runtime_with_env(
        dir.path(),
        &mcp,
        model.clone(),
        &[("FIXTURE_TOKEN", SHARED_TOKEN)],
    )
    .await;
    let mcp_tools: Vec<String> = h
        .tools
        .mcp()
        .definitions()
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(
        mcp_tools,
        ["mcp__web__echo", "mcp__web__weather"],
        "the allowlist keeps two"
    );
    let id = start_task(&h, "weather?").await;
    assert!(completed(&settled(&h, &id).await));
    let result = tool_results(&model.requests()[1]).pop().unwrap();
    assert!(
        result.starts_with("<untrusted source=\"tool\">"),
        "{result}"
    );
    assert!(result.contains("Lima") && result.contains("21"), "{result}");
    drop(h);
    let config = dir.path().join("config.toml");
    let out = Command::new(HARNESS)
        .args(["check", "--config"])
        .arg(&config)
        .env("FIXTURE_TOKEN", SHARED_TOKEN)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!(
            "mcp:           web ({}): connected (MCP ",
            server.url
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("  tool:        mcp__web__echo\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  tool:        mcp__web__weather\n"),
        "{stdout}"
    );
}

#[test]
fn harness_plugins_and_context_show_stdio_mcp_tools_beside_the_plugins() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    let text = format!(
        "[store]\npath = \"harness.db\"\n{}",
        stdio_entry("fx", &python, dir.path(), "tools = [\"echo\"]")
    );
    std::fs::write(&config, text).unwrap();
    let plugins = Command::new(HARNESS)
        .args(["plugins", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&plugins.stdout);
    assert!(
        plugins.status.success(),
        "{}",
        String::from_utf8_lossy(&plugins.stderr)
    );
    assert!(
        stdout.starts_with("builtin"),
        "the plugins come first: {stdout}"
    );
    assert!(stdout.contains("\nmcp fx — "), "{stdout}");
    assert!(stdout.contains("  tools:    mcp__fx__echo\n"), "{stdout}");
    let context = Command::new(HARNESS)
        .args(["context", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&context.stdout);
    assert!(
        context.status.success(),
        "{}",
        String::from_utf8_lossy(&context.stderr)
    );
    assert!(stdout.contains("\"name\": \"mcp__fx__echo\""), "{stdout}");
    assert!(stdout.contains("\"name\": \"create_plan\""), "{stdout}");
}

#[test]
fn a_required_server_that_cannot_be_reached_stops_start_up_naming_its_entry() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        "command = [\"/nonexistent/mcp-server\"]".to_string(),
        // Nothing listens on port 1 of loopback.
        "url = \"http://127.0.0.1:1/mcp\"".to_string(),
    ];
    for case in cases {
        let config = dir.path().join("config.toml");
        let text = format!(
            "[server]\nbind = \"127.0.0.1:0\"\n[store]\npath = {}\n[[mcp]]\nname = \"fine\"\ncommand = [\"/nonexistent/too\"]\noptional = true\n[[mcp]]\nname = \"needed\"\n{case}\n",
            quoted(&dir.path().join("harness.db"))
        );
        std::fs::write(&config, text).unwrap();
        let started = std::time::Instant::now();
        let out = Command::new(HARNESS)
            .args(["serve", "--config"])
            .arg(&config)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(EXIT_CONFIG), "{case}: {stderr}");
        assert!(
            stderr.contains("error: mcp[1] (needed): "),
            "{case}: {stderr}"
        );
        assert!(stderr.contains("optional = true"), "{case}: {stderr}");
        eprintln!("{case}: refused in {:?}", started.elapsed());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_optional_server_down_at_start_up_joins_once_it_answers_and_its_tools_are_offered() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    // Nothing answers behind the gate until it is opened, after the harness started.
    let gate = Gate::start().await;
    let mcp = format!(
        "[[mcp]]\nname = \"late\"\nurl = \"http://{}/mcp\"\noptional = true\ntools = [\"weather\"]\nheaders_env = {{ X-Fixture-Token = \"FIXTURE_TOKEN\" }}\n",
        gate.address
    );
    let model = PlayModel::new(vec![
        tool_reply("mcp__late__weather", json!({"city": "Lima"})),
        reply("done"),
    ]);
    let h = runtime_with_env(
        dir.path(),
        &mcp,
        model.clone(),
        &[("FIXTURE_TOKEN", SHARED_TOKEN)],
    )
    .await;
    let tools = h.tools.clone();
    let tasks = h.tasks.clone();
    assert!(
        tools.mcp().definitions().is_empty(),
        "not offered while down"
    );
    assert!(!tools.mcp().summaries()[0].connected);
    let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(h.serve(async {
        let _ = stopped.await;
    }));

    // The server (shared with the other tests of this file) becomes reachable only now.
    let server = shared_http_server(&python);
    gate.open(&server.url);
    let started = std::time::Instant::now();
    // The retries wait 1, 2, 4, 8 … s: the join comes within a few of them once it answers.
    let deadline = mcp_support::HANG_GUARD * 3;
    tokio::time::timeout(deadline, async {
        while tools.mcp().definitions().is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the late server's tools joined in time");
    eprintln!("joined {:?} after the server answered", started.elapsed());
    let summary = &tools.mcp().summaries()[0];
    assert!(summary.connected, "{summary:?}");
    assert_eq!(summary.tools, ["mcp__late__weather"]);
    assert_eq!(summary.transport, format!("http://{}/mcp", gate.address));

    let sent = tasks
        .send_message(&caller(), user_message("weather?"))
        .await
        .unwrap();
    let id = sent.snapshot.id.clone();
    let task = tokio::time::timeout(mcp_support::HANG_GUARD, async {
        loop {
            let task = tasks.get_task(&caller(), &id, None).await.unwrap();
            if task.status.state.is_settled() {
                return task;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the task settled in time");
    assert!(completed(&task), "{task:?}");
    let requests = model.requests();
    let offered: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert!(offered.contains(&"mcp__late__weather"), "{offered:?}");
    assert!(
        offered.contains(&"create_plan"),
        "the plugins' tools stay: {offered:?}"
    );
    let result = tool_results(&requests[1]).pop().unwrap();
    assert!(result.contains("Lima") && result.contains("21"), "{result}");
}
