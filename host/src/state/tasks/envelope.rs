//! The inbound task envelope: a data part of media type
//! `application/vnd.tiny-harness.event+json` holding `{"kind":"task","payload":{…}}`. On a new
//! task it is the whole brief, shaped freely only by a trusted delegator; on an existing task it
//! may change a few fields, by role.

use serde_json::{Map, Value};

use super::service::TaskError;
use crate::base::protocol::types::Message;
use crate::state::records::extension::{
    Criterion, ENVELOPE_MEDIA_TYPE, Participant, Role, TaskExtension,
};
use crate::state::records::record::TaskRecord;

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

    /// Whether the change sets this field of the brief (`name`, `description`,
    /// `acceptance_criteria` or `participants`).
    pub fn sets(&self, field: &str) -> bool {
        match field {
            "name" => self.name.is_some(),
            "description" => self.description.is_some(),
            "acceptance_criteria" => self.acceptance_criteria.is_some(),
            "participants" => self.participants.is_some(),
            _ => false,
        }
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
                parts: vec![crate::base::protocol::types::Part::data(
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
