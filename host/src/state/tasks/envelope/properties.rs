//! Properties of the inbound task envelope, which any caller can send: any JSON under the
//! envelope media type is a brief (or a change) or is refused with a reason naming the field,
//! never a panic; unknown keys are refused by name; what an untrusted creator gets accepted sets
//! nothing reserved for trusted delegators; valid briefs round-trip and changes apply exactly
//! what they name; plain text always makes a brief anyone may send.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Map, Value, json};

use super::*;
use crate::base::protocol::types::Part;
use crate::state::records::extension::Lifecycle;
use crate::state::records::extension::{AgentRef, ParticipantKind, TaskLink};
use crate::state::tasks::creator::{BriefRules, check_new_brief};

/// Every key a brief's payload may hold, as [`TaskExtension`] names them.
const BRIEF_KEYS: [&str; 16] = [
    "name",
    "goal",
    "type",
    "description",
    "acceptance_criteria",
    "participants",
    "parent_tasks",
    "sub_tasks",
    "plan",
    "lifecycle",
    "model",
    "reasoning_effort",
    "token_budget",
    "usage",
    "delegation",
    "kind",
];

/// The models and budget every brief here is checked against.
fn rules() -> BriefRules {
    BriefRules {
        models: vec!["big".to_string(), "small".to_string()],
        task_token_budget: Some(1_000),
        ..BriefRules::default()
    }
}

/// Ids a creator or a participant might have: plain, blank, or odd.
const IDS: [&str; 6] = ["alice", "bob", "front-desk", "", "  ", "ALICE"];

fn text() -> BoxedStrategy<String> {
    prop_oneof![
        select(IDS.to_vec()).prop_map(str::to_string),
        ".{0,10}",
        any::<String>(),
    ]
    .boxed()
}

/// Any JSON value, its keys mostly the brief's own.
fn json_value() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    let key = prop_oneof![
        select(BRIEF_KEYS.to_vec()).prop_map(str::to_string),
        "[a-z_]{0,8}"
    ];
    leaf.prop_recursive(3, 32, 5, move |inner| {
        prop_oneof![
            vec(inner.clone(), 0..5).prop_map(Value::Array),
            vec((key.clone(), inner), 0..5).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
    .boxed()
}

/// `value` most of the time; otherwise missing or any JSON. A payload has some twenty fields,
/// each wrong about one time in sixteen, so about half the payloads parse and the checks behind
/// the parsing are reached too.
fn mostly(value: impl Strategy<Value = Value>) -> impl Strategy<Value = Option<Value>> {
    prop_oneof![30 => value.prop_map(Some), 1 => Just(None), 1 => json_value().prop_map(Some)]
}

/// Sometimes present, mostly well-formed when it is.
fn maybe(value: impl Strategy<Value = Value>) -> impl Strategy<Value = Option<Value>> {
    prop_oneof![Just(None), mostly(value)]
}

fn object(fields: Vec<(&str, Option<Value>)>) -> Value {
    Value::Object(
        fields
            .into_iter()
            .filter_map(|(key, value)| value.map(|value| (key.to_string(), value)))
            .collect::<Map<_, _>>(),
    )
}

fn word(words: &'static [&'static str]) -> impl Strategy<Value = Value> {
    select(words.to_vec()).prop_map(Value::from)
}

fn participant_json() -> BoxedStrategy<Value> {
    (
        mostly(text().prop_map(Value::from)),
        mostly(word(&["human", "agent"])),
        mostly(word(&["assignee", "reporter", "watcher", "admin"])),
        maybe(text().prop_map(Value::from)),
    )
        .prop_map(|(id, kind, role, display_name)| {
            object(vec![
                ("id", id),
                ("kind", kind),
                ("role", role),
                ("display_name", display_name),
            ])
        })
        .boxed()
}

fn link_json() -> BoxedStrategy<Value> {
    let agent = (
        mostly(word(&["a2a", "self"])),
        mostly(text().prop_map(Value::from)),
    )
        .prop_map(|(kind, id)| object(vec![("kind", kind), ("id", id)]));
    (mostly(text().prop_map(Value::from)), maybe(agent))
        .prop_map(|(task_id, agent)| object(vec![("task_id", task_id), ("agent", agent)]))
        .boxed()
}

/// A brief's payload near the valid shape, every field sometimes wrong or missing.
fn payload_json() -> BoxedStrategy<Value> {
    let criterion = (
        mostly(text().prop_map(Value::from)),
        maybe(any::<bool>().prop_map(Value::from)),
    )
        .prop_map(|(text, met)| object(vec![("text", text), ("met", met)]));
    let names = (
        mostly(text().prop_map(Value::from)),
        mostly(text().prop_map(Value::from)),
        maybe(text().prop_map(Value::from)),
        maybe(vec(criterion, 0..3).prop_map(Value::Array)),
    );
    let roles = (
        maybe(vec(participant_json(), 0..3).prop_map(Value::Array)),
        maybe(vec(link_json(), 0..2).prop_map(Value::Array)),
        maybe(word(&["agent", "participant"])),
        maybe(text().prop_map(Value::from)),
        maybe(text().prop_map(Value::from)),
        maybe(any::<i64>().prop_map(Value::from)),
    );
    let harness_owned = prop_oneof![
        8 => Just(None),
        1 => vec(link_json(), 0..2).prop_map(|l| Some(("sub_tasks", Value::Array(l)))),
        1 => Just(Some(("plan", json!({"steps": []})))),
        1 => Just(Some(("usage", json!({"input_tokens": 1, "output_tokens": 2})))),
    ];
    (names, roles, harness_owned)
        .prop_map(|((name, goal, description, criteria), roles, owned)| {
            let (participants, parents, lifecycle, model, effort, budget) = roles;
            let mut fields = vec![
                ("name", name),
                ("goal", goal),
                ("description", description),
                ("acceptance_criteria", criteria),
                ("participants", participants),
                ("parent_tasks", parents),
                ("lifecycle", lifecycle),
                ("model", model),
                ("reasoning_effort", effort),
                ("token_budget", budget),
            ];
            if let Some((key, value)) = owned {
                fields.push((key, Some(value)));
            }
            object(fields)
        })
        .boxed()
}

/// The data of an envelope part: mostly `{"kind":"task","payload":…}`.
fn envelope_data() -> BoxedStrategy<Value> {
    prop_oneof![
        6 => payload_json().prop_map(|payload| json!({"kind": "task", "payload": payload})),
        1 => (json_value(), json_value()).prop_map(|(kind, payload)| json!({"kind": kind, "payload": payload})),
        1 => json_value(),
    ]
    .boxed()
}

/// A message whose envelope part comes after `leading` text parts.
fn message(leading: usize, data: Value) -> Message {
    let mut parts: Vec<Part> = (0..leading).map(|n| Part::text(n.to_string())).collect();
    parts.push(Part::data(data, ENVELOPE_MEDIA_TYPE));
    Message {
        parts,
        ..Message::default()
    }
}

fn refusal<T: std::fmt::Debug>(result: Result<T, TaskError>) -> Option<String> {
    match result {
        Err(TaskError::InvalidParams(message)) => Some(message),
        Err(other) => panic!("a brief is refused as invalid params, not {other:?}"),
        Ok(_) => None,
    }
}

/// A valid brief, as a trusted delegator may send it.
fn valid_brief() -> BoxedStrategy<TaskExtension> {
    let participant = (
        "[a-z][a-z0-9-]{0,8}",
        select(vec![ParticipantKind::Human, ParticipantKind::Agent]),
        select(vec![
            Role::Assignee,
            Role::Reporter,
            Role::Watcher,
            Role::Admin,
        ]),
        proptest::option::of(".{1,8}"),
    )
        .prop_map(|(id, kind, role, display_name)| Participant {
            id,
            kind,
            role,
            display_name,
        });
    let link =
        ("[a-z0-9-]{1,12}", proptest::option::of("[a-z]{1,6}")).prop_map(|(task_id, agent)| {
            TaskLink {
                task_id,
                agent: agent.map(|id| AgentRef {
                    kind: "a2a".into(),
                    id,
                    version: None,
                }),
                state: None,
                deadline: None,
                ..TaskLink::default()
            }
        });
    let criterion = (".{0,12}", any::<bool>()).prop_map(|(text, met)| Criterion { text, met });
    (
        (
            "[a-zA-Z][a-zA-Z0-9 ]{0,20}",
            ".*[a-z].*",
            proptest::option::of(".{0,12}"),
        ),
        (
            vec(criterion, 0..3),
            vec(participant, 0..3),
            vec(link, 0..2),
        ),
        (
            select(vec![Lifecycle::Agent, Lifecycle::Participant]),
            proptest::option::of(select(rules().models)),
            proptest::option::of(select(vec!["low".to_string(), "high".to_string()])),
            proptest::option::of(1..u64::MAX),
        ),
    )
        .prop_map(
            |((name, goal, description), (criteria, participants, parents), rest)| {
                let mut brief = TaskExtension::from_text(&goal);
                brief.name = name;
                brief.description = description;
                brief.acceptance_criteria = criteria;
                brief.participants = participants;
                brief.parent_tasks = parents;
                (
                    brief.lifecycle,
                    brief.model,
                    brief.reasoning_effort,
                    brief.token_budget,
                ) = rest;
                brief
            },
        )
        .boxed()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    #[test]
    fn any_envelope_is_a_brief_or_refused_naming_the_field(
        leading in 0usize..3,
        data in envelope_data(),
        creator in select(IDS.to_vec()),
        trusted in any::<bool>(),
    ) {
        let message = message(leading, data.clone());
        let at = format!("message.parts[{leading}].data");
        let not_a_task = data.as_object().is_some_and(|d| d.get("kind") != Some(&json!("task")));
        match read_brief(&message) {
            Ok(None) => prop_assert!(not_a_task, "{data}"),
            Ok(Some(brief)) => {
                prop_assert!(!brief.name.trim().is_empty() && !brief.goal.trim().is_empty());
                prop_assert!(brief.sub_tasks.is_empty() && brief.plan.is_none());
                prop_assert!(brief.usage.is_none());
                match refusal(check_new_brief(&brief, creator, trusted, &rules())) {
                    Some(why) => prop_assert!(why.starts_with("task."), "{why}"),
                    None if trusted => {
                        let known = rules().models;
                        prop_assert!(brief.model.as_ref().is_none_or(|m| known.contains(m)));
                        prop_assert!(brief.token_budget != Some(0));
                    }
                    None => {
                        prop_assert!(brief.participants.iter().all(|p| p.id == creator));
                        prop_assert_eq!(brief.lifecycle, Lifecycle::Agent);
                        prop_assert!(brief.model.is_none() && brief.reasoning_effort.is_none());
                        prop_assert!(brief.parent_tasks.is_empty() && brief.token_budget.is_none());
                    }
                }
            }
            Err(err) => {
                let why = refusal::<()>(Err(err)).unwrap();
                prop_assert!(why.starts_with(&at), "{why}");
            }
        }
        match BriefChange::read(&message) {
            Ok(None) => prop_assert!(not_a_task),
            Ok(Some(_)) => {
                let payload = data["payload"].as_object().unwrap();
                let changeable = |k: &String| {
                    PARTICIPANT_FIELDS.contains(&k.as_str()) || ADMIN_FIELDS.contains(&k.as_str())
                };
                prop_assert!(payload.keys().all(changeable), "{:?}", payload);
            }
            Err(err) => {
                let why = refusal::<()>(Err(err)).unwrap();
                prop_assert!(why.starts_with(&at), "{why}");
            }
        }
    }

    #[test]
    fn an_unknown_key_is_refused_by_name(
        brief in valid_brief(),
        key in "[a-z_]{1,12}".prop_filter("unknown", |k| !BRIEF_KEYS.contains(&k.as_str())),
        value in json_value(),
    ) {
        let mut payload = serde_json::to_value(&brief).unwrap();
        payload[key.as_str()] = value.clone();
        let why = refusal(read_brief(&message(0, json!({"kind": "task", "payload": payload}))));
        let why = why.unwrap_or_default();
        prop_assert!(why.contains(&format!("unknown field `{key}`")), "{why}");
        let change = json!({"name": brief.name, key.as_str(): value});
        let why = refusal(BriefChange::read(&message(1, json!({"kind": "task", "payload": change}))));
        prop_assert_eq!(
            why.unwrap_or_default(),
            format!(
                "message.parts[1].data.payload.{key}: cannot be changed on an existing task; only name, description, acceptance_criteria and (by an admin) participants can"
            )
        );
    }

    #[test]
    fn a_valid_brief_round_trips_and_a_trusted_creator_may_send_it(brief in valid_brief()) {
        let payload = serde_json::to_value(&brief).unwrap();
        let read = read_brief(&message(0, json!({"kind": "task", "payload": payload}))).unwrap();
        prop_assert_eq!(read.as_ref(), Some(&brief));
        prop_assert_eq!(check_new_brief(&brief, "front-desk", true, &rules()), Ok(()));
    }

    #[test]
    fn a_change_applies_exactly_the_fields_it_names(
        brief in valid_brief(),
        other in valid_brief(),
        named in proptest::bits::u8::masked(0b1111),
    ) {
        let fields = [
            ("name", json!(other.name)),
            ("description", json!(other.description.clone().unwrap_or_default())),
            ("acceptance_criteria", json!(other.acceptance_criteria)),
            ("participants", json!(other.participants)),
        ];
        let change: Map<String, Value> = fields
            .iter()
            .enumerate()
            .filter(|(bit, _)| named & (1 << bit) != 0)
            .map(|(_, (key, value))| (key.to_string(), value.clone()))
            .collect();
        let message = message(0, json!({"kind": "task", "payload": change}));
        let change = BriefChange::read(&message).unwrap().unwrap();
        let mut changed = brief.clone();
        change.apply(&mut changed);
        let mut expected = brief;
        if named & 1 != 0 { expected.name = other.name; }
        if named & 2 != 0 { expected.description = Some(other.description.unwrap_or_default()); }
        if named & 4 != 0 { expected.acceptance_criteria = other.acceptance_criteria; }
        if named & 8 != 0 { expected.participants = other.participants; }
        prop_assert_eq!(changed, expected);
    }

    #[test]
    fn any_text_without_an_envelope_becomes_a_named_brief(text in any::<String>()) {
        let brief = TaskExtension::from_text(&text);
        prop_assert!(!brief.name.trim().is_empty());
        prop_assert!(brief.name.chars().count() <= crate::state::records::extension::DERIVED_NAME_CHARS);
        prop_assert_eq!(brief.goal, text.trim());
        prop_assert_eq!(
            check_new_brief(&TaskExtension::from_text(&text), "alice", false, &rules()),
            Ok(())
        );
    }
}
