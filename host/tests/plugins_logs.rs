//! A plugin's log through the real host and wasmtime, as the harness writes it: a 10 MB message
//! and a thousand more, full of forged records (newline, timestamp, level, carriage return,
//! terminal escape), come out escaped on the plugin's own records and capped per call; a plugin
//! over its rate is dropped, and told about when it logs again.

mod support {
    pub mod captured_logs;
    pub mod fixtures;
}

use std::time::{Duration, Instant};

use serde_json::json;
use support::captured_logs::CapturedLogs;
use support::fixtures;
use tiny_harness::config::Config;
use tiny_harness::engine::{ToolContext, ToolHost, ToolOutcome};
use tiny_harness::model::ToolCall;
use tiny_harness::plugins::{
    MAX_LOG_BYTES_PER_CALL, MAX_LOG_LINES_PER_CALL, PluginHost, PluginSettings,
};
use tiny_harness::protocol::types::TaskStatus;
use tiny_harness::records::extension::TaskExtension;
use tiny_harness::records::record::TaskRecord;
use tiny_harness::runtime::offline_prompt_context;

async fn call(host: &PluginHost, name: &str) -> ToolOutcome {
    let record = TaskRecord {
        id: "t".into(),
        context_id: "c".into(),
        status: TaskStatus::default(),
        artifacts: vec![],
        metadata: Default::default(),
        ext: TaskExtension::from_text("goal"),
        owner: "user".into(),
    };
    host.toolbox()
        .invoke(
            &ToolContext {
                record: &record,
                call_id: "c1",
                skills: &[],
            },
            &ToolCall {
                id: "c1".into(),
                name: name.into(),
                arguments: json!({}).to_string(),
            },
        )
        .await
}

/// The captured records of the plugin file `plugin`, from byte `from` on.
fn records_of(logs: &CapturedLogs, from: usize, plugin: &str) -> Vec<String> {
    logs.text()[from..]
        .lines()
        .filter(|line| line.ends_with(&format!("plugin={plugin}")))
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn a_log_flood_with_forged_records_comes_out_capped_and_escaped() {
    let logs = CapturedLogs::process_wide();
    let dir = fixtures::folder(&[("zoo", "flood.wasm")]);
    let settings = PluginSettings {
        dir: Some(dir.path().to_path_buf()),
        dir_required: true,
        ..PluginSettings::default()
    };
    let host = PluginHost::load(
        &settings,
        &offline_prompt_context(&Config::default()),
        std::sync::Arc::new(tiny_harness::engine::HostEffects::offline()),
    )
    .await
    .unwrap();

    let before = logs.len();
    let started = Instant::now();
    assert_eq!(call(&host, "zoo_log_flood").await.text(), "flooded");
    let took = started.elapsed();
    let text = logs.text()[before..].to_string();
    let records = records_of(&logs, before, "flood.wasm");
    eprintln!(
        "a 10 MB message and 1,000 more: {} bytes of log in {} records, in {took:?}",
        text.len(),
        records.len()
    );

    // Every line is a record the harness began: none starts with the forged timestamp, and no
    // raw carriage return or escape reached the log.
    let year = &text[..4];
    for line in text.lines() {
        assert!(
            line.starts_with(year),
            "a line the harness did not begin: {line}"
        );
    }
    assert!(!text.contains('\r') && !text.contains('\u{1b}'));
    assert!(
        records[0].contains(" INFO ")
            && records[0].contains(
                "\\n2030-01-01T00:00:00.000000Z  INFO tiny_harness::runtime: FORGED admin logged in\\r\\u{1b}[2K\\n2030"
            )
            && records[0].contains("… (cut: "),
        "{}",
        records[0]
    );

    // Capped: at most the call's lines (and one warning saying what was dropped) and bytes.
    assert!(
        records.len() <= MAX_LOG_LINES_PER_CALL + 1,
        "{}",
        records.len()
    );
    let warning = records.last().unwrap();
    assert!(
        warning.contains(" WARN ")
            && warning.contains("log lines (")
            && warning
                .contains("of one call were dropped: a call logs at most 100 lines and 64 KiB"),
        "{warning}"
    );
    let written: usize = records.iter().map(|r| r.len() + 1).sum();
    let per_record_overhead = 160;
    assert!(
        written <= MAX_LOG_BYTES_PER_CALL + records.len() * per_record_overhead,
        "{written} bytes"
    );

    // The plugin used its lines for this second: a second flood now is dropped whole, and the
    // next line a second later comes after one warning with the count.
    let before = logs.len();
    assert_eq!(call(&host, "zoo_log_flood").await.text(), "flooded");
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert_eq!(call(&host, "zoo_echo").await.text(), "echo: {}");
    let records = records_of(&logs, before, "flood.wasm");
    let dropped_whole = records.iter().filter(|r| r.contains("FORGED")).count();
    assert_eq!(dropped_whole, 0, "{records:#?}");
    assert!(
        records[0].contains(" WARN ")
            && records[0].contains(
                "log lines of this plugin were dropped: a plugin logs at most 100 lines a second"
            ),
        "{records:#?}"
    );
    assert!(
        records[1].contains(" INFO ") && records[1].contains("echoing"),
        "{records:#?}"
    );
}
