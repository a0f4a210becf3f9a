//! Checks that serde cannot express, each naming the dotted setting and the fix.

use std::collections::HashSet;

use super::{Config, ConfigError, Provider};

/// The agent id that names this harness itself.
pub const SELF_AGENT_ID: &str = "self";
/// The longest agent id: the model types it and reads it in every request's roster.
pub const MAX_AGENT_ID_CHARS: usize = 64;
/// The longest `limits.subtask_deadline_secs`: thirty days. A longer wait is no deadline, and the
/// bound keeps the deadline's arithmetic far from overflow.
pub const MAX_SUBTASK_DEADLINE_SECS: u64 = 30 * 24 * 3600;
/// The largest `limits.max_delegation_hops`: the longest delegation chain a harness accepts.
pub const MAX_DELEGATION_HOPS: u32 = 32;
/// The longest `server.header_read_timeout_secs`: a request head is a few kilobytes, and an
/// honest client sends it in well under a minute even on a poor link.
pub const MAX_HEADER_READ_TIMEOUT_SECS: u64 = 300;
/// The longest `server.body_read_timeout_secs` and `server.idle_timeout_secs`: an hour, past
/// which a stalled or idle client holds a connection for nobody's benefit.
pub const MAX_CONNECTION_TIMEOUT_SECS: u64 = 3_600;
/// The largest `server.max_connections`: more than one process can usually keep open; a cap
/// above it would never be reached before the open-file limit.
pub const MAX_CONNECTIONS: usize = 65_536;
/// The longest `server.stream_keep_alive_secs`: past five minutes many proxies and clients have
/// given up on a silent connection already.
pub const MAX_STREAM_KEEP_ALIVE_SECS: u64 = 300;

/// `path.field`, unless the path already ends with the field.
fn join(path: &str, field: &str) -> String {
    if path == "." || path.is_empty() {
        field.to_string()
    } else if path == field || path.ends_with(&format!(".{field}")) {
        path.to_string()
    } else {
        format!("{path}.{field}")
    }
}

/// Turns a deserialisation error into one that names the dotted setting.
pub(super) fn from_serde_error(err: &serde_path_to_error::Error<toml::de::Error>) -> ConfigError {
    let path = err.path().to_string();
    let inner = err.inner().message().to_string();
    if let Some(rest) = inner.strip_prefix("unknown field `") {
        let field = rest.split('`').next().unwrap_or(rest);
        return ConfigError::invalid(
            join(&path, field),
            format!("unknown setting (see docs/configuration.md): {inner}"),
        );
    }
    if let Some(rest) = inner.strip_prefix("missing field `") {
        let field = rest.split('`').next().unwrap_or(rest);
        return ConfigError::invalid(join(&path, field), "is required but missing");
    }
    let setting = if path == "." || path.is_empty() {
        "(top level)".to_string()
    } else {
        path
    };
    ConfigError::invalid(setting, inner)
}

/// Validates what types alone do not.
pub(super) fn validate(config: &Config) -> Result<(), ConfigError> {
    validate_server(config)?;
    validate_delegators(config)?;
    validate_model(config)?;
    validate_context(config)?;
    validate_limits(config)?;
    config.engine.validate()?;
    validate_agents(config)?;
    super::card::validate_card(&config.card)?;
    super::card::validate_roster(&config.roster)?;
    super::skills::validate_skills(&config.skills)?;
    validate_participants(config)
}

fn validate_server(config: &Config) -> Result<(), ConfigError> {
    let server = &config.server;
    if server.bind_addr().is_none() {
        return Err(ConfigError::invalid(
            "server.bind",
            format!(
                "`{}` is not a socket address; write an IP address and a port, e.g. 127.0.0.1:8080, [::1]:8080, 0.0.0.0:8080, or localhost:8080",
                server.bind
            ),
        ));
    }
    if let Some(url) = &server.base_url {
        check_http_url("server.base_url", url)?;
    }
    server.validate_grpc()?;
    if server.max_request_bytes == 0 {
        return Err(ConfigError::invalid(
            "server.max_request_bytes",
            "must be greater than 0",
        ));
    }
    validate_connection_limits(server)
}

/// Each connection limit is on: 0 would let one stalled or idle client hold a connection for
/// ever (or, for the cap, serve nobody).
fn validate_connection_limits(server: &super::ServerConfig) -> Result<(), ConfigError> {
    let timeouts = [
        (
            "server.header_read_timeout_secs",
            server.header_read_timeout_secs,
            MAX_HEADER_READ_TIMEOUT_SECS,
        ),
        (
            "server.body_read_timeout_secs",
            server.body_read_timeout_secs,
            MAX_CONNECTION_TIMEOUT_SECS,
        ),
        (
            "server.idle_timeout_secs",
            server.idle_timeout_secs,
            MAX_CONNECTION_TIMEOUT_SECS,
        ),
    ];
    for (setting, value, max) in timeouts {
        if !(1..=max).contains(&value) {
            return Err(ConfigError::invalid(
                setting,
                format!(
                    "{value} is out of range; use 1 to {max} seconds (a connection timeout cannot be turned off)"
                ),
            ));
        }
    }
    if !(1..=MAX_CONNECTIONS).contains(&server.max_connections) {
        return Err(ConfigError::invalid(
            "server.max_connections",
            format!(
                "{} is out of range; use 1 to {MAX_CONNECTIONS}, below the process's open-file limit (`ulimit -n`)",
                server.max_connections
            ),
        ));
    }
    if let Some(share) = server.max_connections_per_caller
        && !(1..=server.max_connections).contains(&share)
    {
        return Err(ConfigError::invalid(
            "server.max_connections_per_caller",
            format!(
                "{share} is out of range; use 1 to server.max_connections ({}), or leave it out for a quarter of it",
                server.max_connections
            ),
        ));
    }
    if !(1..=MAX_STREAM_KEEP_ALIVE_SECS).contains(&server.stream_keep_alive_secs) {
        return Err(ConfigError::invalid(
            "server.stream_keep_alive_secs",
            format!(
                "{} is out of range; use 1 to {MAX_STREAM_KEEP_ALIVE_SECS} seconds",
                server.stream_keep_alive_secs
            ),
        ));
    }
    Ok(())
}

/// `[model]`, then each `[models.NAME]`: a plain name, a provider (a named model has no "not
/// configured yet" state), and the checks `[model]` gets.
fn validate_model(config: &Config) -> Result<(), ConfigError> {
    validate_model_table("model", &config.model)?;
    for (name, model) in &config.models {
        let table = format!("models.{name}");
        check_id(&table, name)?;
        if model.provider.is_none() {
            return Err(ConfigError::invalid(
                format!("{table}.provider"),
                "is required; use \"openai\", \"anthropic\" or \"scripted\"",
            ));
        }
        validate_model_table(&table, model)?;
    }
    Ok(())
}

/// The checks of one model table; `table` is `model` or `models.NAME`.
fn validate_model_table(table: &str, model: &super::ModelConfig) -> Result<(), ConfigError> {
    let setting = |key: &str| format!("{table}.{key}");
    if let Some(url) = &model.base_url {
        check_http_url(&setting("base_url"), url)?;
    }
    if model.timeout == 0 {
        return Err(ConfigError::invalid(
            setting("timeout"),
            "must be at least 1 second",
        ));
    }
    match model.provider {
        Some(Provider::Scripted) if model.script.is_none() => Err(ConfigError::invalid(
            setting("script"),
            format!("is required when {table}.provider = \"scripted\"; name the script file"),
        )),
        Some(Provider::Openai | Provider::Anthropic | Provider::Conformance)
            if model.script.is_some() =>
        {
            Err(ConfigError::invalid(
                setting("script"),
                format!("is only used with {table}.provider = \"scripted\""),
            ))
        }
        Some(Provider::Anthropic) if model.model.is_none() => Err(ConfigError::invalid(
            setting("model"),
            format!(
                "is required for {table}.provider = \"anthropic\" (e.g. \"claude-sonnet-4-5\")"
            ),
        )),
        _ => Ok(()),
    }
}

fn validate_context(config: &Config) -> Result<(), ConfigError> {
    let context = &config.context;
    if context.turn_budget_tokens < 256 {
        return Err(ConfigError::invalid(
            "context.turn_budget_tokens",
            "must be at least 256",
        ));
    }
    if !(context.compaction_fraction > 0.0 && context.compaction_fraction <= 1.0) {
        return Err(ConfigError::invalid(
            "context.compaction_fraction",
            "must be a number in (0, 1], e.g. 0.75",
        ));
    }
    if !(1..=4096).contains(&config.plugins.memory_mb) {
        return Err(ConfigError::invalid(
            "plugins.memory_mb",
            "must be between 1 and 4096",
        ));
    }
    if !(10..=600_000).contains(&config.plugins.call_timeout_ms) {
        return Err(ConfigError::invalid(
            "plugins.call_timeout_ms",
            "must be between 10 and 600000",
        ));
    }
    if !(1..=64).contains(&config.plugins.threads) {
        return Err(ConfigError::invalid(
            "plugins.threads",
            "must be between 1 and 64",
        ));
    }
    if !(1..=1024).contains(&config.plugins.max_concurrent_calls) {
        return Err(ConfigError::invalid(
            "plugins.max_concurrent_calls",
            "must be between 1 and 1024",
        ));
    }
    Ok(())
}

fn validate_limits(config: &Config) -> Result<(), ConfigError> {
    let limits = &config.limits;
    if limits.max_turns == 0 {
        return Err(ConfigError::invalid(
            "limits.max_turns",
            "must be at least 1",
        ));
    }
    if limits.max_subtask_depth == 0 {
        return Err(ConfigError::invalid(
            "limits.max_subtask_depth",
            "must be at least 1 (a task's own sub-tasks are depth 1)",
        ));
    }
    for (setting, value) in [
        ("limits.max_children_per_task", limits.max_children_per_task),
        ("limits.max_parallel_children", limits.max_parallel_children),
    ] {
        if value == 0 {
            return Err(ConfigError::invalid(
                setting,
                "must be at least 1; to keep a task from delegating, leave agents out and use a plugin without spawn_subtask",
            ));
        }
    }
    if limits.max_parallel_children > limits.max_children_per_task {
        return Err(ConfigError::invalid(
            "limits.max_parallel_children",
            format!(
                "must not be more than limits.max_children_per_task ({})",
                limits.max_children_per_task
            ),
        ));
    }
    if limits.max_delegation_hops > MAX_DELEGATION_HOPS {
        let why = format!(
            "must be from 0 (no delegation to other agents) to {MAX_DELEGATION_HOPS}, the longest delegation chain a harness accepts"
        );
        return Err(ConfigError::invalid("limits.max_delegation_hops", why));
    }
    if limits.subtask_unreachable_secs == 0 {
        return Err(ConfigError::invalid(
            "limits.subtask_unreachable_secs",
            "must be at least 1 second",
        ));
    }
    if limits.subtask_deadline_secs == 0 || limits.subtask_deadline_secs > MAX_SUBTASK_DEADLINE_SECS
    {
        return Err(ConfigError::invalid(
            "limits.subtask_deadline_secs",
            format!("must be from 1 to {MAX_SUBTASK_DEADLINE_SECS} seconds (30 days)"),
        ));
    }
    if limits.task_token_budget == Some(0) {
        return Err(ConfigError::invalid(
            "limits.task_token_budget",
            "must be at least 1; leave it out for no budget",
        ));
    }
    Ok(())
}

/// A delegator's id becomes a participant id on the tasks it creates and appears in the model's
/// context, so it follows the agent id rules; `self` names this harness's own secret.
fn validate_delegators(config: &Config) -> Result<(), ConfigError> {
    let mut seen = HashSet::new();
    for (index, delegator) in config.server.trusted_delegators.iter().enumerate() {
        let setting = format!("server.trusted_delegators[{index}].id");
        check_id(&setting, &delegator.id)?;
        if delegator.id == SELF_AGENT_ID {
            return Err(ConfigError::invalid(
                setting,
                "`self` is reserved for this harness's own secret; choose another id",
            ));
        }
        if !seen.insert(delegator.id.as_str()) {
            return Err(ConfigError::invalid(
                setting,
                format!(
                    "duplicate delegator id `{}`; ids must be unique",
                    delegator.id
                ),
            ));
        }
        check_env_name(
            &format!("server.trusted_delegators[{index}].token_env"),
            &delegator.token_env,
        )?;
    }
    Ok(())
}

fn validate_agents(config: &Config) -> Result<(), ConfigError> {
    let mut seen = HashSet::new();
    for (index, agent) in config.agents.iter().enumerate() {
        let setting = format!("agents[{index}].id");
        check_id(&setting, &agent.id)?;
        if agent.id == SELF_AGENT_ID {
            return Err(ConfigError::invalid(
                setting,
                "`self` is reserved for this harness; choose another id",
            ));
        }
        if !seen.insert(agent.id.as_str()) {
            return Err(ConfigError::invalid(
                setting,
                format!("duplicate agent id `{}`; ids must be unique", agent.id),
            ));
        }
        check_http_url(&format!("agents[{index}].url"), &agent.url)?;
    }
    Ok(())
}

/// Refuses a blank id, or one that is not [`is_plain_id`].
pub(super) fn check_id(setting: &str, id: &str) -> Result<(), ConfigError> {
    if id.trim().is_empty() {
        return Err(ConfigError::invalid(setting, "must not be blank"));
    }
    if !is_plain_id(id) {
        return Err(ConfigError::invalid(
            setting,
            format!(
                "`{}` is not a plain id: use at most {MAX_AGENT_ID_CHARS} letters, digits, `-`, `_` or `.`, starting with a letter or digit",
                id.escape_debug()
            ),
        ));
    }
    Ok(())
}

/// The name of an environment variable: not blank, and nothing a shell could not export.
pub(super) fn check_env_name(setting: &str, name: &str) -> Result<(), ConfigError> {
    if name.trim().is_empty() {
        return Err(ConfigError::invalid(
            setting,
            "must not be blank; name the environment variable that holds the token",
        ));
    }
    if name.contains(['=', '\0']) || name.chars().any(char::is_whitespace) {
        return Err(ConfigError::invalid(
            setting,
            format!(
                "`{}` is not an environment variable name",
                name.escape_debug()
            ),
        ));
    }
    Ok(())
}

/// An agent id goes verbatim into the model's context and back through `spawn_subtask`, so it
/// is kept to characters that cannot break a line, a tag or a quote.
fn is_plain_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && id.chars().count() <= MAX_AGENT_ID_CHARS
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn validate_participants(config: &Config) -> Result<(), ConfigError> {
    let mut seen = HashSet::new();
    for (index, participant) in config.participants.iter().enumerate() {
        let setting = format!("participants[{index}].id");
        if participant.id.trim().is_empty() {
            return Err(ConfigError::invalid(setting, "must not be blank"));
        }
        if !seen.insert(participant.id.as_str()) {
            return Err(ConfigError::invalid(
                setting,
                format!("duplicate participant id `{}`", participant.id),
            ));
        }
    }
    Ok(())
}

pub(super) fn check_http_url(setting: &str, url: &str) -> Result<(), ConfigError> {
    let ok = reqwest::Url::parse(url)
        .map(|parsed| matches!(parsed.scheme(), "http" | "https") && parsed.host().is_some())
        .unwrap_or(false);
    if ok {
        Ok(())
    } else {
        Err(ConfigError::invalid(
            setting,
            format!("`{url}` is not an http:// or https:// URL"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::Config;

    use crate::base::config::testing::error_of;

    #[test]
    fn the_reserved_id_is_the_one_task_links_default_to() {
        assert_eq!(
            super::SELF_AGENT_ID,
            crate::state::records::extension::SELF_AGENT
        );
    }

    #[test]
    fn an_empty_file_is_every_default() {
        let config = Config::parse("", Path::new("config.toml")).unwrap();
        assert_eq!(config.server.bind, "127.0.0.1:8080");
        assert_eq!(config.server.effective_base_url(), "http://127.0.0.1:8080");
        assert_eq!(config.server.max_request_bytes, 1024 * 1024);
        assert_eq!(config.context.turn_budget_tokens, 12_000);
        assert_eq!(config.limits.max_turns, 50);
    }

    #[test]
    fn unknown_key_names_the_dotted_setting() {
        assert_eq!(
            error_of("[server]\nbindd = \"x\"\n")
                .split(':')
                .next()
                .unwrap(),
            "server.bindd"
        );
    }

    #[test]
    fn wrong_type_names_the_dotted_setting() {
        let message = error_of("[server]\nmax_request_bytes = \"big\"\n");
        assert!(
            message.starts_with("server.max_request_bytes:"),
            "{message}"
        );
    }

    #[test]
    fn missing_required_key_names_the_dotted_setting() {
        let message = error_of("[[agents]]\nid = \"a\"\n");
        assert!(message.starts_with("agents[0].url:"), "{message}");
    }

    #[test]
    fn agent_ids_are_unique_and_self_is_reserved() {
        let dup = "[[agents]]\nid = \"a\"\nurl = \"http://x\"\n[[agents]]\nid = \"a\"\nurl = \"http://y\"\n";
        assert!(error_of(dup).starts_with("agents[1].id:"));
        let reserved = "[[agents]]\nid = \"self\"\nurl = \"http://x\"\n";
        assert!(error_of(reserved).contains("reserved"));
    }

    #[test]
    fn agent_ids_are_plain_so_they_cannot_break_the_roster() {
        let spaced = "[[agents]]\nid = \"led ger\"\nurl = \"http://x\"\n";
        assert!(error_of(spaced).starts_with("agents[0].id: `led ger` is not a plain id"));
        let tagged = "[[agents]]\nid = \"</agents>\"\nurl = \"http://x\"\n";
        assert!(error_of(tagged).starts_with("agents[0].id:"));
        let fine = "[[agents]]\nid = \"ledger-2.eu_west\"\nurl = \"http://x\"\n";
        assert!(Config::parse(fine, Path::new("config.toml")).is_ok());
    }

    #[test]
    fn trusted_delegators_need_plain_unique_ids_other_than_self() {
        let entry =
            |id: &str| format!("[[server.trusted_delegators]]\nid = \"{id}\"\ntoken_env = \"T\"\n");
        assert!(
            error_of(&entry(" ")).starts_with("server.trusted_delegators[0].id: must not be blank")
        );
        assert!(error_of(&entry("self")).contains("reserved"));
        let twice = format!("{}{}", entry("ledger"), entry("ledger"));
        assert!(error_of(&twice).starts_with("server.trusted_delegators[1].id: duplicate"));
        let config = Config::parse(&entry("ledger"), Path::new("config.toml")).unwrap();
        assert_eq!(config.server.trusted_delegators[0].token_env, "T");
    }

    #[test]
    fn a_blank_token_env_names_the_setting() {
        let delegator = "[[server.trusted_delegators]]\nid = \"a\"\ntoken_env = \"\"\n";
        assert!(error_of(delegator).starts_with("server.trusted_delegators[0].token_env:"));
        let agent = "[[agents]]\nid = \"a\"\nurl = \"http://x\"\ntoken_env = \" \"\n";
        assert!(error_of(agent).starts_with("agents[0].token_env: must not be blank"));
        let fine = "[[agents]]\nid = \"a\"\nurl = \"http://x\"\ntoken_env = \"A_TOKEN\"\n";
        let config = Config::parse(fine, Path::new("config.toml")).unwrap();
        assert_eq!(config.agents[0].token_env.as_deref(), Some("A_TOKEN"));
    }

    #[test]
    fn sub_task_limits_default_and_must_be_at_least_one() {
        let config = Config::parse("", Path::new("config.toml")).unwrap();
        assert_eq!(config.limits.max_subtask_depth, 4);
        assert_eq!(config.limits.subtask_unreachable_secs, 300);
        assert!(
            error_of("[limits]\nmax_subtask_depth = 0\n")
                .starts_with("limits.max_subtask_depth: must be at least 1")
        );
        assert!(
            error_of("[limits]\nsubtask_unreachable_secs = 0\n")
                .starts_with("limits.subtask_unreachable_secs: must be at least 1")
        );
        assert_eq!(config.limits.max_children_per_task, 32);
        assert_eq!(config.limits.max_parallel_children, 8);
        assert!(
            error_of("[limits]\nmax_children_per_task = 0\n")
                .starts_with("limits.max_children_per_task: must be at least 1")
        );
        assert!(
            error_of("[limits]\nmax_parallel_children = 0\n")
                .starts_with("limits.max_parallel_children: must be at least 1")
        );
        assert_eq!(
            error_of("[limits]\nmax_children_per_task = 4\nmax_parallel_children = 5\n"),
            "limits.max_parallel_children: must not be more than limits.max_children_per_task (4)"
        );
        assert_eq!(config.limits.subtask_deadline_secs, 3600);
        for bad in ["0", "2592001"] {
            assert_eq!(
                error_of(&format!("[limits]\nsubtask_deadline_secs = {bad}\n")),
                "limits.subtask_deadline_secs: must be from 1 to 2592000 seconds (30 days)"
            );
        }
    }

    #[test]
    fn delegation_hops_default_to_four_and_are_bounded_golden() {
        let config = Config::parse("", Path::new("config.toml")).unwrap();
        assert_eq!(config.limits.max_delegation_hops, 4);
        let none = Config::parse("[limits]\nmax_delegation_hops = 0\n", Path::new("c.toml"));
        assert_eq!(none.unwrap().limits.max_delegation_hops, 0);
        assert_eq!(
            error_of("[limits]\nmax_delegation_hops = 33\n"),
            "limits.max_delegation_hops: must be from 0 (no delegation to other agents) to 32, the longest delegation chain a harness accepts"
        );
    }

    #[test]
    fn connection_limits_are_parsed_and_default_when_absent() {
        let config = Config::parse("", Path::new("config.toml")).unwrap();
        assert_eq!(config.server.header_read_timeout_secs, 10);
        assert_eq!(config.server.body_read_timeout_secs, 30);
        assert_eq!(config.server.idle_timeout_secs, 60);
        assert_eq!(config.server.max_connections, 512);
        let set = "[server]\nheader_read_timeout_secs = 2\nbody_read_timeout_secs = 3\nidle_timeout_secs = 4\nmax_connections = 5\n";
        let server = Config::parse(set, Path::new("config.toml")).unwrap().server;
        assert_eq!(
            (
                server.header_read_timeout_secs,
                server.body_read_timeout_secs,
                server.idle_timeout_secs,
                server.max_connections
            ),
            (2, 3, 4, 5)
        );
    }

    #[test]
    fn a_connection_limit_of_zero_or_past_its_bound_is_refused_naming_the_setting() {
        assert_eq!(
            error_of("[server]\nheader_read_timeout_secs = 0\n"),
            "server.header_read_timeout_secs: 0 is out of range; use 1 to 300 seconds (a connection timeout cannot be turned off)"
        );
        assert!(
            error_of("[server]\nheader_read_timeout_secs = 301\n")
                .starts_with("server.header_read_timeout_secs: 301 is out of range")
        );
        assert!(
            error_of("[server]\nbody_read_timeout_secs = 0\n")
                .starts_with("server.body_read_timeout_secs: 0 is out of range; use 1 to 3600")
        );
        assert!(
            error_of("[server]\nidle_timeout_secs = 3601\n")
                .starts_with("server.idle_timeout_secs: 3601 is out of range")
        );
        assert_eq!(
            error_of("[server]\nmax_connections = 0\n"),
            "server.max_connections: 0 is out of range; use 1 to 65536, below the process's open-file limit (`ulimit -n`)"
        );
        assert!(
            error_of("[server]\nmax_connections = -1\n").starts_with("server.max_connections:")
        );
    }

    #[test]
    fn a_caller_gets_a_quarter_of_the_connections_unless_set() {
        let share = |text: &str| {
            Config::parse(text, Path::new("config.toml"))
                .unwrap()
                .server
                .connections_per_caller()
        };
        assert_eq!(share(""), 128);
        assert_eq!(
            share(
                "[server]
max_connections = 64
"
            ),
            16
        );
        assert_eq!(
            share(
                "[server]
max_connections = 12
"
            ),
            8,
            "at least a pool"
        );
        assert_eq!(
            share(
                "[server]
max_connections = 2
"
            ),
            2,
            "at most the cap"
        );
        assert_eq!(
            share(
                "[server]
max_connections_per_caller = 3
"
            ),
            3
        );
        let config = Config::parse("", Path::new("config.toml")).unwrap();
        assert_eq!(config.server.stream_keep_alive_secs, 15);
    }

    #[test]
    fn a_caller_share_or_keep_alive_out_of_range_names_the_setting() {
        assert_eq!(
            error_of(
                "[server]
max_connections = 64
max_connections_per_caller = 65
"
            ),
            "server.max_connections_per_caller: 65 is out of range; use 1 to server.max_connections (64), or leave it out for a quarter of it"
        );
        assert!(
            error_of(
                "[server]
max_connections_per_caller = 0
"
            )
            .starts_with("server.max_connections_per_caller: 0 is out of range")
        );
        assert_eq!(
            error_of(
                "[server]
stream_keep_alive_secs = 0
"
            ),
            "server.stream_keep_alive_secs: 0 is out of range; use 1 to 300 seconds"
        );
    }

    #[test]
    fn scripted_provider_needs_a_script() {
        assert!(error_of("[model]\nprovider = \"scripted\"\n").starts_with("model.script:"));
    }

    #[test]
    fn unknown_provider_names_the_setting() {
        let message = error_of("[model]\nprovider = \"gemini\"\n");
        assert!(message.starts_with("model.provider:"), "{message}");
    }

    #[test]
    fn named_models_are_read_and_checked_like_the_default_naming_their_table() {
        let two = "[models.fast]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:1/v1\"\n\
                   [models.deep]\nprovider = \"anthropic\"\nmodel = \"claude-x\"\n";
        let config = Config::parse(two, Path::new("config.toml")).unwrap();
        assert_eq!(
            config.models.keys().collect::<Vec<_>>(),
            ["deep", "fast"],
            "sorted by name"
        );
        assert_eq!(config.models["fast"].max_output_tokens, 4096);
        assert_eq!(
            error_of("[models.fast]\nprovider = \"openai\"\nbogus = 1\n")
                .split(':')
                .next()
                .unwrap(),
            "models.fast.bogus"
        );
        assert_eq!(
            error_of("[models.deep]\nprovider = \"anthropic\"\n"),
            "models.deep.model: is required for models.deep.provider = \"anthropic\" (e.g. \"claude-sonnet-4-5\")"
        );
        assert_eq!(
            error_of("[models.fast]\nmodel = \"x\"\n"),
            "models.fast.provider: is required; use \"openai\", \"anthropic\" or \"scripted\""
        );
        assert!(
            error_of("[models.fast]\nprovider = \"openai\"\ntimeout = 0\n")
                .starts_with("models.fast.timeout: must be at least 1 second")
        );
        assert!(
            error_of("[models.\"a b\"]\nprovider = \"openai\"\n")
                .starts_with("models.a b: `a b` is not a plain id")
        );
    }

    #[test]
    fn the_task_token_budget_is_off_by_default_and_at_least_one_when_set() {
        let config = Config::parse("", Path::new("config.toml")).unwrap();
        assert_eq!(config.limits.task_token_budget, None);
        let set = Config::parse("[limits]\ntask_token_budget = 50000\n", Path::new("c"));
        assert_eq!(set.unwrap().limits.task_token_budget, Some(50_000));
        assert_eq!(
            error_of("[limits]\ntask_token_budget = 0\n"),
            "limits.task_token_budget: must be at least 1; leave it out for no budget"
        );
        assert!(
            error_of("[limits]\ntask_token_budget = -5\n").starts_with("limits.task_token_budget:")
        );
    }

    #[test]
    fn plugin_threads_and_concurrent_calls_are_bounded_and_named() {
        let config = Config::parse("", Path::new("config.toml")).unwrap();
        assert_eq!(config.plugins.threads, 2);
        assert_eq!(config.plugins.max_concurrent_calls, 16);
        assert_eq!(
            error_of("[plugins]\nthreads = 0\n"),
            "plugins.threads: must be between 1 and 64"
        );
        assert_eq!(
            error_of("[plugins]\nmax_concurrent_calls = 5000\n"),
            "plugins.max_concurrent_calls: must be between 1 and 1024"
        );
    }
}
