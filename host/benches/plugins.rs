//! Plugin host costs: a warm tool call through the host (schema validation, a fresh instance
//! from the pre-instantiated component, the guest, the host function), and start-up with the
//! builtin plus 10 plugins, cold (compiling) and from the compile cache.

use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use tiny_harness::app::runtime::offline_prompt_context;
use tiny_harness::base::config::Config;
use tiny_harness::base::model::ToolCall;
use tiny_harness::base::protocol::types::TaskStatus;
use tiny_harness::state::records::extension::TaskExtension;
use tiny_harness::state::records::record::TaskRecord;
use tiny_harness::work::engine::{ToolContext, ToolHost};
use tiny_harness::work::plugins::{CallLimits, PluginHost, PluginSettings};

#[path = "../tests/support/fixtures.rs"]
mod fixtures;

fn settings(dir: Option<std::path::PathBuf>, cache: Option<std::path::PathBuf>) -> PluginSettings {
    PluginSettings {
        dir,
        dir_required: true,
        cache_dir: cache,
        limits: CallLimits {
            memory_bytes: 64 * 1024 * 1024,
            deadline: Duration::from_secs(1),
        },
        ..PluginSettings::default()
    }
}

fn benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("tokio");
    let ctx = offline_prompt_context(&Config::default());

    let builtin = runtime
        .block_on(PluginHost::load(
            &settings(None, None),
            &ctx,
            std::sync::Arc::new(tiny_harness::work::engine::HostEffects::offline()),
        ))
        .expect("builtin");
    let toolbox = builtin.toolbox();
    let record = TaskRecord {
        id: "t".into(),
        context_id: "c".into(),
        status: TaskStatus::default(),
        artifacts: vec![],
        metadata: Default::default(),
        ext: TaskExtension::from_text("goal"),
        owner: "user".into(),
    };
    let call = ToolCall {
        id: "c".into(),
        name: "create_plan".into(),
        arguments: r#"{"steps":[{"name":"Fetch","description":"d"},{"name":"Sum","description":"d","depends_on":["Fetch"]}]}"#.into(),
    };
    c.bench_function("plugin_tool_call_create_plan", |b| {
        b.to_async(&runtime).iter(|| async {
            let outcome = toolbox
                .invoke(
                    &ToolContext {
                        record: &record,
                        call_id: &call.id,
                        skills: &[],
                    },
                    &call,
                )
                .await;
            assert!(outcome.result.is_ok());
        })
    });

    let folder = tempfile::tempdir().expect("folder");
    for n in 0..10 {
        let fixture = if n % 2 == 0 {
            "override-role"
        } else {
            "extend-rules"
        };
        std::fs::copy(
            fixtures::wasm(fixture),
            folder.path().join(format!("{n:02}-{fixture}.wasm")),
        )
        .expect("copy");
    }
    let mut group = c.benchmark_group("startup_builtin_plus_10_plugins");
    group.sample_size(10);
    group.bench_function("cold_compile", |b| {
        b.iter_batched(
            || tempfile::tempdir().expect("cache"),
            |cache| {
                runtime
                    .block_on(PluginHost::load(
                        &settings(
                            Some(folder.path().to_path_buf()),
                            Some(cache.path().to_path_buf()),
                        ),
                        &ctx,
                        std::sync::Arc::new(tiny_harness::work::engine::HostEffects::offline()),
                    ))
                    .expect("load")
            },
            BatchSize::PerIteration,
        )
    });
    let warm_cache = tempfile::tempdir().expect("cache");
    let warm = settings(
        Some(folder.path().to_path_buf()),
        Some(warm_cache.path().to_path_buf()),
    );
    runtime
        .block_on(PluginHost::load(
            &warm,
            &ctx,
            std::sync::Arc::new(tiny_harness::work::engine::HostEffects::offline()),
        ))
        .expect("prime");
    group.bench_function("from_compile_cache", |b| {
        b.iter(|| {
            runtime
                .block_on(PluginHost::load(
                    &warm,
                    &ctx,
                    std::sync::Arc::new(tiny_harness::work::engine::HostEffects::offline()),
                ))
                .expect("load")
        })
    });
    group.finish();
}

criterion_group!(plugins, benches);
criterion_main!(plugins);
