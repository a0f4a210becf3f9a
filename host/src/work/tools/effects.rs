//! What a tool may do to its task, checked by the host. Plugins (the builtin included) ask for
//! effects through host functions; each request is checked here against the task as it is, and
//! an accepted effect is applied by the engine in the same transaction as the tool's result.

use std::collections::{HashMap, HashSet};

use crate::state::records::extension::{Plan, PlanStep, Role, StepState};
use crate::state::records::record::TaskRecord;
use crate::work::tools::{Effect, ToolError};

/// Plans longer than this are refused: a plan is a guide, not a transcript.
pub const MAX_PLAN_STEPS: usize = 50;

/// One step as the model wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRequest {
    /// A short label; the step's id is derived from it.
    pub name: String,
    /// What the step involves.
    pub description: String,
    /// Names or ids of other steps.
    pub depends_on: Vec<String>,
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

/// A plan from the model's steps: ids are slugs of the names (made unique), dependencies may
/// name a step by its name or its id, and must neither be unknown nor form a cycle.
pub fn plan_from_steps(requests: &[StepRequest]) -> Result<Plan, ToolError> {
    if requests.is_empty() || requests.len() > MAX_PLAN_STEPS {
        return Err(ToolError::new(
            "tool.invalid_arguments",
            format!("create_plan: steps must have 1 to {MAX_PLAN_STEPS} items"),
        ));
    }
    let mut steps: Vec<PlanStep> = Vec::new();
    let mut by_name: HashMap<&str, String> = HashMap::new();
    for request in requests {
        let base = slug(&request.name);
        let mut id = base.clone();
        let mut n = 2;
        while steps.iter().any(|s| s.id == id) {
            id = format!("{base}-{n}");
            n += 1;
        }
        by_name.insert(request.name.as_str(), id.clone());
        steps.push(PlanStep {
            id,
            name: request.name.clone(),
            description: request.description.clone(),
            depends_on: Vec::new(),
            output: None,
            linked_tasks: Vec::new(),
            state: StepState::Pending,
        });
    }
    let ids: HashSet<String> = steps.iter().map(|s| s.id.clone()).collect();
    for (index, request) in requests.iter().enumerate() {
        for dep in &request.depends_on {
            let resolved = if ids.contains(dep) {
                dep.clone()
            } else if let Some(id) = by_name.get(dep.as_str()) {
                id.clone()
            } else {
                return Err(ToolError::new(
                    "plan.unknown_step",
                    format!(
                        "step \"{}\" depends on \"{dep}\", which is not in the plan",
                        request.name
                    ),
                ));
            };
            steps[index].depends_on.push(resolved);
        }
    }
    if let Some(step) = find_cycle(&steps) {
        return Err(ToolError::new(
            "plan.cycle",
            format!("the dependencies form a cycle through step {step}"),
        ));
    }
    Ok(Plan { steps })
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

/// The plan as it will be once the call's earlier effects apply.
fn current_plan<'a>(record: &'a TaskRecord, pending: &'a [Effect]) -> Option<&'a Plan> {
    pending
        .iter()
        .rev()
        .find_map(|effect| match effect {
            Effect::AttachPlan { plan } => Some(plan),
            _ => None,
        })
        .or(record.ext.plan.as_ref())
}

/// Checks `complete_step` against the plan.
pub fn complete_step(
    record: &TaskRecord,
    pending: &[Effect],
    step: &str,
    output: &str,
) -> Result<Effect, ToolError> {
    check_step(record, pending, step)?;
    Ok(Effect::CompleteStep {
        step: step.to_string(),
        output: output.to_string(),
    })
}

/// Checks that the plan, as the call's earlier effects leave it, has the step.
pub fn check_step(record: &TaskRecord, pending: &[Effect], step: &str) -> Result<(), ToolError> {
    let Some(plan) = current_plan(record, pending) else {
        return Err(ToolError::new(
            "plan.missing",
            "there is no plan; create one with create_plan",
        ));
    };
    if !plan.steps.iter().any(|s| s.id == step) {
        let ids: Vec<&str> = plan.steps.iter().map(|s| s.id.as_str()).collect();
        return Err(ToolError::new(
            "plan.unknown_step",
            format!("no step \"{step}\"; steps: {}", ids.join(", ")),
        ));
    }
    Ok(())
}

/// Checks that the participant asked is on the task.
pub fn ask_participant(
    record: &TaskRecord,
    participant_id: &str,
    question: &str,
    options: &[String],
) -> Result<Effect, ToolError> {
    if !record.is_visible_to(participant_id) {
        return Err(ToolError::new(
            "channel.not_a_member",
            format!("{participant_id} is not a participant of this task"),
        ));
    }
    Ok(Effect::AskParticipant {
        participant_id: participant_id.to_string(),
        question: question.to_string(),
        options: options.to_vec(),
    })
}

/// Checks a role change. The model acts for the task's owner, so it may change roles only when
/// the owner is an admin of the task, and never removes the last admin.
pub fn set_participant_role(
    record: &TaskRecord,
    participant_id: &str,
    role: &str,
) -> Result<Effect, ToolError> {
    let role: Role =
        serde_json::from_value(serde_json::Value::String(role.to_string())).map_err(|_| {
            ToolError::new(
                "tool.invalid_arguments",
                format!("set_participant_role: unknown role \"{role}\""),
            )
        })?;
    let owner_is_admin = record
        .ext
        .participant(&record.owner)
        .is_some_and(|p| p.role == Role::Admin);
    if !owner_is_admin {
        return Err(ToolError::new(
            "participant.not_admin",
            "only a task whose requester is an admin may change roles",
        ));
    }
    let Some(target) = record.ext.participant(participant_id) else {
        return Err(ToolError::new(
            "channel.not_a_member",
            format!("{participant_id} is not a participant of this task"),
        ));
    };
    let admins = record
        .ext
        .participants
        .iter()
        .filter(|p| p.role == Role::Admin)
        .count();
    if target.role == Role::Admin && role != Role::Admin && admins == 1 {
        return Err(ToolError::new(
            "participant.last_admin",
            format!("{participant_id} is the task's only admin"),
        ));
    }
    Ok(Effect::SetRole {
        participant_id: participant_id.to_string(),
        role,
    })
}

#[cfg(test)]
mod tests;
