//! The MCP example (`examples/mcp/`) run as its README runs it: `harness serve` on a copy of the
//! example's configuration, script and server (so the notebook is written to a temporary
//! folder), with the MCP venv's `python` first on PATH; a message is answered with what the
//! notebook server said, and the note is in the notebook.

mod mcp_support;
mod support {
    pub mod harness_process;
}

use std::path::Path;

use serde_json::{Value, json};

#[test]
fn the_mcp_example_notes_what_it_is_told_through_its_mcp_server() {
    let Some(python) = mcp_support::python() else {
        return;
    };
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/mcp");
    let dir = tempfile::tempdir().unwrap();
    for file in ["notes_server.py", "script.toml"] {
        std::fs::copy(example.join(file), dir.path().join(file)).unwrap();
    }
    let config = std::fs::read_to_string(example.join("config.toml"))
        .unwrap()
        .replace("127.0.0.1:8080", "127.0.0.1:0");
    let path = dir.path().join("config.toml");
    std::fs::write(&path, config).unwrap();
    let venv_bin = python.parent().unwrap().display().to_string();
    let search = format!("{venv_bin}:{}", std::env::var("PATH").unwrap_or_default());
    let (mut harness, url) = support::harness_process::serve_with_env(&path, &[("PATH", &search)]);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Remind me to call the plumber"}]}}});
    let answer: Result<Value, String> = (|| {
        let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
        runtime.block_on(async {
            reqwest::Client::new()
                .post(format!("{url}/"))
                .header("A2A-Version", "1.0")
                .json(&body)
                .timeout(mcp_support::HANG_GUARD)
                .send()
                .await
                .map_err(|e| e.to_string())?
                .json::<Value>()
                .await
                .map_err(|e| e.to_string())
        })
    })();
    let _ = harness.kill();
    let _ = harness.wait();
    let answer = answer.unwrap();
    let task = &answer["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    assert_eq!(
        task["status"]["message"]["parts"][0]["text"],
        "noted; the notebook holds 1 notes"
    );
    let notes = std::fs::read_to_string(dir.path().join("notes.json")).unwrap();
    assert!(notes.contains("Call the plumber on Monday"), "{notes}");
}
