//! Golden tests of the effect checks: the errors are what the model reads.

use super::*;
use crate::base::protocol::types::TaskState;
use crate::state::records::extension::{Participant, ParticipantKind, TaskExtension};

fn record(plan: Option<Plan>) -> TaskRecord {
    let mut ext = TaskExtension::from_text("goal");
    ext.plan = plan;
    ext.participants = vec![Participant {
        id: "alice".into(),
        kind: ParticipantKind::Human,
        role: Role::Admin,
        display_name: None,
    }];
    TaskRecord::for_test(ext, TaskState::default(), "alice")
}

fn step(name: &str, deps: &[&str]) -> StepRequest {
    StepRequest {
        name: name.into(),
        description: "d".into(),
        depends_on: deps.iter().map(|d| d.to_string()).collect(),
    }
}

#[test]
fn plans_slug_their_names_and_resolve_dependencies_by_name() {
    let plan = plan_from_steps(&[
        step("Fetch the data", &[]),
        step("Sum it", &["Fetch the data"]),
    ])
    .unwrap();
    assert_eq!(plan.steps[0].id, "fetch-the-data");
    assert_eq!(plan.steps[1].depends_on, ["fetch-the-data"]);
    let twins = plan_from_steps(&[step("A", &[]), step("a", &[])]).unwrap();
    assert_eq!(twins.steps[1].id, "a-2");
}

#[test]
fn plan_errors_golden() {
    assert_eq!(
        plan_from_steps(&[step("a", &["b"]), step("b", &["a"])])
            .unwrap_err()
            .to_string(),
        "[plan.cycle] the dependencies form a cycle through step a"
    );
    assert_eq!(
        plan_from_steps(&[step("a", &["zz"])])
            .unwrap_err()
            .to_string(),
        "[plan.unknown_step] step \"a\" depends on \"zz\", which is not in the plan"
    );
    assert_eq!(
        plan_from_steps(&[]).unwrap_err().to_string(),
        "[tool.invalid_arguments] create_plan: steps must have 1 to 50 items"
    );
}

#[test]
fn complete_step_needs_a_plan_and_a_known_step() {
    assert_eq!(
        complete_step(&record(None), &[], "a", "o")
            .unwrap_err()
            .to_string(),
        "[plan.missing] there is no plan; create one with create_plan"
    );
    let plan = plan_from_steps(&[step("Sum", &[])]).unwrap();
    assert_eq!(
        complete_step(&record(Some(plan.clone())), &[], "x", "o")
            .unwrap_err()
            .to_string(),
        "[plan.unknown_step] no step \"x\"; steps: sum"
    );
    let attached = [Effect::AttachPlan { plan }];
    assert!(complete_step(&record(None), &attached, "sum", "4").is_ok());
}

#[test]
fn questions_go_only_to_participants() {
    assert_eq!(
        ask_participant(&record(None), "mallory", "?", &[])
            .unwrap_err()
            .to_string(),
        "[channel.not_a_member] mallory is not a participant of this task"
    );
    assert!(ask_participant(&record(None), "alice", "?", &[]).is_ok());
}

#[test]
fn the_last_admin_keeps_the_role() {
    assert_eq!(
        set_participant_role(&record(None), "alice", "watcher")
            .unwrap_err()
            .to_string(),
        "[participant.last_admin] alice is the task's only admin"
    );
    assert_eq!(
        set_participant_role(&record(None), "alice", "boss")
            .unwrap_err()
            .to_string(),
        "[tool.invalid_arguments] set_participant_role: unknown role \"boss\""
    );
}

#[test]
fn slugs_are_lowercase_words_joined_by_dashes() {
    assert_eq!(slug("  Fetch: the DATA! "), "fetch-the-data");
    assert_eq!(slug("***"), "step");
}
