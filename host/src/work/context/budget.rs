//! The turn budget and what fits in it: the share of it one message (or a task's brief) may
//! bring, and whether a turn's request is sent, compacted first, or cannot fit at all.

use std::fmt;

use super::compaction::is_over;
use super::window::{CHARS_PER_TOKEN, message_chars};
use crate::base::model::ModelRequest;

/// The share of a turn budget, in percent, that a task's brief may take, and the same again
/// for the text of one message. Every request carries the static prefix and the tool
/// definitions (about 2,500 tokens with the builtin plugin and no agents), the brief in `<task>`
/// (never compacted), the plan, loaded skills and the summary, then the history compaction
/// keeps. A quarter for the brief and a quarter for the newest message leave half of the
/// budget for the rest, so a task that was accepted can be worked: its first request fits the
/// default 12,000-token budget with room to spare, and after a compaction there is room for
/// more than the last message. Anything bigger is refused when it arrives rather than sent to
/// a model that cannot read it.
pub const INPUT_SHARE_PERCENT: usize = 25;

/// The setting the budget comes from, as a failed task's reason and a refusal name it.
pub const BUDGET_SETTINGS: &str =
    "context.turn_budget_tokens, or the model's context_window_tokens when smaller";

/// The turn budget in tokens: the configured budget, never more than the model's window.
pub fn turn_budget(turn_budget_tokens: usize, context_window: Option<usize>) -> usize {
    context_window.map_or(turn_budget_tokens, |w| w.min(turn_budget_tokens))
}

/// The tokens a brief, or one message's text, may take of a turn budget.
pub fn max_input_tokens(budget: usize) -> usize {
    budget * INPUT_SHARE_PERCENT / 100
}

/// The bytes the estimate counts as one token: what refusals convert sizes with.
pub const BYTES_PER_TOKEN: usize = CHARS_PER_TOKEN;

/// A turn request's estimated size: the whole, and the part that is history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestSize {
    /// Tokens of the whole request (instructions, tools, sections, history).
    pub total: usize,
    /// Tokens of the history after the per-task sections: all compaction can fold.
    pub history: usize,
    /// History items the request carries.
    pub history_items: usize,
}

impl RequestSize {
    /// The size of a turn request as [`super::assemble`] builds it: the per-task sections in
    /// the first message, the history after it.
    pub fn of(request: &ModelRequest) -> RequestSize {
        let history = request.messages.get(1..).unwrap_or_default();
        RequestSize {
            total: super::estimate_tokens(request),
            history: history.iter().map(message_chars).sum::<usize>() / CHARS_PER_TOKEN,
            history_items: history.len(),
        }
    }

    /// Tokens compaction cannot touch: the instructions, the tools, the per-task sections.
    pub fn fixed(&self) -> usize {
        self.total.saturating_sub(self.history)
    }
}

/// What a turn does with its request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fit {
    /// It fits: send it.
    Send,
    /// Fold the oldest history into a summary first.
    Compact,
    /// It cannot be brought under the budget: the task fails with this reason.
    Over(OverBudget),
}

/// Decides a turn. Under `fraction` of the budget a request goes as it is. Past it, the history
/// is compacted when that can help: when the request is over the budget itself, or when what
/// compaction cannot touch is under the threshold (so folding the history brings the request
/// below it). A request that compaction cannot help but that fits the budget is sent as it is,
/// rather than compacting at every turn for nothing. A request over the budget that cannot be
/// compacted (`can_compact` false: too little history left), or whose untouchable part alone is
/// over, is never sent.
pub fn fit(size: RequestSize, budget: usize, fraction: f64, can_compact: bool) -> Fit {
    if !is_over(size.total, budget, fraction) {
        return Fit::Send;
    }
    if size.fixed() > budget {
        return Fit::Over(OverBudget::Sections {
            fixed: size.fixed(),
            budget,
        });
    }
    let over = size.total > budget;
    if can_compact && (over || !is_over(size.fixed(), budget, fraction)) {
        return Fit::Compact;
    }
    if over {
        return Fit::Over(OverBudget::History { size, budget });
    }
    Fit::Send
}

/// Why a task's next request cannot fit its turn budget: the reason the task fails with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OverBudget {
    /// What is never compacted is over the budget by itself.
    Sections {
        /// Estimated tokens of the parts never compacted (instructions, tools, sections).
        fixed: usize,
        /// The turn budget.
        budget: usize,
    },
    /// The history left after compaction still does not fit.
    History {
        /// The request's estimated size after compaction.
        size: RequestSize,
        /// The turn budget.
        budget: usize,
    },
}

impl fmt::Display for OverBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the task cannot fit its turn budget: ")?;
        match self {
            OverBudget::Sections { fixed, budget } => write!(
                f,
                "the parts of its context that are never compacted (instructions, tool definitions, the task, its plan, loaded skills and the summary) come to about {fixed} tokens, over the turn budget of {budget} tokens ({BUDGET_SETTINGS})"
            ),
            OverBudget::History { size, budget } => write!(
                f,
                "its next model call would need about {} tokens, over the turn budget of {budget} tokens ({BUDGET_SETTINGS}), and its history ({} items, about {} tokens) cannot be compacted further",
                size.total, size.history_items, size.history
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(total: usize, history: usize) -> RequestSize {
        RequestSize {
            total,
            history,
            history_items: 3,
        }
    }

    #[test]
    fn the_budget_is_the_smaller_of_the_setting_and_the_window_and_a_quarter_of_it_is_one_input() {
        assert_eq!(turn_budget(12_000, Some(8_000)), 8_000);
        assert_eq!(turn_budget(12_000, None), 12_000);
        assert_eq!(max_input_tokens(12_000), 3_000);
    }

    #[test]
    fn a_request_under_the_threshold_is_sent_and_one_over_it_is_compacted_when_that_helps() {
        assert_eq!(fit(size(9_000, 5_000), 12_000, 0.75, true), Fit::Send);
        assert_eq!(fit(size(9_001, 5_000), 12_000, 0.75, true), Fit::Compact);
        assert_eq!(fit(size(13_000, 5_000), 12_000, 0.75, true), Fit::Compact);
    }

    #[test]
    fn a_request_that_fits_but_that_compaction_cannot_help_is_sent_without_compacting() {
        // What compaction cannot touch is over the threshold already.
        assert_eq!(fit(size(11_000, 1_000), 12_000, 0.75, true), Fit::Send);
        // Too little history to fold.
        assert_eq!(fit(size(11_000, 5_000), 12_000, 0.75, false), Fit::Send);
    }

    #[test]
    fn a_request_over_the_budget_that_cannot_shrink_is_never_sent() {
        assert_eq!(
            fit(size(20_000, 1_000), 12_000, 0.75, true),
            Fit::Over(OverBudget::Sections {
                fixed: 19_000,
                budget: 12_000
            })
        );
        assert_eq!(
            fit(size(13_000, 9_000), 12_000, 0.75, false),
            Fit::Over(OverBudget::History {
                size: size(13_000, 9_000),
                budget: 12_000
            })
        );
    }

    #[test]
    fn the_reasons_a_task_fails_with_golden() {
        assert_eq!(
            OverBudget::Sections {
                fixed: 19_000,
                budget: 12_000
            }
            .to_string(),
            "the task cannot fit its turn budget: the parts of its context that are never compacted (instructions, tool definitions, the task, its plan, loaded skills and the summary) come to about 19000 tokens, over the turn budget of 12000 tokens (context.turn_budget_tokens, or the model's context_window_tokens when smaller)"
        );
        assert_eq!(
            OverBudget::History {
                size: size(13_000, 9_000),
                budget: 12_000
            }
            .to_string(),
            "the task cannot fit its turn budget: its next model call would need about 13000 tokens, over the turn budget of 12000 tokens (context.turn_budget_tokens, or the model's context_window_tokens when smaller), and its history (3 items, about 9000 tokens) cannot be compacted further"
        );
    }
}
