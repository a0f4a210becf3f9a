//! The seam between the protocol server and the harness: what a caller can do to tasks.

use async_trait::async_trait;

use super::events::TaskEvents;
use crate::base::protocol::requests::{ListTasksRequest, ListTasksResponse, SendMessageRequest};
use crate::base::protocol::types::{Task, TaskState};
use crate::state::store::StoreError;

/// The participant id of a caller that names none.
pub const ANONYMOUS_PARTICIPANT: &str = crate::base::config::ANONYMOUS_PARTICIPANT_ID;

/// Who is calling, as the server identified it. A caller that proved who it is (a bearer token
/// of this harness, a trusted delegator or a token caller, or a JWT) is `proven`; one that did
/// not is whoever it says it is (`X-Participant-Id`, or `Message.metadata.participant_id`,
/// which wins), or the anonymous participant, and never one of the ids a credential stands for
/// (the server refuses those claims). An unproven caller lists nothing: what it created it
/// reaches by the task's unguessable id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The participant the caller acts as: what it claims, or the id its credential proves.
    pub participant_id: String,
    /// Whether the caller is a trusted delegator (or this harness), which may shape a new
    /// task's brief.
    pub trusted: bool,
    /// Whether the caller proved its id with a credential: only such a caller lists tasks, and
    /// it speaks only as itself.
    pub proven: bool,
}

impl Caller {
    /// The unproven caller named by a header value, or the anonymous participant.
    pub fn from_header(value: Option<&str>) -> Caller {
        let id = value.map(str::trim).filter(|v| !v.is_empty());
        Caller {
            participant_id: id.unwrap_or(ANONYMOUS_PARTICIPANT).to_string(),
            trusted: false,
            proven: false,
        }
    }

    /// The trusted delegator with this id, as its bearer token identified it.
    pub fn delegator(id: impl Into<String>) -> Caller {
        Caller {
            participant_id: id.into(),
            trusted: true,
            proven: true,
        }
    }

    /// The untrusted participant with this id, as its credential (a caller's token, a JWT)
    /// proved it.
    pub fn authenticated(id: impl Into<String>) -> Caller {
        Caller {
            participant_id: id.into(),
            trusted: false,
            proven: true,
        }
    }
}

/// A task's stream: its state when the subscription began, then every change after it.
pub struct Subscription {
    /// The task as it stood when the subscription began, sent first.
    pub snapshot: Task,
    /// Status and artifact updates after `snapshot`. A receiver that lags should resynchronise
    /// with `get_task`.
    pub events: TaskEvents,
}

/// Why a request about a task was refused. Each maps to one A2A error.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TaskError {
    /// Also returned for a task the caller is not a participant of, so existence does not leak.
    #[error("task not found: {0}")]
    NotFound(String),
    /// A cancel of a task that has already ended.
    #[error("task {id} is {} and cannot be canceled", .state.short_name())]
    NotCancelable {
        /// The task's id.
        id: String,
        /// The state it ended in.
        state: TaskState,
    },
    /// A message to a task that has already ended.
    #[error("task {id} is {} and accepts no further messages", .state.short_name())]
    Terminal {
        /// The task's id.
        id: String,
        /// The state it ended in.
        state: TaskState,
    },
    /// A message to a task that has already ended. The way on is a new task in the same
    /// context, which reads this one's exchange (`tasks::conversation`): the text says so.
    #[error(
        "task {id} is {} and accepts no further messages; to go on with this conversation, send \
         the message without taskId and with contextId {context_id}: the new task reads this \
         task's exchange",
        .state.short_name()
    )]
    Ended {
        /// The task's id.
        id: String,
        /// The state it ended in.
        state: TaskState,
        /// The task's context, where a follow-up task goes.
        context_id: String,
    },
    /// The request is malformed or breaks a rule; the text names the field and the fix.
    #[error("{0}")]
    InvalidParams(String),
    /// A new task refused for its delegation chain (a loop between harnesses, or too many
    /// hops): invalid params whose error says why in a form a parent can read.
    #[error(transparent)]
    Delegation(#[from] super::hops::HopRefusal),
    /// The operation is not offered here; the text names it.
    #[error("{0}")]
    Unsupported(String),
    /// The harness failed (the store, most often); the text is safe to show, the log has more.
    #[error("internal error: {0}")]
    Internal(String),
}

/// A store failure, logged in full here; the caller is told only that the store failed.
impl From<StoreError> for TaskError {
    fn from(err: StoreError) -> TaskError {
        tracing::error!("store error: {err}");
        TaskError::Internal("the task store failed; see the server log".to_string())
    }
}

impl From<super::hops::HopError> for TaskError {
    fn from(error: super::hops::HopError) -> TaskError {
        match error {
            super::hops::HopError::Invalid(message) => TaskError::InvalidParams(message),
            super::hops::HopError::Refused(refusal) => TaskError::Delegation(refusal),
        }
    }
}

/// What the protocol server needs from the harness. One implementation, [`crate::state::tasks::Tasks`].
#[async_trait]
pub trait TaskService: Send + Sync {
    /// Creates a task from a message, or adds the message to the task it names. The
    /// subscription starts before any work begins, so no event is missed.
    async fn send_message(
        &self,
        caller: &Caller,
        request: SendMessageRequest,
    ) -> Result<Subscription, TaskError>;

    /// The task, with at most `history_length` recent messages (all when `None`, none at 0).
    async fn get_task(
        &self,
        caller: &Caller,
        id: &str,
        history_length: Option<i32>,
    ) -> Result<Task, TaskError>;

    /// The task once a settling event of `events` ended a wait for it: as the change that
    /// settled it left it, when the events still hold that record, else as
    /// [`TaskService::get_task`] reads it.
    async fn settled_task(
        &self,
        caller: &Caller,
        id: &str,
        history_length: Option<i32>,
        events: &TaskEvents,
    ) -> Result<Task, TaskError> {
        let _ = events;
        self.get_task(caller, id, history_length).await
    }

    /// The caller's tasks, most recently updated first, one page at a time.
    async fn list_tasks(
        &self,
        caller: &Caller,
        request: ListTasksRequest,
    ) -> Result<ListTasksResponse, TaskError>;

    /// Cancels a task that is not terminal and returns it as it then is.
    async fn cancel_task(&self, caller: &Caller, id: &str) -> Result<Task, TaskError>;

    /// Follows a task that is not terminal.
    async fn subscribe(&self, caller: &Caller, id: &str) -> Result<Subscription, TaskError>;
}
