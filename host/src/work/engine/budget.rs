//! Token budgets: the budget that applies to a task, whether its model calls have spent it, the
//! reason a task fails when they have, and what a task can still give a sub-task.
//!
//! A task's budget is fixed when it is created (the smaller of what its trusted creator gave it
//! and `limits.task_token_budget`) and cut again to the limit in force, so lowering the limit
//! reaches open tasks at the next start. The tokens used are those the providers report, summed
//! over the journal (`Replay::usage`), so a restart neither forgets nor double-counts a call.
//!
//! A budget bounds a whole tree of tasks. Each child gets a reservation carved from what its
//! parent has free (not a copy of it), kept on the parent's sub-task row; an open child holds
//! its reservation, an ended one what it reported spending (its whole reservation when it
//! reported nothing), and what it did not use is free again. A task stops before a model call
//! that would take it and its children past the budget, judging the call by the larger of the
//! request's estimate and the last call's cost, so a tree passes its root's budget by at most
//! what one call costs beyond that guess.

use crate::base::model::Usage;
use crate::state::records::extension::TaskLink;
use crate::state::records::record::TaskRecord;

/// The part of what a parent has free that a new child is given: a half, so the parent keeps
/// as much for its own calls and its later children as it gives the child.
pub const CHILD_SHARE_DIVISOR: u64 = 2;

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
    /// The most tokens the task may use, its children's reservations included.
    pub tokens: u64,
    /// Which setting set it, so that the reason a task fails names the one to change.
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

    /// Why the task fails, once what its own calls `used` and what its `children` hold are
    /// past the budget; `None` while they are not.
    pub fn exceeded_by(&self, used: &Usage, children: u64) -> Option<String> {
        let total = used.total().saturating_add(children);
        if total <= self.tokens {
            return None;
        }
        Some(if children == 0 {
            format!("the task used {total} tokens, over {}", self.named())
        } else {
            format!(
                "the task and its sub-tasks used {total} tokens ({} by its own model calls), over {}",
                used.total(),
                self.named()
            )
        })
    }

    /// Why the task stops before a model call expected to take `next` tokens: what it `used`,
    /// what its `children` hold and the call together would pass the budget. `None` when the
    /// call fits.
    pub fn next_call_over(&self, used: &Usage, children: u64, next: u64) -> Option<String> {
        let spent = used.total().saturating_add(children);
        if spent.saturating_add(next) <= self.tokens {
            return None;
        }
        let whose = if children == 0 {
            "the task has"
        } else {
            "the task and its sub-tasks have"
        };
        Some(format!(
            "{whose} used {spent} tokens of {}, and its next model call would take about {next} more",
            self.named()
        ))
    }

    /// The budget as its reason names it: the setting, or the brief.
    fn named(&self) -> String {
        match self.source {
            Source::Limit => format!("limits.task_token_budget ({})", self.tokens),
            Source::Brief => format!("the token_budget its brief gave it ({})", self.tokens),
        }
    }
}

/// Shows on the task what its model calls have used so far and the budget that applies, as
/// each model call is recorded.
pub fn show_usage(record: &mut TaskRecord, usage: Usage, limit: Option<u64>) {
    record.ext.usage = Some(usage);
    record.ext.token_budget = Budget::of(record, limit).map(|b| b.tokens);
}

/// What a task has free: its budget less what its own model calls used (as its record says
/// after its last call) and what its children hold. `None` when the task has no budget.
pub fn remaining(record: &TaskRecord) -> Option<u64> {
    let used = record.ext.usage.map(|u| u.total()).unwrap_or(0);
    let held = held_by_children(record);
    record
        .ext
        .token_budget
        .map(|b| b.saturating_sub(used).saturating_sub(held))
}

/// What a new child of this task is given out of what the task has free
/// ([`CHILD_SHARE_DIVISOR`]); `None` when the task has no budget.
pub fn reservation(record: &TaskRecord) -> Option<u64> {
    remaining(record).map(|free| free / CHILD_SHARE_DIVISOR)
}

/// What a task's children hold of its budget, summed over its sub-task rows.
pub fn held_by_children(record: &TaskRecord) -> u64 {
    // Saturating: a peer reports its own usage, and a huge count must not wrap to a small one.
    record
        .ext
        .sub_tasks
        .iter()
        .map(held_by)
        .fold(0, u64::saturating_add)
}

/// What one child holds: while open, its reservation (or what it reported spending, when
/// more); once ended, what it reported spending, or its whole reservation when it reported
/// nothing (an agent that does not say cannot be taken to have spent less).
fn held_by(link: &TaskLink) -> u64 {
    let reserved = link.reserved.unwrap_or(0);
    match (link.has_ended(), link.spent) {
        (true, Some(spent)) => spent,
        (true, None) => reserved,
        (false, spent) => reserved.max(spent.unwrap_or(0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::records::extension::TaskExtension;

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
        assert_eq!(limit.exceeded_by(&used(1_000), 0), None);
        assert_eq!(
            limit.exceeded_by(&used(1_204), 0).as_deref(),
            Some("the task used 1204 tokens, over limits.task_token_budget (1000)")
        );
        let brief = Budget::of(&record(Some(300), 0), Some(1_000)).unwrap();
        assert_eq!(
            brief.exceeded_by(&used(400), 0).as_deref(),
            Some("the task used 400 tokens, over the token_budget its brief gave it (300)")
        );
    }

    #[test]
    fn what_is_left_is_the_budget_less_the_usage_never_below_zero() {
        assert_eq!(remaining(&record(Some(1_000), 350)), Some(650));
        assert_eq!(remaining(&record(Some(1_000), 5_000)), Some(0));
        assert_eq!(remaining(&record(None, 350)), None);
    }

    fn child(state: &str, reserved: Option<u64>, spent: Option<u64>) -> TaskLink {
        TaskLink {
            task_id: "c".into(),
            state: Some(state.into()),
            reserved,
            spent,
            ..TaskLink::default()
        }
    }

    #[test]
    fn an_open_child_holds_its_reservation_and_an_ended_one_what_it_spent() {
        let mut parent = record(Some(1_000), 100);
        parent.ext.sub_tasks = vec![
            child("TASK_STATE_WORKING", Some(300), None),
            child("TASK_STATE_WORKING", Some(100), Some(150)),
            child("TASK_STATE_COMPLETED", Some(200), Some(40)),
            child("TASK_STATE_FAILED", Some(50), None),
        ];
        assert_eq!(held_by_children(&parent), 300 + 150 + 40 + 50);
        assert_eq!(remaining(&parent), Some(1_000 - 100 - 540));
        assert_eq!(reservation(&parent), Some(180));
    }

    #[test]
    fn a_peer_reporting_a_huge_usage_exhausts_the_budget_without_wrapping() {
        let mut parent = record(Some(1_000), 100);
        parent.ext.sub_tasks = vec![
            child("TASK_STATE_COMPLETED", Some(10), Some(u64::MAX)),
            child("TASK_STATE_COMPLETED", Some(10), Some(u64::MAX)),
        ];
        assert_eq!(held_by_children(&parent), u64::MAX);
        assert_eq!(remaining(&parent), Some(0));
        let budget = Budget::of(&parent, None).unwrap();
        assert!(budget.exceeded_by(&used(100), u64::MAX).is_some());
        assert!(
            budget
                .next_call_over(&used(100), u64::MAX, u64::MAX)
                .is_some()
        );
    }

    #[test]
    fn a_child_is_carved_from_what_is_free_so_children_never_hold_more_than_the_parent_had() {
        let mut parent = record(Some(1_000), 0);
        let mut given = 0;
        for _ in 0..20 {
            let share = reservation(&parent).unwrap();
            given += share;
            parent
                .ext
                .sub_tasks
                .push(child("TASK_STATE_WORKING", Some(share), None));
        }
        assert!(given <= 1_000, "{given}");
        assert_eq!(remaining(&parent), Some(1_000 - given));
    }

    #[test]
    fn the_reasons_name_the_budget_and_the_sub_tasks_share_golden() {
        let limit = Budget::of(&record(None, 0), Some(1_000)).unwrap();
        assert_eq!(
            limit.exceeded_by(&used(400), 700).as_deref(),
            Some(
                "the task and its sub-tasks used 1100 tokens (400 by its own model calls), over limits.task_token_budget (1000)"
            )
        );
        assert_eq!(limit.next_call_over(&used(400), 300, 300), None);
        assert_eq!(
            limit.next_call_over(&used(400), 300, 301).as_deref(),
            Some(
                "the task and its sub-tasks have used 700 tokens of limits.task_token_budget (1000), and its next model call would take about 301 more"
            )
        );
        let brief = Budget::of(&record(Some(300), 0), None).unwrap();
        assert_eq!(
            brief.next_call_over(&used(200), 0, 150).as_deref(),
            Some(
                "the task has used 200 tokens of the token_budget its brief gave it (300), and its next model call would take about 150 more"
            )
        );
    }
}
