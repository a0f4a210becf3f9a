//! One plugin's grants as the host enforces them: its host patterns, its settings, and its
//! secrets read from the environment once at start-up. Which addresses a granted name may
//! reach is [`crate::base::egress`]'s to say, for plugins and push notifications alike.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

use http::{HeaderName, HeaderValue};

use crate::base::config::{HostMatch, HostPattern, PluginGrant};

/// What replaces a secret in a response before the guest sees it.
pub const SECRET_MASK: &str = "[secret]";

/// A grant that cannot be honoured: the dotted setting and why (`PluginError::Grant` at
/// start-up).
#[derive(Debug)]
pub struct GrantError {
    pub setting: String,
    pub reason: String,
}

/// What one plugin may reach, resolved at start-up.
#[derive(Default)]
pub struct Grant {
    /// The `http` patterns, as written (for `harness plugins`) and parsed.
    pub http: Vec<(String, HostPattern)>,
    /// The settings, as the guest reads them.
    pub config: BTreeMap<String, toml::Value>,
    pub secrets: Vec<Secret>,
}

/// A secret and where it goes. Its value never leaves the host but in the header it is sent in.
pub struct Secret {
    /// The environment variable it came from: what `harness plugins` shows.
    pub env: String,
    pub host: HostPattern,
    pub header: HeaderName,
    /// The header's whole value (`Bearer …`).
    pub value: HeaderValue,
    /// The secret alone, masked wherever a response echoes it.
    pub raw: String,
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secret")
            .field("env", &self.env)
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

impl Grant {
    /// Resolves the grant of the plugin `name` (its file name without `.wasm`), reading its
    /// secrets from the environment through `env`. A missing or unusable variable stops
    /// start-up naming its setting.
    pub fn resolve(
        name: &str,
        grant: &PluginGrant,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Grant, GrantError> {
        let invalid = |setting: String, reason: String| GrantError { setting, reason };
        let mut http = Vec::with_capacity(grant.http.len());
        for (i, text) in grant.http.iter().enumerate() {
            let pattern = HostPattern::parse(text)
                .map_err(|reason| invalid(format!("plugins.grants.{name}.http[{i}]"), reason))?;
            http.push((text.clone(), pattern));
        }
        let mut secrets = Vec::with_capacity(grant.secrets.len());
        for (i, secret) in grant.secrets.iter().enumerate() {
            let at = |field: &str| format!("plugins.grants.{name}.secrets[{i}].{field}");
            let raw = env(&secret.env).filter(|v| !v.is_empty()).ok_or_else(|| {
                invalid(
                    at("env"),
                    format!("the environment variable {} is not set", secret.env),
                )
            })?;
            let mut value =
                HeaderValue::from_str(&secret.format.replacen("{}", &raw, 1)).map_err(|_| {
                    invalid(
                        at("env"),
                        format!("{} holds characters an HTTP header cannot", secret.env),
                    )
                })?;
            value.set_sensitive(true);
            let header = HeaderName::from_bytes(secret.header.as_bytes())
                .map_err(|err| invalid(at("header"), err.to_string()))?;
            let host =
                HostPattern::parse(&secret.host).map_err(|reason| invalid(at("host"), reason))?;
            secrets.push(Secret {
                env: secret.env.clone(),
                host,
                header,
                value,
                raw,
            });
        }
        Ok(Grant {
            http,
            config: grant.config.clone(),
            secrets,
        })
    }

    /// The patterns a request to `host:port` matches.
    pub fn matching(&self, host: &str, port: u16) -> Vec<&HostPattern> {
        self.http
            .iter()
            .map(|(_, p)| p)
            .filter(|p| p.admits(host, port))
            .collect()
    }

    /// How `harness plugins` shows it: patterns, setting names, and secrets by variable and
    /// host. Never a value.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if !self.http.is_empty() {
            let hosts: Vec<&str> = self.http.iter().map(|(t, _)| t.as_str()).collect();
            lines.push(format!("http {}", hosts.join(", ")));
        }
        if !self.config.is_empty() {
            let keys: Vec<&str> = self.config.keys().map(String::as_str).collect();
            lines.push(format!("config {}", keys.join(", ")));
        }
        for secret in &self.secrets {
            lines.push(format!(
                "secret ${} as {} to {}",
                secret.env,
                secret.header,
                pattern_text(&secret.host)
            ));
        }
        lines
    }
}

fn pattern_text(pattern: &HostPattern) -> String {
    match &pattern.host {
        HostMatch::Name(name) => format!("{name}:{}", pattern.port),
        HostMatch::Subdomains(suffix) => format!("*.{suffix}:{}", pattern.port),
        HostMatch::Address(IpAddr::V6(a)) => format!("[{a}]:{}", pattern.port),
        HostMatch::Address(a) => format!("{a}:{}", pattern.port),
    }
}

/// `text` with every secret of the grant replaced by [`SECRET_MASK`].
pub fn mask(text: &[u8], secrets: &[Secret]) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    for secret in secrets {
        let needle = secret.raw.as_bytes();
        let current = out.as_deref().unwrap_or(text);
        if needle.is_empty() || !contains(current, needle) {
            continue;
        }
        let mut masked = Vec::with_capacity(current.len());
        let mut rest = current;
        while let Some(at) = find(rest, needle) {
            masked.extend_from_slice(&rest[..at]);
            masked.extend_from_slice(SECRET_MASK.as_bytes());
            rest = &rest[at + needle.len()..];
        }
        masked.extend_from_slice(rest);
        out = Some(masked);
    }
    out
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    find(haystack, needle).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_echo_of_a_secret_is_masked() {
        let secret = Secret {
            env: "T".into(),
            host: HostPattern::parse("a.example:443").unwrap(),
            header: HeaderName::from_static("authorization"),
            value: HeaderValue::from_static("Bearer s3cr3t"),
            raw: "s3cr3t".into(),
        };
        let masked = mask(b"you sent Bearer s3cr3t and s3cr3t", &[secret]).unwrap();
        assert_eq!(masked, b"you sent Bearer [secret] and [secret]");
    }
}
