//! `[telemetry]`: what the harness tells an operator's monitoring. `metrics` serves
//! `GET /metrics` in the Prometheus text format; by default only on a loopback `bind`, where
//! only this machine can read it (it names tools, agents and models).

use serde::Deserialize;

use super::Config;

/// `[telemetry]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// Serve `GET /metrics`; unset: served when `server.bind` is a loopback address.
    #[serde(default)]
    pub metrics: Option<bool>,
}

impl Config {
    /// Whether `GET /metrics` is served: `telemetry.metrics`, else whether `server.bind` is a
    /// loopback address.
    pub fn metrics_served(&self) -> bool {
        self.telemetry
            .metrics
            .unwrap_or_else(|| self.server.binds_loopback())
    }
}

#[cfg(test)]
mod tests {
    use crate::base::config::Config;

    fn metrics(text: &str) -> bool {
        let config = Config::parse(text, std::path::Path::new("c.toml")).unwrap();
        config.metrics_served()
    }

    #[test]
    fn metrics_are_served_on_loopback_unless_turned_off_and_elsewhere_only_when_asked() {
        assert!(metrics(""));
        assert!(!metrics("[telemetry]\nmetrics = false\n"));
        let network = "[server]\nbind = \"0.0.0.0:8080\"\nallow_anonymous = true\n";
        assert!(!metrics(network));
        assert!(metrics(&format!("{network}[telemetry]\nmetrics = true\n")));
    }
}
