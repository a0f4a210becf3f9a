//! Child tasks. Every child, on a remote agent or on this harness itself, is created the same way:
//! an A2A `SendMessage` to the agent carrying the brief, then one stand-in follower per open child
//! that tells the parent of each change, and an A2A `CancelTask` when the parent is canceled.
//! There is no in-process shortcut: `self` is reached over HTTP at its own base URL.

pub mod choice;
mod deadline;
mod follower;
pub mod hops;
mod message;
pub mod report;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use self::report::ChildNews;
use super::budget;
use super::wakeups::WakeSender;
use crate::agents::client::{A2aClient, ClientError};
use crate::agents::{Registry, SELF_ID};
use crate::model::Redactor;
use crate::protocol::requests::{SendMessageConfiguration, SendMessageRequest};
use crate::protocol::types::{SendMessageResponse, Task, TaskState};
use crate::records::extension::{AgentRef, EXTENSION_URI, TaskLink};
use crate::records::record::TaskRecord;
use crate::store::{Store, StoreError};
use crate::tasks::hops::HopRules;
use crate::tasks::hub::TaskHub;
use crate::tools::ToolError;
use crate::tools::brief::{ChildBrief, Delivery, child_message};

/// Parent links followed when measuring a task's depth; a longer chain is treated as too deep
/// rather than walked further, so a corrupt cycle cannot loop.
const MAX_DEPTH_WALK: u32 = 64;
/// The longest task id an agent may give a child: a UUID is 36 characters, and an id far
/// longer is no id but a way to fill the parent's context and logs.
const MAX_CHILD_TASK_ID_CHARS: usize = 256;
/// How long cancelling one child may take before the parent gives up on it (and logs it).
const CANCEL_TIMEOUT: Duration = Duration::from_secs(10);

/// How children are made and followed, from `[limits]`, `[server]` and `agents`.
#[derive(Debug, Clone)]
pub struct ChildSettings {
    /// This process's secret: sent only to its own base URL, where it makes the harness a
    /// trusted delegator of itself.
    pub self_secret: String,
    /// Bearer tokens by agent id (`agents[].token_env`): those agents trust this harness.
    pub tokens: HashMap<String, String>,
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

/// Where a new child is to run and what it is asked.
#[derive(Debug, Clone)]
pub struct SpawnRequest<'a> {
    pub parent: &'a TaskRecord,
    /// A registered id; `None` (or `self`) is this harness.
    pub agent: Option<&'a str>,
    pub brief: ChildBrief,
    /// Chosen by the parent from its journal, so a retry after a crash sends the same id.
    pub message_id: String,
}

/// Creates, follows and cancels every child task of this harness.
pub struct Children {
    hub: Arc<TaskHub>,
    registry: Arc<Registry>,
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
        registry: Arc<Registry>,
        settings: ChildSettings,
        own_url: &str,
        wakes: WakeSender,
    ) -> Children {
        Children {
            redactor: Redactor::new(
                std::iter::once(&settings.self_secret).chain(settings.tokens.values()),
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

    /// The agents children may be sent to.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Creates the child with an A2A `SendMessage` to its agent and returns the sub-task row
    /// for the parent. Fails, creating nothing and contacting nothing, for an unknown agent, a
    /// parent already at `limits.max_subtask_depth`, `limits.max_children_per_task` or
    /// `limits.max_parallel_children`, a model this harness does not have (or any model for
    /// another agent), or a parent with no token budget left to give a child. A parent with a
    /// budget sets a share of what it has free aside for the child (`budget::reservation`),
    /// kept on the row; a child on this harness is given it as its own budget.
    pub async fn spawn(&self, request: SpawnRequest<'_>) -> Result<TaskLink, ToolError> {
        let agent = self
            .registry
            .resolve(request.agent)
            .map_err(|unknown| ToolError::new(unknown.code(), unknown.message()))?;
        let depth = depth_of(self.hub.store(), request.parent);
        if depth >= self.settings.max_depth {
            return Err(ToolError::new(
                "subtask.too_deep",
                format!(
                    "this task is at sub-task depth {depth} and limits.max_subtask_depth is {}: do this work in this task instead of creating a sub-task",
                    self.settings.max_depth
                ),
            ));
        }
        choice::check_fan_out(
            &request.parent.ext.sub_tasks,
            self.settings.max_children,
            self.settings.max_parallel,
        )?;
        let agent_id = agent.id.clone();
        let delegation = hops::for_child(&self.settings.hops, request.parent, &agent_id)?;
        let own = agent_id == SELF_ID;
        let reserved = budget::reservation(request.parent);
        choice::check(
            &self.settings.models,
            &agent_id,
            request.brief.model.as_deref(),
            reserved,
        )?;
        let budget = own.then_some(reserved).flatten();
        let client = self.client(&agent_id)?;
        let delivery = Delivery {
            envelope: agent
                .card
                .capabilities
                .extensions
                .iter()
                .any(|e| e.uri == EXTENSION_URI),
            trusted: self.is_trusted_by(&agent_id),
            parent: Some((
                &request.parent.id,
                &self.settings.participant_id_for(&agent_id),
            )),
            own,
            budget,
            delegation: Some(&delegation),
        };
        let message = child_message(&request.brief, &request.message_id, delivery);
        let send = SendMessageRequest {
            tenant: String::new(),
            message,
            configuration: Some(SendMessageConfiguration {
                return_immediately: true,
                ..SendMessageConfiguration::default()
            }),
            metadata: None,
        };
        let response = client.send_message(send).await.map_err(|err| {
            hops::refused_by_agent(&agent_id, &err)
                .unwrap_or_else(|| self.unreachable_error(&agent_id, "create the sub-task", &err))
        })?;
        match response {
            SendMessageResponse::Task(task) if !is_usable_task_id(&task.id) => {
                tracing::warn!(parent = %request.parent.id, agent = %agent_id, id = %crate::text::log_field::escape(&task.id), "the agent named its task with an unusable id");
                Err(ToolError::new(
                    "subtask.failed",
                    format!(
                        "could not create the sub-task: {agent_id} named its task with an unusable id"
                    ),
                ))
            }
            SendMessageResponse::Task(task) => {
                tracing::info!(parent = %request.parent.id, child = %task.id, agent = %agent_id, "sub-task created");
                Ok(TaskLink {
                    task_id: task.id,
                    agent: Some(AgentRef {
                        kind: "agent".to_string(),
                        id: agent_id,
                        version: Some(agent.card.version.clone()).filter(|v| !v.is_empty()),
                    }),
                    // Not yet heard: the follower's first look records the state, and
                    // reports a child that ended (or asks) at once like any other.
                    state: None,
                    deadline: Some(deadline::from_now(self.settings.deadline)),
                    reserved,
                    spent: None,
                })
            }
            SendMessageResponse::Message(message) => Err(ToolError::new(
                "subtask.no_task",
                format!(
                    "{agent_id} answered at once instead of creating a task, so there is nothing to follow; its answer: {}",
                    report::note_text(
                        "-",
                        &agent_id,
                        TaskState::Completed,
                        &self.redactor.mask_only(&message.text())
                    )
                ),
            )),
        }
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
        self.tracker.spawn(async move {
            follower::run(&children, &parent, &child, &agent, remaining, stop).await;
            lock(&children.followers).remove(&key);
        });
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

    /// Cancels each open child of a parent that was just canceled, with A2A `CancelTask` on
    /// its agent; each child's row then records the state its agent reports.
    pub fn cancel_open(self: &Arc<Self>, parent: &str) {
        for (child, agent) in self.open_children_to_cancel(parent) {
            let children = self.clone();
            let parent = parent.to_string();
            self.tracker.spawn(async move {
                children.cancel_child(&parent, &child, &agent).await;
            });
        }
    }

    /// [`Children::cancel_open`], returning once every child's cancel has been answered (or has
    /// timed out): for an engine that must know the work is done (a Temporal activity).
    pub async fn cancel_open_and_wait(&self, parent: &str) {
        let cancels = self
            .open_children_to_cancel(parent)
            .into_iter()
            .map(|(child, agent)| async move { self.cancel_child(parent, &child, &agent).await });
        futures::future::join_all(cancels).await;
    }

    /// The open children of a parent as `(child, agent)`, their followers stopped.
    fn open_children_to_cancel(&self, parent: &str) -> Vec<(String, String)> {
        let record = match self.hub.store().task(parent) {
            Ok(Some(record)) => record,
            Ok(None) => return Vec::new(),
            Err(err) => {
                tracing::error!(task = %parent, "cannot read the task to cancel its sub-tasks: {err}");
                return Vec::new();
            }
        };
        let mut open = Vec::new();
        for link in record.ext.sub_tasks.iter().filter(|l| !l.has_ended()) {
            let agent = link.agent_id().to_string();
            let key = ChildKey::new(parent, &agent, &link.task_id);
            if let Some(token) = lock(&self.followers).remove(&key) {
                token.cancel();
            }
            open.push((link.task_id.clone(), agent));
        }
        open
    }

    async fn cancel_child(&self, parent: &str, child: &str, agent: &str) {
        let client = match self.client(agent) {
            Ok(client) => client,
            Err(err) => {
                tracing::warn!(%parent, %child, %agent, "cannot cancel the sub-task: {err}");
                return;
            }
        };
        match cancel_on_agent(&client, child).await {
            Ok(Ok(task)) => {
                tracing::info!(%parent, %child, %agent, state = task.status.state.short_name(), "sub-task canceled with its parent");
                let news = ChildNews {
                    note: None,
                    ..report::news_of(&task, agent)
                };
                if let Err(err) = report::record(&self.hub, parent, child, agent, &news).await {
                    tracing::error!(%parent, %child, "cannot record the sub-task's state: {err}");
                }
            }
            Ok(Err(err)) => {
                tracing::warn!(%parent, %child, %agent, "could not cancel the sub-task: {}", self.redactor.mask_only(&err.to_string()))
            }
            Err(_) => tracing::warn!(%parent, %child, %agent, "cancelling the sub-task timed out"),
        }
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
            note: news
                .note
                .as_deref()
                .map(|note| self.redactor.mask_only(note)),
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

    /// A failed call to an agent, as the model reads it: what failed and why, never the URL
    /// nor a token this harness sent.
    fn unreachable_error(&self, agent: &str, doing: &str, err: &ClientError) -> ToolError {
        let detail = self.redactor.mask_only(&err.to_string());
        tracing::warn!(%agent, "could not {doing}: {detail}");
        let why = match err {
            ClientError::Rpc { message, .. } => format!("{agent} refused: {message}"),
            ClientError::Status { status, .. } => format!("{agent} answered HTTP {status}"),
            ClientError::Transport { .. } => format!("{agent} could not be reached"),
            ClientError::InvalidResponse { .. } => format!("{agent} sent an invalid response"),
            ClientError::Build(_) | ClientError::Unsupported(_) => {
                format!("{agent} cannot be called from here")
            }
        };
        ToolError::new(
            "subtask.failed",
            self.redactor
                .mask_only(&format!("could not {doing}: {why}")),
        )
    }

    fn is_trusted_by(&self, agent: &str) -> bool {
        agent == SELF_ID || self.settings.tokens.contains_key(agent)
    }

    /// The client for an agent, made once: with this process's secret for `self`, the
    /// configured token for an agent that trusts this harness, a plain participant id otherwise.
    fn client(&self, agent: &str) -> Result<Arc<A2aClient>, ToolError> {
        if let Some(client) = lock(&self.clients).get(agent) {
            return Ok(client.clone());
        }
        let registered = self
            .registry
            .resolve(Some(agent))
            .map_err(|unknown| ToolError::new(unknown.code(), unknown.message()))?;
        let url = if agent == SELF_ID {
            self.own_url.clone()
        } else {
            registered.interface_url().to_string()
        };
        let client = A2aClient::new(url).map_err(|err| {
            tracing::error!("cannot build the A2A client: {err}");
            ToolError::new("subtask.unavailable", "the A2A client could not be built")
        })?;
        let client = if agent == SELF_ID {
            client.with_bearer(self.settings.self_secret.clone())
        } else if let Some(token) = self.settings.tokens.get(agent) {
            client.with_bearer(token.clone())
        } else {
            client.with_participant(self.settings.participant_id.clone())
        };
        let client = Arc::new(client.with_extensions(vec![EXTENSION_URI.to_string()]));
        lock(&self.clients).insert(agent.to_string(), client.clone());
        Ok(client)
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

impl ChildSettings {
    /// The id the agent knows this harness by: `self` on itself, the participant id elsewhere.
    fn participant_id_for(&self, agent: &str) -> String {
        if agent == SELF_ID {
            SELF_ID.to_string()
        } else {
            self.participant_id.clone()
        }
    }
}

/// Cancels the child on its agent with `CancelTask`, waiting at most [`CANCEL_TIMEOUT`]: the task
/// as its agent then reports it (a child that had already ended, as it ended).
async fn cancel_on_agent(
    client: &A2aClient,
    child: &str,
) -> Result<Result<Task, ClientError>, tokio::time::error::Elapsed> {
    tokio::time::timeout(CANCEL_TIMEOUT, async {
        match client.cancel_task(child).await {
            Ok(task) => Ok(task),
            // Already finished: read how it ended.
            Err(err) if err.rpc_code() == Some(crate::protocol::jsonrpc::TASK_NOT_CANCELABLE) => {
                client.get_task(child, Some(0)).await
            }
            Err(err) => Err(err),
        }
    })
    .await
}

/// Whether an agent's id for a child task can be kept and shown: the id is the agent's word, and
/// it goes into the parent's rows, its `task` section, notes and logs. Up to
/// [`MAX_CHILD_TASK_ID_CHARS`] visible characters, none of them a space, a control, an
/// invisible character or an angle bracket.
fn is_usable_task_id(id: &str) -> bool {
    !id.is_empty()
        && id.chars().count() <= MAX_CHILD_TASK_ID_CHARS
        && id.chars().all(|c| {
            !c.is_whitespace()
                && !c.is_control()
                && !crate::text::untrusted::is_invisible(c)
                && !matches!(c, '<' | '>')
        })
}

/// How many parent links lead up from this task through tasks of this harness: 0 for a task a
/// participant created, 1 for its child, and so on.
pub fn depth_of(store: &Store, record: &TaskRecord) -> u32 {
    let mut depth = 0;
    let mut current = record.clone();
    // Only a parent on this harness is walked: a link to a parent on another agent names that
    // agent's task, whose id may be any local task's too.
    while let Some(link) = current
        .ext
        .parent_tasks
        .first()
        .filter(|link| link.agent_id() == SELF_ID)
    {
        depth += 1;
        if depth >= MAX_DEPTH_WALK {
            break;
        }
        match store.task(&link.task_id) {
            Ok(Some(parent)) => current = parent,
            _ => break,
        }
    }
    depth
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agents_task_id_is_kept_only_when_it_is_short_and_plain() {
        assert!(is_usable_task_id("9b2e4c1e-3f0a-4d9e-8a57-2c1f0e6b7d21"));
        assert!(is_usable_task_id("tasks/42:ledger.v1"));
        for bad in [
            "",
            "a b",
            "a\nINFO forged",
            "</untrusted>",
            "id\u{202E}",
            &"x".repeat(MAX_CHILD_TASK_ID_CHARS + 1),
        ] {
            assert!(!is_usable_task_id(bad), "{bad:?}");
        }
    }
}
