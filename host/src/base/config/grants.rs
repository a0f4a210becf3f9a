//! `[plugins.grants.<plugin>]`: what one plugin may reach beyond its sandbox (hosts, settings,
//! secrets), denied unless listed. Plain data, checked here; the plugin host enforces it.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::Deserialize;

use super::ConfigError;

/// Hosts one grant may list: a plugin that needs more is better split.
pub const MAX_HTTP_PATTERNS: usize = 64;
/// Settings one grant may give: a plugin's options, not a database.
pub const MAX_CONFIG_ENTRIES: usize = 256;
/// The longest setting key: an option's name.
pub const MAX_CONFIG_KEY_CHARS: usize = 64;
/// The longest string setting: options, not documents.
pub const MAX_CONFIG_VALUE_CHARS: usize = 4_096;
/// Secrets one grant may inject.
pub const MAX_SECRETS: usize = 16;
/// The header a secret goes in when the entry does not say.
pub const DEFAULT_SECRET_HEADER: &str = "authorization";
/// The header's value around the secret when the entry does not say.
pub const DEFAULT_SECRET_FORMAT: &str = "Bearer {}";

/// One plugin's grants, keyed in `[plugins.grants]` by the plugin's file name without `.wasm`
/// (`weather` for `plugins/weather.wasm`): the operator chose that name, whereas the name a
/// plugin gives itself is the plugin's to choose, and one plugin could claim another's.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginGrant {
    /// `host:port` patterns the plugin may send HTTP requests to.
    #[serde(default)]
    pub http: Vec<String>,
    /// Settings the plugin reads through the host's `config` function.
    #[serde(default)]
    pub config: BTreeMap<String, toml::Value>,
    /// Secrets the host puts into the plugin's requests to a granted host.
    #[serde(default)]
    pub secrets: Vec<SecretGrant>,
}

/// A secret injected into requests to one host, never readable by the plugin.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretGrant {
    /// The environment variable holding the secret.
    pub env: String,
    /// The `host:port` pattern (one of the grant's `http` entries) whose requests carry it.
    pub host: String,
    /// The header it is sent in.
    #[serde(default = "default_secret_header")]
    pub header: String,
    /// The header's value, `{}` standing for the secret.
    #[serde(default = "default_secret_format")]
    pub format: String,
}

fn default_secret_header() -> String {
    DEFAULT_SECRET_HEADER.to_string()
}

fn default_secret_format() -> String {
    DEFAULT_SECRET_FORMAT.to_string()
}

/// Which hosts a pattern's host part admits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostMatch {
    /// Exactly this name (lower-case).
    Name(String),
    /// Any name ending in `.{suffix}` (`*.example.com`): subdomains, not the domain itself.
    Subdomains(String),
    /// This address, and only it: the one way to grant a loopback or private address.
    Address(IpAddr),
}

/// A parsed `host:port` pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    /// The host part.
    pub host: HostMatch,
    /// The port, always explicit.
    pub port: u16,
}

impl HostPattern {
    /// Parses `api.example.com:443`, `*.example.com:443`, `127.0.0.1:8080` or `[::1]:8080`.
    pub fn parse(text: &str) -> Result<HostPattern, String> {
        let (host, port) = text
            .rsplit_once(':')
            .ok_or_else(|| format!("\"{text}\" is not host:port (the port is required)"))?;
        let port: u16 = port
            .parse()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| format!("\"{text}\": the port must be a number from 1 to 65535"))?;
        if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            let address = inner
                .parse()
                .map_err(|_| format!("\"{text}\": [{inner}] is not an IPv6 address"))?;
            return Ok(HostPattern {
                host: HostMatch::Address(address),
                port,
            });
        }
        if let Ok(address) = host.parse::<IpAddr>() {
            return Ok(HostPattern {
                host: HostMatch::Address(address),
                port,
            });
        }
        let host = host.to_ascii_lowercase();
        let (wild, name) = match host.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, host.as_str()),
        };
        if !is_dns_name(name) {
            return Err(format!(
                "\"{text}\": the host must be a DNS name, an IP address or [IPv6], with `*.` \
                 only as its leftmost label"
            ));
        }
        let host = if wild {
            HostMatch::Subdomains(name.to_string())
        } else {
            HostMatch::Name(name.to_string())
        };
        Ok(HostPattern { host, port })
    }

    /// Whether a request to `host` (lower-case, IPv6 without brackets) on `port` matches.
    pub fn admits(&self, host: &str, port: u16) -> bool {
        if port != self.port {
            return false;
        }
        match &self.host {
            HostMatch::Name(name) => host == name,
            HostMatch::Subdomains(suffix) => host
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            HostMatch::Address(address) => host.parse::<IpAddr>().ok() == Some(*address),
        }
    }
}

fn is_dns_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
}

/// Checks every grant; errors name `plugins.grants.<name>.<field>`.
pub(super) fn validate_grants(grants: &BTreeMap<String, PluginGrant>) -> Result<(), ConfigError> {
    for (name, grant) in grants {
        let at = |field: &str| format!("plugins.grants.{name}.{field}");
        if name.is_empty() || name.contains(['/', '\\']) || name.ends_with(".wasm") {
            return Err(ConfigError::invalid(
                format!("plugins.grants.{name}"),
                "name a plugin by its file name without `.wasm` (`weather` for weather.wasm)",
            ));
        }
        if grant.http.len() > MAX_HTTP_PATTERNS {
            return Err(ConfigError::invalid(
                at("http"),
                format!("at most {MAX_HTTP_PATTERNS} host patterns"),
            ));
        }
        for (i, pattern) in grant.http.iter().enumerate() {
            HostPattern::parse(pattern)
                .map_err(|message| ConfigError::invalid(at(&format!("http[{i}]")), message))?;
        }
        validate_config(&at("config"), &grant.config)?;
        if grant.secrets.len() > MAX_SECRETS {
            return Err(ConfigError::invalid(
                at("secrets"),
                format!("at most {MAX_SECRETS} secrets"),
            ));
        }
        for (i, secret) in grant.secrets.iter().enumerate() {
            let field = |f: &str| at(&format!("secrets[{i}].{f}"));
            let env_ok = !secret.env.is_empty()
                && secret
                    .env
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !env_ok {
                return Err(ConfigError::invalid(
                    field("env"),
                    "the name of an environment variable (letters, digits and _)",
                ));
            }
            if !grant.http.contains(&secret.host) {
                return Err(ConfigError::invalid(
                    field("host"),
                    format!(
                        "\"{}\" is not one of this grant's `http` patterns: a secret goes only to a \
                         host the plugin may call",
                        secret.host
                    ),
                ));
            }
            if http::HeaderName::from_bytes(secret.header.as_bytes()).is_err() {
                return Err(ConfigError::invalid(
                    field("header"),
                    format!("\"{}\" is not an HTTP header name", secret.header),
                ));
            }
            if secret.format.matches("{}").count() != 1 {
                return Err(ConfigError::invalid(
                    field("format"),
                    "must hold `{}` once, where the secret goes (\"Bearer {}\")",
                ));
            }
        }
    }
    Ok(())
}

fn validate_config(at: &str, config: &BTreeMap<String, toml::Value>) -> Result<(), ConfigError> {
    if config.len() > MAX_CONFIG_ENTRIES {
        return Err(ConfigError::invalid(
            at,
            format!("at most {MAX_CONFIG_ENTRIES} settings"),
        ));
    }
    for (key, value) in config {
        let here = format!("{at}.{key}");
        if key.is_empty() || key.chars().count() > MAX_CONFIG_KEY_CHARS {
            return Err(ConfigError::invalid(
                here,
                format!("a key of 1 to {MAX_CONFIG_KEY_CHARS} characters"),
            ));
        }
        match value {
            toml::Value::String(text) if text.chars().count() > MAX_CONFIG_VALUE_CHARS => {
                return Err(ConfigError::invalid(
                    here,
                    format!("at most {MAX_CONFIG_VALUE_CHARS} characters"),
                ));
            }
            toml::Value::String(_)
            | toml::Value::Integer(_)
            | toml::Value::Float(_)
            | toml::Value::Boolean(_) => {}
            _ => {
                return Err(ConfigError::invalid(
                    here,
                    "a string, number or boolean (put a secret in `secrets`, never here)",
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_parse_names_wildcards_and_addresses() {
        let p = HostPattern::parse("API.Example.com:443").unwrap();
        assert_eq!(p.host, HostMatch::Name("api.example.com".into()));
        assert!(p.admits("api.example.com", 443));
        assert!(!p.admits("api.example.com", 80));
        let w = HostPattern::parse("*.example.com:443").unwrap();
        assert!(w.admits("a.example.com", 443));
        assert!(w.admits("a.b.example.com", 443));
        assert!(!w.admits("example.com", 443));
        assert!(!w.admits("badexample.com", 443));
        let v6 = HostPattern::parse("[::1]:8080").unwrap();
        assert!(v6.admits("::1", 8080));
        let v4 = HostPattern::parse("127.0.0.1:8080").unwrap();
        assert!(v4.admits("127.0.0.1", 8080));
        assert!(!v4.admits("localhost", 8080));
    }

    #[test]
    fn bad_patterns_are_refused_with_the_reason() {
        for bad in [
            "example.com",
            "example.com:0",
            "example.com:http",
            "a.*.example.com:443",
            "*:443",
            "[nope]:1",
        ] {
            assert!(HostPattern::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_secret_for_a_host_not_granted_names_its_field() {
        let grant: PluginGrant = toml::from_str(
            "http = [\"api.example.com:443\"]\n[[secrets]]\nenv = \"TOKEN\"\nhost = \"other.example.com:443\"",
        )
        .unwrap();
        let grants = BTreeMap::from([("weather".to_string(), grant)]);
        let err = validate_grants(&grants).unwrap_err().to_string();
        assert!(
            err.starts_with("plugins.grants.weather.secrets[0].host:"),
            "{err}"
        );
    }

    #[test]
    fn a_bad_grant_in_the_file_names_its_dotted_setting() {
        let parse = |text: &str| {
            crate::base::config::Config::parse(text, std::path::Path::new("config.toml"))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            parse("[plugins.grants.weather]\nhttp = [\"api.example.com\"]\n"),
            "plugins.grants.weather.http[0]: \"api.example.com\" is not host:port (the port is required)"
        );
        assert!(
            parse("[plugins.grants.weather]\nhtp = []\n").starts_with("plugins.grants.weather"),
            "an unknown key names its table"
        );
    }

    #[test]
    fn a_nested_config_value_is_refused() {
        let grant: PluginGrant = toml::from_str("config = { deep = { a = 1 } }").unwrap();
        let grants = BTreeMap::from([("weather".to_string(), grant)]);
        let err = validate_grants(&grants).unwrap_err().to_string();
        assert!(
            err.starts_with("plugins.grants.weather.config.deep:"),
            "{err}"
        );
    }
}
