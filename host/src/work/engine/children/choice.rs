//! What a parent may ask of a child beyond its brief: a model, which only a child on this
//! harness can be given and only by a name `[models.*]` holds, and a token budget, which a
//! parent gives a child from what it has free; and whether it may have one more child at all
//! (`limits.max_children_per_task`, `limits.max_parallel_children`). Checked before anything is
//! created or contacted.

use crate::base::model::{UNKNOWN_MODEL_CODE, UnknownModel};
use crate::state::records::extension::TaskLink;
use crate::work::agents::SELF_ID;
use crate::work::tools::ToolError;

/// The code of a model asked of an agent other than this harness, which chooses its own.
pub const MODEL_NOT_SELF_CODE: &str = "model.not_self";
/// The code of a sub-task on this harness asked by a task with no token budget left to give.
pub const BUDGET_SPENT_CODE: &str = "budget.spent";
/// The code of a sub-task refused by `limits.max_children_per_task` or
/// `limits.max_parallel_children`.
pub const FAN_OUT_CODE: &str = "subtask.limit";

/// Refuses one more child of a parent whose sub-task `rows` already reach `max_children` in all
/// (every row counts) or `max_parallel` open ones.
pub fn check_fan_out(
    rows: &[TaskLink],
    max_children: u32,
    max_parallel: u32,
) -> Result<(), ToolError> {
    let made = rows.len();
    if made >= max_children as usize {
        return Err(ToolError::new(
            FAN_OUT_CODE,
            format!(
                "this task has created {made} sub-tasks, as many as limits.max_children_per_task ({max_children}) allows: do the rest of the work in this task"
            ),
        ));
    }
    let open = rows.iter().filter(|l| !l.has_ended()).count();
    if open >= max_parallel as usize {
        return Err(ToolError::new(
            FAN_OUT_CODE,
            format!(
                "this task has {open} sub-tasks open, as many as limits.max_parallel_children ({max_parallel}) allows: wait for one to end before creating another"
            ),
        ));
    }
    Ok(())
}

/// Refuses a model for another agent, a model `models` does not name, and a child on this
/// harness when `budget` (what its parent has left) is nothing.
pub fn check(
    models: &[String],
    agent: &str,
    model: Option<&str>,
    budget: Option<u64>,
) -> Result<(), ToolError> {
    if let Some(model) = model {
        if agent != SELF_ID {
            return Err(ToolError::new(
                MODEL_NOT_SELF_CODE,
                format!(
                    "{agent} chooses its own model; leave model out, or give the sub-task to self"
                ),
            ));
        }
        UnknownModel::check(model, models)
            .map_err(|err| ToolError::new(UNKNOWN_MODEL_CODE, err.message()))?;
    }
    if budget == Some(0) {
        return Err(ToolError::new(
            BUDGET_SPENT_CODE,
            "this task has used or set aside its whole token budget and has none to give a sub-task",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn models() -> Vec<String> {
        vec!["deep".to_string(), "fast".to_string()]
    }

    fn rows(open: usize, ended: usize) -> Vec<TaskLink> {
        let row = |state: &str| TaskLink {
            task_id: "c".into(),
            state: Some(state.into()),
            ..TaskLink::default()
        };
        let mut rows: Vec<TaskLink> = (0..open).map(|_| row("TASK_STATE_WORKING")).collect();
        rows.extend((0..ended).map(|_| row("TASK_STATE_COMPLETED")));
        rows
    }

    #[test]
    fn fan_out_is_refused_past_either_limit_naming_it_golden() {
        assert_eq!(check_fan_out(&rows(2, 5), 8, 3), Ok(()));
        assert_eq!(
            check_fan_out(&rows(3, 0), 8, 3).unwrap_err().to_string(),
            "[subtask.limit] this task has 3 sub-tasks open, as many as limits.max_parallel_children (3) allows: wait for one to end before creating another"
        );
        assert_eq!(
            check_fan_out(&rows(1, 7), 8, 3).unwrap_err().to_string(),
            "[subtask.limit] this task has created 8 sub-tasks, as many as limits.max_children_per_task (8) allows: do the rest of the work in this task"
        );
    }

    #[test]
    fn a_configured_model_on_self_and_a_budget_left_pass() {
        assert_eq!(check(&models(), "self", Some("fast"), Some(1)), Ok(()));
        assert_eq!(check(&models(), "ledger", None, None), Ok(()));
        assert_eq!(check(&[], "self", None, Some(500)), Ok(()));
    }

    #[test]
    fn each_refusal_names_what_to_do_instead_golden() {
        let text = |result: Result<(), ToolError>| result.unwrap_err().to_string();
        assert_eq!(
            text(check(&models(), "self", Some("huge"), None)),
            r#"[model.unknown] no model named "huge"; valid models: deep, fast (or leave model out for the default)"#
        );
        assert_eq!(
            text(check(&models(), "ledger", Some("fast"), None)),
            "[model.not_self] ledger chooses its own model; leave model out, or give the sub-task to self"
        );
        assert_eq!(
            text(check(&models(), "self", None, Some(0))),
            "[budget.spent] this task has used or set aside its whole token budget and has none to give a sub-task"
        );
    }
}
