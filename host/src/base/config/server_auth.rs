//! The checks of who may call the server: `[[server.callers]]` (ids and token variables) and
//! `server.allow_anonymous` against where the server listens.

use std::collections::HashSet;

use super::ConfigError;
use super::server::{ServerConfig, has_caller_auth};
use super::validate::{SELF_AGENT_ID, check_env_name, check_id};

/// The participant id of a caller that proves and names no one: no credential may stand for
/// it, or every anonymous request would reach that credential's tasks by id.
pub const ANONYMOUS_PARTICIPANT_ID: &str = "user";

/// Callers' ids are participant ids no one else may claim: each is checked like an agent id,
/// unique among callers, and neither `self` nor a delegator's id (one id, one credential). A
/// server listening beyond loopback must say whether it serves callers without credentials
/// when it has no way to authenticate them.
pub(super) fn validate(server: &ServerConfig) -> Result<(), ConfigError> {
    let delegators: HashSet<&str> = server
        .trusted_delegators
        .iter()
        .map(|d| d.id.as_str())
        .collect();
    let delegator_ids = server
        .trusted_delegators
        .iter()
        .map(|d| ("trusted_delegators", &d.id));
    let caller_ids = server.callers.iter().map(|c| ("callers", &c.id));
    let mut counts: std::collections::HashMap<&str, usize> = Default::default();
    for (list, id) in delegator_ids.chain(caller_ids) {
        let index = counts.entry(list).or_default();
        if id == ANONYMOUS_PARTICIPANT_ID {
            return Err(ConfigError::invalid(
                format!("server.{list}[{index}].id"),
                format!(
                    "`{ANONYMOUS_PARTICIPANT_ID}` is the id of callers that name no one; choose another id"
                ),
            ));
        }
        *index += 1;
    }
    let mut seen = HashSet::new();
    for (index, caller) in server.callers.iter().enumerate() {
        let setting = format!("server.callers[{index}].id");
        check_id(&setting, &caller.id)?;
        if caller.id == SELF_AGENT_ID {
            return Err(ConfigError::invalid(
                setting,
                "`self` is reserved for this harness's own secret; choose another id",
            ));
        }
        if delegators.contains(caller.id.as_str()) {
            return Err(ConfigError::invalid(
                setting,
                format!(
                    "`{}` is also a server.trusted_delegators id; an id is a caller or a delegator, not both",
                    caller.id
                ),
            ));
        }
        if !seen.insert(caller.id.as_str()) {
            return Err(ConfigError::invalid(
                setting,
                format!("duplicate caller id `{}`; ids must be unique", caller.id),
            ));
        }
        check_env_name(
            &format!("server.callers[{index}].token_env"),
            &caller.token_env,
        )?;
    }
    check_exposure(server)
}

/// A `bind` beyond loopback with no caller authentication configured would serve anyone who
/// reaches the port as whoever they claim; it starts only when the operator says so. Refusing
/// anonymous callers with no way to authenticate would refuse everyone: that is a mistake too.
fn check_exposure(server: &ServerConfig) -> Result<(), ConfigError> {
    if server.allow_anonymous == Some(false) && !has_caller_auth(server) {
        return Err(ConfigError::invalid(
            "server.allow_anonymous",
            "false refuses every request without credentials, and no caller can authenticate (no server.callers, server.trusted_delegators or server.oidc); add callers, or leave allow_anonymous out",
        ));
    }
    if server.binds_loopback() || has_caller_auth(server) || server.allow_anonymous.is_some() {
        return Ok(());
    }
    Err(ConfigError::invalid(
        "server.allow_anonymous",
        format!(
            "server.bind {}{} is not a loopback address and no caller can authenticate (no server.callers, server.trusted_delegators or server.oidc); add callers, or set allow_anonymous = true to serve anyone who reaches the port (false refuses every request but the card)",
            server.bind,
            server
                .grpc_bind
                .as_ref()
                .map(|grpc| format!(" (or server.grpc_bind {grpc})"))
                .unwrap_or_default()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use crate::base::config::Config;
    use crate::base::config::testing::error_of;
    use std::path::Path;

    fn parse(text: &str) -> Config {
        Config::parse(text, Path::new("config.toml")).unwrap()
    }

    #[test]
    fn caller_ids_must_be_unique_and_not_self_or_a_delegator_golden() {
        assert_eq!(
            error_of("[[server.callers]]\nid = \"self\"\ntoken_env = \"T\"\n"),
            "server.callers[0].id: `self` is reserved for this harness's own secret; choose another id"
        );
        assert_eq!(
            error_of(
                "[[server.trusted_delegators]]\nid = \"ledger\"\ntoken_env = \"A\"\n\
                 [[server.callers]]\nid = \"ledger\"\ntoken_env = \"B\"\n"
            ),
            "server.callers[0].id: `ledger` is also a server.trusted_delegators id; an id is a caller or a delegator, not both"
        );
        assert_eq!(
            error_of(
                "[[server.callers]]\nid = \"alice\"\ntoken_env = \"A\"\n\
                 [[server.callers]]\nid = \"alice\"\ntoken_env = \"B\"\n"
            ),
            "server.callers[1].id: duplicate caller id `alice`; ids must be unique"
        );
        assert_eq!(
            error_of("[[server.callers]]\nid = \"user\"\ntoken_env = \"T\"\n"),
            "server.callers[0].id: `user` is the id of callers that name no one; choose another id"
        );
        assert!(
            error_of("[[server.callers]]\nid = \"alice\"\ntoken_env = \"\"\n")
                .starts_with("server.callers[0].token_env:")
        );
    }

    #[test]
    fn a_network_bind_without_authentication_must_say_whether_anonymous_callers_are_served() {
        let error = error_of("[server]\nbind = \"0.0.0.0:8080\"\n");
        assert!(
            error.starts_with(
                "server.allow_anonymous: server.bind 0.0.0.0:8080 is not a loopback address"
            ),
            "{error}"
        );
        let open = parse("[server]\nbind = \"0.0.0.0:8080\"\nallow_anonymous = true\n");
        assert!(open.server.anonymous_allowed());
        let authenticated = parse(
            "[server]\nbind = \"0.0.0.0:8080\"\n[[server.callers]]\nid = \"alice\"\ntoken_env = \"A\"\n",
        );
        assert!(
            !authenticated.server.anonymous_allowed(),
            "default off the loopback"
        );
        assert_eq!(
            error_of("[server]\nallow_anonymous = false\n"),
            "server.allow_anonymous: false refuses every request without credentials, and no caller can authenticate (no server.callers, server.trusted_delegators or server.oidc); add callers, or leave allow_anonymous out"
        );
        let local = parse("[server]\nbind = \"127.0.0.1:0\"\n");
        assert!(local.server.anonymous_allowed(), "default on loopback");
        let ipv6 = parse("[server]\nbind = \"[::1]:0\"\n");
        assert!(ipv6.server.anonymous_allowed());
    }
}
