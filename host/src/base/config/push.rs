//! `[push]`: push notifications, the webhooks a client may register for a task's updates. A
//! webhook URL is a request the harness makes on a client's say-so (an SSRF risk), so push is
//! off until `allowed_hosts` lists the `host:port` patterns a webhook may name.

use serde::Deserialize;

use super::{ConfigError, HostPattern};

/// Patterns `push.allowed_hosts` may list: receivers an operator knows, not the internet.
pub const MAX_ALLOWED_HOSTS: usize = 64;

/// `[push]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushConfig {
    /// `host:port` patterns (`hooks.example.com:443`, `*.example.com:443`, `10.0.0.5:8080`) a
    /// webhook URL may name. Empty (the default): push notifications are not offered. A
    /// loopback, private or link-local address is reached only when a pattern lists that
    /// address, whatever a name resolves to.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
}

impl PushConfig {
    /// Whether push notifications are offered: some host is allowed.
    pub fn enabled(&self) -> bool {
        !self.allowed_hosts.is_empty()
    }

    /// The parsed patterns (checked at start-up, so none fails here).
    pub fn patterns(&self) -> Vec<HostPattern> {
        self.allowed_hosts
            .iter()
            .filter_map(|text| HostPattern::parse(text).ok())
            .collect()
    }
}

/// Checks `[push]`; errors name `push.allowed_hosts[i]`.
pub(super) fn validate_push(push: &PushConfig) -> Result<(), ConfigError> {
    if push.allowed_hosts.len() > MAX_ALLOWED_HOSTS {
        return Err(ConfigError::invalid(
            "push.allowed_hosts",
            format!("at most {MAX_ALLOWED_HOSTS} host patterns"),
        ));
    }
    for (i, text) in push.allowed_hosts.iter().enumerate() {
        HostPattern::parse(text)
            .map_err(|message| ConfigError::invalid(format!("push.allowed_hosts[{i}]"), message))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::base::config::Config;
    use crate::base::config::testing::error_of;

    #[test]
    fn push_is_off_until_a_host_is_allowed() {
        let config = Config::parse("", std::path::Path::new("c.toml")).unwrap();
        assert!(!config.push.enabled());
        let config = Config::parse(
            "[push]\nallowed_hosts = [\"127.0.0.1:9000\", \"*.example.com:443\"]\n",
            std::path::Path::new("c.toml"),
        )
        .unwrap();
        assert!(config.push.enabled());
        assert_eq!(config.push.patterns().len(), 2);
    }

    #[test]
    fn a_pattern_without_a_port_names_its_setting_golden() {
        assert_eq!(
            error_of("[push]\nallowed_hosts = [\"hooks.example.com\"]\n"),
            "push.allowed_hosts[0]: \"hooks.example.com\" is not host:port (the port is required)"
        );
    }
}
