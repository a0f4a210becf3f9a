//! Compaction: the oldest history folded into a summary asked of the task's own model, and
//! journaled. Apart from the model's turn, which decides when it is due.

use super::append_unjournaled;
use super::call::Call;
use crate::base::model::Model;
use crate::state::tasks::hub::Change;
use crate::work::context::compaction::summary_request;
use crate::work::engine::budget;
use crate::work::engine::journal::{JournalEntry, Replay};
use crate::work::engine::shared::{Shared, StepError};

/// Folds the oldest history into a summary, asked of the task's own model at its effort, in a
/// request within the turn budget.
pub(super) async fn compact(
    shared: &Shared,
    model: &dyn Model,
    call: &Call,
    id: &str,
    replay: &mut Replay,
    cut: usize,
    budget_tokens: usize,
) -> Result<(), StepError> {
    let folded = &replay.live_history()[..cut];
    let mut request = summary_request(
        replay.summary.as_deref(),
        folded,
        shared.settings.max_output_tokens,
        budget_tokens,
    );
    let removed_chars = request
        .messages
        .iter()
        .map(|m| match m {
            crate::base::model::ChatMessage::User { content } => content.len(),
            _ => 0,
        })
        .sum();
    request.effort = call.effort;
    request.origin = call.origin.clone();
    let reply = call.complete(model, &request, id).await?;
    let usage = replay.usage.plus(reply.usage);
    let entry = JournalEntry::Compaction {
        summary: reply.text,
        folded_through: replay.folded_through + cut,
        removed_items: cut,
        removed_chars,
        usage: reply.usage,
    };
    tracing::info!(task = %id, removed_items = cut, "compacted the history");
    let limit = shared.settings.task_token_budget;
    let recorded = entry.clone();
    let earlier = std::mem::take(&mut replay.unjournaled);
    if let Change::Applied(..) = shared
        .hub
        .change(id, move |rec, tx| {
            append_unjournaled(tx, &rec.id, &earlier)?;
            budget::show_usage(rec, usage, limit);
            tx.append_journal(&rec.id.clone(), &recorded)
        })
        .await?
    {
        replay.apply(&entry);
    }
    Ok(())
}
