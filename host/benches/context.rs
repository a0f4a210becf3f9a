//! Context assembly costs: building the static prefix (once per start-up) and assembling one
//! turn's request (every turn), over a history of realistic size.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use tiny_harness::app::runtime::prompt_context;
use tiny_harness::base::config::Config;
use tiny_harness::base::protocol::card::default_card;
use tiny_harness::base::protocol::types::{TaskState, TaskStatus};
use tiny_harness::work::agents::{Caps, Registry, build_roster, render_agents};
use tiny_harness::work::context::{StaticPrefix, TurnInput, assemble, estimate_tokens};
use tiny_harness::work::engine::ToolHost;
use tiny_harness::work::plugins::{PluginHost, PluginSettings};

mod support {
    pub mod history;
}
use support::history::history;
use tiny_harness::state::records::extension::TaskExtension;
use tiny_harness::state::records::record::TaskRecord;

fn benches(c: &mut Criterion) {
    let own = default_card("http://127.0.0.1:8080");
    let roster = build_roster(&Registry::new(own, "http://127.0.0.1:8080"), Caps::DEFAULT);
    let agents = render_agents(&roster);
    let runtime = tokio::runtime::Runtime::new().expect("tokio");
    let host = runtime
        .block_on(PluginHost::load(
            &PluginSettings::default(),
            &prompt_context(&Config::default(), &roster, &Default::default()),
            std::sync::Arc::new(tiny_harness::work::engine::HostEffects::offline()),
        ))
        .expect("the builtin loads");
    let prompt = host.prompt().render();
    c.bench_function("static_prefix_build", |b| {
        b.iter(|| StaticPrefix::build(black_box(&prompt), &[], &[], &agents))
    });

    let prefix = StaticPrefix::build(&prompt, &[], &[], &agents);
    let tools: std::sync::Arc<[_]> = host.toolbox().definitions().into();
    let record = TaskRecord {
        id: "t".into(),
        context_id: "c".into(),
        status: TaskStatus {
            state: TaskState::Working,
            ..TaskStatus::default()
        },
        artifacts: vec![],
        metadata: Default::default(),
        ext: TaskExtension::from_text("Reconcile March"),
        owner: "user".into(),
    };
    for turns in [5usize, 20] {
        // Each item cleaned once, when recorded, as the engine's replay does.
        let items: Vec<_> = history(turns)
            .iter()
            .map(tiny_harness::work::context::HistoryItem::to_message)
            .collect();
        c.bench_function(&format!("assemble_turn_{turns}_tool_calls"), |b| {
            b.iter(|| {
                let request = assemble(
                    &prefix,
                    &tools,
                    Some(1000),
                    &TurnInput {
                        record: &record,
                        skills: &[],
                        summary: None,
                        conversation: None,
                        history: black_box(&items),
                    },
                );
                black_box(estimate_tokens(&request))
            })
        });
    }
}

criterion_group!(context, benches);
criterion_main!(context);
