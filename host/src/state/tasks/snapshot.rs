//! What the task service answers with: a task as a caller sees it (its history as long as
//! asked), a subscription to it, and the task a resent message had already created.

use super::handler::Tasks;
use super::service::{Subscription, TaskError};
use crate::state::records::record::TaskRecord;

impl Tasks {
    pub(super) fn subscription(
        &self,
        id: &str,
        history: Option<i32>,
    ) -> Result<Subscription, TaskError> {
        let events = self.hub.subscribe(id);
        let record = self
            .hub
            .store()
            .task(id)?
            .ok_or_else(|| TaskError::NotFound(id.to_string()))?;
        Ok(Subscription {
            snapshot: self.render(&record, history, true)?,
            events,
        })
    }

    pub(super) fn render(
        &self,
        record: &TaskRecord,
        history_length: Option<i32>,
        include_artifacts: bool,
    ) -> Result<crate::base::protocol::types::Task, TaskError> {
        let history = match history_length {
            Some(n) if n <= 0 => None,
            Some(n) => Some(self.hub.store().history(&record.id, Some(n as usize))?),
            None => Some(self.hub.store().history(&record.id, None)?),
        };
        Ok(record.to_task(history, include_artifacts))
    }

    /// The task a resent message had already created, as it is now. While the task is still
    /// being worked the caller follows it as the first send would have; once it has settled
    /// there is nothing more to wait for, so the events end at once.
    pub(super) fn existing(&self, id: &str) -> Result<Subscription, TaskError> {
        let record = self
            .hub
            .store()
            .task(id)?
            .ok_or_else(|| TaskError::NotFound(id.to_string()))?;
        if !record.state().is_settled() {
            return self.subscription(id, None);
        }
        Ok(Subscription {
            snapshot: self.render(&record, None, true)?,
            events: super::events::TaskEvents::closed(),
        })
    }
}
