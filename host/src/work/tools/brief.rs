//! A child's brief as it travels to its agent: a task envelope when the agent's card advertises
//! the task extension, the goal, description and criteria as text when it does not. A child on
//! this harness itself also carries its model and what its parent has left of its token budget.

use serde_json::{Value, json};

use crate::base::protocol::types::{Message, Part, Role};
use crate::state::records::extension::{ENVELOPE_MEDIA_TYPE, Lifecycle, Participant};
use crate::state::tasks::hops::{self, Delegation};

/// What the parent asks of a child: the same fields whichever agent runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildBrief {
    /// The child's short title.
    pub name: String,
    /// What the child is to achieve.
    pub goal: String,
    /// Longer background for the child's model.
    pub description: Option<String>,
    /// What must hold for the child to count as done.
    pub acceptance_criteria: Vec<String>,
    /// Who may see and talk to the child besides its creator. Sent only to an agent that trusts
    /// this harness as a delegator; others would refuse the whole request.
    pub participants: Vec<Participant>,
    /// Who works the child: its model, or its assignee (sent only to a trusting agent).
    pub lifecycle: Lifecycle,
    /// One of this harness's `[models.*]`, for a child on this harness; `None` for the default.
    pub model: Option<String>,
}

/// Where the brief goes and what that agent accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery<'a> {
    /// The agent's card advertises the task extension.
    pub envelope: bool,
    /// The agent treats this harness as a trusted delegator (self, or a configured token).
    pub trusted: bool,
    /// The parent task, linked from the child when the agent trusts this harness.
    pub parent: Option<(&'a str, &'a str)>,
    /// The agent is this harness: it knows the brief's model, and the child gets at most
    /// `budget`, what the parent has left of its token budget (`None`: no budget).
    pub own: bool,
    /// The tokens the child may use, sent only to this harness (see `own`).
    pub budget: Option<u64>,
    /// The delegation the child carries (`children::hops`): in the envelope, else in the
    /// message's metadata, for any agent; left out when there is none to tell.
    pub delegation: Option<&'a Delegation>,
}

/// The message that creates the child. Its id is chosen by the parent so that sending it again
/// after a crash finds the child already made instead of making a second one.
pub fn child_message(brief: &ChildBrief, message_id: &str, delivery: Delivery<'_>) -> Message {
    let part = if delivery.envelope {
        Part::data(
            json!({ "kind": "task", "payload": envelope_payload(brief, delivery) }),
            ENVELOPE_MEDIA_TYPE,
        )
    } else {
        Part::text(text_brief(brief))
    };
    // In the envelope when there is one (`envelope_payload`), else beside the text.
    let metadata = told(delivery).filter(|_| !delivery.envelope).map(|d| {
        [(hops::METADATA_KEY.to_string(), d.to_value())]
            .into_iter()
            .collect()
    });
    Message {
        message_id: message_id.to_string(),
        role: Role::User,
        parts: vec![part],
        metadata,
        ..Message::default()
    }
}

fn envelope_payload(brief: &ChildBrief, delivery: Delivery<'_>) -> Value {
    let mut payload = json!({
        "name": brief.name,
        "goal": brief.goal,
        "acceptance_criteria": brief
            .acceptance_criteria
            .iter()
            .map(|text| json!({ "text": text, "met": false }))
            .collect::<Vec<_>>(),
    });
    if let Some(description) = brief
        .description
        .as_deref()
        .filter(|d| !d.trim().is_empty())
    {
        payload["description"] = json!(description);
    }
    if delivery.trusted {
        if !brief.participants.is_empty() {
            payload["participants"] = json!(brief.participants);
        }
        if brief.lifecycle != Lifecycle::Agent {
            payload["lifecycle"] = json!(brief.lifecycle);
        }
        if let Some((task_id, agent)) = delivery.parent {
            payload["parent_tasks"] =
                json!([{ "task_id": task_id, "agent": { "kind": "agent", "id": agent } }]);
        }
    }
    if let Some(delegation) = told(delivery) {
        payload["delegation"] = delegation.to_value();
    }
    // Model names and budgets are this harness's own: another agent would not know the one and
    // spends its own tokens against the other.
    if delivery.own && delivery.trusted {
        if let Some(model) = &brief.model {
            payload["model"] = json!(model);
        }
        if let Some(budget) = delivery.budget {
            payload["token_budget"] = json!(budget);
        }
    }
    payload
}

/// The delegation worth telling the child: none for a child on this harness of a task a person
/// created (no chain, no hops), which would only say what its absence says.
fn told<'a>(delivery: Delivery<'a>) -> Option<&'a Delegation> {
    delivery
        .delegation
        .filter(|delegation| **delegation != Delegation::default())
}

/// The brief for an agent that does not speak the task extension: the goal, then the
/// description, then each acceptance criterion.
pub fn text_brief(brief: &ChildBrief) -> String {
    let mut text = brief.goal.trim().to_string();
    if let Some(description) = brief.description.as_deref().map(str::trim)
        && !description.is_empty()
    {
        text.push_str("\n\n");
        text.push_str(description);
    }
    if !brief.acceptance_criteria.is_empty() {
        text.push_str("\n\nAcceptance criteria:");
        for criterion in &brief.acceptance_criteria {
            text.push_str("\n- ");
            text.push_str(criterion.trim());
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::records::extension::{ParticipantKind, Role as TaskRole};

    fn brief() -> ChildBrief {
        ChildBrief {
            name: "March balance".to_string(),
            goal: "Report the balance of account ACME-001 on 31 March.".to_string(),
            description: Some("Use the ledger's closing figures.".to_string()),
            acceptance_criteria: vec![
                "States the balance in EUR".to_string(),
                "Names the date".to_string(),
            ],
            participants: vec![Participant {
                id: "alice".to_string(),
                kind: ParticipantKind::Human,
                role: TaskRole::Admin,
                display_name: None,
            }],
            lifecycle: Lifecycle::Agent,
            model: Some("fast".to_string()),
        }
    }

    #[test]
    fn the_text_brief_gives_goal_description_and_each_criterion_golden() {
        assert_eq!(
            text_brief(&brief()),
            "Report the balance of account ACME-001 on 31 March.\n\n\
             Use the ledger's closing figures.\n\n\
             Acceptance criteria:\n- States the balance in EUR\n- Names the date"
        );
    }

    #[test]
    fn an_agent_without_the_extension_gets_one_text_part() {
        let delivery = Delivery {
            envelope: false,
            trusted: false,
            parent: None,
            own: false,
            budget: None,
            delegation: None,
        };
        let message = child_message(&brief(), "m-1", delivery);
        assert_eq!(message.message_id, "m-1");
        assert_eq!(message.parts.len(), 1);
        assert_eq!(message.text(), text_brief(&brief()));
    }

    #[test]
    fn a_trusting_agent_gets_participants_and_the_parent_link() {
        let delivery = Delivery {
            envelope: true,
            trusted: true,
            parent: Some(("parent-1", "self")),
            own: false,
            budget: Some(500),
            delegation: None,
        };
        let message = child_message(&brief(), "m-1", delivery);
        let part = &message.parts[0];
        assert_eq!(part.media_type, ENVELOPE_MEDIA_TYPE);
        let payload = &part.data.as_ref().unwrap()["payload"];
        assert_eq!(payload["name"], "March balance");
        assert_eq!(payload["description"], "Use the ledger's closing figures.");
        assert_eq!(payload["acceptance_criteria"][1]["text"], "Names the date");
        assert_eq!(payload["participants"][0]["id"], "alice");
        assert_eq!(payload["parent_tasks"][0]["task_id"], "parent-1");
        assert!(payload.get("lifecycle").is_none(), "agent is the default");
        for key in ["model", "token_budget"] {
            assert!(payload.get(key).is_none(), "{key} is this harness's own");
        }
    }

    #[test]
    fn a_child_on_this_harness_gets_its_model_and_what_its_parent_has_left() {
        let delivery = Delivery {
            envelope: true,
            trusted: true,
            parent: Some(("parent-1", "self")),
            own: true,
            budget: Some(1_250),
            delegation: None,
        };
        let message = child_message(&brief(), "m-1", delivery);
        let payload = &message.parts[0].data.as_ref().unwrap()["payload"];
        assert_eq!(payload["model"], "fast");
        assert_eq!(payload["token_budget"], 1_250);
        let unbounded = Delivery {
            budget: None,
            ..delivery
        };
        let message = child_message(&brief(), "m-1", unbounded);
        let payload = &message.parts[0].data.as_ref().unwrap()["payload"];
        assert!(payload.get("token_budget").is_none());
    }

    #[test]
    fn an_agent_that_does_not_trust_this_harness_gets_only_what_any_creator_may_set() {
        let mut brief = brief();
        brief.lifecycle = Lifecycle::Participant;
        let delivery = Delivery {
            envelope: true,
            trusted: false,
            parent: Some(("parent-1", "self")),
            own: false,
            budget: Some(9),
            delegation: None,
        };
        let message = child_message(&brief, "m-1", delivery);
        let payload = &message.parts[0].data.as_ref().unwrap()["payload"];
        for key in [
            "participants",
            "lifecycle",
            "parent_tasks",
            "model",
            "token_budget",
        ] {
            assert!(
                payload.get(key).is_none(),
                "{key} sent to an untrusting agent"
            );
        }
    }

    #[test]
    fn the_delegation_rides_in_the_envelope_or_else_in_the_message_metadata() {
        let delegation = Delegation {
            chain: vec!["i-1".to_string()],
            hops: 1,
        };
        let delivery = Delivery {
            envelope: true,
            trusted: false,
            parent: None,
            own: false,
            budget: None,
            delegation: Some(&delegation),
        };
        let message = child_message(&brief(), "m-1", delivery);
        let payload = &message.parts[0].data.as_ref().unwrap()["payload"];
        assert_eq!(payload["delegation"], json!({"chain": ["i-1"], "hops": 1}));
        assert!(message.metadata.is_none());
        let text = Delivery {
            envelope: false,
            ..delivery
        };
        let message = child_message(&brief(), "m-1", text);
        assert_eq!(
            message.metadata.unwrap()[hops::METADATA_KEY],
            json!({"chain": ["i-1"], "hops": 1})
        );
        let none = Delegation::default();
        let root_on_self = Delivery {
            delegation: Some(&none),
            ..text
        };
        assert!(
            child_message(&brief(), "m-1", root_on_self)
                .metadata
                .is_none()
        );
    }
}
