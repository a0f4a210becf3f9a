//! What a turn's model calls are told beside their messages, shared by the turn's call and the
//! summary call of a compaction.

use crate::base::model::{Effort, Origin};

/// What a turn's calls are told beside their messages: the task's effort and the turn they are
/// for. The summary call of a compaction is made at the same.
pub(super) struct Call {
    /// How hard to reason, as the task's brief set it.
    pub(super) effort: Option<Effort>,
    /// The task, the message answered and the turn.
    pub(super) origin: Origin,
}
