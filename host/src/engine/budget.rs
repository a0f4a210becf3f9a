//! Token budgets: the budget that applies to a task, whether its model calls have spent it, the
//! reason a task fails when they have, and what a task can still give a sub-task.
//!
//! A task's budget is fixed when it is created (the smaller of what its trusted creator gave it
//! and `limits.task_token_budget`) and cut again to the limit in force, so lowering the limit
//! reaches open tasks at the next start. The tokens used are those the providers report, summed
//! over the journal (`Replay::usage`), so a restart neither forgets nor double-counts a call.

use crate::model::Usage;
use crate::tasks::record::TaskRecord;

/// Where the budget that applies to a task comes from: it names the setting to change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `limits.task_token_budget`.
    Limit,
    /// The task's brief (`token_budget`), from a trusted delegator or a parent task.
    Brief,
}

/// The most tokens a task may use, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub tokens: u64,
    pub source: Source,
}

impl Budget {
    /// The budget of `record` under `limit` (`limits.task_token_budget`): the smaller of the
    /// task's own and the limit; `None` when neither is set.
    pub fn of(record: &TaskRecord, limit: Option<u64>) -> Option<Budget> {
        let budget = match (record.ext.token_budget, limit) {
            (Some(own), Some(limit)) => own.min(limit),
            (own, limit) => own.or(limit)?,
        };
        let source = if limit == Some(budget) {
            Source::Limit
        } else {
            Source::Brief
        };
        Some(Budget {
            tokens: budget,
            source,
        })
    }

    /// Why the task fails, once `used` is past the budget; `None` while it is not.
    pub fn exceeded_by(&self, used: &Usage) -> Option<String> {
        let total = used.total();
        if total <= self.tokens {
            return None;
        }
        Some(match self.source {
            Source::Limit => format!(
                "the task used {total} tokens, over limits.task_token_budget ({})",
                self.tokens
            ),
            Source::Brief => format!(
                "the task used {total} tokens, over the token_budget its brief gave it ({})",
                self.tokens
            ),
        })
    }
}

/// Shows on the task what its model calls have used so far and the budget that applies, as
/// each model call is recorded.
pub fn show_usage(record: &mut TaskRecord, usage: Usage, limit: Option<u64>) {
    record.ext.usage = Some(usage);
    record.ext.token_budget = Budget::of(record, limit).map(|b| b.tokens);
}

/// What a task can still give a sub-task: its budget less what it has used, as its record says
/// after its last model call. `None` when the task has no budget.
pub fn remaining(record: &TaskRecord) -> Option<u64> {
    let used = record.ext.usage.map(|u| u.total()).unwrap_or(0);
    record.ext.token_budget.map(|b| b.saturating_sub(used))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::extension::TaskExtension;

    fn record(own: Option<u64>, used: u64) -> TaskRecord {
        let mut ext = TaskExtension::from_text("t");
        ext.token_budget = own;
        ext.usage = Some(Usage {
            input_tokens: used,
            output_tokens: 0,
        });
        TaskRecord {
            id: "t".into(),
            context_id: "c".into(),
            status: Default::default(),
            artifacts: Vec::new(),
            metadata: Default::default(),
            ext,
            owner: "u".into(),
        }
    }

    fn used(tokens: u64) -> Usage {
        Usage {
            input_tokens: tokens - tokens / 4,
            output_tokens: tokens / 4,
        }
    }

    #[test]
    fn the_smaller_budget_applies_and_names_its_source() {
        let limit = |b| Budget {
            tokens: b,
            source: Source::Limit,
        };
        let brief = |b| Budget {
            tokens: b,
            source: Source::Brief,
        };
        assert_eq!(Budget::of(&record(None, 0), None), None);
        assert_eq!(Budget::of(&record(None, 0), Some(900)), Some(limit(900)));
        assert_eq!(
            Budget::of(&record(Some(900), 0), Some(900)),
            Some(limit(900))
        );
        assert_eq!(
            Budget::of(&record(Some(400), 0), Some(900)),
            Some(brief(400))
        );
        assert_eq!(
            Budget::of(&record(Some(2_000), 0), Some(900)),
            Some(limit(900))
        );
        assert_eq!(Budget::of(&record(Some(400), 0), None), Some(brief(400)));
    }

    #[test]
    fn a_task_fails_only_past_its_budget_with_a_reason_naming_it_golden() {
        let limit = Budget::of(&record(None, 0), Some(1_000)).unwrap();
        assert_eq!(limit.exceeded_by(&used(1_000)), None);
        assert_eq!(
            limit.exceeded_by(&used(1_204)).as_deref(),
            Some("the task used 1204 tokens, over limits.task_token_budget (1000)")
        );
        let brief = Budget::of(&record(Some(300), 0), Some(1_000)).unwrap();
        assert_eq!(
            brief.exceeded_by(&used(400)).as_deref(),
            Some("the task used 400 tokens, over the token_budget its brief gave it (300)")
        );
    }

    #[test]
    fn what_is_left_is_the_budget_less_the_usage_never_below_zero() {
        assert_eq!(remaining(&record(Some(1_000), 350)), Some(650));
        assert_eq!(remaining(&record(Some(1_000), 5_000)), Some(0));
        assert_eq!(remaining(&record(None, 350)), None);
    }
}
