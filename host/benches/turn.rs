//! The work of one turn beyond the model, on the real parts: drain the new message from a real
//! SQLite store (a temporary file, opened as the runtime opens it), assemble the context with a
//! 50-agent roster in the static prefix, dispatch the model's tool call (`create_plan`) through
//! the real plugin host, and journal the step through the task hub as the engine does: the
//! drained message (the task is working, so it changes nothing else), the model call and the
//! result of its call (a plan, which stays in the process, so it runs before the model call is
//! journaled) with the plan on the task, in one transaction.
//! Criterion prints the mean and median of a turn and of each part alone; then this bench times
//! `P99_TURNS` turns one by one and prints their median and p99. The message's arrival is not timed: it is the request's
//! work, not the turn's.
//!
//! `cargo bench -p tiny-harness --bench turn`

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tiny_harness::app::runtime::prompt_context;
use tiny_harness::base::config::{AgentConfig, Config};
use tiny_harness::base::model::{ChatMessage, ModelReply, ToolCall, ToolSpec};
use tiny_harness::base::protocol::card::default_card;
use tiny_harness::base::protocol::types::{Message, Part, Role, TaskState, TaskStatus};
use tiny_harness::state::records::extension::TaskExtension;
use tiny_harness::state::records::record::TaskRecord;
use tiny_harness::state::store::Store;
use tiny_harness::state::tasks::hub::TaskHub;
use tiny_harness::work::agents::{Caps, Registry, Roster, build_roster, render_agents};
use tiny_harness::work::context::{
    HistoryItem, StaticPrefix, TurnInput, assemble, estimate_tokens,
};
use tiny_harness::work::engine::journal::JournalEntry;
use tiny_harness::work::engine::{Effect, HostEffects, ToolContext, ToolHost, ToolOutcome};
use tiny_harness::work::plugins::{PluginHost, PluginSettings};

/// The allocator the `harness` binary runs with, so the turn costs here what it costs there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod support {
    pub mod cards;
    pub mod history;
}
use support::cards::card_server;
use support::history::history;

/// Remote agents on the roster, as in the target this bench checks.
const AGENTS: usize = 50;
/// Turns timed one by one for the printed median and p99.
const P99_TURNS: usize = 2_000;
/// Tool calls already in the task's history when a turn starts.
const HISTORY_CALLS: usize = 5;
const TASK_ID: &str = "bench-task";

/// The roster of `self` and `AGENTS` remote agents, discovered over loopback.
async fn roster() -> Roster {
    let mut agents = Vec::with_capacity(AGENTS);
    for i in 0..AGENTS {
        agents.push(AgentConfig {
            id: format!("agent-{i:02}"),
            url: card_server(i, Duration::ZERO).await,
            version: None,
            token_env: None,
            api_key_env: None,
            delegator: None,
            oauth2: None,
        });
    }
    let own = default_card("http://127.0.0.1:8080");
    let discovery = Registry::discover(
        own,
        "http://127.0.0.1:8080",
        &agents,
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(
        discovery.registry.ids().len(),
        AGENTS + 1,
        "every agent registered"
    );
    build_roster(&discovery.registry, Caps::DEFAULT)
}

fn record() -> TaskRecord {
    TaskRecord {
        id: TASK_ID.into(),
        context_id: "bench-context".into(),
        status: TaskStatus {
            state: TaskState::Working,
            ..TaskStatus::default()
        },
        artifacts: vec![],
        metadata: Default::default(),
        ext: TaskExtension::from_text("Reconcile the March ledger"),
        owner: "user".into(),
    }
}

/// Everything a turn works with, built once.
struct Parts {
    hub: TaskHub,
    prefix: StaticPrefix,
    tools: Arc<dyn ToolHost>,
    definitions: Arc<[ToolSpec]>,
    /// The history as the engine's replay keeps it: each item cleaned once, when recorded.
    history: Vec<ChatMessage>,
    /// The sequence number of the last message drained.
    cursor: i64,
}

impl Parts {
    /// A participant's message arrives (not part of the turn: the request's work).
    async fn arrive(&self) {
        let message = Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            task_id: TASK_ID.into(),
            role: Role::User,
            parts: vec![Part::text("And February too, please.")],
            ..Message::default()
        };
        self.hub
            .change(TASK_ID, move |rec, tx| {
                tx.append_message(&rec.id.clone(), &message)
            })
            .await
            .expect("message stored");
    }

    async fn journal(&self, entries: Vec<JournalEntry>) {
        self.hub
            .change(TASK_ID, move |rec, tx| {
                for entry in &entries {
                    if let JournalEntry::ToolResult { effects, .. } = entry {
                        for effect in effects {
                            if let Effect::AttachPlan { plan } = effect {
                                rec.ext.plan = Some(plan.clone());
                            }
                        }
                    }
                    tx.append_journal(&rec.id.clone(), entry)?;
                }
                Ok(())
            })
            .await
            .expect("step journaled");
    }

    /// One turn: drain, assemble, (the model answers a tool call at once), dispatch, journal.
    async fn turn(&mut self) {
        let record = self
            .hub
            .task_for_loop(TASK_ID)
            .expect("read")
            .expect("task");
        let drained = self
            .hub
            .store()
            .messages_after(TASK_ID, self.cursor)
            .expect("drained");
        let mut inbound = Vec::with_capacity(drained.len());
        for (seq, message) in drained {
            self.cursor = seq;
            inbound.push(JournalEntry::Inbound {
                message_seq: seq,
                from: "user".into(),
                trusted: true,
                text: message.text(),
            });
        }
        // The engine's replay records the new items once; the bench takes them off again after
        // the turn so that every turn starts from the same history.
        let before = self.history.len();
        for entry in &inbound {
            if let JournalEntry::Inbound { text, .. } = entry {
                self.history.push(
                    HistoryItem::Inbound {
                        from: "user".into(),
                        trusted: true,
                        text: text.clone(),
                    }
                    .to_message(),
                );
            }
        }
        std::hint::black_box(self.assemble(&record, &self.history));
        self.history.truncate(before);
        let call = plan_call();
        let reply = ModelReply {
            tool_calls: vec![call.clone()],
            ..ModelReply::default()
        };
        // The engine reads the task again once the model has answered, for the call to see it
        // as it is then.
        let record = self
            .hub
            .task_for_loop(TASK_ID)
            .expect("read")
            .expect("task");
        let outcome = self.dispatch_in_process(&record, &call).await;
        let mut step = inbound;
        step.push(JournalEntry::ModelCall { reply });
        step.push(JournalEntry::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: outcome.text(),
            is_error: false,
            effects: outcome.effects,
        });
        self.journal(step).await;
    }

    /// The model's request for a turn, and its estimated size (what decides compaction).
    fn assemble(&self, record: &TaskRecord, history: &[ChatMessage]) -> usize {
        let request = assemble(
            &self.prefix,
            &self.definitions,
            Some(1000),
            &TurnInput {
                record,
                skills: &[],
                summary: None,
                conversation: None,
                history,
            },
        );
        estimate_tokens(&request)
    }

    /// One tool call through the plugin host, run before its model call is journaled, as the
    /// engine runs a call that stays in the process.
    async fn dispatch_in_process(&self, record: &TaskRecord, call: &ToolCall) -> ToolOutcome {
        let context = ToolContext {
            record,
            call_id: &call.id,
            skills: &[],
        };
        let outcome = self
            .tools
            .invoke_in_process(&context, call)
            .await
            .expect("a plan stays in the process");
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        outcome
    }

    /// One tool call through the plugin host.
    async fn dispatch(&self, record: &TaskRecord, call: &ToolCall) -> ToolOutcome {
        let context = ToolContext {
            record,
            call_id: &call.id,
            skills: &[],
        };
        let outcome = self.tools.invoke(&context, call).await;
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        outcome
    }
}

/// A history of `calls` tool calls, each item cleaned once as the engine's replay does.
fn rendered(calls: usize) -> Vec<ChatMessage> {
    history(calls).iter().map(HistoryItem::to_message).collect()
}

/// The tool call the model makes on every turn.
fn plan_call() -> ToolCall {
    ToolCall {
        id: "plan".into(),
        name: "create_plan".into(),
        arguments: json!({"steps": [{"name": "February", "description": "reconcile it"}]})
            .to_string(),
    }
}

async fn parts(store_dir: &std::path::Path) -> Parts {
    let roster = roster().await;
    let host = PluginHost::load(
        &PluginSettings::default(),
        &prompt_context(&Config::default(), &roster, &Default::default()),
        Arc::new(HostEffects::offline()),
    )
    .await
    .expect("the builtin loads");
    let prefix = StaticPrefix::build(&host.prompt().render(), &[], &[], &render_agents(&roster));
    let store = Arc::new(Store::open(&store_dir.join("turn.db")).expect("store"));
    let hub = TaskHub::new(store);
    hub.create(record(), String::new(), |_| Ok(()))
        .await
        .expect("task created");
    let tools: Arc<dyn ToolHost> = host.toolbox();
    Parts {
        definitions: tools.definitions().into(),
        tools,
        hub,
        prefix,
        history: rendered(HISTORY_CALLS),
        cursor: 0,
    }
}

fn benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("tokio");
    let dir = tempfile::tempdir().expect("temporary folder");
    let mut parts = runtime.block_on(parts(dir.path()));
    println!(
        "static prefix with {AGENTS} agents: {} characters",
        parts.prefix.as_str().len()
    );

    c.bench_function("turn_beyond_the_model_50_agents", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    parts.arrive().await;
                    let started = Instant::now();
                    parts.turn().await;
                    spent += started.elapsed();
                }
                spent
            })
        })
    });

    // Each part alone, to see where a turn's time goes.
    let record = parts
        .hub
        .store()
        .task(TASK_ID)
        .expect("read")
        .expect("task");
    let history = rendered(HISTORY_CALLS);
    c.bench_function("turn_part_assemble_50_agents", |b| {
        b.iter(|| parts.assemble(&record, std::hint::black_box(&history)))
    });
    let call = plan_call();
    c.bench_function("turn_part_create_plan_through_the_plugin_host", |b| {
        b.iter(|| runtime.block_on(parts.dispatch(&record, &call)))
    });
    let reply = JournalEntry::ModelCall {
        reply: ModelReply {
            tool_calls: vec![call.clone()],
            ..ModelReply::default()
        },
    };
    c.bench_function("turn_part_journal_one_step", |b| {
        b.iter(|| runtime.block_on(parts.journal(vec![reply.clone()])))
    });
    c.bench_function("turn_part_read_task_and_drain", |b| {
        b.iter(|| {
            let task = parts.hub.task_for_loop(TASK_ID).expect("read");
            let drained = parts.hub.store().messages_after(TASK_ID, parts.cursor);
            std::hint::black_box((task, drained))
        })
    });

    // The CPU the process spends, all threads together: the turns' work without the time
    // the threads spent waiting for each other to wake.
    let cpu_before = cpu_time();
    runtime.block_on(async {
        for _ in 0..P99_TURNS {
            parts.arrive().await;
        }
    });
    let arrivals_cpu = cpu_time().saturating_sub(cpu_before);
    let cpu_before = cpu_time();
    let mut times: Vec<Duration> = runtime.block_on(async {
        let mut times = Vec::with_capacity(P99_TURNS);
        for _ in 0..P99_TURNS {
            parts.arrive().await;
            let started = Instant::now();
            parts.turn().await;
            times.push(started.elapsed());
        }
        times
    });
    let turns_cpu = cpu_time()
        .saturating_sub(cpu_before)
        .saturating_sub(arrivals_cpu);
    times.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "turn beyond the model, {P99_TURNS} turns one by one: median {:.1} µs, p99 {:.1} µs, max {:.1} µs",
        us(times[times.len() / 2]),
        us(times[(times.len() * 99 / 100).min(times.len() - 1)]),
        us(times[times.len() - 1])
    );
    println!(
        "turn beyond the model, CPU of the whole process per turn (mean of {P99_TURNS}, arrivals taken out): {:.1} µs",
        us(turns_cpu) / P99_TURNS as f64
    );
}

/// CPU time this process has used, every thread's user and system time, from
/// `/proc/self/stat` (10 ms ticks: a mean over many turns, not one turn's).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    let fields: Vec<&str> = stat
        .rsplit_once(") ")
        .expect("stat fields")
        .1
        .split(' ')
        .collect();
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    // The kernel's USER_HZ is 100 on every Linux this runs on.
    Duration::from_millis(ticks * 10)
}

criterion_group!(turn, benches);
criterion_main!(turn);
