//! Properties of configuration loading: any TOML-ish text, and any value in any known setting,
//! gives a valid configuration or a [`ConfigError`] that names a setting (the dotted path of a
//! known one, or the unknown key itself), never a panic; numbers in range are read back as
//! written.

use std::collections::BTreeMap;
use std::path::Path;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use toml::{Table, Value};

use super::{Config, ConfigError};

/// What a setting holds when it is right, so generated values are mostly near the valid shape.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Address,
    Url,
    Id,
    EnvName,
    Text,
    Count,
    Fraction,
    Provider,
    HumanOrAgent,
    Role,
    List,
}

use Kind::*;

/// A section's dotted name, whether it is a list of tables (`[[…]]`), and its keys' kinds.
type Section = (&'static str, bool, &'static [(&'static str, Kind)]);

/// Every setting, by section.
const SECTIONS: [Section; 16] = [
    (
        "server",
        false,
        &[
            ("bind", Address),
            ("base_url", Url),
            ("max_request_bytes", Count),
            ("rate_limit_per_minute", Count),
            // Any value but a boolean is refused by its type; a non-loopback `bind` without
            // it is refused naming it.
            ("allow_anonymous", Text),
        ],
    ),
    (
        "server.trusted_delegators",
        true,
        &[("id", Id), ("token_env", EnvName)],
    ),
    (
        "server.callers",
        true,
        &[("id", Id), ("token_env", EnvName)],
    ),
    (
        "server.oidc",
        false,
        &[
            ("issuer", Url),
            ("jwks_url", Url),
            ("audience", Text),
            ("participant_claim", Text),
            ("required_scopes", List),
        ],
    ),
    (
        "model",
        false,
        &[
            ("provider", Provider),
            ("base_url", Url),
            ("model", Text),
            ("api_key_env", EnvName),
            ("timeout", Count),
            ("max_output_tokens", Count),
            ("context_window_tokens", Count),
            ("max_retries", Count),
            ("script", Text),
        ],
    ),
    ("store", false, &[("path", Text)]),
    (
        "context",
        false,
        &[
            ("turn_budget_tokens", Count),
            ("compaction_fraction", Fraction),
        ],
    ),
    (
        "limits",
        false,
        &[
            ("max_turns", Count),
            ("max_subtask_depth", Count),
            ("max_children_per_task", Count),
            ("max_parallel_children", Count),
            ("max_delegation_hops", Count),
            ("subtask_unreachable_secs", Count),
        ],
    ),
    (
        "plugins",
        false,
        &[
            ("dir", Text),
            ("memory_mb", Count),
            ("call_timeout_ms", Count),
            ("cache_dir", Text),
        ],
    ),
    (
        "participants",
        true,
        &[
            ("id", Id),
            ("kind", HumanOrAgent),
            ("role", Role),
            ("display_name", Text),
        ],
    ),
    (
        "agents",
        true,
        &[
            ("id", Id),
            ("url", Url),
            ("version", Text),
            ("token_env", EnvName),
            ("api_key_env", EnvName),
        ],
    ),
    (
        "agents.oauth2",
        false,
        &[
            ("token_url", Url),
            ("client_id", Text),
            ("client_secret_env", EnvName),
            ("scopes", List),
        ],
    ),
    (
        "card",
        false,
        &[("name", Text), ("description", Text), ("version", Text)],
    ),
    ("card.extended", false, &[("description", Text)]),
    (
        "card.skills",
        true,
        &[
            ("id", Id),
            ("name", Text),
            ("description", Text),
            ("tags", List),
            ("examples", List),
        ],
    ),
    (
        "roster",
        false,
        &[
            ("card_timeout_secs", Count),
            ("max_name_chars", Count),
            ("max_description_chars", Count),
            ("max_skill_name_chars", Count),
            ("max_skill_description_chars", Count),
            ("max_skills", Count),
        ],
    ),
];

/// Whether `setting` (`agents[2].url`) is one [`SECTIONS`] lists.
fn is_known(setting: &str) -> bool {
    let mut plain = String::new();
    let mut in_index = false;
    for c in setting.chars() {
        match c {
            '[' => in_index = true,
            ']' => in_index = false,
            c if !in_index => plain.push(c),
            _ => {}
        }
    }
    SECTIONS.iter().any(|(section, _, keys)| {
        plain == *section
            || plain
                .strip_prefix(section)
                .and_then(|rest| rest.strip_prefix('.'))
                .is_some_and(|key| keys.iter().any(|(name, _)| *name == key))
    })
}

fn any_value() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        any::<String>().prop_map(Value::String),
        any::<i64>().prop_map(Value::Integer),
        any::<f64>().prop_map(Value::Float),
        any::<bool>().prop_map(Value::Boolean),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            vec(("[a-z_]{1,6}", inner), 0..3).prop_map(|kv| Value::Table(kv.into_iter().collect())),
        ]
    })
    .boxed()
}

fn words(list: &'static [&'static str]) -> BoxedStrategy<Value> {
    select(list.to_vec())
        .prop_map(|word| Value::String(word.to_string()))
        .boxed()
}

/// A value for a setting of `kind`: usually of that kind (valid or near it), one time in fifteen
/// anything, so that a whole document often deserialises and the validation behind it is
/// reached too.
fn value(kind: Kind) -> BoxedStrategy<Value> {
    let near = match kind {
        Address => words(&[
            "127.0.0.1:0",
            "0.0.0.0:8080",
            "[::1]:80",
            "localhost:80",
            "",
            "1.2.3.4",
        ]),
        Url => words(&[
            "http://127.0.0.1:1",
            "https://x.example/v1/",
            "ftp://x",
            "http://",
            "nope",
            "",
        ]),
        Id => words(&[
            "ledger",
            "a.b-c_1",
            "self",
            "",
            " ",
            "two words",
            "-lead",
            "ä",
        ]),
        EnvName => words(&["TOKEN", "A_B", "", " ", "A=B", "A B", "NUL\0"]),
        Text => prop_oneof![
            words(&["x", "", "  ", "script.toml"]),
            any::<String>().prop_map(Value::String)
        ]
        .boxed(),
        Count => prop_oneof![
            4 => (1i64..=1_000).prop_map(Value::Integer),
            2 => select(vec![0i64, 8, 60, 64, 65, 256, 4096, 4097, 600_000, -1])
                .prop_map(Value::Integer),
            1 => any::<i64>().prop_map(Value::Integer),
            1 => (0i64..=i64::from(u32::MAX) + 1).prop_map(Value::Integer),
        ]
        .boxed(),
        Fraction => prop_oneof![
            select(vec![
                0.0,
                0.5,
                0.75,
                1.0,
                1.5,
                -0.1,
                f64::NAN,
                f64::INFINITY
            ])
            .prop_map(Value::Float),
            Just(Value::Integer(1)),
        ]
        .boxed(),
        Provider => words(&[
            "openai",
            "anthropic",
            "scripted",
            "conformance",
            "OpenAI",
            "gpt",
        ]),
        HumanOrAgent => words(&["human", "agent", "robot"]),
        Role => words(&["assignee", "reporter", "watcher", "admin", "owner"]),
        List => vec(any::<String>().prop_map(Value::String), 0..3)
            .prop_map(Value::Array)
            .boxed(),
    };
    prop_oneof![14 => near, 1 => any_value()].boxed()
}

/// A table of nearly all of `keys` (a required one is sometimes missing), each with a value of
/// its kind, and now and then an unknown key.
fn table(keys: &'static [(&'static str, Kind)]) -> BoxedStrategy<Table> {
    let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = keys
        .iter()
        .map(|(key, kind)| {
            proptest::option::weighted(0.95, value(*kind).prop_map(move |v| (key.to_string(), v)))
                .boxed()
        })
        .collect();
    let unknown = proptest::option::weighted(0.03, ("[a-z_]{1,8}", any_value()));
    (fields, unknown)
        .prop_map(|(fields, unknown)| fields.into_iter().flatten().chain(unknown).collect())
        .boxed()
}

/// A whole configuration as a TOML table: some sections, each made of known keys.
fn document() -> BoxedStrategy<Table> {
    let sections: Vec<BoxedStrategy<Option<(&'static str, Value)>>> = SECTIONS
        .iter()
        .map(|(name, is_list, keys)| {
            let section = if *is_list {
                vec(table(keys), 1..3)
                    .prop_map(|t| Value::Array(t.into_iter().map(Value::Table).collect()))
                    .boxed()
            } else {
                table(keys).prop_map(Value::Table).boxed()
            };
            proptest::option::weighted(0.4, section.prop_map(move |v| (*name, v))).boxed()
        })
        .collect();
    sections
        .prop_map(|sections| {
            let mut root = Table::new();
            for (name, value) in sections.into_iter().flatten() {
                match name.split_once('.') {
                    None => {
                        root.insert(name.to_string(), value);
                    }
                    Some((outer, inner)) => {
                        let entry = root
                            .entry(outer.to_string())
                            .or_insert_with(|| Value::Table(Table::new()));
                        match entry {
                            Value::Table(outer) => {
                                outer.insert(inner.to_string(), value);
                            }
                            // A table under a list of tables (`[agents.oauth2]`): in each entry.
                            Value::Array(entries) => {
                                for entry in entries {
                                    if let Value::Table(entry) = entry {
                                        entry.insert(inner.to_string(), value.clone());
                                    }
                                }
                            }
                            _ => {}
                        }
                    }
                }
            }
            root
        })
        .boxed()
}

/// Text made of lines TOML is made of (section headers, `key = value` with every kind of
/// literal) and now and then a stray piece, so the parser's corners and the settings behind it
/// are both reached.
fn toml_ish() -> BoxedStrategy<String> {
    let sections: Vec<&str> = SECTIONS.iter().map(|(name, _, _)| *name).collect();
    let keys: Vec<&str> = SECTIONS
        .iter()
        .flat_map(|(_, _, keys)| keys.iter().map(|(key, _)| *key))
        .collect();
    let literal = select(vec![
        "1",
        "-1",
        "0",
        "300",
        "1e999",
        "0.5",
        "nan",
        "inf",
        "true",
        "\"x\"",
        "\"127.0.0.1:0\"",
        "\"http://127.0.0.1:1\"",
        "\"openai\"",
        "\"scripted\"",
        "''",
        "\"\"\"a\nb\"\"\"",
        "[1, \"a\"]",
        "[]",
        "{ a = 1 }",
        "1979-05-27T07:32:00Z",
        "0x1F",
        "1_000",
        "\"\\u0000\"",
    ]);
    let stray = prop_oneof![
        select(vec![
            "=", "[", "]", "{", "}", ",", ".", "#", "\"", "'", " ", "\n"
        ])
        .prop_map(str::to_string),
        any::<char>().prop_map(String::from),
    ];
    let line = prop_oneof![
        2 => select(sections.clone()).prop_map(|s| format!("[{s}]")),
        1 => select(sections).prop_map(|s| format!("[[{s}]]")),
        6 => (select(keys), literal).prop_map(|(k, v)| format!("{k} = {v}")),
        1 => vec(stray, 1..4).prop_map(|pieces| pieces.concat()),
    ];
    vec(line, 0..12).prop_map(|lines| lines.join("\n")).boxed()
}

/// A load error names a setting: a syntax error names the file, any other error a setting,
/// which is a known one or the unknown key itself, and its message says something.
fn assert_names_a_setting(error: &ConfigError, known_keys_only: bool) -> Result<(), TestCaseError> {
    match error {
        ConfigError::Syntax { path, message, .. } => {
            prop_assert!(
                !known_keys_only,
                "a generated document is valid TOML: {message}"
            );
            prop_assert_eq!(path, Path::new("config.toml"));
            prop_assert!(!message.is_empty());
        }
        ConfigError::Invalid { setting, message } => {
            prop_assert!(!setting.is_empty() && !message.is_empty());
            let named = format!("{setting}: ");
            prop_assert!(error.to_string().starts_with(&named), "{}", error);
            if known_keys_only && !message.starts_with("unknown setting") {
                prop_assert!(is_known(setting), "{}", error);
            }
        }
        ConfigError::Read { .. } => prop_assert!(false, "nothing was read from disk"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    #[test]
    fn any_toml_ish_text_is_a_config_or_an_error_naming_a_setting(text in toml_ish()) {
        if let Err(error) = Config::parse(&text, Path::new("config.toml")) {
            assert_names_a_setting(&error, false)?;
        }
    }

    #[test]
    fn any_value_in_any_known_setting_is_a_config_or_an_error_naming_it(doc in document()) {
        let text = toml::to_string(&doc).expect("a table serialises");
        if let Err(error) = Config::parse(&text, Path::new("config.toml")) {
            assert_names_a_setting(&error, true)?;
        }
    }

    #[test]
    fn numbers_in_range_are_read_back_as_written(
        bytes in 1usize..=u32::MAX as usize,
        timeout in 1u64..=86_400,
        retries in 0u32..=u32::MAX,
        budget in 256usize..=10_000_000,
        fraction in 0.001f64..=1.0,
        turns in 1u32..=u32::MAX,
        memory in 1u32..=4096,
        card_timeout in 1u64..=60,
    ) {
        let text = format!(
            "[server]\nmax_request_bytes = {bytes}\n[model]\ntimeout = {timeout}\n\
             max_retries = {retries}\n[context]\nturn_budget_tokens = {budget}\n\
             compaction_fraction = {fraction:?}\n[limits]\nmax_turns = {turns}\n\
             [plugins]\nmemory_mb = {memory}\n[roster]\ncard_timeout_secs = {card_timeout}\n"
        );
        let config = Config::parse(&text, Path::new("config.toml")).unwrap();
        let read = BTreeMap::from([
            ("bytes", config.server.max_request_bytes as f64),
            ("timeout", config.model.timeout as f64),
            ("retries", f64::from(config.model.max_retries)),
            ("budget", config.context.turn_budget_tokens as f64),
            ("fraction", config.context.compaction_fraction),
            ("turns", f64::from(config.limits.max_turns)),
            ("memory", f64::from(config.plugins.memory_mb)),
            ("card_timeout", config.roster.card_timeout_secs as f64),
        ]);
        let written = BTreeMap::from([
            ("bytes", bytes as f64),
            ("timeout", timeout as f64),
            ("retries", f64::from(retries)),
            ("budget", budget as f64),
            ("fraction", fraction),
            ("turns", f64::from(turns)),
            ("memory", f64::from(memory)),
            ("card_timeout", card_timeout as f64),
        ]);
        prop_assert_eq!(read, written);
    }
}
