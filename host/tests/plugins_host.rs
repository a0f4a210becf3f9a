//! The plugin host with real components through wasmtime: the builtin alone, plugins that
//! override and extend sections (golden prompts), start-up errors naming the plugin file, the
//! sandbox (traps, deadlines, memory, files, environment), schema validation and the compile
//! cache with its checks.

mod support {
    pub mod captured_logs;
    pub mod fixtures;
}

use std::time::Duration;

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
    COPY_INIT_MAX_BYTES, CacheOutcome, CallLimits, PluginHost, PluginSettings,
};

fn settings(dir: Option<&std::path::Path>) -> PluginSettings {
    PluginSettings {
        dir: dir.map(|d| d.to_path_buf()),
        dir_required: true,
        cache_dir: None,
        limits: CallLimits {
            memory_bytes: 64 * 1024 * 1024,
            deadline: Duration::from_millis(1000),
        },
        ..PluginSettings::default()
    }
}

async fn load(dir: Option<&std::path::Path>) -> Result<PluginHost, String> {
    PluginHost::load(
        &settings(dir),
        &offline_prompt_context(&Config::default()),
        std::sync::Arc::new(tiny_harness::work::engine::HostEffects::offline()),
    )
    .await
    .map_err(|err| err.to_string())
}

fn record() -> TaskRecord {
    TaskRecord {
        id: "t".into(),
        context_id: "c".into(),
        status: TaskStatus::default(),
        artifacts: vec![],
        metadata: Default::default(),
        ext: TaskExtension::from_text("goal"),
        owner: "user".into(),
    }
}

async fn call(host: &PluginHost, name: &str, arguments: serde_json::Value) -> ToolOutcome {
    host.toolbox()
        .invoke(
            &ToolContext {
                record: &record(),
                call_id: "c1",
                skills: &[],
            },
            &ToolCall {
                id: "c1".into(),
                name: name.into(),
                arguments: arguments.to_string(),
            },
        )
        .await
}

/// [`call`], run before its model call is journaled: `None` when it asked for a child.
async fn call_in_process(
    host: &PluginHost,
    name: &str,
    arguments: serde_json::Value,
) -> Option<ToolOutcome> {
    host.toolbox()
        .invoke_in_process(
            &ToolContext {
                record: &record(),
                call_id: "c1",
                skills: &[],
            },
            &ToolCall {
                id: "c1".into(),
                name: name.into(),
                arguments: arguments.to_string(),
            },
        )
        .await
}

#[tokio::test]
async fn a_call_run_before_it_is_journaled_has_its_outcome_unless_it_asks_for_a_child() {
    let host = load(None).await.unwrap();
    let plan = json!({"steps": [{"name": "Add", "description": "add the numbers"}]});
    let early = call_in_process(&host, "create_plan", plan.clone())
        .await
        .expect("a plan stays in the process");
    assert_eq!(early, call(&host, "create_plan", plan).await);
    assert_eq!(early.effects.len(), 1, "{early:?}");

    let child = json!({"name": "Add", "goal": "Add 2 and 2", "acceptance_criteria": ["a sum"]});
    assert_eq!(
        call_in_process(&host, "spawn_subtask", child).await,
        None,
        "a call that asks for a child runs once it is journaled"
    );
    // Refused before it asks: the host's checks answer as they would at any time.
    let unknown = json!({"name": "Add", "goal": "Add", "acceptance_criteria": ["a sum"],
        "agent": "nobody"});
    let refused = call_in_process(&host, "spawn_subtask", unknown.clone())
        .await
        .expect("an unknown agent is refused in the process");
    assert_eq!(refused, call(&host, "spawn_subtask", unknown).await);
    assert!(
        refused.text().starts_with("[agent.unknown]"),
        "{}",
        refused.text()
    );
}

#[tokio::test]
async fn the_builtin_alone_gives_the_default_prompt_and_the_intrinsic_tools() {
    let host = load(None).await.unwrap();
    assert_eq!(
        host.prompt().render(),
        include_str!("golden/default_prompt.md").trim_end()
    );
    let agents = host
        .prompt()
        .sections()
        .iter()
        .find(|(name, _)| name == "agents")
        .map(|(_, body)| body.clone())
        .expect("an agents section");
    assert_eq!(
        agents,
        include_str!("golden/agents_guidance.md").trim_end(),
        "the delegation guidance (R2.1, R7.7)"
    );
    let spawn = host
        .toolbox()
        .definitions()
        .into_iter()
        .find(|t| t.name == "spawn_subtask")
        .expect("spawn_subtask");
    assert_eq!(
        spawn.parameters["properties"]["agent"]["description"],
        tiny_harness::work::agents::AGENT_PARAMETER_DESCRIPTION,
        "R2.2: the agent parameter says the valid ids are the ones listed under agents"
    );
    assert_eq!(
        spawn.parameters["properties"]["model"]["description"],
        tiny_harness::work::agents::MODEL_PARAMETER_DESCRIPTION,
        "the model parameter says the valid names are the ones listed under self"
    );
    let tools: Vec<String> = host
        .toolbox()
        .definitions()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(
        tools,
        [
            "ask_participant",
            "complete_step",
            "create_plan",
            "create_task_for_participant",
            "list_skills",
            "load_skill",
            "message_subtask",
            "set_participant_role",
            "spawn_subtask",
            "unload_skill"
        ]
    );
}

#[tokio::test]
async fn plugins_override_and_extend_sections_in_file_name_order() {
    let dir = fixtures::folder(&[
        ("extend-rules", "20-extend.wasm"),
        ("override-role", "10-override.wasm"),
    ]);
    let host = load(Some(dir.path())).await.unwrap();
    assert_eq!(
        host.prompt().render(),
        include_str!("golden/prompt_with_plugins.md").trim_end()
    );
    let files: Vec<String> = host.summaries().into_iter().map(|s| s.file).collect();
    assert_eq!(files, ["builtin", "10-override.wasm", "20-extend.wasm"]);
}

#[tokio::test]
async fn an_edit_of_a_missing_section_stops_start_up_naming_the_plugin() {
    let dir = fixtures::folder(&[("bad-section", "30-bad.wasm")]);
    let err = load(Some(dir.path())).await.err().unwrap();
    assert_eq!(
        err,
        "[prompt.invalid] plugin 30-bad.wasm: there is no section \"tone\" to extend; sections: role, task, participants, tools, skills, agents, rules"
    );
}

#[tokio::test]
async fn a_section_body_holding_a_host_tag_stops_start_up_naming_the_plugin_and_the_section() {
    let dir = fixtures::folder(&[("forged-tag", "40-forged.wasm")]);
    let err = load(Some(dir.path())).await.err().unwrap();
    assert_eq!(
        err,
        "[prompt.invalid] plugin 40-forged.wasm: section \"house\" contains \"</system_prompt>\", a tag the host uses; a plugin's section may not open or close one; to refer to a section, write its name without angle brackets (the task section)"
    );
}

#[tokio::test]
async fn a_tool_name_defined_twice_names_both_files() {
    let dir = fixtures::folder(&[("zoo", "a.wasm"), ("zoo", "b.wasm")]);
    let err = load(Some(dir.path())).await.err().unwrap();
    assert_eq!(
        err,
        "tool \"zoo_echo\" is defined by both a.wasm and b.wasm; tool names must be unique"
    );
}

#[tokio::test]
async fn a_file_that_is_not_a_component_stops_start_up_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("junk.wasm"), b"not wasm at all").unwrap();
    let err = load(Some(dir.path())).await.err().unwrap();
    assert!(
        err.starts_with("plugin junk.wasm: cannot load: not a valid component"),
        "{err}"
    );
}

#[tokio::test]
async fn a_named_plugins_folder_that_does_not_exist_is_an_error() {
    let err = load(Some(std::path::Path::new("/nonexistent/plugins")))
        .await
        .err()
        .unwrap();
    assert!(
        err.starts_with("plugins.dir: cannot read /nonexistent/plugins"),
        "{err}"
    );
}

#[tokio::test]
async fn a_plugin_tool_runs_and_its_host_errors_reach_the_model() {
    let dir = fixtures::folder(&[("zoo", "zoo.wasm")]);
    let host = load(Some(dir.path())).await.unwrap();
    let echo = call(&host, "zoo_echo", json!({"text": "hi"})).await;
    assert_eq!(echo.text(), "echo: {\"text\":\"hi\"}");
    let step = call(&host, "zoo_step", json!({})).await;
    assert_eq!(
        step.text(),
        "[plan.missing] there is no plan; create one with create_plan"
    );
    assert!(step.effects.is_empty());
}

#[tokio::test]
async fn arguments_are_validated_against_the_schema_before_the_plugin_runs() {
    let host = load(None).await.unwrap();
    let outcome = call(&host, "create_plan", json!({"steps": []})).await;
    assert!(
        outcome
            .text()
            .starts_with("[tool.invalid_arguments] create_plan: /steps: []"),
        "{}",
        outcome.text()
    );
    let unknown = call(&host, "fly", json!({})).await;
    assert!(
        unknown
            .text()
            .starts_with("[tool.not_found] no tool named \"fly\"; tools: ask_participant"),
        "{}",
        unknown.text()
    );
}

#[tokio::test]
async fn a_trap_a_spin_and_a_memory_hog_each_fail_clearly_within_the_deadline() {
    let dir = fixtures::folder(&[("zoo", "zoo.wasm")]);
    let host = load(Some(dir.path())).await.unwrap();
    let trap = call(&host, "zoo_trap", json!({})).await;
    assert!(
        trap.text()
            .starts_with("[plugin.failed] plugin zoo.wasm failed in zoo_trap: it trapped"),
        "{}",
        trap.text()
    );
    // The guest spins for ever: only the deadline ends the call, long before the guard.
    let spin = tokio::time::timeout(Duration::from_secs(30), call(&host, "zoo_spin", json!({})))
        .await
        .expect("the deadline was enforced");
    assert_eq!(
        spin.text(),
        "[plugin.failed] plugin zoo.wasm failed in zoo_spin: it ran past its 1000 ms deadline (plugins.call_timeout_ms)"
    );
    let hog = call(&host, "zoo_hog", json!({})).await;
    assert_eq!(
        hog.text(),
        "[plugin.failed] plugin zoo.wasm failed in zoo_hog: it tried to use more than 64 MiB of memory (plugins.memory_mb)"
    );
    // The same plugin still works after each failure: every call gets a fresh instance.
    assert!(call(&host, "zoo_echo", json!({})).await.result.is_ok());
}

/// `bytes` with a custom section of `size` bytes appended: the same component, bigger.
fn padded(mut bytes: Vec<u8>, size: usize) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    let name = b"padding";
    let mut body = Vec::new();
    leb(name.len(), &mut body);
    body.extend_from_slice(name);
    body.resize(body.len() + size, 0);
    bytes.push(0);
    leb(body.len(), &mut bytes);
    bytes.extend_from_slice(&body);
    bytes
}

#[tokio::test]
async fn a_big_plugin_whose_memory_image_is_mapped_keeps_the_same_sandbox() {
    // Small components get their memory image copied at each call, big ones mapped
    // copy-on-write: the same plugin on either side answers and fails the same way.
    let bytes = std::fs::read(fixtures::wasm("zoo")).unwrap();
    assert!(bytes.len() < COPY_INIT_MAX_BYTES, "the fixture is small");
    let big = padded(bytes, COPY_INIT_MAX_BYTES);
    assert!(big.len() > COPY_INIT_MAX_BYTES);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("zoo.wasm"), &big).unwrap();
    let host = load(Some(dir.path())).await.unwrap();
    for _ in 0..3 {
        let echo = call(&host, "zoo_echo", json!({"text": "hi"})).await;
        assert_eq!(echo.text(), "echo: {\"text\":\"hi\"}");
    }
    let hog = call(&host, "zoo_hog", json!({})).await;
    assert_eq!(
        hog.text(),
        "[plugin.failed] plugin zoo.wasm failed in zoo_hog: it tried to use more than 64 MiB of memory (plugins.memory_mb)"
    );
    let trap = call(&host, "zoo_trap", json!({})).await;
    assert!(
        trap.text()
            .starts_with("[plugin.failed] plugin zoo.wasm failed in zoo_trap: it trapped"),
        "{}",
        trap.text()
    );
    let echo = call(&host, "zoo_echo", json!({"text": "after"})).await;
    assert_eq!(echo.text(), "echo: {\"text\":\"after\"}");
}

#[tokio::test]
async fn every_call_gets_fresh_memory_however_many_run_at_once_or_are_abandoned() {
    // Instances of small plugins come from a pool with a slot per call allowed in flight; a
    // slot's memory is reset and the image copied in again, so no call sees what another left.
    let dir = fixtures::folder(&[("zoo", "zoo.wasm")]);
    // More threads than calls in flight, so an abandoned spin still holds its instance (until
    // its next yield) while new calls start on the other threads.
    // A spin's deadline far past its 20 ms caller, so it is always abandoned, never finished.
    let mut settings = PluginSettings {
        max_concurrent_calls: 2,
        threads: 4,
        ..settings(Some(dir.path()))
    };
    settings.limits.deadline = Duration::from_secs(600);
    let host = PluginHost::load(
        &settings,
        &offline_prompt_context(&Config::default()),
        std::sync::Arc::new(tiny_harness::work::engine::HostEffects::offline()),
    )
    .await
    .unwrap();
    for _ in 0..5 {
        assert_eq!(call(&host, "zoo_count", json!({})).await.text(), "call 1");
    }
    // Two spinning calls abandoned by their callers, then more calls at once than are allowed
    // in flight: an abandoned call keeps its permit until its instance is gone, so every call
    // finds a slot.
    for _ in 0..5 {
        let abandoned = (0..2).map(|_| {
            tokio::time::timeout(
                Duration::from_millis(20),
                call(&host, "zoo_spin", json!({})),
            )
        });
        for outcome in futures::future::join_all(abandoned).await {
            assert!(outcome.is_err(), "the spin was abandoned, not finished");
        }
        let counts = (0..12).map(|_| call(&host, "zoo_count", json!({})));
        for outcome in futures::future::join_all(counts).await {
            assert_eq!(outcome.text(), "call 1");
        }
    }
}

#[tokio::test]
async fn a_plugin_sees_no_files_and_no_environment() {
    let dir = fixtures::folder(&[("zoo", "zoo.wasm")]);
    let host = load(Some(dir.path())).await.unwrap();
    let file = call(&host, "zoo_read_file", json!({})).await;
    assert!(file.text().starts_with("no file:"), "{}", file.text());
    assert_eq!(
        call(&host, "zoo_env", json!({})).await.text(),
        "env vars: 0"
    );
}

#[tokio::test]
async fn a_spinning_plugin_does_not_stop_other_calls() {
    let dir = fixtures::folder(&[("zoo", "zoo.wasm")]);
    let mut long = settings(Some(dir.path()));
    // Far past the guard below: the spin is still in flight when the echo calls are done, however
    // busy the machine; the test abandons it at the end.
    long.limits.deadline = Duration::from_secs(600);
    let host = PluginHost::load(
        &long,
        &offline_prompt_context(&Config::default()),
        std::sync::Arc::new(tiny_harness::work::engine::HostEffects::offline()),
    )
    .await
    .unwrap();
    let mut spin = Box::pin(call(&host, "zoo_spin", json!({})));
    // Polled once, the call runs its first slice and, spinning on, moves to the plugin threads.
    assert!(
        futures::poll!(spin.as_mut()).is_pending(),
        "the spin is under way"
    );
    let echoes = async {
        for _ in 0..5 {
            assert!(call(&host, "zoo_echo", json!({})).await.result.is_ok());
        }
    };
    tokio::time::timeout(Duration::from_secs(30), echoes)
        .await
        .expect("the echo calls did not wait for the spinning plugin");
    assert!(
        futures::poll!(spin.as_mut()).is_pending(),
        "the spin was still in flight while the echo calls ran"
    );
    // Abandoned: the call stops at its next epoch tick.
    drop(spin);
}

#[tokio::test]
async fn a_restart_loads_compiled_plugins_from_the_cache() {
    let dir = fixtures::folder(&[("zoo", "zoo.wasm")]);
    let cache = tempfile::tempdir().unwrap();
    let mut with_cache = settings(Some(dir.path()));
    with_cache.cache_dir = Some(cache.path().to_path_buf());
    let ctx = offline_prompt_context(&Config::default());
    let first = PluginHost::load(
        &with_cache,
        &ctx,
        std::sync::Arc::new(tiny_harness::work::engine::HostEffects::offline()),
    )
    .await
    .unwrap();
    assert!(
        first
            .summaries()
            .iter()
            .all(|s| s.cache == CacheOutcome::Miss)
    );
    let second = PluginHost::load(
        &with_cache,
        &ctx,
        std::sync::Arc::new(tiny_harness::work::engine::HostEffects::offline()),
    )
    .await
    .unwrap();
    assert!(
        second
            .summaries()
            .iter()
            .all(|s| s.cache == CacheOutcome::Hit)
    );
    assert_eq!(
        call(&second, "zoo_echo", json!({})).await.text(),
        "echo: {}"
    );
}

/// The cache files in `dir`, sorted.
fn cache_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".v1.cwasm"))
        .collect();
    files.sort();
    files
}

fn outcomes(host: &PluginHost) -> Vec<CacheOutcome> {
    host.summaries().iter().map(|s| s.cache).collect()
}

#[tokio::test]
async fn a_tampered_cache_file_is_recompiled_with_a_warning_naming_it_and_rewritten() {
    let dir = fixtures::folder(&[("zoo", "zoo.wasm")]);
    let cache = tempfile::tempdir().unwrap();
    let mut with_cache = settings(Some(dir.path()));
    with_cache.cache_dir = Some(cache.path().to_path_buf());
    let ctx = offline_prompt_context(&Config::default());
    PluginHost::load(
        &with_cache,
        &ctx,
        std::sync::Arc::new(tiny_harness::work::engine::HostEffects::offline()),
    )
    .await
    .unwrap();
    let files = cache_files(cache.path());
    assert_eq!(files.len(), 2, "the builtin and zoo.wasm are cached");
    for file in &files {
        let mut bytes = std::fs::read(file).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x40;
        std::fs::write(file, &bytes).unwrap();
    }

    let (logs, guard) = CapturedLogs::on_this_thread();
    let second = PluginHost::load(
        &with_cache,
        &ctx,
        std::sync::Arc::new(tiny_harness::work::engine::HostEffects::offline()),
    )
    .await
    .unwrap();
    drop(guard);
    assert_eq!(outcomes(&second), [CacheOutcome::Miss, CacheOutcome::Miss]);
    let text = logs.text();
    for file in &files {
        assert!(
            text.lines().any(|line| line.contains(" WARN ")
                && line.contains("recompiling a plugin whose cached file is damaged: its content does not match its digest")
                && line.contains(&format!("path={}", file.display()))),
            "no warning names {}:\n{text}",
            file.display()
        );
    }
    assert_eq!(
        call(&second, "zoo_echo", json!({})).await.text(),
        "echo: {}"
    );
    let third = PluginHost::load(
        &with_cache,
        &ctx,
        std::sync::Arc::new(tiny_harness::work::engine::HostEffects::offline()),
    )
    .await
    .unwrap();
    assert_eq!(
        outcomes(&third),
        [CacheOutcome::Hit, CacheOutcome::Hit],
        "the damaged files were rewritten"
    );
}

#[tokio::test]
async fn a_cache_folder_others_can_write_is_not_used_and_the_plugins_still_load() {
    use std::os::unix::fs::PermissionsExt;
    let dir = fixtures::folder(&[("zoo", "zoo.wasm")]);
    let cache = tempfile::tempdir().unwrap();
    std::fs::set_permissions(cache.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut with_cache = settings(Some(dir.path()));
    with_cache.cache_dir = Some(cache.path().to_path_buf());

    let (logs, guard) = CapturedLogs::on_this_thread();
    let host = PluginHost::load(
        &with_cache,
        &offline_prompt_context(&Config::default()),
        std::sync::Arc::new(tiny_harness::work::engine::HostEffects::offline()),
    )
    .await
    .unwrap();
    drop(guard);
    assert_eq!(
        outcomes(&host),
        [CacheOutcome::Refused, CacheOutcome::Refused]
    );
    let warnings: Vec<String> = logs
        .text()
        .lines()
        .filter(|line| line.contains("plugin compile cache"))
        .map(str::to_string)
        .collect();
    assert_eq!(
        warnings.len(),
        1,
        "one warning for the folder: {warnings:?}"
    );
    assert!(
        warnings[0].contains(" WARN ")
            && warnings[0].contains("not using the plugin compile cache: it is writable by its group and others (mode 777); make it private with chmod go-w; plugins are compiled in memory at every start")
            && warnings[0].contains(&format!("dir={}", cache.path().display())),
        "{}",
        warnings[0]
    );
    assert!(
        std::fs::read_dir(cache.path()).unwrap().next().is_none(),
        "nothing was written to the refused folder"
    );
    assert_eq!(call(&host, "zoo_echo", json!({})).await.text(), "echo: {}");
}
