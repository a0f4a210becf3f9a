//! A plugin's log through the real host and wasmtime, as the harness writes it: a 10 MB message
//! and a thousand more, full of forged records (newline, timestamp, level, carriage return,
//! terminal escape), come out escaped on the plugin's own records and capped per call; a second
//! flood stays within the plugin's rate and every line it loses is said.

mod support {
    pub mod captured_logs;
    pub mod fixtures;
}

use std::time::{Duration, Instant};

use serde_json::json;
use support::captured_logs::CapturedLogs;
use support::fixtures;
use tiny_harness::app::runtime::offline_prompt_context;
use tiny_harness::base::config::Config;
use tiny_harness::base::model::ToolCall;
use tiny_harness::base::protocol::types::TaskStatus;
use tiny_harness::state::records::extension::TaskExtension;
use tiny_harness::state::records::record::TaskRecord;
use tiny_harness::work::engine::{ToolContext, ToolHost, ToolOutcome};
use tiny_harness::work::plugins::{
    MAX_LOG_BYTES_PER_CALL, MAX_LOG_LINES_PER_CALL, MAX_LOG_LINES_PER_SECOND, PluginHost,
    PluginSettings,
};

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
        std::sync::Arc::new(tiny_harness::work::engine::HostEffects::offline()),
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

    // A second flood right after the first. How much of it the plugin's rate (100 lines a
    // second, all its calls together) lets through depends on how soon after the first it
    // comes, which this test cannot fix: the window is wall-clock time (the exact window is
    // pinned by plugin_log's unit tests, on a clock of their own). What holds however busy the
    // machine: the two floods write no more lines than the windows that can have opened meanwhile
    // allow, and no line goes unaccounted: each is written, or cut and said in its record, or
    // dropped by the call's caps and said when the call ends, or dropped by the rate and said
    // when the plugin next logs, once the window is over.
    let before = logs.len();
    assert_eq!(call(&host, "zoo_log_flood").await.text(), "flooded");
    let span = started.elapsed();
    let both_floods_lines = written_lines(&records_of(&logs, 0, "flood.wasm"));
    // The window is one second; sleeping past it is a lower bound no load can shorten.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert_eq!(call(&host, "zoo_echo").await.text(), "echo: {}");
    let mut records = records_of(&logs, before, "flood.wasm");
    let last = records.pop().unwrap();
    assert!(
        last.contains(" INFO ") && last.ends_with("echoing plugin=flood.wasm"),
        "the plugin logs again once the window is over: {last}"
    );

    let windows = span.as_secs() as usize + 1;
    assert!(
        both_floods_lines <= MAX_LOG_LINES_PER_SECOND * windows,
        "{both_floods_lines} lines written in {span:?}"
    );
    let accounted = written_lines(&records)
        + said_after(&records, "… (cut: ", " more bytes, ", " more lines)")
        + said_before(&records, " more log lines (", "of one call were dropped")
        + said_before(
            &records,
            " log lines of this plugin were dropped",
            "a plugin logs at most 100 lines a second",
        );
    assert_eq!(
        accounted,
        flood_lines(),
        "every line of the second flood is written or said dropped: {records:#?}"
    );
}

/// The forged record the zoo fixture's `zoo_log_flood` writes: once a little over 10 MiB of it
/// in one message, then a thousand times one message each (its source, host/tests/fixtures/zoo).
const FORGED: &str =
    "\n2030-01-01T00:00:00.000000Z  INFO tiny_harness::runtime: FORGED admin logged in\r\u{1b}[2K";

/// The lines one `zoo_log_flood` call logs, as the harness counts them (a message's lines are
/// its newlines plus one).
fn flood_lines() -> usize {
    let (mut bytes, mut copies) = (0, 0);
    while bytes < 10 * 1024 * 1024 {
        bytes += FORGED.len();
        copies += 1;
    }
    let per_message = 1 + FORGED.matches('\n').count();
    (1 + copies) + 1_000 * per_message
}

/// Whether a record is the harness's own note about what a plugin's log lost.
fn is_note(record: &str) -> bool {
    record.contains(" were dropped: a ")
}

/// The plugin's lines written in `records`: each record's escaped newlines plus one.
fn written_lines(records: &[String]) -> usize {
    records
        .iter()
        .filter(|r| !is_note(r))
        .map(|r| 1 + r.matches("\\n").count())
        .sum()
}

/// The sum of the counts the records state between `start` and `end`, after `marker`.
fn said_after(records: &[String], marker: &str, start: &str, end: &str) -> usize {
    records
        .iter()
        .filter_map(|r| r.split_once(marker).map(|(_, said)| said))
        .map(|said| {
            let (_, rest) = said.split_once(start).unwrap();
            rest.split_once(end).unwrap().0.parse::<usize>().unwrap()
        })
        .sum()
}

/// The sum of the counts the notes holding `also` state just before `marker`.
fn said_before(records: &[String], marker: &str, also: &str) -> usize {
    records
        .iter()
        .filter(|r| r.contains(also))
        .map(|r| {
            let (head, _) = r.split_once(marker).unwrap();
            head.rsplit(' ').next().unwrap().parse::<usize>().unwrap()
        })
        .sum()
}
