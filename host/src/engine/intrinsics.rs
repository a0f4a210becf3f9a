//! The intrinsic tools every task has: `create_plan`, `complete_step` and `ask_participant`.
//! They check their arguments against the task and return effects; the engine applies them.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;

use super::tools::{Effect, ToolContext, ToolHost, ToolOutcome};
use crate::model::{ToolCall, ToolSpec};
use crate::tasks::extension::{Plan, PlanStep, StepState};

/// Plans longer than this are refused: a plan is a guide, not a transcript.
pub const MAX_PLAN_STEPS: usize = 50;

/// The built-in tools.
#[derive(Debug, Default, Clone, Copy)]
pub struct Intrinsics;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreatePlanArgs {
    steps: Vec<StepArgs>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StepArgs {
    name: String,
    description: String,
    #[serde(default)]
    depends_on: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CompleteStepArgs {
    step: String,
    output: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AskArgs {
    participant_id: String,
    question: String,
    #[serde(default)]
    options: Vec<String>,
}

/// A step id from its name: lower-case ASCII letters and digits, runs of anything else as `-`.
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    for ch in name.chars() {
        if ch.is_ascii_alphanumeric() {
            out.push(ch.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    if out.is_empty() {
        "step".to_string()
    } else {
        out
    }
}

fn parse<T: for<'de> Deserialize<'de>>(call: &ToolCall) -> Result<T, ToolOutcome> {
    serde_json::from_str(&call.arguments).map_err(|err| {
        ToolOutcome::error("tool.invalid_arguments", format!("{}: {err}", call.name))
    })
}

fn create_plan(call: &ToolCall) -> ToolOutcome {
    let args: CreatePlanArgs = match parse(call) {
        Ok(args) => args,
        Err(outcome) => return outcome,
    };
    if args.steps.is_empty() || args.steps.len() > MAX_PLAN_STEPS {
        return ToolOutcome::error(
            "tool.invalid_arguments",
            format!("create_plan: steps must have 1 to {MAX_PLAN_STEPS} items"),
        );
    }
    let mut steps: Vec<PlanStep> = Vec::new();
    let mut by_name: HashMap<String, String> = HashMap::new();
    for step in &args.steps {
        let mut id = slug(&step.name);
        let base = id.clone();
        let mut n = 2;
        while steps.iter().any(|s| s.id == id) {
            id = format!("{base}-{n}");
            n += 1;
        }
        by_name.insert(step.name.clone(), id.clone());
        steps.push(PlanStep {
            id,
            name: step.name.clone(),
            description: step.description.clone(),
            depends_on: Vec::new(),
            output: None,
            linked_tasks: Vec::new(),
            state: StepState::Pending,
        });
    }
    let ids: HashSet<String> = steps.iter().map(|s| s.id.clone()).collect();
    for (index, step) in args.steps.iter().enumerate() {
        for dep in &step.depends_on {
            let resolved = if ids.contains(dep) {
                dep.clone()
            } else if let Some(id) = by_name.get(dep) {
                id.clone()
            } else {
                return ToolOutcome::error(
                    "plan.unknown_step",
                    format!(
                        "step \"{}\" depends on \"{dep}\", which is not in the plan",
                        step.name
                    ),
                );
            };
            steps[index].depends_on.push(resolved);
        }
    }
    if let Some(step) = find_cycle(&steps) {
        return ToolOutcome::error(
            "plan.cycle",
            format!("the dependencies form a cycle through step {step}"),
        );
    }
    let n = steps.len();
    ToolOutcome {
        result: Ok(format!("plan attached with {n} steps")),
        effects: vec![Effect::AttachPlan {
            plan: Plan { steps },
        }],
    }
}

/// A step that lies on a dependency cycle, if any (depth-first search with colours).
fn find_cycle(steps: &[PlanStep]) -> Option<String> {
    fn visit<'a>(
        id: &'a str,
        deps: &HashMap<&'a str, Vec<&'a str>>,
        colour: &mut HashMap<&'a str, u8>,
    ) -> Option<String> {
        match colour.get(id) {
            Some(1) => return Some(id.to_string()),
            Some(2) => return None,
            _ => {}
        }
        colour.insert(id, 1);
        for dep in deps.get(id).into_iter().flatten() {
            if let Some(found) = visit(dep, deps, colour) {
                return Some(found);
            }
        }
        colour.insert(id, 2);
        None
    }
    let deps: HashMap<&str, Vec<&str>> = steps
        .iter()
        .map(|s| {
            (
                s.id.as_str(),
                s.depends_on.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    let mut colour = HashMap::new();
    steps.iter().find_map(|s| visit(&s.id, &deps, &mut colour))
}

fn complete_step(context: &ToolContext<'_>, call: &ToolCall) -> ToolOutcome {
    let args: CompleteStepArgs = match parse(call) {
        Ok(args) => args,
        Err(outcome) => return outcome,
    };
    let Some(plan) = &context.record.ext.plan else {
        return ToolOutcome::error(
            "plan.missing",
            "there is no plan; create one with create_plan",
        );
    };
    if !plan.steps.iter().any(|s| s.id == args.step) {
        let ids: Vec<&str> = plan.steps.iter().map(|s| s.id.as_str()).collect();
        return ToolOutcome::error(
            "plan.unknown_step",
            format!("no step \"{}\"; steps: {}", args.step, ids.join(", ")),
        );
    }
    ToolOutcome {
        result: Ok(format!("step {} done", args.step)),
        effects: vec![Effect::CompleteStep {
            step: args.step,
            output: args.output,
        }],
    }
}

fn ask_participant(context: &ToolContext<'_>, call: &ToolCall) -> ToolOutcome {
    let args: AskArgs = match parse(call) {
        Ok(args) => args,
        Err(outcome) => return outcome,
    };
    let record = context.record;
    if !record.is_visible_to(&args.participant_id) {
        return ToolOutcome::error(
            "channel.not_a_member",
            format!("{} is not a participant of this task", args.participant_id),
        );
    }
    ToolOutcome {
        result: Ok(format!(
            "question sent to {}; the task waits for the answer",
            args.participant_id
        )),
        effects: vec![Effect::AskParticipant {
            participant_id: args.participant_id,
            question: args.question,
            options: args.options,
        }],
    }
}

#[async_trait]
impl ToolHost for Intrinsics {
    fn definitions(&self) -> Vec<ToolSpec> {
        vec![
            ToolSpec {
                name: "ask_participant".into(),
                description: "Ask one of the task's participants a question and wait for the answer. The task pauses (input required) until they reply.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "participant_id": {"type": "string", "description": "The id of a participant of this task."},
                        "question": {"type": "string"},
                        "options": {"type": "array", "items": {"type": "string"}, "description": "Answers to choose from, if any."}
                    },
                    "required": ["participant_id", "question"],
                    "additionalProperties": false
                }),
            },
            ToolSpec {
                name: "complete_step".into(),
                description: "Mark a step of the plan done, with what it produced.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "step": {"type": "string", "description": "The step's id, as listed in <plan>."},
                        "output": {"type": "string", "description": "What the step produced, in a sentence."}
                    },
                    "required": ["step", "output"],
                    "additionalProperties": false
                }),
            },
            ToolSpec {
                name: "create_plan".into(),
                description: "Attach a plan to the task: its steps in order, each with what it depends on. Replaces any earlier plan.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "steps": {
                            "type": "array",
                            "minItems": 1,
                            "items": {
                                "type": "object",
                                "properties": {
                                    "name": {"type": "string"},
                                    "description": {"type": "string"},
                                    "depends_on": {"type": "array", "items": {"type": "string"}, "description": "Names or ids of earlier steps."}
                                },
                                "required": ["name", "description"],
                                "additionalProperties": false
                            }
                        }
                    },
                    "required": ["steps"],
                    "additionalProperties": false
                }),
            },
        ]
    }

    async fn invoke(&self, context: &ToolContext<'_>, call: &ToolCall) -> ToolOutcome {
        match call.name.as_str() {
            "create_plan" => create_plan(call),
            "complete_step" => complete_step(context, call),
            "ask_participant" => ask_participant(context, call),
            other => ToolOutcome::error("tool.not_found", format!("no tool named \"{other}\"")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::types::TaskStatus;
    use crate::tasks::extension::TaskExtension;
    use crate::tasks::record::TaskRecord;

    fn record(plan: Option<Plan>) -> TaskRecord {
        let mut ext = TaskExtension::from_text("goal");
        ext.plan = plan;
        TaskRecord {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus::default(),
            artifacts: vec![],
            metadata: Default::default(),
            ext,
            owner: "alice".into(),
        }
    }

    async fn call(record: &TaskRecord, name: &str, arguments: serde_json::Value) -> ToolOutcome {
        Intrinsics
            .invoke(
                &ToolContext { record },
                &ToolCall {
                    id: "c1".into(),
                    name: name.into(),
                    arguments: arguments.to_string(),
                },
            )
            .await
    }

    #[tokio::test]
    async fn create_plan_slugs_names_and_resolves_dependencies_by_name() {
        let outcome = call(
            &record(None),
            "create_plan",
            json!({"steps": [
                {"name": "Fetch the data", "description": "d"},
                {"name": "Sum it", "description": "d", "depends_on": ["Fetch the data"]}
            ]}),
        )
        .await;
        assert_eq!(outcome.text(), "plan attached with 2 steps");
        let Effect::AttachPlan { plan } = &outcome.effects[0] else {
            panic!("no plan effect");
        };
        assert_eq!(plan.steps[0].id, "fetch-the-data");
        assert_eq!(plan.steps[1].depends_on, ["fetch-the-data"]);
    }

    #[tokio::test]
    async fn tool_errors_are_stable_codes_the_model_reads() {
        let cases = [
            (
                "create_plan",
                json!({"steps": [{"name": "a", "description": "d", "depends_on": ["b"]}, {"name": "b", "description": "d", "depends_on": ["a"]}]}),
                "[plan.cycle] the dependencies form a cycle through step a",
            ),
            (
                "create_plan",
                json!({"steps": [{"name": "a", "description": "d", "depends_on": ["zz"]}]}),
                "[plan.unknown_step] step \"a\" depends on \"zz\", which is not in the plan",
            ),
            (
                "complete_step",
                json!({"step": "a", "output": "o"}),
                "[plan.missing] there is no plan; create one with create_plan",
            ),
            (
                "ask_participant",
                json!({"participant_id": "mallory", "question": "?"}),
                "[channel.not_a_member] mallory is not a participant of this task",
            ),
            ("fly", json!({}), "[tool.not_found] no tool named \"fly\""),
        ];
        for (name, args, expected) in cases {
            assert_eq!(call(&record(None), name, args).await.text(), expected);
        }
        let bad = call(
            &record(None),
            "create_plan",
            json!({"steps": [], "extra": 1}),
        )
        .await;
        assert!(
            bad.text()
                .starts_with("[tool.invalid_arguments] create_plan: unknown field `extra`"),
            "{}",
            bad.text()
        );
    }

    #[tokio::test]
    async fn complete_step_names_the_valid_steps_when_the_step_is_unknown() {
        let plan = Plan {
            steps: vec![PlanStep {
                id: "sum".into(),
                name: "Sum".into(),
                description: String::new(),
                depends_on: vec![],
                output: None,
                linked_tasks: vec![],
                state: StepState::Pending,
            }],
        };
        let outcome = call(
            &record(Some(plan)),
            "complete_step",
            json!({"step": "x", "output": "o"}),
        )
        .await;
        assert_eq!(
            outcome.text(),
            "[plan.unknown_step] no step \"x\"; steps: sum"
        );
    }

    #[test]
    fn slugs_are_lowercase_words_joined_by_dashes() {
        assert_eq!(slug("  Fetch: the DATA! "), "fetch-the-data");
        assert_eq!(slug("***"), "step");
    }
}
