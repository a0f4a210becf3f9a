//! The creator rules of tasks, in one place: who a message speaks for (who the caller is, the
//! server identifies: `server::identity`), what a
//! new task's brief may set (only a trusted delegator may name other participants or set
//! lifecycle, model, reasoning effort, a token budget or parent tasks), and how the creator joins
//! the task it made.

use super::hops::HopRules;
use super::service::{Caller, TaskError};
use crate::base::model::{Effort, UnknownModel};
use crate::base::protocol::types::Message;
use crate::state::records::extension::{
    Lifecycle, Participant, ParticipantKind, Role, TaskExtension,
};

/// How much of a refused value is echoed back in an error: enough to recognise it, not enough
/// to carry a payload back to the caller.
const MAX_ECHOED_VALUE_CHARS: usize = 32;

/// What a new brief is checked against, from configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BriefRules {
    /// The names of `[models.*]`: the models a brief may name.
    pub models: Vec<String>,
    /// `limits.task_token_budget`: the budget of every task, unless its brief asks for less.
    pub task_token_budget: Option<u64>,
    /// This harness in delegation chains and `limits.max_delegation_hops`: what a new task's
    /// delegation is checked against (`tasks::hops`).
    pub hops: HopRules,
}

impl BriefRules {
    /// The budget that applies to a new task: the smaller of its brief's and the configured one.
    pub fn budget_for(&self, brief: &TaskExtension) -> Option<u64> {
        match (brief.token_budget, self.task_token_budget) {
            (Some(asked), Some(limit)) => Some(asked.min(limit)),
            (asked, limit) => asked.or(limit),
        }
    }
}

/// The participant a message comes from, as the caller the task service acts for. An unproven
/// caller is named by `Message.metadata.participant_id`, else by its header. A proven caller (a
/// trusted delegator, a token caller, a JWT) speaks only as itself: a message naming someone
/// else is refused, so a credential never passes to another id. The protocol layer follows the
/// task a message created or continued as this sender, so a sender named only in the metadata
/// can read the task it just created.
pub fn sender_of(caller: &Caller, message: &Message) -> Result<Caller, TaskError> {
    let named = claimed_sender(message);
    if caller.proven {
        if let Some(other) = named.filter(|id| *id != caller.participant_id) {
            let who = if caller.trusted {
                "the trusted delegator whose token was presented; a delegator speaks only as itself"
            } else {
                "the participant whose credential was presented; a caller speaks only as itself"
            };
            return Err(TaskError::InvalidParams(format!(
                "message.metadata.participant_id: `{}` is not `{}`, {who}",
                echoed(other),
                caller.participant_id
            )));
        }
        return Ok(caller.clone());
    }
    Ok(Caller {
        participant_id: named
            .map(str::to_string)
            .unwrap_or_else(|| caller.participant_id.clone()),
        trusted: false,
        proven: false,
    })
}

/// The participant a message's metadata names (`participant_id`), trimmed, if any.
pub fn claimed_sender(message: &Message) -> Option<&str> {
    message
        .metadata
        .as_ref()
        .and_then(|m| m.get("participant_id"))
        .and_then(|v| v.as_str())
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// Refuses a message that carries the mark of a child's report: only the harness's stand-ins
/// write those, and the loop reads them as notes from the child.
pub(super) fn refuse_reserved_metadata(message: &Message) -> Result<(), TaskError> {
    let key = crate::base::protocol::extension::CHILD_REPORT_KEY;
    if message
        .metadata
        .as_ref()
        .is_some_and(|m| m.contains_key(key))
    {
        return Err(TaskError::InvalidParams(format!(
            "message.metadata.{key}: reserved for the harness's reports of its sub-tasks"
        )));
    }
    Ok(())
}

/// The words of every refusal of a field only a trusted delegator may set: a delegating harness
/// recognises them to tell its operator that the agent does not trust it as one.
pub const DELEGATORS_ONLY: &str = "only a trusted delegator may";

/// Refuses, whole, a new task's brief that asks for what only a trusted delegator may: naming
/// participants other than its creator, a lifecycle other than `agent`, a model, a reasoning
/// effort, a token budget or parent tasks (abuse cases 5 and 6). A trusted creator may set all
/// of them, to values `rules` allows: a model `[models.*]` names, an effort of `low`, `medium`
/// or `high`, a budget of at least one token.
pub fn check_new_brief(
    brief: &TaskExtension,
    creator: &str,
    trusted: bool,
    rules: &BriefRules,
) -> Result<(), TaskError> {
    for (field, value) in [
        ("model", &brief.model),
        ("reasoning_effort", &brief.reasoning_effort),
    ] {
        if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
            return Err(TaskError::InvalidParams(format!(
                "task.{field}: must not be blank; leave it out for the harness's default"
            )));
        }
    }
    if brief
        .parent_tasks
        .iter()
        .any(|l| l.task_id.trim().is_empty())
    {
        return Err(TaskError::InvalidParams(
            "task.parent_tasks: every parent needs a task_id".to_string(),
        ));
    }
    if trusted {
        return check_trusted_values(brief, rules);
    }
    if let Some(other) = brief.participants.iter().find(|p| p.id != creator) {
        return Err(TaskError::InvalidParams(format!(
            "task.participants: {DELEGATORS_ONLY} name participants other than itself (found `{}`)",
            other.id
        )));
    }
    let refused = [
        ("lifecycle", brief.lifecycle != Lifecycle::Agent),
        ("model", brief.model.is_some()),
        ("reasoning_effort", brief.reasoning_effort.is_some()),
        ("token_budget", brief.token_budget.is_some()),
        ("parent_tasks", !brief.parent_tasks.is_empty()),
    ];
    match refused.iter().find(|(_, set)| *set) {
        Some((field, _)) => Err(TaskError::InvalidParams(format!(
            "task.{field}: {DELEGATORS_ONLY} set this on a new task"
        ))),
        None => Ok(()),
    }
}

/// Refuses a trusted brief's model, effort or budget that this harness cannot honour, naming
/// the field and what would do, before anything is created.
fn check_trusted_values(brief: &TaskExtension, rules: &BriefRules) -> Result<(), TaskError> {
    if let Some(model) = &brief.model {
        UnknownModel::check(model, &rules.models)
            .map_err(|err| TaskError::InvalidParams(format!("task.model: {}", err.message())))?;
    }
    if let Some(effort) = &brief.reasoning_effort
        && Effort::parse(effort).is_none()
    {
        return Err(TaskError::InvalidParams(format!(
            "task.reasoning_effort: \"{}\" is not an effort; use {}",
            echoed(effort),
            Effort::NAMES.join(", ")
        )));
    }
    if brief.token_budget == Some(0) {
        return Err(TaskError::InvalidParams(
            "task.token_budget: must be at least 1 token; leave it out for the harness's own budget"
                .to_string(),
        ));
    }
    Ok(())
}

/// A refused value as an error quotes it: cut, and escaped so it cannot end the quote.
fn echoed(value: &str) -> String {
    let cut: String = value.chars().take(MAX_ECHOED_VALUE_CHARS).collect();
    let mark = if cut.len() < value.len() { "…" } else { "" };
    format!("{}{mark}", cut.escape_debug())
}

/// The creator joins the task it made as its admin, unless its brief names it already: a trusted
/// delegator as an agent (another agent, or this harness), an untrusted caller as a person.
pub fn join_as_admin(brief: &mut TaskExtension, creator: &str, trusted: bool) {
    if brief.participant(creator).is_some() {
        return;
    }
    let kind = if trusted {
        ParticipantKind::Agent
    } else {
        ParticipantKind::Human
    };
    brief.participants.insert(
        0,
        Participant {
            id: creator.to_string(),
            kind,
            role: Role::Admin,
            display_name: None,
        },
    );
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn brief(value: Value) -> TaskExtension {
        serde_json::from_value(value).unwrap()
    }

    fn rules() -> BriefRules {
        BriefRules {
            models: vec!["big".to_string(), "small".to_string()],
            task_token_budget: Some(10_000),
            ..BriefRules::default()
        }
    }

    fn refusal(value: Value) -> String {
        match check_new_brief(&brief(value), "alice", false, &rules()) {
            Err(TaskError::InvalidParams(message)) => message,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn an_untrusted_creator_may_name_only_itself_and_keep_the_defaults() {
        let own = json!({"name":"n","goal":"g","lifecycle":"agent",
            "participants":[{"id":"alice","kind":"human","role":"admin"}]});
        assert_eq!(
            check_new_brief(&brief(own), "alice", false, &rules()),
            Ok(())
        );
        assert_eq!(
            refusal(json!({"name":"n","goal":"g",
                "participants":[{"id":"bob","kind":"human","role":"assignee"}]})),
            "task.participants: only a trusted delegator may name participants other than itself (found `bob`)"
        );
    }

    #[test]
    fn each_field_reserved_for_trusted_delegators_is_named_when_refused() {
        let cases = [
            (json!({"lifecycle":"participant"}), "lifecycle"),
            (json!({"model":"big"}), "model"),
            (json!({"reasoning_effort":"high"}), "reasoning_effort"),
            (json!({"token_budget":100}), "token_budget"),
            (json!({"parent_tasks":[{"task_id":"t0"}]}), "parent_tasks"),
        ];
        for (extra, field) in cases {
            let mut value = json!({"name":"n","goal":"g"});
            value
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            assert_eq!(
                refusal(value),
                format!("task.{field}: only a trusted delegator may set this on a new task")
            );
        }
    }

    #[test]
    fn a_trusted_creator_may_set_everything_but_blank_values() {
        let full = json!({"name":"n","goal":"g","lifecycle":"participant","model":"big",
            "reasoning_effort":"low","token_budget":500,"parent_tasks":[{"task_id":"t0"}],
            "participants":[{"id":"bob","kind":"human","role":"assignee"}]});
        assert_eq!(
            check_new_brief(&brief(full), "ledger", true, &rules()),
            Ok(())
        );
        let blank = brief(json!({"name":"n","goal":"g","model":" "}));
        assert!(check_new_brief(&blank, "ledger", true, &rules()).is_err());
    }

    fn trusted_refusal(value: Value) -> String {
        match check_new_brief(&brief(value), "ledger", true, &rules()) {
            Err(TaskError::InvalidParams(message)) => message,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn a_trusted_brief_naming_an_unknown_model_is_refused_with_the_valid_names_golden() {
        assert_eq!(
            trusted_refusal(json!({"name":"n","goal":"g","model":"huge"})),
            r#"task.model: no model named "huge"; valid models: big, small (or leave model out for the default)"#
        );
        let none = BriefRules::default();
        let err = check_new_brief(
            &brief(json!({"name":"n","goal":"g","model":"big"})),
            "l",
            true,
            &none,
        );
        assert_eq!(
            err,
            Err(TaskError::InvalidParams(
                r#"task.model: no model named "big"; this harness has no named models, so leave model out to use its default"#
                    .to_string()
            ))
        );
    }

    #[test]
    fn a_trusted_brief_with_an_unknown_effort_or_an_empty_budget_is_refused_golden() {
        assert_eq!(
            trusted_refusal(json!({"name":"n","goal":"g","reasoning_effort":"max\"imum"})),
            r#"task.reasoning_effort: "max\"imum" is not an effort; use low, medium, high"#
        );
        assert_eq!(
            trusted_refusal(json!({"name":"n","goal":"g","token_budget":0})),
            "task.token_budget: must be at least 1 token; leave it out for the harness's own budget"
        );
    }

    #[test]
    fn the_budget_that_applies_is_the_smaller_of_the_brief_and_the_limit() {
        let rules = rules();
        let asking = |budget: Option<u64>| {
            let mut ext = TaskExtension::from_text("t");
            ext.token_budget = budget;
            rules.budget_for(&ext)
        };
        assert_eq!(asking(None), Some(10_000));
        assert_eq!(asking(Some(400)), Some(400));
        assert_eq!(asking(Some(50_000)), Some(10_000));
        assert_eq!(
            BriefRules::default().budget_for(&TaskExtension::from_text("t")),
            None
        );
    }
}
