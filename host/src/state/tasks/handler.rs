//! [`Tasks`], the harness's answer to every protocol request about tasks: who may see a task,
//! how a message creates (once per message id) or continues one, and what a brief may set.

use std::sync::Arc;

use async_trait::async_trait;

use super::conversation;
use super::creator::{
    BriefRules, check_new_brief, join_as_admin, refuse_reserved_metadata, sender_of,
};
use super::engine_port::{Engine, FirstInput};
use super::envelope::{BriefChange, read_brief};
use super::events::TaskEvents;
use super::hops;
use super::hub::{Change, Created, TaskHub};
use super::ids::new_store_key;
use super::input_limit::InputLimits;
use super::service::{Caller, Subscription, TaskError, TaskService};
use super::story;
use crate::base::protocol::requests::{ListTasksRequest, ListTasksResponse, SendMessageRequest};
use crate::base::protocol::types::{Message, TaskState, TaskStatus, timestamp_now};
use crate::base::telemetry;
use crate::state::records::extension::TaskExtension;
use crate::state::records::record::TaskRecord;
use crate::state::store::TaskFilter;

/// Tasks listed per page when the request names no size.
pub const DEFAULT_PAGE_SIZE: usize = 50;
/// The largest page a listing returns.
pub const MAX_PAGE_SIZE: usize = 100;

/// The task service over the hub and an engine.
pub struct Tasks {
    pub(super) hub: Arc<TaskHub>,
    pub(super) engine: Arc<dyn Engine>,
    /// The models a new brief may name and the budget every new task gets.
    pub(super) rules: BriefRules,
    /// What one message may bring to the model of the task it creates or continues.
    pub(super) inputs: InputLimits,
}

impl Tasks {
    /// A service over the hub whose tasks `engine` works, with no named models and no token
    /// budget.
    pub fn new(hub: Arc<TaskHub>, engine: Arc<dyn Engine>) -> Tasks {
        Tasks::with_rules(hub, engine, BriefRules::default())
    }

    /// A service over the hub whose tasks `engine` works and whose new briefs are checked
    /// against `rules`.
    pub fn with_rules(hub: Arc<TaskHub>, engine: Arc<dyn Engine>, rules: BriefRules) -> Tasks {
        Tasks {
            hub,
            engine,
            rules,
            inputs: InputLimits::default(),
        }
    }

    /// The service with every message checked against `inputs` before anything is written:
    /// one too big for its task's model is refused whole.
    pub fn with_input_limits(mut self, inputs: InputLimits) -> Tasks {
        self.inputs = inputs;
        self
    }

    /// The task if the caller may see it; not found otherwise, so existence does not leak.
    fn visible(&self, caller: &str, id: &str) -> Result<TaskRecord, TaskError> {
        match self.hub.store().task(id)? {
            Some(record) if record.is_visible_to(caller) => Ok(record),
            _ => Err(TaskError::NotFound(id.to_string())),
        }
    }

    /// Creates a task from its first message. A message id the sender already created a task
    /// with gives that task back; a brief that asks for more than the sender may is refused
    /// whole, before anything is written.
    async fn create(
        &self,
        sender: &Caller,
        mut message: Message,
        push: Option<crate::base::protocol::requests::TaskPushNotificationConfig>,
    ) -> Result<Subscription, TaskError> {
        let Caller {
            participant_id: sender,
            trusted,
            ..
        } = sender;
        let sender = sender.as_str();
        // A resent message is found in the transaction that would create its task (below), so
        // a new task costs no read beforehand.
        let brief = read_brief(&message)?;
        let from_envelope = brief.is_some();
        let mut ext = match brief {
            Some(ext) => ext,
            None => {
                let text = message.text();
                if text.trim().is_empty() {
                    return Err(TaskError::InvalidParams(
                        "message: a new task needs a text part or a task envelope".to_string(),
                    ));
                }
                TaskExtension::from_text(&text)
            }
        };
        // A loop between harnesses, or a chain gone too far, is refused before anything is
        // written: its refusal costs a parse and a comparison, not a task.
        ext.delegation = hops::of_new_task(&self.rules.hops, &message, ext.delegation.take())?;
        check_new_brief(&ext, sender, *trusted, &self.rules)?;
        self.inputs.check_new(&message, &ext, from_envelope)?;
        ext.token_budget = self.rules.budget_for(&ext);
        join_as_admin(&mut ext, sender, *trusted);
        // The creating request's trace, not whatever the brief claimed.
        ext.trace = telemetry::current_traceparent();
        let id = new_store_key();
        let (context_id, conversation) = conversation::context_of_new_task(
            self.hub.store(),
            &self.inputs,
            sender,
            &message.context_id,
            ext.model.as_deref(),
        )?;
        message.task_id = id.clone();
        message.context_id = context_id.clone();
        let mut record = TaskRecord {
            id: id.clone(),
            context_id,
            status: TaskStatus {
                state: TaskState::Submitted,
                message: None,
                timestamp: Some(timestamp_now()),
            },
            artifacts: Vec::new(),
            metadata: Default::default(),
            ext,
            owner: sender.to_string(),
        };
        let message_id = message.message_id.clone();
        // Nothing changes the new task before its loop starts, below: the snapshot is the
        // record and the message as written, with no read back.
        let snapshot = record.to_task(Some(vec![message.clone()]), true);
        // A message that is plain input for the model is journaled with the task, which is
        // created working: the loop's first step is then the model call, one write fewer.
        // Followers still see it submitted (the snapshot), then working (announced below).
        let first = (self.engine.first_input(&record, &message)).map(|first| FirstInput {
            conversation: conversation.clone(),
            ..first
        });
        if first.is_some() {
            record.status = TaskStatus {
                state: TaskState::Working,
                message: None,
                timestamp: Some(timestamp_now()),
            };
        }
        let working = first.as_ref().map(|_| record.status.clone());
        let journaled = first.clone();
        let repeated_push = push.clone();
        let engine = self.engine.clone();
        let created = self
            .hub
            .create(record, message_id, move |tx| {
                let seq = tx.append_message(&message.task_id, &message)?;
                if let Some(text) = &conversation {
                    engine.record_conversation(tx, &message.task_id, text)?;
                }
                if let Some(push) = push {
                    super::push_configs::save(tx, &message.task_id, push)?;
                }
                if let Some(first) = &journaled {
                    engine.record_first_input(tx, &message.task_id, first, seq)?;
                }
                Ok(seq)
            })
            .await?;
        let seq = match created {
            Created::New(seq) => seq,
            Created::Existing(existing) => {
                // The sender sent this message before: it gets the task that made, and the
                // push config this sending carried is set on it rather than dropped, so a
                // client that asked for pushes gets them.
                if let Some(push) = repeated_push {
                    super::push_configs::set_on(&self.hub, &existing, push).await?;
                }
                return self.existing(&existing);
            }
        };
        story::created(&id, &snapshot.context_id, sender);
        let events = self.hub.subscribe(&id);
        match (&first, working) {
            (Some(first), Some(status)) => {
                self.hub.announce_status(&id, &snapshot.context_id, status);
                self.engine.start_drained(&id, first, seq);
            }
            _ => self.engine.start(&id),
        }
        Ok(Subscription { snapshot, events })
    }

    async fn continue_task(
        &self,
        sender: &str,
        mut message: Message,
    ) -> Result<Subscription, TaskError> {
        let id = message.task_id.clone();
        let record = self.visible(sender, &id)?;
        if record.state().is_terminal() {
            return Err(TaskError::Ended {
                id,
                state: record.state(),
                context_id: record.context_id,
            });
        }
        let change = BriefChange::read(&message)?;
        if let Some(change) = &change {
            change.check(sender, &record)?;
        }
        self.inputs
            .check_continue(&message, change.as_ref(), &record.ext)?;
        if !message.context_id.is_empty() && message.context_id != record.context_id {
            return Err(TaskError::InvalidParams(format!(
                "message.contextId: task {id} belongs to context {}",
                record.context_id
            )));
        }
        message.context_id = record.context_id.clone();
        // The stored message names its sender, so the loop attributes it to who sent it (the
        // header's participant as much as the metadata's), not to the task's creator.
        message
            .metadata
            .get_or_insert_with(Default::default)
            .entry("participant_id")
            .or_insert_with(|| sender.into());
        let events = self.hub.subscribe(&id);
        let outcome = self
            .hub
            .change(&id, move |rec, tx| {
                if let Some(change) = &change {
                    change.apply(&mut rec.ext);
                }
                tx.append_message(&rec.id.clone(), &message)?;
                Ok(())
            })
            .await?;
        match outcome {
            Change::Applied(record, ()) => {
                self.engine.wake(&id);
                Ok(Subscription {
                    snapshot: self.render(&record, None, true)?,
                    events,
                })
            }
            Change::Terminal(record) => Err(TaskError::Ended {
                id,
                state: record.state(),
                context_id: record.context_id.clone(),
            }),
            Change::Missing => Err(TaskError::NotFound(id)),
        }
    }
}

#[async_trait]
impl TaskService for Tasks {
    async fn send_message(
        &self,
        caller: &Caller,
        request: SendMessageRequest,
    ) -> Result<Subscription, TaskError> {
        let sender = sender_of(caller, &request.message)?;
        refuse_reserved_metadata(&request.message)?;
        if request.message.task_id.is_empty() {
            let push = super::push_configs::sent_with(request.configuration)?;
            self.create(&sender, request.message, push).await
        } else {
            self.continue_task(&sender.participant_id, request.message)
                .await
        }
    }

    async fn get_task(
        &self,
        caller: &Caller,
        id: &str,
        history_length: Option<i32>,
    ) -> Result<crate::base::protocol::types::Task, TaskError> {
        let record = self.visible(&caller.participant_id, id)?;
        self.render(&record, history_length, true)
    }

    async fn settled_task(
        &self,
        caller: &Caller,
        id: &str,
        history_length: Option<i32>,
        events: &TaskEvents,
    ) -> Result<crate::base::protocol::types::Task, TaskError> {
        match events.settled_record() {
            // The record the settling change committed: the same the store would give, with
            // one read (of the task) fewer. Only the history is read.
            Some(record) if record.id == id && record.is_visible_to(&caller.participant_id) => {
                self.render(&record, history_length, true)
            }
            _ => self.get_task(caller, id, history_length).await,
        }
    }

    async fn list_tasks(
        &self,
        caller: &Caller,
        request: ListTasksRequest,
    ) -> Result<ListTasksResponse, TaskError> {
        let limit = match request.page_size {
            None => DEFAULT_PAGE_SIZE,
            Some(n) if n >= 1 && n as usize <= MAX_PAGE_SIZE => n as usize,
            Some(n) => {
                return Err(TaskError::InvalidParams(format!(
                    "pageSize: {n} is out of range; use 1 to {MAX_PAGE_SIZE}"
                )));
            }
        };
        let cursor = if request.page_token.is_empty() {
            None
        } else {
            Some(request.page_token.parse::<i64>().map_err(|_| {
                TaskError::InvalidParams(format!(
                    "pageToken: `{}` is not a token this server issued",
                    request.page_token
                ))
            })?)
        };
        if !caller.proven {
            // A caller that proved no identity shares its claimed id (or the anonymous one)
            // with anyone who claims it: it reaches what it created by the task's id alone.
            return Ok(ListTasksResponse {
                tasks: Vec::new(),
                next_page_token: String::new(),
                page_size: 0,
                total_size: 0,
            });
        }
        let page = self.hub.store().list_tasks(&TaskFilter {
            participant_id: caller.participant_id.clone(),
            context_id: Some(request.context_id.clone()).filter(|c| !c.is_empty()),
            state: request.status.filter(|s| *s != TaskState::Unspecified),
            updated_after: request.status_timestamp_after.clone(),
            cursor,
            limit,
        })?;
        let history = request.history_length.or(Some(0));
        let include_artifacts = request.include_artifacts.unwrap_or(false);
        let tasks = page
            .tasks
            .iter()
            .map(|record| self.render(record, history, include_artifacts))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ListTasksResponse {
            page_size: tasks.len() as i32,
            tasks,
            next_page_token: page.next_cursor.map(|c| c.to_string()).unwrap_or_default(),
            total_size: page.total as i32,
        })
    }

    async fn cancel_task(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<crate::base::protocol::types::Task, TaskError> {
        let record = self.visible(&caller.participant_id, id)?;
        if record.state().is_terminal() {
            return Err(TaskError::NotCancelable {
                id: id.to_string(),
                state: record.state(),
            });
        }
        let who = caller.participant_id.clone();
        let outcome = self
            .hub
            .change(id, move |rec, tx| {
                let message =
                    Message::agent_text(&rec.id, &rec.context_id, format!("canceled by {who}"));
                tx.append_message(&rec.id, &message)?;
                rec.status = TaskStatus {
                    state: TaskState::Canceled,
                    message: Some(message),
                    timestamp: Some(timestamp_now()),
                };
                Ok(())
            })
            .await?;
        match outcome {
            Change::Applied(record, ()) => {
                self.engine.cancel(id);
                story::canceled(id, &caller.participant_id);
                self.render(&record, None, true)
            }
            Change::Terminal(record) => Err(TaskError::NotCancelable {
                id: id.to_string(),
                state: record.state(),
            }),
            Change::Missing => Err(TaskError::NotFound(id.to_string())),
        }
    }

    async fn subscribe(&self, caller: &Caller, id: &str) -> Result<Subscription, TaskError> {
        let record = self.visible(&caller.participant_id, id)?;
        if record.state().is_terminal() {
            return Err(TaskError::Terminal {
                id: id.to_string(),
                state: record.state(),
            });
        }
        self.subscription(id, None)
    }
}
