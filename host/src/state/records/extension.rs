//! The task extension: what A2A lacks (name, goal, criteria, participants, plan, links), carried
//! in `Task.metadata` under one key and inbound as a `task` envelope data part.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::model::Usage;
use crate::base::protocol::delegation::Delegation;
use crate::base::protocol::types::TaskState;

pub use crate::base::protocol::extension::{
    ENVELOPE_MEDIA_TYPE, EXTENSION_URI, METADATA_KEY, ParticipantKind, Role,
};

/// A name derived from free text is cut to this many characters.
pub const DERIVED_NAME_CHARS: usize = 60;

/// Someone with a role on a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Participant {
    /// Who the participant is: the id callers name them by, unique on the task.
    pub id: String,
    /// Whether the participant is a person or an agent.
    pub kind: ParticipantKind,
    /// What the participant does on the task; only an admin may change the list.
    pub role: Role,
    /// The name the model sees instead of the id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
}

/// One acceptance criterion and whether it is met.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Criterion {
    /// The criterion as the creator wrote it.
    pub text: String,
    /// Whether the task's work has met it; false until set.
    #[serde(default)]
    pub met: bool,
}

/// The agent a linked task runs on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentRef {
    /// What the linked task runs on; this harness writes `agent`, a peer may write another word.
    pub kind: String,
    /// The agent's id in `[[agents]]`, or `self` for this harness.
    pub id: String,
    /// The agent's version, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// A link to a parent or child task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct TaskLink {
    /// The linked task's id on its own agent (ids are unique per agent only).
    pub task_id: String,
    /// The agent the linked task runs on; absent means this harness.
    #[serde(default)]
    pub agent: Option<AgentRef>,
    /// The child's last known state, as a wire name; absent for parents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// When the child is given up if it has not ended (RFC 3339, UTC): its creation plus
    /// `limits.subtask_deadline_secs`. Kept with the row so that a restart keeps the deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<String>,
    /// The tokens the parent set aside for this child out of its own budget (absent when the
    /// parent has none): carved from what the parent had left, so its children together never
    /// hold more than it had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved: Option<u64>,
    /// The tokens the child reported using, as its agent last said (absent until it says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spent: Option<u64>,
}

/// The agent id of this harness itself, as a link names it: the same as the configuration's
/// reserved id (`config::SELF_AGENT_ID`, checked by a test there), kept here so that task data
/// imports nothing of the configuration.
pub const SELF_AGENT: &str = "self";

impl TaskLink {
    /// The id of the agent the linked task runs on: `self` when the link names none (a row
    /// written before every sub-task row named its agent reads as a child on this harness).
    pub fn agent_id(&self) -> &str {
        self.agent
            .as_ref()
            .map(|a| a.id.as_str())
            .unwrap_or(SELF_AGENT)
    }

    /// Whether the linked child has ended, as its row last heard: a row not heard from yet is
    /// open.
    pub fn has_ended(&self) -> bool {
        self.state
            .as_deref()
            .and_then(TaskState::from_wire)
            .is_some_and(TaskState::is_terminal)
    }

    /// Whether this link is the task `task_id` on `agent`. A child is known by both: agents
    /// number their tasks as they please, so two of them may both have a `task-1`.
    pub fn is(&self, agent: &str, task_id: &str) -> bool {
        self.task_id == task_id && self.agent_id() == agent
    }
}

/// Where a plan step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum StepState {
    /// Not started; a step starts here.
    #[default]
    Pending,
    /// Under way: a sub-task linked to it moves it here.
    Active,
    /// Finished, with its output.
    Done,
    /// Given up; the context marks it `!` for the model.
    Failed,
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanStep {
    /// The step's id, unique in the plan; links and `depends_on` name it.
    pub id: String,
    /// A short label for the step.
    pub name: String,
    /// What the step involves.
    #[serde(default)]
    pub description: String,
    /// Ids of the steps that must be done before this one.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// What the step produced, once done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Ids of the sub-tasks delegated for this step.
    #[serde(default)]
    pub linked_tasks: Vec<String>,
    /// Where the step stands.
    #[serde(default)]
    pub state: StepState,
}

/// The model's plan for a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// The steps, in the order the model wrote them.
    pub steps: Vec<PlanStep>,
}

/// Who works a task: the model, or the assignee participant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Lifecycle {
    /// The model works the task (the default).
    #[default]
    Agent,
    /// The assignee participant works it; no model is called and their reply is the answer.
    Participant,
}

/// The extension data of one task. Unknown keys are refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskExtension {
    /// A short title; derived from the goal when a brief gives none.
    pub name: String,
    /// What the task is to achieve, as the creator stated it.
    pub goal: String,
    /// A free label for the kind of task (`type` on the wire).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub task_type: Option<String>,
    /// Longer background for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// What must hold for the task to count as done.
    #[serde(default)]
    pub acceptance_criteria: Vec<Criterion>,
    /// Everyone with a role on the task, the creator included.
    #[serde(default)]
    pub participants: Vec<Participant>,
    /// Tasks this one was delegated from; set only at creation by a trusted delegator.
    #[serde(default)]
    pub parent_tasks: Vec<TaskLink>,
    /// Tasks delegated from this one, with their last known state and budget.
    #[serde(default)]
    pub sub_tasks: Vec<TaskLink>,
    /// The model's plan, once it attaches one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    /// Who works the task; fixed at creation.
    #[serde(default)]
    pub lifecycle: Lifecycle,
    /// The model this task runs on, when its trusted creator chose one; else the harness's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// How hard the model should reason on this task (`low`, `medium`, `high`), when its
    /// trusted creator chose it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// The most tokens the task may use. In a brief, what its trusted creator allows it (a
    /// parent task gives its sub-tasks on this harness what it has left); on the task, the
    /// budget that applies: the smaller of that and `limits.task_token_budget`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<u64>,
    /// The tokens the task's model calls have used so far, as the providers reported them;
    /// written by the harness with each call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The harnesses the task was delegated through and its hops from harness to harness
    /// (`tasks::hops`): from its brief, checked when it was created, extended by its children
    /// on other agents. Absent for a task a person created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegation: Option<Delegation>,
    /// The W3C `traceparent` of the request that created the task, kept so that its run joins
    /// that trace however late and wherever it runs (`base::telemetry::task_context`). The
    /// harness's own: never on the wire ([`TaskExtension::to_value`]), and whatever a brief
    /// says of it is replaced when the task is created.
    #[serde(
        default,
        rename = "traceContext",
        skip_serializing_if = "Option::is_none"
    )]
    pub trace: Option<String>,
}

impl TaskExtension {
    /// The extension of a task that came as plain text: the first line (cut) is its name and the
    /// whole text its goal.
    pub fn from_text(text: &str) -> TaskExtension {
        let first_line = text
            .lines()
            .find(|line| !line.trim().is_empty())
            .unwrap_or("");
        let name = first_line.trim();
        let name = if name.chars().count() > DERIVED_NAME_CHARS {
            name.chars().take(DERIVED_NAME_CHARS).collect()
        } else {
            name.to_string()
        };
        TaskExtension {
            name: if name.is_empty() {
                "task".to_string()
            } else {
                name
            },
            goal: text.trim().to_string(),
            task_type: None,
            description: None,
            acceptance_criteria: Vec::new(),
            participants: Vec::new(),
            parent_tasks: Vec::new(),
            sub_tasks: Vec::new(),
            plan: None,
            lifecycle: Lifecycle::Agent,
            model: None,
            reasoning_effort: None,
            token_budget: None,
            usage: None,
            delegation: None,
            trace: None,
        }
    }

    /// The participant with this id, if on the task.
    pub fn participant(&self, id: &str) -> Option<&Participant> {
        self.participants.iter().find(|p| p.id == id)
    }

    /// The extension as the JSON value stored under [`METADATA_KEY`].
    pub fn to_value(&self) -> Value {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(fields) = value.as_object_mut() {
            fields.remove("traceContext");
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_child_is_known_by_its_agent_and_its_id_and_an_older_row_reads_as_one_on_self() {
        let on = |agent: &str| -> TaskLink {
            serde_json::from_value(
                json!({"task_id": "task-1", "agent": {"kind": "agent", "id": agent}}),
            )
            .unwrap()
        };
        assert!(on("a").is("a", "task-1"));
        assert!(
            !on("a").is("b", "task-1"),
            "another agent's task-1 is another child"
        );
        assert!(!on("a").is("a", "task-2"));
        // Rows written before every row named its agent.
        let older: TaskLink = serde_json::from_value(json!({"task_id": "task-1"})).unwrap();
        assert_eq!(older.agent_id(), "self");
        assert!(older.is("self", "task-1"));
        assert_eq!(
            serde_json::to_value(&older).unwrap(),
            json!({"task_id": "task-1", "agent": null}),
            "reservation and spending appear only when there are some"
        );
    }

    #[test]
    fn text_brief_names_the_task_after_its_first_line_cut_to_sixty_characters() {
        let long = "x".repeat(80);
        let ext = TaskExtension::from_text(&format!("\n{long}\nmore detail"));
        assert_eq!(ext.name.chars().count(), 60);
        assert_eq!(ext.goal, format!("{long}\nmore detail"));
    }

    #[test]
    fn unknown_extension_keys_are_refused() {
        let err = serde_json::from_value::<TaskExtension>(
            json!({"name":"n","goal":"g","priority":"high"}),
        )
        .unwrap_err();
        assert!(err.to_string().contains("priority"), "{err}");
    }

    #[test]
    fn envelope_round_trips_with_participants_and_lifecycle() {
        let value = json!({"name":"n","goal":"g","participants":[
            {"id":"alice","kind":"human","role":"admin","display_name":"Alice"}],
            "lifecycle":"participant"});
        let ext: TaskExtension = serde_json::from_value(value).unwrap();
        assert_eq!(ext.lifecycle, Lifecycle::Participant);
        assert_eq!(ext.participant("alice").unwrap().role, Role::Admin);
    }

    #[test]
    fn budget_and_usage_show_on_the_task_when_set() {
        let value = json!({"name":"n","goal":"g","token_budget":5000,
            "usage":{"input_tokens":300,"output_tokens":20}});
        let ext: TaskExtension = serde_json::from_value(value).unwrap();
        assert_eq!(ext.token_budget, Some(5000));
        assert_eq!(ext.usage.map(|u| u.total()), Some(320));
        assert_eq!(ext.to_value()["usage"]["output_tokens"], 20);
        let plain = TaskExtension::from_text("hi").to_value();
        assert!(plain.get("token_budget").is_none() && plain.get("usage").is_none());
    }

    #[test]
    fn model_and_reasoning_effort_round_trip_and_are_left_out_when_unset() {
        let value = json!({"name":"n","goal":"g","model":"m1","reasoning_effort":"high"});
        let ext: TaskExtension = serde_json::from_value(value).unwrap();
        assert_eq!(ext.model.as_deref(), Some("m1"));
        assert_eq!(ext.to_value()["reasoning_effort"], "high");
        let plain = TaskExtension::from_text("hi").to_value();
        assert!(plain.get("model").is_none() && plain.get("reasoning_effort").is_none());
    }
}
