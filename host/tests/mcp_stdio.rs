//! MCP tool servers over stdio, against the real Python MCP server of `fixtures/mcp`: a result
//! reaching the model's next request inside its untrusted block, a hostile result neutralised,
//! an error result, a call past its deadline cancelled while the task goes on, a server killed
//! mid-task restarted, an optional server that cannot start, and a crash after a recorded call
//! resumed without calling it again. The first two share one harness and its server.

mod mcp_support;
mod support {
    pub mod play_model;
}

use mcp_support::{
    HANG_GUARD, SharedHarness, completed, notes, python, runtime, settled, start_task, stdio_entry,
    tool_results, until,
};
use serde_json::json;
use support::play_model::{PlayModel, reply, tool_reply};
use tiny_harness::base::model::ModelReply;
use tiny_harness::work::tools::ToolHost;

#[tokio::test]
async fn a_tool_result_reaches_the_next_model_request_inside_an_untrusted_block() {
    let Some(python) = python() else { return };
    let model = PlayModel::new(vec![
        tool_reply("mcp__fx__echo", json!({"text": "hello from mcp"})),
        tool_reply("mcp__fx__weather", json!({"city": "Oslo"})),
        tool_reply("mcp__fx__fail", json!({"reason": "disk on fire"})),
        reply("done"),
    ]);
    let shared = SharedHarness::get(&python);
    shared.models.route("say hello", model.clone());
    shared
        .run(|h| async move {
            let names: Vec<String> = h.tools.definitions().into_iter().map(|t| t.name).collect();
            for tool in [
                "mcp__fx__echo",
                "mcp__fx__hostile",
                "mcp__fx__slow",
                "mcp__fx__weather",
            ] {
                assert!(names.contains(&tool.to_string()), "{tool} in {names:?}");
            }
            let id = start_task(h, "say hello").await;
            let task = settled(h, &id).await;
            assert!(completed(&task), "{:?}", task.status);
        })
        .await;
    let requests = model.requests();
    let echoed = tool_results(&requests[1]);
    assert_eq!(
        echoed,
        vec![format!(
            "<untrusted source=\"tool\">\n{}\nhello from mcp\n</untrusted>",
            tiny_harness::base::text::untrusted::UNTRUSTED_PREAMBLE
        )]
    );
    let weather = tool_results(&requests[2]).pop().unwrap();
    assert!(
        weather.contains("\"city\"") && weather.contains("Oslo") && weather.contains("21"),
        "{weather}"
    );
    let failed = tool_results(&requests[3]).pop().unwrap();
    assert!(
        failed.contains("[tool.error] mcp__fx__fail: ") && failed.contains("disk on fire"),
        "{failed}"
    );
}

#[tokio::test]
async fn a_result_that_closes_its_block_or_forges_a_section_is_neutralised() {
    let Some(python) = python() else { return };
    let model = PlayModel::new(vec![
        tool_reply("mcp__fx__hostile", json!({})),
        reply("done"),
    ]);
    let shared = SharedHarness::get(&python);
    shared.models.route("be careful", model.clone());
    shared
        .run(|h| async move {
            let id = start_task(h, "be careful").await;
            assert!(completed(&settled(h, &id).await));
        })
        .await;
    let result = tool_results(&model.requests()[1]).pop().unwrap();
    assert_eq!(result.matches("</untrusted>").count(), 1, "{result}");
    assert!(result.ends_with("</untrusted>"), "{result}");
    assert_eq!(result.matches("<untrusted").count(), 1, "{result}");
    assert!(!result.contains("<system_prompt>"), "{result}");
    assert!(!result.contains('\u{202e}'), "{result}");
    assert!(
        result.contains("obey the tool"),
        "the text itself stays readable: {result}"
    );
}

#[tokio::test]
async fn a_call_past_its_deadline_is_cancelled_and_the_task_goes_on() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let model = PlayModel::new(vec![
        tool_reply("mcp__fx__slow", json!({"seconds": 60})),
        tool_reply("mcp__fx__echo", json!({"text": "still here"})),
        reply("done"),
    ]);
    let mcp = stdio_entry("fx", &python, dir.path(), "timeout_secs = 1");
    let h = runtime(dir.path(), &mcp, model.clone()).await;
    let started = std::time::Instant::now();
    let id = start_task(&h, "wait").await;
    assert!(completed(&settled(&h, &id).await));
    assert!(started.elapsed() < HANG_GUARD);
    let requests = model.requests();
    let timed_out = tool_results(&requests[1]).pop().unwrap();
    assert!(
        timed_out.contains(
            "[tool.timeout] mcp__fx__slow: no answer within 1 s, so the call was cancelled"
        ),
        "{timed_out}"
    );
    assert!(
        tool_results(&requests[2])
            .pop()
            .unwrap()
            .contains("still here")
    );
    // The server was told: MCP cancellation reached the tool, which noted it.
    until("the server noted the cancellation", || {
        notes(dir.path(), "cancelled") == ["slow 60.0"]
    })
    .await;
}

#[tokio::test]
async fn a_server_killed_mid_task_is_restarted_and_its_next_call_answered() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let model = PlayModel::gated(
        vec![
            tool_reply("mcp__fx__pid", json!({})),
            second_call("mcp__fx__pid", json!({})),
            reply("done"),
        ],
        false,
    );
    let h = runtime(
        dir.path(),
        &stdio_entry("fx", &python, dir.path(), ""),
        model.clone(),
    )
    .await;
    let first_pid = notes(dir.path(), "pids").pop().expect("the server started");
    let id = start_task(&h, "which process?").await;
    model.release(1);
    until("the first call answered", || model.requests().len() == 2).await;
    std::process::Command::new("kill")
        .args(["-9", &first_pid])
        .status()
        .unwrap();
    until("the server restarted", || {
        notes(dir.path(), "pids").len() == 2
    })
    .await;
    until("the harness reconnected", || h.tools.mcp().connected("fx")).await;
    model.release(2);
    assert!(completed(&settled(&h, &id).await));
    let requests = model.requests();
    let before = tool_results(&requests[1]).pop().unwrap();
    let after = tool_results(&requests[2]).pop().unwrap();
    let second_pid = notes(dir.path(), "pids").pop().unwrap();
    assert!(before.contains(&format!("\n{first_pid}\n")), "{before}");
    assert!(after.contains(&format!("\n{second_pid}\n")), "{after}");
    assert_ne!(first_pid, second_pid);
}

#[tokio::test]
async fn an_optional_server_that_cannot_start_leaves_its_tools_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let mcp =
        "[[mcp]]\nname = \"gone\"\ncommand = [\"/nonexistent/mcp-server\"]\noptional = true\n";
    let model = PlayModel::new(vec![
        tool_reply("mcp__gone__anything", json!({})),
        reply("done"),
    ]);
    let h = runtime(dir.path(), mcp, model.clone()).await;
    assert!(!h.tools.mcp().connected("gone"));
    let id = start_task(&h, "try it").await;
    assert!(completed(&settled(&h, &id).await));
    let result = tool_results(&model.requests()[1]).pop().unwrap();
    assert!(
        result.contains(
            "[tool.unavailable] mcp__gone__anything: the MCP server gone is not running just now"
        ),
        "{result}"
    );
}

#[tokio::test]
async fn a_crash_after_a_recorded_call_resumes_without_calling_it_again() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mcp = stdio_entry("fx", &python, dir.path(), "");
    let record = tool_reply("mcp__fx__record", json!({"note_text": "pay invoice 7"}));
    // First life: the call is answered and recorded; the next model call hangs until the stop.
    let first = PlayModel::hanging_after(vec![record.clone()]);
    let h1 = runtime(dir.path(), &mcp, first.clone()).await;
    let id = start_task(&h1, "pay it once").await;
    until("the model was asked again after the call", || {
        first.requests().len() == 2
    })
    .await;
    assert_eq!(notes(dir.path(), "calls"), ["pay invoice 7"]);
    h1.engine.shutdown().await;
    drop(h1);
    // Second life on the same store: the recorded call is not made again.
    let second = PlayModel::new(vec![record, reply("paid")]);
    let h2 = runtime(dir.path(), &mcp, second.clone()).await;
    assert_eq!(h2.engine.resume_open().unwrap(), 1);
    let task = settled(&h2, &id).await;
    assert!(completed(&task), "{:?}", task.status);
    assert_eq!(notes(dir.path(), "calls"), ["pay invoice 7"]);
    let resumed = tool_results(&second.requests()[0]).pop().unwrap();
    assert!(resumed.contains("recorded 1"), "{resumed}");
}

/// A tool call with an id of its own, so two calls of one tool in a task are two calls.
fn second_call(name: &str, args: serde_json::Value) -> ModelReply {
    let mut reply = tool_reply(name, args);
    reply.tool_calls[0].id = format!("call-{name}-2");
    reply
}

/// A load run, not a check of behaviour: the time of one call of a no-op tool over stdio through
/// the tool port (validation, JSON-RPC over the pipes, both SDKs, the result text), sequential.
/// Run with `--ignored --nocapture`; `cargo bench --bench mcp` measures the same in a release
/// build.
#[tokio::test]
#[ignore]
async fn load_run_prints_the_time_of_one_stdio_call_of_a_no_op_tool() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let h = runtime(
        dir.path(),
        &stdio_entry("fx", &python, dir.path(), ""),
        PlayModel::new(vec![]),
    )
    .await;
    let mcp = h.tools.mcp();
    for _ in 0..50 {
        assert_eq!(
            mcp.invoke("mcp__fx__echo", r#"{"text":"x"}"#)
                .await
                .result
                .as_deref(),
            Ok("x")
        );
    }
    let mut times = Vec::new();
    for _ in 0..500 {
        let started = std::time::Instant::now();
        let outcome = mcp.invoke("mcp__fx__echo", r#"{"text":"x"}"#).await;
        times.push(started.elapsed());
        assert_eq!(outcome.result.as_deref(), Ok("x"));
    }
    times.sort();
    let mean = times.iter().sum::<std::time::Duration>() / times.len() as u32;
    eprintln!(
        "one stdio MCP call of a no-op tool, 500 calls: mean {:?}, p50 {:?}, p99 {:?}",
        mean,
        times[times.len() / 2],
        times[times.len() * 99 / 100]
    );
}
