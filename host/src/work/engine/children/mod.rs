//! Child tasks. Every child, on a remote agent or on this harness itself, is created the same way:
//! an A2A `SendMessage` to the agent carrying the brief, then one stand-in follower per open child
//! that tells the parent of each change, and an A2A `CancelTask` when the parent is canceled.
//! There is no in-process shortcut: `self` is reached over HTTP at its own base URL.

mod cancel;
pub mod choice;
mod clients;
mod deadline;
mod follower;
pub mod hops;
mod message;
pub mod report;
mod spawn;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use self::report::ChildNews;
use super::wakeups::WakeSender;
use crate::base::model::Redactor;
use crate::base::protocol::types::TaskState;
use crate::base::telemetry;
use crate::state::records::extension::TaskLink;
use crate::state::records::record::TaskRecord;
use crate::state::store::StoreError;
use crate::state::tasks::hops::HopRules;
use crate::state::tasks::hub::TaskHub;
use crate::work::agents::client::{A2aClient, AgentSecrets};
use crate::work::agents::{LiveRegistry, Registry};
use crate::work::tools::brief::ChildBrief;

pub use spawn::depth_of;

/// How children are made and followed, from `[limits]`, `[server]` and `agents`. Its Debug
/// prints no secret.
#[derive(Clone)]
pub struct ChildSettings {
    /// This process's secret: sent only to its own base URL, where it makes the harness a
    /// trusted delegator of itself.
    pub self_secret: String,
    /// Bearer tokens by agent id (`agents[].token_env`).
    pub tokens: HashMap<String, String>,
    /// The agents that know this harness as a trusted delegator (`agents[].delegator`): its
    /// children there carry their parent link, participants and lifecycle.
    pub delegator_of: HashSet<String>,
    /// API keys and OAuth2 token sources by agent id (`agents[].api_key_env`,
    /// `[agents.oauth2]`), presented where an agent's card asks for them.
    pub secrets: HashMap<String, AgentSecrets>,
    /// The participant id this harness gives agents that do not trust it.
    pub participant_id: String,
    /// `[limits] max_subtask_depth`.
    pub max_depth: u32,
    /// `[limits] max_children_per_task`: sub-tasks one task may create in all.
    pub max_children: u32,
    /// `[limits] max_parallel_children`: sub-tasks of one task open at once.
    pub max_parallel: u32,
    /// This harness in delegation chains and `[limits] max_delegation_hops` (`hops`).
    pub hops: HopRules,
    /// The names of `[models.*]`: the models a child on this harness may be asked to run on.
    pub models: Vec<String>,
    /// `[limits] subtask_unreachable_secs`: how long a child's agent may stay unreachable
    /// before the child ends FAILED for the parent.
    pub unreachable_after: Duration,
    /// `[limits] subtask_deadline_secs`: how long a child may take from its creation before it
    /// is canceled on its agent and ends FAILED for the parent.
    pub deadline: Duration,
}

impl std::fmt::Debug for ChildSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut agents: Vec<&String> = self.tokens.keys().collect();
        agents.sort();
        f.debug_struct("ChildSettings")
            .field("self_secret", &"[redacted]")
            .field("tokens_for", &agents)
            .field("delegator_of", &self.delegator_of)
            .field("secrets", &self.secrets)
            .field("participant_id", &self.participant_id)
            .field("max_depth", &self.max_depth)
            .field("max_children", &self.max_children)
            .field("max_parallel", &self.max_parallel)
            .field("hops", &self.hops)
            .field("models", &self.models)
            .field("unreachable_after", &self.unreachable_after)
            .field("deadline", &self.deadline)
            .finish()
    }
}

/// Where a new child is to run and what it is asked.
#[derive(Debug, Clone)]
pub struct SpawnRequest<'a> {
    /// The task asking: its depth, fan-out, budget and delegation chain bound the child.
    pub parent: &'a TaskRecord,
    /// A registered id; `None` (or `self`) is this harness.
    pub agent: Option<&'a str>,
    /// What the child is asked, sent as its first message.
    pub brief: ChildBrief,
    /// Chosen by the parent from its journal, so a retry after a crash sends the same id.
    pub message_id: String,
}

/// Creates, follows and cancels every child task of this harness.
pub struct Children {
    hub: Arc<TaskHub>,
    /// The agents children may be sent to; agents that answer after start-up join it.
    registry: Arc<LiveRegistry>,
    settings: ChildSettings,
    /// Where this harness is reached: its base URL, known once it listens (`server.bind` may
    /// name port 0, so the runtime binds first).
    own_url: String,
    /// Where a parent with news is woken: the engine reads the other end.
    wakes: WakeSender,
    clients: Mutex<HashMap<String, Arc<A2aClient>>>,
    /// One follower per open child, by its parent, agent and task id: agents number their tasks
    /// as they please, so a task id alone may name two children (of one parent, or of two).
    followers: Mutex<HashMap<ChildKey, CancellationToken>>,
    /// Masks the tokens this harness sends (its own secret, the agents' tokens) in whatever an
    /// agent says back, so that an agent echoing one cannot pass it through the model.
    redactor: Redactor,
    stop: CancellationToken,
    tracker: TaskTracker,
}

impl Children {
    /// Children of tasks in `hub`, sent to the agents of `registry`.
    /// Children of tasks in `hub`, sent to the agents of `registry`; `own_url` is where this
    /// harness listens (its children on `self` go there), and a parent with news is woken
    /// through `wakes`.
    pub fn new(
        hub: Arc<TaskHub>,
        registry: Arc<LiveRegistry>,
        settings: ChildSettings,
        own_url: &str,
        wakes: WakeSender,
    ) -> Children {
        Children {
            redactor: Redactor::new(
                std::iter::once(&settings.self_secret)
                    .chain(settings.tokens.values())
                    .chain(settings.secrets.values().filter_map(|s| s.api_key.as_ref())),
            ),
            hub,
            registry,
            settings,
            own_url: own_url.trim_end_matches('/').to_string(),
            wakes,
            clients: Mutex::new(HashMap::new()),
            followers: Mutex::new(HashMap::new()),
            stop: CancellationToken::new(),
            tracker: TaskTracker::new(),
        }
    }

    /// The agents children may be sent to, as registered now.
    pub fn registry(&self) -> Arc<Registry> {
        self.registry.current()
    }

    /// Starts the stand-in follower of a child, unless one runs already.
    pub fn follow(self: &Arc<Self>, parent: &str, link: &TaskLink) {
        let known = link.state.as_deref().and_then(TaskState::from_wire);
        if known.is_some_and(TaskState::is_terminal) || self.stop.is_cancelled() {
            return;
        }
        let agent = link.agent_id().to_string();
        let key = ChildKey::new(parent, &agent, &link.task_id);
        let stop = self.stop.child_token();
        {
            let mut followers = lock(&self.followers);
            if followers.contains_key(&key) {
                return;
            }
            followers.insert(key.clone(), stop.clone());
        }
        let children = self.clone();
        let parent = parent.to_string();
        let child = link.task_id.clone();
        // A row written before deadlines were kept gets its deadline from now.
        let remaining =
            deadline::remaining(link.deadline.as_deref()).unwrap_or(self.settings.deadline);
        let trace = self.trace_of(&parent);
        self.tracker.spawn(telemetry::within(trace, async move {
            follower::run(&children, &parent, &child, &agent, remaining, stop).await;
            lock(&children.followers).remove(&key);
        }));
    }

    /// The trace context requests about `parent`'s children are made in: the current one, else
    /// the task's (read from the store, only with traces on).
    fn trace_of(&self, parent: &str) -> Option<opentelemetry::Context> {
        if !telemetry::enabled() {
            return None;
        }
        telemetry::current().or_else(|| {
            let record = self.hub.store().task(parent).ok().flatten()?;
            telemetry::task_context(parent, record.ext.trace.as_deref())
        })
    }

    /// Starts a follower for every open child of every open task; returns how many.
    pub fn resume(self: &Arc<Self>) -> Result<usize, StoreError> {
        let mut started = 0;
        for id in self.hub.store().open_task_ids()? {
            let Some(record) = self.hub.store().task(&id)? else {
                continue;
            };
            for link in &record.ext.sub_tasks {
                if !link.has_ended() {
                    self.follow(&id, link);
                    started += 1;
                }
            }
        }
        Ok(started)
    }

    /// Stops every follower and waits for them; they resume from the store at the next start.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        self.tracker.close();
        self.tracker.wait().await;
    }

    /// Records a child's news on its parent and wakes the parent when its model has something
    /// to read.
    async fn report(&self, parent: &str, child: &str, agent: &str, news: &ChildNews) {
        let news = ChildNews {
            state: news.state,
            note: news.note.as_deref().map(|note| self.mask(note)),
            spent: news.spent,
        };
        match report::record(&self.hub, parent, child, agent, &news).await {
            Ok(true) => self.wakes.wake(parent),
            Ok(false) => {}
            Err(err) => {
                tracing::error!(%parent, %child, "cannot record the sub-task's news: {err}")
            }
        }
    }
}

/// A child as this harness knows it: its parent, its agent and the id its agent gave it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ChildKey {
    parent: String,
    agent: String,
    task_id: String,
}

impl ChildKey {
    fn new(parent: &str, agent: &str, task_id: &str) -> ChildKey {
        ChildKey {
            parent: parent.to_string(),
            agent: agent.to_string(),
            task_id: task_id.to_string(),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
