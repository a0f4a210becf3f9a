//! MCP tool servers over streamable HTTP (the real Python MCP server on 127.0.0.1:0), and the
//! operator's view: `harness check` and `harness plugins` listing MCP tools, and a required
//! server that cannot be reached stopping start-up with exit 2 naming its entry.

mod mcp_support;
mod support {
    pub mod harness_process;
    pub mod play_model;
}

use std::process::Command;

use mcp_support::{
    HttpServer, completed, python, quoted, runtime_with_env, settled, start_task, stdio_entry,
    tool_results,
};
use serde_json::json;
use support::harness_process::HARNESS;
use support::play_model::{PlayModel, reply, tool_reply};

/// Exit status of a start-up refused for its configuration (see `main.rs`).
const EXIT_CONFIG: i32 = 2;

#[tokio::test]
async fn a_streamable_http_server_answers_calls_and_check_lists_its_tools() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::start(&python, dir.path(), Some("t0ken"));
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
        &[("FIXTURE_TOKEN", "t0ken")],
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
        .env("FIXTURE_TOKEN", "t0ken")
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
