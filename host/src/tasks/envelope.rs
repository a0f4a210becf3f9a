//! The inbound task envelope: a data part of media type
//! `application/vnd.tiny-harness.event+json` holding `{"kind":"task","payload":{…}}`. On a new
//! task it is the whole brief, shaped freely only by a trusted delegator; on an existing task it
//! may change a few fields, by role.

use serde_json::{Map, Value};

use super::extension::{
    Criterion, ENVELOPE_MEDIA_TYPE, Lifecycle, Participant, Role, TaskExtension,
};
use super::record::TaskRecord;
use super::service::TaskError;
use crate::a2a::types::Message;
use crate::model::{Effort, UnknownModel};

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

/// Fields any participant may change on an existing task.
const PARTICIPANT_FIELDS: [&str; 3] = ["name", "description", "acceptance_criteria"];
/// Fields only an admin may change on an existing task.
const ADMIN_FIELDS: [&str; 1] = ["participants"];

/// An envelope's payload and the index of the part that carried it.
type Payload = (usize, Map<String, Value>);

/// The payload of the message's task envelope, if it has one.
fn payload(message: &Message) -> Result<Option<Payload>, TaskError> {
    for (index, part) in message.parts.iter().enumerate() {
        if part.media_type != ENVELOPE_MEDIA_TYPE {
            continue;
        }
        let field = format!("message.parts[{index}].data");
        let Some(Value::Object(data)) = &part.data else {
            return Err(TaskError::InvalidParams(format!(
                "{field}: a task envelope is a JSON object"
            )));
        };
        if data.get("kind").and_then(Value::as_str) != Some("task") {
            continue;
        }
        let Some(Value::Object(payload)) = data.get("payload") else {
            return Err(TaskError::InvalidParams(format!(
                "{field}.payload: a task envelope needs an object payload"
            )));
        };
        return Ok(Some((index, payload.clone())));
    }
    Ok(None)
}

/// The brief of a new task from its envelope, if the message carries one.
pub fn read_brief(message: &Message) -> Result<Option<TaskExtension>, TaskError> {
    let Some((index, payload)) = payload(message)? else {
        return Ok(None);
    };
    let ext: TaskExtension = serde_json::from_value(Value::Object(payload)).map_err(|err| {
        TaskError::InvalidParams(format!("message.parts[{index}].data.payload: {err}"))
    })?;
    if ext.name.trim().is_empty() || ext.goal.trim().is_empty() {
        return Err(TaskError::InvalidParams(format!(
            "message.parts[{index}].data.payload: name and goal must not be blank"
        )));
    }
    if !ext.sub_tasks.is_empty() || ext.plan.is_some() || ext.usage.is_some() {
        return Err(TaskError::InvalidParams(format!(
            "message.parts[{index}].data.payload: sub_tasks, plan and usage are set by the harness, not by a brief"
        )));
    }
    Ok(Some(ext))
}

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
            "task.participants: only a trusted delegator may name participants other than itself (found `{}`)",
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
            "task.{field}: only a trusted delegator may set this on a new task"
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

/// A change to an existing task's brief.
#[derive(Debug, Clone, PartialEq)]
pub struct BriefChange {
    name: Option<String>,
    description: Option<String>,
    acceptance_criteria: Option<Vec<Criterion>>,
    participants: Option<Vec<Participant>>,
}

impl BriefChange {
    /// The change a message's envelope asks for, if any. Fields that cannot be changed are
    /// refused with the reason.
    pub fn read(message: &Message) -> Result<Option<BriefChange>, TaskError> {
        let Some((index, payload)) = payload(message)? else {
            return Ok(None);
        };
        let at = |key: &str| format!("message.parts[{index}].data.payload.{key}");
        for key in payload.keys() {
            if !PARTICIPANT_FIELDS.contains(&key.as_str()) && !ADMIN_FIELDS.contains(&key.as_str())
            {
                return Err(TaskError::InvalidParams(format!(
                    "{}: cannot be changed on an existing task; only name, description, acceptance_criteria and (by an admin) participants can",
                    at(key)
                )));
            }
        }
        fn parse<T: serde::de::DeserializeOwned>(
            payload: &Map<String, Value>,
            key: &str,
            at: &dyn Fn(&str) -> String,
        ) -> Result<Option<T>, TaskError> {
            payload
                .get(key)
                .map(|value| {
                    serde_json::from_value(value.clone())
                        .map_err(|err| TaskError::InvalidParams(format!("{}: {err}", at(key))))
                })
                .transpose()
        }
        Ok(Some(BriefChange {
            name: parse(&payload, "name", &at)?,
            description: parse(&payload, "description", &at)?,
            acceptance_criteria: parse(&payload, "acceptance_criteria", &at)?,
            participants: parse(&payload, "participants", &at)?,
        }))
    }

    /// Refuses a participants change by anyone but an admin.
    pub fn check(&self, sender: &str, record: &TaskRecord) -> Result<(), TaskError> {
        if self.participants.is_some() {
            let is_admin = record
                .ext
                .participant(sender)
                .is_some_and(|p| p.role == Role::Admin);
            if !is_admin {
                return Err(TaskError::InvalidParams(
                    "participants: only an admin of the task may change its participants"
                        .to_string(),
                ));
            }
        }
        if self.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
            return Err(TaskError::InvalidParams(
                "name: must not be blank".to_string(),
            ));
        }
        Ok(())
    }

    /// Applies the change.
    pub fn apply(&self, ext: &mut TaskExtension) {
        if let Some(name) = &self.name {
            ext.name = name.clone();
        }
        if let Some(description) = &self.description {
            ext.description = Some(description.clone());
        }
        if let Some(criteria) = &self.acceptance_criteria {
            ext.acceptance_criteria = criteria.clone();
        }
        if let Some(participants) = &self.participants {
            ext.participants = participants.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn brief(value: Value) -> TaskExtension {
        serde_json::from_value(value).unwrap()
    }

    fn rules() -> BriefRules {
        BriefRules {
            models: vec!["big".to_string(), "small".to_string()],
            task_token_budget: Some(10_000),
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

    #[test]
    fn sub_tasks_plan_and_usage_are_refused_in_any_brief() {
        for extra in [
            json!({"sub_tasks":[{"task_id":"c"}]}),
            json!({"plan":{"steps":[]}}),
            json!({"usage":{"input_tokens":0,"output_tokens":0}}),
        ] {
            let mut payload = json!({"name":"n","goal":"g"});
            payload
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            let message = Message {
                parts: vec![crate::a2a::types::Part::data(
                    json!({"kind":"task","payload":payload}),
                    ENVELOPE_MEDIA_TYPE,
                )],
                ..Message::default()
            };
            let err = read_brief(&message).unwrap_err();
            assert!(err.to_string().contains("set by the harness"), "{err}");
        }
    }
}

#[cfg(test)]
mod properties;
