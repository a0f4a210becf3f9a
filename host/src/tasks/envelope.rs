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
    if !ext.sub_tasks.is_empty() || ext.plan.is_some() {
        return Err(TaskError::InvalidParams(format!(
            "message.parts[{index}].data.payload: sub_tasks and plan are set by the harness, not by a brief"
        )));
    }
    Ok(Some(ext))
}

/// Refuses, whole, a new task's brief that asks for what only a trusted delegator may: naming
/// participants other than its creator, a lifecycle other than `agent`, a model, a reasoning
/// effort or parent tasks (abuse cases 5 and 6). A trusted creator may set all of them.
pub fn check_new_brief(
    brief: &TaskExtension,
    creator: &str,
    trusted: bool,
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
        return Ok(());
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
        ("parent_tasks", !brief.parent_tasks.is_empty()),
    ];
    match refused.iter().find(|(_, set)| *set) {
        Some((field, _)) => Err(TaskError::InvalidParams(format!(
            "task.{field}: only a trusted delegator may set this on a new task"
        ))),
        None => Ok(()),
    }
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

    fn refusal(value: Value) -> String {
        match check_new_brief(&brief(value), "alice", false) {
            Err(TaskError::InvalidParams(message)) => message,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn an_untrusted_creator_may_name_only_itself_and_keep_the_defaults() {
        let own = json!({"name":"n","goal":"g","lifecycle":"agent",
            "participants":[{"id":"alice","kind":"human","role":"admin"}]});
        assert_eq!(check_new_brief(&brief(own), "alice", false), Ok(()));
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
            "reasoning_effort":"low","parent_tasks":[{"task_id":"t0"}],
            "participants":[{"id":"bob","kind":"human","role":"assignee"}]});
        assert_eq!(check_new_brief(&brief(full), "ledger", true), Ok(()));
        let blank = brief(json!({"name":"n","goal":"g","model":" "}));
        assert!(check_new_brief(&blank, "ledger", true).is_err());
    }

    #[test]
    fn sub_tasks_and_plan_are_refused_in_any_brief() {
        for extra in [
            json!({"sub_tasks":[{"task_id":"c"}]}),
            json!({"plan":{"steps":[]}}),
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
