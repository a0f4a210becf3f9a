//! The embedded engine: one tokio task per task being worked in this process, its state in
//! SQLite. A task that waits (for input, for its children) has no loop: its next news starts one
//! from the journal, so a waiting task costs its rows in the store and nothing in memory.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::Engine;
use super::children::Children;
use super::inbox;
use super::shared::Shared;
use super::turn::{Origin, Parking, run_task};
use super::wakeups::WakeReceiver;
use crate::base::model::Models;
use crate::base::protocol::types::Message;
use crate::state::records::record::TaskRecord;
use crate::state::store::StoreError;
use crate::state::store::Tx;
use crate::state::tasks::engine_port::FirstInput;
use crate::state::tasks::hub::TaskHub;
use crate::work::context::{LivePrefix, StaticPrefix};
use crate::work::skills::Catalog;
use crate::work::tools::{LiveToolSpecs, ToolHost};

pub use super::shared::EngineSettings;

struct Running {
    /// Set by a wake-up while the loop steps: the loop looks again before it ends.
    woken: Arc<AtomicBool>,
    stop: CancellationToken,
}

type RunningMap = Arc<Mutex<HashMap<String, Running>>>;

/// Runs every open task's loop in this process.
pub struct EmbeddedEngine {
    shared: Arc<Shared>,
    running: RunningMap,
    shutdown: CancellationToken,
    tracker: TaskTracker,
}

/// What an engine is built from.
pub struct EngineParts {
    /// The task service every loop reads and writes its task through (the only writer).
    pub hub: Arc<TaskHub>,
    /// The default model, and the named ones a task's brief may choose.
    pub models: Models,
    /// What runs the model's tool calls (the plugins' tools and the host's intrinsics).
    pub tools: Arc<dyn ToolHost>,
    /// The start of every request, computed at start-up and shared by every task; rebuilt once
    /// when an agent joins the roster late.
    pub prefix: LivePrefix,
    /// The turn loop's limits.
    pub settings: EngineSettings,
    /// What creates, follows and cancels child tasks, and the queue its followers wake parents
    /// through; `None` where tasks have no children (tests of the loop alone).
    pub children: Option<(Arc<Children>, WakeReceiver)>,
    /// The skills whose bodies a task's loaded skills' sections hold.
    pub skills: Arc<Catalog>,
}

impl Shared {
    /// What every task's steps share, from the engine's parts; the wake queue's receiving end,
    /// when there are children, is the engine's to read. Tool definitions are read and sorted
    /// once, here, unless the tools keep a live list (an MCP server may join late).
    pub(crate) fn from_parts(parts: EngineParts) -> (Shared, Option<WakeReceiver>) {
        let EngineParts {
            hub,
            models,
            tools,
            prefix,
            settings,
            children,
            skills,
        } = parts;
        let tool_specs = tools
            .live_definitions()
            .unwrap_or_else(|| LiveToolSpecs::new(tools.definitions()));
        let (children, wakes) = match children {
            Some((children, wakes)) => (Some(children), Some(wakes)),
            None => (None, None),
        };
        let shared = Shared {
            hub,
            models,
            tools,
            prefix,
            tool_specs,
            settings,
            children,
            skills,
        };
        (shared, wakes)
    }
}

impl EmbeddedEngine {
    /// An engine over the hub, with the models, the tools and the static prefix it will use for
    /// every task, without children or skills.
    pub fn new(
        hub: Arc<TaskHub>,
        models: impl Into<Models>,
        tools: Arc<dyn ToolHost>,
        prefix: StaticPrefix,
        settings: EngineSettings,
    ) -> Arc<EmbeddedEngine> {
        EmbeddedEngine::start(EngineParts {
            hub,
            models: models.into(),
            tools,
            prefix: prefix.into(),
            settings,
            children: None,
            skills: Arc::default(),
        })
    }

    /// An engine from all its parts. With children, a task their followers ask to wake is
    /// woken (its loop started again if it had stopped); call it inside the tokio runtime.
    pub fn start(parts: EngineParts) -> Arc<EmbeddedEngine> {
        let (shared, wakes) = Shared::from_parts(parts);
        let engine = Arc::new(EmbeddedEngine {
            shared: Arc::new(shared),
            running: Arc::new(Mutex::new(HashMap::new())),
            shutdown: CancellationToken::new(),
            tracker: TaskTracker::new(),
        });
        if let Some(WakeReceiver(mut wakes)) = wakes {
            let weak = Arc::downgrade(&engine);
            let stop = engine.shutdown.clone();
            engine.tracker.spawn(async move {
                loop {
                    let id = tokio::select! {
                        _ = stop.cancelled() => return,
                        id = wakes.recv() => id,
                    };
                    let (Some(id), Some(engine)) = (id, weak.upgrade()) else {
                        return;
                    };
                    Engine::wake(engine.as_ref(), &id);
                }
            });
        }
        engine
    }

    /// Starts a loop for every task the store holds open; returns how many.
    pub fn resume_open(&self) -> Result<usize, StoreError> {
        let ids = self.shared.hub.store().open_task_ids()?;
        for id in &ids {
            self.spawn(id, Origin::Journal);
        }
        Ok(ids.len())
    }

    /// Stops every loop and waits for them. Tasks stay as they are and resume at the next start.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        self.tracker.close();
        self.tracker.wait().await;
    }

    /// How many task loops are running (a waiting task has none).
    pub fn running_count(&self) -> usize {
        lock(&self.running).len()
    }

    fn spawn(&self, id: &str, origin: Origin) {
        let mut running = lock(&self.running);
        if running.contains_key(id) || self.shutdown.is_cancelled() {
            return;
        }
        let woken = Arc::new(AtomicBool::new(false));
        let stop = self.shutdown.child_token();
        running.insert(
            id.to_string(),
            Running {
                woken: woken.clone(),
                stop: stop.clone(),
            },
        );
        let parking = LoopParking {
            map: self.running.clone(),
            id: id.to_string(),
            woken,
        };
        let shared = self.shared.clone();
        let id = id.to_string();
        self.tracker.spawn(async move {
            let end = parking.clone_handle();
            run_task(shared, id, origin, parking, stop).await;
            end.leave();
        });
    }
}

/// A loop's place in the running map, by which it parks (ends, unless news came) and leaves.
struct LoopParking {
    map: RunningMap,
    id: String,
    woken: Arc<AtomicBool>,
}

impl LoopParking {
    fn clone_handle(&self) -> LoopParking {
        LoopParking {
            map: self.map.clone(),
            id: self.id.clone(),
            woken: self.woken.clone(),
        }
    }

    /// Takes the loop's entry out of the map, if it is still this loop's (a newer loop for the
    /// same task keeps its own). Call with the map locked.
    fn remove_from(&self, running: &mut HashMap<String, Running>) {
        if running
            .get(&self.id)
            .is_some_and(|entry| Arc::ptr_eq(&entry.woken, &self.woken))
        {
            running.remove(&self.id);
        }
    }

    /// The loop has ended.
    fn leave(&self) {
        self.remove_from(&mut lock(&self.map));
    }
}

impl Parking for LoopParking {
    fn begin_step(&self) {
        self.woken.store(false, Ordering::SeqCst);
    }

    fn retire(&mut self) -> bool {
        // Under the map lock: a wake-up either set the flag before this (the loop looks again)
        // or finds no loop after it (and starts one).
        let mut running = lock(&self.map);
        if self.woken.load(Ordering::SeqCst) {
            return false;
        }
        self.remove_from(&mut running);
        true
    }
}

fn lock(map: &RunningMap) -> std::sync::MutexGuard<'_, HashMap<String, Running>> {
    map.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[async_trait::async_trait]
impl Engine for EmbeddedEngine {
    fn first_input(&self, record: &TaskRecord, message: &Message) -> Option<FirstInput> {
        inbox::first_input(record, message)
    }

    fn record_first_input(
        &self,
        tx: &mut Tx<'_>,
        task_id: &str,
        first: &FirstInput,
        seq: i64,
    ) -> Result<(), StoreError> {
        inbox::record_first_input(tx, task_id, first, seq)
    }

    fn record_conversation(
        &self,
        tx: &mut Tx<'_>,
        task_id: &str,
        text: &str,
    ) -> Result<(), StoreError> {
        inbox::record_conversation(tx, task_id, text)
    }

    fn start(&self, task_id: &str) {
        self.spawn(task_id, Origin::Created);
    }

    fn start_drained(&self, task_id: &str, first: &FirstInput, seq: i64) {
        self.spawn(task_id, Origin::Drained(Box::new(first.replay(seq))));
    }

    fn wake(&self, task_id: &str) {
        let running = lock(&self.running);
        match running.get(task_id) {
            // The loop is stepping: it looks again before it ends, so the wake-up is never lost.
            Some(task) => task.woken.store(true, Ordering::SeqCst),
            None => {
                drop(running);
                self.spawn(task_id, Origin::Journal);
            }
        }
    }

    fn resume_open(&self) -> Result<usize, StoreError> {
        EmbeddedEngine::resume_open(self)
    }

    async fn shutdown(&self) {
        EmbeddedEngine::shutdown(self).await
    }

    async fn readiness(&self) -> Result<(), &'static str> {
        if self.shutdown.is_cancelled() {
            return Err("shutting down");
        }
        Ok(())
    }

    fn cancel(&self, task_id: &str) {
        if let Some(task) = lock(&self.running).remove(task_id) {
            task.stop.cancel();
        }
        if let Some(children) = &self.shared.children {
            children.cancel_open(task_id);
        }
    }
}
