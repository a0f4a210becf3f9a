//! The cost of one MCP tool call over stdio: a no-op tool (`echo`) of the Python fixture server
//! (the official `mcp` package, interop/setup.sh) called through the harness's tool port, so the
//! figure is the round trip beyond the tool's own work: argument validation, JSON-RPC over the
//! child's pipes, the SDK's dispatch on both sides, and turning the result into the model's text.
//! Skipped (with a note) when the venv is missing.

use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use tiny_harness::base::config::Config;
use tiny_harness::work::mcp::McpTools;

fn mcp_call(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join("../interop/python/.venv-mcp/bin/python");
    if !python.exists() {
        eprintln!("mcp bench skipped: run interop/setup.sh to install the `mcp` package");
        return;
    }
    let notes = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "[[mcp]]\nname = \"fx\"\ncommand = [{:?}, {:?}, \"stdio\"]\nenv = {{ MCP_FIXTURE_DIR = {:?} }}\n",
        python.display().to_string(),
        root.join("tests/fixtures/mcp/server.py")
            .display()
            .to_string(),
        notes.path().display().to_string()
    );
    let config = Config::parse(&text, Path::new("config.toml")).expect("config");
    let runtime = tokio::runtime::Runtime::new().expect("tokio");
    let tools = runtime
        .block_on(McpTools::connect(&config.mcp, |p| p.to_path_buf(), &|_| {
            None
        }))
        .expect("the fixture server connects");
    c.bench_function("mcp_stdio_call_noop_tool", |b| {
        b.to_async(&runtime).iter(|| async {
            let outcome = tools.invoke("mcp__fx__echo", r#"{"text":"x"}"#).await;
            assert_eq!(outcome.result.as_deref(), Ok("x"));
        })
    });
    drop(tools);
}

criterion_group!(benches, mcp_call);
criterion_main!(benches);
