//! The credentials this harness presents to a remote agent (`agents[].token_env`,
//! `agents[].api_key_env`, `[agents.oauth2]`) and their checks. Only the names of environment
//! variables live here: the secrets themselves are read from the environment at start-up.

use serde::Deserialize;

use super::validate::{check_env_name, check_http_url};
use super::{AgentConfig, ConfigError};

/// The longest OAuth2 client id accepted: real ones are a few dozen characters; a longer value
/// is a pasted secret or a mistake.
pub const MAX_CLIENT_ID_CHARS: usize = 256;
/// The most scopes one agent's token may ask for: enough for any real grant, few enough to keep
/// the token request small.
pub const MAX_SCOPES: usize = 32;

/// `[agents.oauth2]`: OAuth2 client credentials (RFC 6749 §4.4) for one agent.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct OAuth2Config {
    /// The token endpoint the client secret is sent to. It is the operator's, never the card's:
    /// a card naming its own token URL would otherwise collect the secret.
    pub token_url: String,
    /// The client id this harness is registered under at the authorization server.
    pub client_id: String,
    /// The environment variable holding the client secret.
    pub client_secret_env: String,
    /// The scopes asked for (`scope`); none asks for the server's default.
    #[serde(default)]
    pub scopes: Vec<String>,
}

impl AgentConfig {
    /// Whether this harness sends the agent what only a trusted delegator may (`delegator`,
    /// by default whether a bearer token is configured).
    pub fn is_delegator(&self) -> bool {
        self.delegator.unwrap_or(self.token_env.is_some())
    }
}

/// [`validate_agent_auth`] for each `[[agents]]` entry, in order.
pub(super) fn validate_agents(agents: &[AgentConfig]) -> Result<(), ConfigError> {
    for (index, agent) in agents.iter().enumerate() {
        validate_agent_auth(index, agent)?;
    }
    Ok(())
}

/// Checks the credentials of `agents[index]`: well-formed variable names, a token URL that does
/// not send the secret in the clear beyond this machine, and at most one source of the
/// `Authorization` header.
pub(super) fn validate_agent_auth(index: usize, agent: &AgentConfig) -> Result<(), ConfigError> {
    let prefix = format!("agents[{index}]");
    if let Some(name) = &agent.token_env {
        check_env_name(&format!("{prefix}.token_env"), name)?;
    }
    if agent.delegator == Some(true) && agent.token_env.is_none() {
        return Err(ConfigError::invalid(
            format!("{prefix}.delegator"),
            format!(
                "true needs {prefix}.token_env: an agent knows its trusted delegators by the bearer token they present"
            ),
        ));
    }
    if let Some(name) = &agent.api_key_env {
        check_env_name(&format!("{prefix}.api_key_env"), name)?;
    }
    let Some(oauth2) = &agent.oauth2 else {
        return Ok(());
    };
    if agent.token_env.is_some() {
        return Err(ConfigError::invalid(
            format!("{prefix}.oauth2"),
            format!(
                "cannot be set together with {prefix}.token_env: both are sent in the Authorization header; keep the one the agent's card asks for"
            ),
        ));
    }
    check_token_url(&format!("{prefix}.oauth2.token_url"), &oauth2.token_url)?;
    check_client_id(&format!("{prefix}.oauth2.client_id"), &oauth2.client_id)?;
    check_env_name(
        &format!("{prefix}.oauth2.client_secret_env"),
        &oauth2.client_secret_env,
    )?;
    check_scopes(&format!("{prefix}.oauth2.scopes"), &oauth2.scopes)
}

/// An http(s) URL, and https unless the host is this machine: the client secret goes there.
fn check_token_url(setting: &str, url: &str) -> Result<(), ConfigError> {
    check_http_url(setting, url)?;
    let parsed =
        reqwest::Url::parse(url).map_err(|err| ConfigError::invalid(setting, err.to_string()))?;
    let host = parsed.host_str().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if parsed.scheme() == "http" && !loopback {
        return Err(ConfigError::invalid(
            setting,
            format!(
                "`{url}` sends the client secret unencrypted; use an https:// URL (http:// is allowed for a token endpoint on this machine only)"
            ),
        ));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(ConfigError::invalid(
            setting,
            "must not carry credentials; put the client secret in client_secret_env",
        ));
    }
    Ok(())
}

fn check_client_id(setting: &str, id: &str) -> Result<(), ConfigError> {
    if id.trim().is_empty() {
        return Err(ConfigError::invalid(
            setting,
            "must not be blank; give the client id the authorization server issued",
        ));
    }
    if id.chars().count() > MAX_CLIENT_ID_CHARS || id.chars().any(char::is_control) {
        return Err(ConfigError::invalid(
            setting,
            format!("must be at most {MAX_CLIENT_ID_CHARS} characters without control characters"),
        ));
    }
    Ok(())
}

/// Each scope a token of RFC 6749 §3.3: printable ASCII without spaces, quotes or backslashes.
fn check_scopes(setting: &str, scopes: &[String]) -> Result<(), ConfigError> {
    if scopes.len() > MAX_SCOPES {
        return Err(ConfigError::invalid(
            setting,
            format!("at most {MAX_SCOPES} scopes"),
        ));
    }
    for (index, scope) in scopes.iter().enumerate() {
        let valid = !scope.is_empty()
            && scope
                .bytes()
                .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b));
        if !valid {
            return Err(ConfigError::invalid(
                format!("{setting}[{index}]"),
                format!(
                    "`{}` is not an OAuth2 scope (printable ASCII, no spaces, quotes or backslashes)",
                    scope.escape_debug()
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::base::config::testing::error_of;
    use crate::base::config::{Config, OAuth2Config};

    const AGENT: &str = "[[agents]]\nid = \"ledger\"\nurl = \"http://127.0.0.1:1\"\n";

    fn oauth2(lines: &str) -> String {
        format!("{AGENT}[agents.oauth2]\n{lines}")
    }

    const GOOD: &str = "token_url = \"https://auth.example/token\"\nclient_id = \"front-desk\"\nclient_secret_env = \"LEDGER_SECRET\"\n";

    #[test]
    fn an_agent_with_an_api_key_and_oauth2_client_credentials_loads() {
        let text = format!(
            "{AGENT}api_key_env = \"LEDGER_KEY\"\n[agents.oauth2]\n{GOOD}scopes = [\"ledger.read\", \"ledger:write\"]\n"
        );
        let config = Config::parse(&text, std::path::Path::new("c.toml")).unwrap();
        let agent = &config.agents[0];
        assert_eq!(agent.api_key_env.as_deref(), Some("LEDGER_KEY"));
        assert_eq!(
            agent.oauth2,
            Some(OAuth2Config {
                token_url: "https://auth.example/token".into(),
                client_id: "front-desk".into(),
                client_secret_env: "LEDGER_SECRET".into(),
                scopes: vec!["ledger.read".into(), "ledger:write".into()],
            })
        );
    }

    #[test]
    fn credential_errors_name_the_dotted_setting_golden() {
        let cases = [
            (
                format!("{AGENT}api_key_env = \" \"\n"),
                "agents[0].api_key_env: must not be blank; name the environment variable that holds the token",
            ),
            (
                oauth2(
                    "token_url = \"https://a.example/t\"\nclient_id = \"c\"\nclient_secret_env = \"A B\"\n",
                ),
                "agents[0].oauth2.client_secret_env: `A B` is not an environment variable name",
            ),
            (
                oauth2(
                    "token_url = \"http://auth.example/token\"\nclient_id = \"c\"\nclient_secret_env = \"S\"\n",
                ),
                "agents[0].oauth2.token_url: `http://auth.example/token` sends the client secret unencrypted; use an https:// URL (http:// is allowed for a token endpoint on this machine only)",
            ),
            (
                oauth2(
                    "token_url = \"https://u:p@auth.example/token\"\nclient_id = \"c\"\nclient_secret_env = \"S\"\n",
                ),
                "agents[0].oauth2.token_url: must not carry credentials; put the client secret in client_secret_env",
            ),
            (
                oauth2("token_url = \"ftp://x\"\nclient_id = \"c\"\nclient_secret_env = \"S\"\n"),
                "agents[0].oauth2.token_url: `ftp://x` is not an http:// or https:// URL",
            ),
            (
                oauth2(
                    "token_url = \"https://a.example/t\"\nclient_id = \" \"\nclient_secret_env = \"S\"\n",
                ),
                "agents[0].oauth2.client_id: must not be blank; give the client id the authorization server issued",
            ),
            (
                oauth2(&format!("{GOOD}scopes = [\"read\", \"two words\"]\n")),
                "agents[0].oauth2.scopes[1]: `two words` is not an OAuth2 scope (printable ASCII, no spaces, quotes or backslashes)",
            ),
            (
                format!("{AGENT}token_env = \"T\"\n[agents.oauth2]\n{GOOD}"),
                "agents[0].oauth2: cannot be set together with agents[0].token_env: both are sent in the Authorization header; keep the one the agent's card asks for",
            ),
            (
                format!("{AGENT}delegator = true\n"),
                "agents[0].delegator: true needs agents[0].token_env: an agent knows its trusted delegators by the bearer token they present",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(error_of(&text), expected, "{text}");
        }
    }

    #[test]
    fn a_token_makes_a_delegator_unless_the_agent_says_otherwise() {
        let delegator = |extra: &str| {
            let text = format!("{AGENT}{extra}");
            Config::parse(&text, std::path::Path::new("t.toml"))
                .unwrap()
                .agents[0]
                .is_delegator()
        };
        assert!(!delegator(""));
        assert!(delegator("token_env = \"T\"\n"));
        assert!(!delegator("token_env = \"T\"\ndelegator = false\n"));
        assert!(!delegator("delegator = false\n"));
    }

    #[test]
    fn a_missing_oauth2_key_and_a_secret_in_the_file_are_refused() {
        let missing = error_of(&oauth2(
            "token_url = \"https://a.example/t\"\nclient_id = \"c\"\n",
        ));
        assert!(missing.starts_with("agents[0].oauth2"), "{missing}");
        assert!(missing.contains("client_secret_env"), "{missing}");
        let inline = error_of(&oauth2(&format!("{GOOD}client_secret = \"s3cret\"\n")));
        assert!(inline.starts_with("agents[0].oauth2"), "{inline}");
        assert!(!inline.contains("s3cret"), "{inline}");
    }

    #[test]
    fn http_is_allowed_for_a_token_endpoint_on_this_machine() {
        for url in [
            "http://127.0.0.1:9/token",
            "http://localhost/t",
            "http://[::1]:80/t",
        ] {
            let text = oauth2(&format!(
                "token_url = \"{url}\"\nclient_id = \"c\"\nclient_secret_env = \"S\"\n"
            ));
            assert!(
                Config::parse(&text, std::path::Path::new("c.toml")).is_ok(),
                "{url}"
            );
        }
    }
}
