//! How each section of the context window is written: the tags and the line formats of
//! participants, skills, the task and its plan. Untrusted text has its own module, `text::untrusted`.

use crate::base::config::ParticipantConfig;
use crate::state::records::extension::{Plan, StepState};
use crate::state::records::record::TaskRecord;

/// One section: `<name>\n{body}\n</name>`.
pub fn section(name: &str, body: &str) -> String {
    format!("<{name}>\n{body}\n</{name}>")
}

/// A named body of know-how the model can load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillEntry {
    /// The name `load_skill` takes.
    pub name: String,
    /// One line on what the skill is for and when to load it.
    pub description: String,
}

/// The `participants` section: `- {id} ({kind}): {role}[ — {display_name}]`.
pub fn render_participants(participants: &[ParticipantConfig]) -> String {
    if participants.is_empty() {
        return "(no participants)".to_string();
    }
    participants
        .iter()
        .map(|p| {
            participant_line(
                &p.id,
                p.kind.as_str(),
                p.role.as_str(),
                p.display_name.as_deref(),
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn participant_line(id: &str, kind: &str, role: &str, display_name: Option<&str>) -> String {
    match display_name {
        Some(name) if !name.is_empty() => format!("- {id} ({kind}): {role} — {name}"),
        _ => format!("- {id} ({kind}): {role}"),
    }
}

/// The `skills_index` section: `- {name}: {description}`.
pub fn render_skills_index(skills: &[SkillEntry]) -> String {
    if skills.is_empty() {
        return "(no skills)".to_string();
    }
    skills
        .iter()
        .map(|s| format!("- {}: {}", s.name, s.description))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `task` section: name, state, goal, description, criteria, participants, sub-tasks.
pub fn render_task(record: &TaskRecord) -> String {
    let ext = &record.ext;
    let mut lines = vec![
        format!("name: {}", ext.name),
        format!("state: {}", record.state().short_name()),
        format!("goal: {}", ext.goal),
    ];
    if let Some(description) = ext.description.as_deref().filter(|d| !d.is_empty()) {
        lines.push(format!("description: {description}"));
    }
    if !ext.acceptance_criteria.is_empty() {
        lines.push("acceptance criteria:".to_string());
        for criterion in &ext.acceptance_criteria {
            let mark = if criterion.met { 'x' } else { ' ' };
            lines.push(format!("  - [{mark}] {}", criterion.text));
        }
    }
    if !ext.participants.is_empty() {
        lines.push("participants:".to_string());
        for p in &ext.participants {
            lines.push(format!(
                "  {}",
                participant_line(
                    &p.id,
                    p.kind.as_str(),
                    p.role.as_str(),
                    p.display_name.as_deref()
                )
            ));
        }
    }
    if !ext.sub_tasks.is_empty() {
        lines.push("sub-tasks:".to_string());
        for link in &ext.sub_tasks {
            let agent = link.agent_id();
            let state = link
                .state
                .as_deref()
                .map(|s| s.trim_start_matches("TASK_STATE_"))
                .unwrap_or("SUBMITTED");
            lines.push(format!("  - {} on {agent}: {state}", link.task_id));
        }
    }
    lines.join("\n")
}

/// The `plan` section: `- [x| |>|!] {id}: {name}[ (after a, b)][ → output]`.
pub fn render_plan(plan: Option<&Plan>) -> String {
    let Some(plan) = plan else {
        return "(no plan yet; create one with create_plan)".to_string();
    };
    plan.steps
        .iter()
        .map(|step| {
            let mark = match step.state {
                StepState::Done => 'x',
                StepState::Active => '>',
                StepState::Failed => '!',
                StepState::Pending => ' ',
            };
            let after = if step.depends_on.is_empty() {
                String::new()
            } else {
                format!(" (after {})", step.depends_on.join(", "))
            };
            let output = step
                .output
                .as_deref()
                .map(|o| format!(" → {o}"))
                .unwrap_or_default();
            format!("- [{mark}] {}: {}{after}{output}", step.id, step.name)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::types::{TaskState, TaskStatus};
    use crate::state::records::extension::{
        Criterion, Participant, ParticipantKind, PlanStep, Role, TaskExtension,
    };

    #[test]
    fn task_section_golden() {
        let mut ext = TaskExtension::from_text("Reconcile March");
        ext.description = Some("Bank vs ledger".into());
        ext.acceptance_criteria = vec![
            Criterion {
                text: "totals match".into(),
                met: true,
            },
            Criterion {
                text: "report sent".into(),
                met: false,
            },
        ];
        ext.participants = vec![Participant {
            id: "alice".into(),
            kind: ParticipantKind::Human,
            role: Role::Admin,
            display_name: Some("Alice".into()),
        }];
        let record = TaskRecord {
            id: "t1".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::Working,
                ..TaskStatus::default()
            },
            artifacts: vec![],
            metadata: Default::default(),
            ext,
            owner: "alice".into(),
        };
        assert_eq!(
            render_task(&record),
            "name: Reconcile March\nstate: WORKING\ngoal: Reconcile March\ndescription: Bank vs ledger\nacceptance criteria:\n  - [x] totals match\n  - [ ] report sent\nparticipants:\n  - alice (human): admin — Alice"
        );
    }

    #[test]
    fn task_section_lists_each_sub_task_with_its_agent_id_and_state_golden() {
        use crate::state::records::extension::{AgentRef, TaskLink};
        let mut ext = TaskExtension::from_text("Answer the customer");
        let link = |id: &str, agent: &str, state: Option<&str>| TaskLink {
            task_id: id.into(),
            agent: Some(AgentRef {
                kind: "agent".into(),
                id: agent.into(),
                version: None,
            }),
            state: state.map(str::to_string),
            deadline: None,
            ..TaskLink::default()
        };
        ext.sub_tasks = vec![
            link("c-1", "ledger", Some("TASK_STATE_COMPLETED")),
            link("c-2", "self", Some("TASK_STATE_INPUT_REQUIRED")),
            link("c-3", "self", None),
        ];
        let record = TaskRecord {
            id: "t1".into(),
            context_id: "c".into(),
            status: TaskStatus::default(),
            artifacts: vec![],
            metadata: Default::default(),
            ext,
            owner: "user".into(),
        };
        assert!(
            render_task(&record).ends_with(
                "sub-tasks:\n  - c-1 on ledger: COMPLETED\n  - c-2 on self: INPUT_REQUIRED\n  - c-3 on self: SUBMITTED"
            ),
            "{}",
            render_task(&record)
        );
    }

    #[test]
    fn plan_section_golden() {
        let step = |id: &str, state, deps: &[&str], output: Option<&str>| PlanStep {
            id: id.into(),
            name: id.replace('-', " "),
            description: String::new(),
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
            output: output.map(str::to_string),
            linked_tasks: vec![],
            state,
        };
        let plan = Plan {
            steps: vec![
                step("fetch-data", StepState::Done, &[], Some("12 rows")),
                step("sum", StepState::Active, &["fetch-data"], None),
                step("report", StepState::Pending, &["sum", "fetch-data"], None),
                step("retry", StepState::Failed, &[], None),
            ],
        };
        assert_eq!(
            render_plan(Some(&plan)),
            "- [x] fetch-data: fetch data → 12 rows\n- [>] sum: sum (after fetch-data)\n- [ ] report: report (after sum, fetch-data)\n- [!] retry: retry"
        );
        assert_eq!(
            render_plan(None),
            "(no plan yet; create one with create_plan)"
        );
    }

    #[test]
    fn skills_index_golden() {
        let entry = |name: &str, description: &str| SkillEntry {
            name: name.into(),
            description: description.into(),
        };
        assert_eq!(
            render_skills_index(&[
                entry("bookkeeping", "The ledger's rules for entries."),
                entry("style", "How replies are written."),
            ]),
            "- bookkeeping: The ledger's rules for entries.\n- style: How replies are written."
        );
    }

    #[test]
    fn empty_sections_say_so() {
        assert_eq!(render_participants(&[]), "(no participants)");
        assert_eq!(render_skills_index(&[]), "(no skills)");
    }
}
