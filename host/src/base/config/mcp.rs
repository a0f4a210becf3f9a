//! `[[mcp]]`: the MCP tool servers the harness connects to, and their checks. How a server is
//! started, called and restarted is `crate::work::mcp`; this is only what the operator wrote.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use serde::Deserialize;

use super::ConfigError;
use super::validate::{check_env_name, check_http_url};

/// The most `[[mcp]]` entries: each is a process or a connection held for the harness's life,
/// and its tools are sent to the model on every turn.
pub const MAX_MCP_SERVERS: usize = 32;
/// The longest server name: `mcp__<name>__<tool>` must still leave room for a tool's name within
/// the model APIs' 64 characters.
pub const MAX_MCP_NAME_CHARS: usize = 32;
/// A tool call's deadline when `timeout_secs` is not set.
pub const DEFAULT_MCP_TIMEOUT_SECS: u64 = 60;
/// The longest deadline `timeout_secs` may set: a call holds its task's turn, and a day is no
/// tool call.
pub const MAX_MCP_TIMEOUT_SECS: u64 = 3_600;

/// One `[[mcp]]` entry: an MCP server whose tools the model may call as `mcp__<name>__<tool>`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The namespace of its tools: lower-case letters, digits, `_` and `-`, unique.
    pub name: String,
    /// The program and its arguments: the harness starts it and speaks MCP over its stdio.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// Environment variables the started program gets beside the harness's own.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The folder the program starts in, relative to the configuration file.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// A streamable-HTTP MCP endpoint (`http://` or `https://`), instead of `command`.
    #[serde(default)]
    pub url: Option<String>,
    /// Headers sent to `url`, each value read from the environment variable named here
    /// (header name -> variable name), so no secret sits in the file.
    #[serde(default)]
    pub headers_env: BTreeMap<String, String>,
    /// Seconds one tool call may take before it is cancelled.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
    /// The server's tools the model may call, by the server's names; `None`: all of them.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Whether start-up goes on without the server when it cannot be reached (its tools then
    /// answer `[tool.unavailable]`).
    #[serde(default)]
    pub optional: bool,
}

fn default_timeout_secs() -> u64 {
    DEFAULT_MCP_TIMEOUT_SECS
}

/// Checks every `[[mcp]]` entry: a valid unique name, exactly one of `command` and `url`, the
/// settings of the other kind absent, a deadline in range, no blank or repeated tool.
pub(super) fn validate_mcp(servers: &[McpServerConfig]) -> Result<(), ConfigError> {
    if servers.len() > MAX_MCP_SERVERS {
        return Err(ConfigError::invalid(
            "mcp",
            format!("{} servers; at most {MAX_MCP_SERVERS}", servers.len()),
        ));
    }
    let mut names = HashSet::new();
    for (index, server) in servers.iter().enumerate() {
        let at = |field: &str| format!("mcp[{index}].{field}");
        check_name(&at("name"), &server.name)?;
        if !names.insert(server.name.as_str()) {
            return Err(ConfigError::invalid(
                at("name"),
                format!(
                    "`{}` names two servers; give each its own name",
                    server.name
                ),
            ));
        }
        match (&server.command, &server.url) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::invalid(
                    at("url"),
                    "set either `command` (a program spoken to over its stdio) or `url` (streamable HTTP), not both",
                ));
            }
            (None, None) => {
                return Err(ConfigError::invalid(
                    at("command"),
                    "set `command` (a program and its arguments) or `url` (a streamable-HTTP endpoint)",
                ));
            }
            (Some(command), None) => {
                if command
                    .first()
                    .is_none_or(|program| program.trim().is_empty())
                {
                    return Err(ConfigError::invalid(
                        at("command"),
                        "must name a program first: [\"python3\", \"server.py\"]",
                    ));
                }
                if !server.headers_env.is_empty() {
                    return Err(ConfigError::invalid(
                        at("headers_env"),
                        "is for `url` servers; a `command` server gets `env`",
                    ));
                }
                for name in server.env.keys() {
                    check_env_name(&at(&format!("env.{name}")), name)?;
                }
            }
            (None, Some(url)) => {
                check_http_url(&at("url"), url)?;
                if !server.env.is_empty() || server.cwd.is_some() {
                    let field = if server.cwd.is_some() { "cwd" } else { "env" };
                    return Err(ConfigError::invalid(
                        at(field),
                        "is for `command` servers; a `url` server is not started by the harness",
                    ));
                }
                for (header, variable) in &server.headers_env {
                    let setting = at(&format!("headers_env.{header}"));
                    if !is_header_name(header) {
                        return Err(ConfigError::invalid(
                            setting,
                            format!("`{}` is not an HTTP header name", header.escape_debug()),
                        ));
                    }
                    check_env_name(&setting, variable)?;
                }
            }
        }
        if server.timeout_secs == 0 || server.timeout_secs > MAX_MCP_TIMEOUT_SECS {
            return Err(ConfigError::invalid(
                at("timeout_secs"),
                format!("must be 1 to {MAX_MCP_TIMEOUT_SECS} seconds"),
            ));
        }
        if let Some(tools) = &server.tools {
            let mut seen = HashSet::new();
            for (i, tool) in tools.iter().enumerate() {
                if tool.trim().is_empty() {
                    return Err(ConfigError::invalid(at(&format!("tools[{i}]")), "is blank"));
                }
                if !seen.insert(tool) {
                    return Err(ConfigError::invalid(
                        at(&format!("tools[{i}]")),
                        format!("`{}` is listed twice", tool.escape_debug()),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// A name fit for `mcp__<name>__<tool>`: `[a-z0-9_-]`, starting with a letter or digit, short.
fn check_name(setting: &str, name: &str) -> Result<(), ConfigError> {
    let ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric())
        && name.chars().count() <= MAX_MCP_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(ConfigError::invalid(
            setting,
            format!(
                "`{}` is not a server name: use at most {MAX_MCP_NAME_CHARS} lower-case letters, digits, `_` or `-`, starting with a letter or digit",
                name.escape_debug()
            ),
        ))
    }
}

/// An HTTP header name: RFC 9110 token characters.
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::base::config::Config;
    use crate::base::config::testing::error_of;

    #[test]
    fn a_command_server_gets_the_default_deadline_and_is_required() {
        let config = Config::parse(
            "[[mcp]]\nname = \"files\"\ncommand = [\"python3\", \"server.py\"]\n",
            Path::new("config.toml"),
        )
        .unwrap();
        let server = &config.mcp[0];
        assert_eq!(server.timeout_secs, super::DEFAULT_MCP_TIMEOUT_SECS);
        assert!(!server.optional);
        assert!(server.tools.is_none());
    }

    #[test]
    fn each_broken_entry_is_named_by_its_index_and_field() {
        let cases = [
            ("name = \"Files\"\ncommand = [\"x\"]", "mcp[0].name"),
            ("name = \"a\"\n", "mcp[0].command"),
            (
                "name = \"a\"\ncommand = [\"x\"]\nurl = \"http://h\"",
                "mcp[0].url",
            ),
            ("name = \"a\"\ncommand = [\" \"]", "mcp[0].command"),
            ("name = \"a\"\nurl = \"ftp://h\"", "mcp[0].url"),
            (
                "name = \"a\"\nurl = \"http://h\"\ncwd = \"x\"",
                "mcp[0].cwd",
            ),
            (
                "name = \"a\"\ncommand = [\"x\"]\nheaders_env = { Authorization = \"T\" }",
                "mcp[0].headers_env",
            ),
            (
                "name = \"a\"\nurl = \"http://h\"\nheaders_env = { \"Bad Header\" = \"T\" }",
                "mcp[0].headers_env.Bad Header",
            ),
            (
                "name = \"a\"\ncommand = [\"x\"]\ntimeout_secs = 0",
                "mcp[0].timeout_secs",
            ),
            (
                "name = \"a\"\ncommand = [\"x\"]\ntools = [\"t\", \"t\"]",
                "mcp[0].tools[1]",
            ),
        ];
        for (entry, setting) in cases {
            let text = format!("[[mcp]]\n{entry}\n");
            let err = error_of(&text);
            assert!(err.starts_with(&format!("{setting}:")), "{entry}: {err}");
        }
    }

    #[test]
    fn two_servers_with_one_name_are_refused_naming_the_second() {
        let err = error_of(
            "[[mcp]]\nname = \"a\"\ncommand = [\"x\"]\n[[mcp]]\nname = \"a\"\nurl = \"http://h\"\n",
        );
        assert!(err.starts_with("mcp[1].name:"), "{err}");
    }
}
