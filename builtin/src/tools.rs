//! The intrinsic tools: their definitions as the model reads them, and `invoke`, which turns the
//! model's (already schema-validated) arguments into host calls and the host's answer into text.

use serde_json::{Value, json};
use tiny_harness_plugin_sdk::host::{self, StepInput, SubtaskBrief};
use tiny_harness_plugin_sdk::{ToolDefinition, ToolError, tool_error};

fn tool(name: &str, description: &str, parameters: Value) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: description.into(),
        parameters: parameters.to_string(),
    }
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
}

/// Every intrinsic tool's definition.
pub fn definitions() -> Vec<ToolDefinition> {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    vec![
        tool(
            "create_plan",
            "Attach a plan to the task: its steps in order, each with what it depends on. Replaces any earlier plan.",
            object(
                json!({"steps": {"type": "array", "minItems": 1, "items": object(json!({
                    "name": {"type": "string", "minLength": 1},
                    "description": {"type": "string"},
                    "depends_on": {"type": "array", "items": {"type": "string"}, "description": "Names or ids of other steps."}
                }), &["name", "description"])}}),
                &["steps"],
            ),
        ),
        tool(
            "complete_step",
            "Mark a step of the plan done, with what it produced.",
            object(
                json!({
                    "step": {"type": "string", "description": "The step's id, as listed in <plan>."},
                    "output": {"type": "string", "description": "What the step produced, in a sentence."}
                }),
                &["step", "output"],
            ),
        ),
        tool(
            "spawn_subtask",
            "Delegate a piece of work as a sub-task to an agent listed in <agents>, or to this harness in a clean context. The result comes back to this task when the sub-task ends.",
            object(
                json!({
                    "name": {"type": "string", "minLength": 1, "description": "A short name for the sub-task."},
                    "goal": {"type": "string", "minLength": 1, "description": "What the sub-task must achieve, standing alone."},
                    "description": {"type": "string", "description": "Everything the sub-task needs to know: it cannot see this task."},
                    "acceptance_criteria": strings,
                    "agent": {"type": ["string", "null"], "description": "The id of an agent listed in <agents>, exactly as listed, or null to run the sub-task on this harness (self). Any other id is refused."},
                    "model": {"type": "string", "description": "For a sub-task on this harness (self): the name of a model listed under self in <agents>. Leave it out for the default model. Any other name is refused, as is a model for another agent."},
                    "step": {"type": "string", "description": "The id of the plan step this sub-task serves."}
                }),
                &["name", "goal"],
            ),
        ),
        tool(
            "message_subtask",
            "Send a message to one of this task's open sub-tasks, such as the answer to a question it asked. The sub-task goes on with it; its result still comes back to this task.",
            object(
                json!({
                    "task_id": {"type": "string", "minLength": 1, "description": "The sub-task's id, as listed under sub-tasks in <task>."},
                    "agent": {"type": ["string", "null"], "description": "The agent the sub-task runs on, as listed under sub-tasks in <task>; needed when two sub-tasks share an id."},
                    "text": {"type": "string", "minLength": 1, "description": "The message: everything the sub-task needs, since it cannot see this task."}
                }),
                &["task_id", "text"],
            ),
        ),
        tool(
            "ask_participant",
            "Ask one of the task's participants a question and wait for the answer. The task pauses (input required) until they reply.",
            object(
                json!({
                    "participant_id": {"type": "string", "description": "The id of a participant of this task."},
                    "question": {"type": "string", "minLength": 1},
                    "options": {"type": "array", "items": {"type": "string"}, "description": "Answers to choose from, if any."}
                }),
                &["participant_id", "question"],
            ),
        ),
        tool(
            "create_task_for_participant",
            "Create a child task that a participant works and answers; this task waits for it.",
            object(
                json!({
                    "participant_id": {"type": "string"},
                    "name": {"type": "string", "minLength": 1},
                    "goal": {"type": "string", "minLength": 1},
                    "acceptance_criteria": strings,
                    "step": {"type": "string"}
                }),
                &["participant_id", "name", "goal"],
            ),
        ),
        tool(
            "set_participant_role",
            "Change a participant's role on the task (assignee, reporter, watcher or admin). Admin only.",
            object(
                json!({
                    "participant_id": {"type": "string"},
                    "role": {"type": "string", "enum": ["assignee", "reporter", "watcher", "admin"]}
                }),
                &["participant_id", "role"],
            ),
        ),
        tool(
            "list_skills",
            "List the skills that can be loaded, with what each is for.",
            object(json!({}), &[]),
        ),
        tool(
            "load_skill",
            "Load a skill into this task's context; its body appears in a <skill:name> section.",
            object(json!({"name": {"type": "string"}}), &["name"]),
        ),
        tool(
            "unload_skill",
            "Remove a loaded skill from this task's context.",
            object(json!({"name": {"type": "string"}}), &["name"]),
        ),
    ]
}

fn text(args: &Value, key: &str) -> String {
    args.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

fn optional_text(args: &Value, key: &str) -> Option<String> {
    args.get(key).and_then(Value::as_str).map(str::to_string)
}

fn texts(args: &Value, key: &str) -> Vec<String> {
    args.get(key)
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// Runs one intrinsic tool.
pub fn invoke(name: &str, arguments: &str) -> Result<String, ToolError> {
    let args: Value = serde_json::from_str(arguments)
        .map_err(|err| tool_error("tool.invalid_arguments", format!("{name}: {err}")))?;
    match name {
        "create_plan" => {
            let steps: Vec<StepInput> = args
                .get("steps")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|step| StepInput {
                    name: text(step, "name"),
                    description: text(step, "description"),
                    depends_on: texts(step, "depends_on"),
                })
                .collect();
            let ids = host::attach_plan(&steps)?;
            Ok(format!("plan attached with {} steps: {}", ids.len(), ids.join(", ")))
        }
        "complete_step" => {
            let step = text(&args, "step");
            host::complete_step(&step, &text(&args, "output"))?;
            Ok(format!("step {step} done"))
        }
        "spawn_subtask" => {
            // `model` is not passed on: the host reads it from the model's own arguments, which
            // plugin interface 0.1.0's brief has no field for.
            let brief = SubtaskBrief {
                name: text(&args, "name"),
                goal: text(&args, "goal"),
                description: optional_text(&args, "description"),
                acceptance_criteria: texts(&args, "acceptance_criteria"),
                agent: optional_text(&args, "agent"),
                step: optional_text(&args, "step"),
            };
            let child = host::spawn_subtask(&brief)?;
            Ok(format!(
                "sub-task {} created on {}; its result will come back to this task",
                child.task_id, child.agent
            ))
        }
        "message_subtask" => {
            let child = host::message_subtask(
                &text(&args, "task_id"),
                optional_text(&args, "agent").as_deref(),
                &text(&args, "text"),
            )?;
            Ok(format!(
                "message sent to sub-task {} on {}; its result will come back to this task",
                child.task_id, child.agent
            ))
        }
        "ask_participant" => {
            let who = text(&args, "participant_id");
            host::ask_participant(&who, &text(&args, "question"), &texts(&args, "options"))?;
            Ok(format!("question sent to {who}; the task waits for the answer"))
        }
        "create_task_for_participant" => {
            let who = text(&args, "participant_id");
            let child = host::create_task_for_participant(
                &who,
                &text(&args, "name"),
                &text(&args, "goal"),
                &texts(&args, "acceptance_criteria"),
                optional_text(&args, "step").as_deref(),
            )?;
            Ok(format!("task {} created for {who}", child.task_id))
        }
        "set_participant_role" => {
            let who = text(&args, "participant_id");
            let role = text(&args, "role");
            host::set_participant_role(&who, &role)?;
            Ok(format!("{who} is now {role}"))
        }
        "list_skills" => {
            let skills = host::list_skills();
            Ok(if skills.is_empty() {
                "(no skills)".to_string()
            } else {
                skills.join("\n")
            })
        }
        "load_skill" => {
            let skill = text(&args, "name");
            host::load_skill(&skill)?;
            Ok(format!("skill {skill} loaded"))
        }
        "unload_skill" => {
            let skill = text(&args, "name");
            host::unload_skill(&skill)?;
            Ok(format!("skill {skill} unloaded"))
        }
        other => Err(tool_error("tool.not_found", format!("no tool named \"{other}\""))),
    }
}
