//! `[engine]`: which engine works the tasks. `embedded` (the default) runs each task's loop in
//! this process with its journal in the SQLite store; `temporal` runs each task as a workflow on
//! a Temporal server (a build with the cargo feature `temporal`), so that several harness
//! processes serving one task queue and one store share the work and survive each other's crash.

use serde::Deserialize;

use super::ConfigError;

/// The server a `temporal` engine connects to when `engine.temporal.address` is not set.
pub const DEFAULT_TEMPORAL_ADDRESS: &str = "127.0.0.1:7233";
/// The namespace used when `engine.temporal.namespace` is not set: the one a Temporal server
/// creates for itself.
pub const DEFAULT_TEMPORAL_NAMESPACE: &str = "default";
/// The task queue polled when `engine.temporal.task_queue` is not set.
pub const DEFAULT_TEMPORAL_TASK_QUEUE: &str = "tiny-harness";
/// The longest namespace or task queue name Temporal takes.
const MAX_TEMPORAL_NAME_CHARS: usize = 255;

/// `engine.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    /// Each task's loop runs in this process, journalled in the SQLite store.
    #[default]
    Embedded,
    /// Each task runs as a Temporal workflow (needs the cargo feature `temporal`).
    Temporal,
}

/// `[engine]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineConfig {
    /// Which engine works the tasks; `embedded` unless set.
    #[serde(default)]
    pub kind: EngineKind,
    /// `[engine.temporal]`: read only when `kind = "temporal"`.
    #[serde(default)]
    pub temporal: TemporalConfig,
}

/// `[engine.temporal]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemporalConfig {
    /// `host:port` of the Temporal server's frontend.
    #[serde(default = "default_address")]
    pub address: String,
    /// The Temporal namespace the workflows run in.
    #[serde(default = "default_namespace")]
    pub namespace: String,
    /// The queue this harness's worker polls; every process serving one set of tasks (one
    /// store) must name the same queue, and no other harness may use it.
    #[serde(default = "default_task_queue")]
    pub task_queue: String,
}

impl Default for TemporalConfig {
    fn default() -> Self {
        TemporalConfig {
            address: default_address(),
            namespace: default_namespace(),
            task_queue: default_task_queue(),
        }
    }
}

fn default_address() -> String {
    DEFAULT_TEMPORAL_ADDRESS.to_string()
}

fn default_namespace() -> String {
    DEFAULT_TEMPORAL_NAMESPACE.to_string()
}

fn default_task_queue() -> String {
    DEFAULT_TEMPORAL_TASK_QUEUE.to_string()
}

impl EngineConfig {
    /// Checks `[engine]`: an address that is `host:port`, names that are not blank. A binary
    /// built without the `temporal` feature refuses `kind = "temporal"`, saying how to build one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.kind != EngineKind::Temporal {
            return Ok(());
        }
        if !cfg!(feature = "temporal") {
            return Err(ConfigError::invalid(
                "engine.kind",
                "\"temporal\" needs a harness built with the cargo feature `temporal` (cargo build --release --features temporal); this one was built without it",
            ));
        }
        let temporal = &self.temporal;
        let address_ok = temporal
            .address
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.trim().is_empty() && port.parse::<u16>().is_ok());
        if !address_ok {
            return Err(ConfigError::invalid(
                "engine.temporal.address",
                format!(
                    "`{}` is not host:port (for example {DEFAULT_TEMPORAL_ADDRESS})",
                    temporal.address
                ),
            ));
        }
        for (setting, value) in [
            ("engine.temporal.namespace", &temporal.namespace),
            ("engine.temporal.task_queue", &temporal.task_queue),
        ] {
            if value.trim().is_empty() || value.chars().count() > MAX_TEMPORAL_NAME_CHARS {
                return Err(ConfigError::invalid(
                    setting,
                    format!("must be 1 to {MAX_TEMPORAL_NAME_CHARS} characters"),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::base::config::Config;

    use crate::base::config::testing::error_of;

    #[test]
    fn the_embedded_engine_is_the_default_and_temporal_has_its_defaults() {
        let config = Config::parse("", Path::new("config.toml")).unwrap();
        assert_eq!(config.engine.kind, EngineKind::Embedded);
        assert_eq!(config.engine.temporal.address, "127.0.0.1:7233");
        assert_eq!(config.engine.temporal.namespace, "default");
        assert_eq!(config.engine.temporal.task_queue, "tiny-harness");
        assert!(error_of("[engine]\nkind = \"distributed\"\n").contains("engine.kind"));
        assert!(error_of("[engine.temporal]\nadress = \"x\"\n").contains("adress"));
    }

    #[cfg(not(feature = "temporal"))]
    #[test]
    fn temporal_in_a_build_without_the_feature_says_which_feature_to_build() {
        assert_eq!(
            error_of("[engine]\nkind = \"temporal\"\n"),
            "engine.kind: \"temporal\" needs a harness built with the cargo feature `temporal` (cargo build --release --features temporal); this one was built without it"
        );
    }

    #[cfg(feature = "temporal")]
    #[test]
    fn a_temporal_address_must_be_host_and_port() {
        assert_eq!(
            error_of("[engine]\nkind = \"temporal\"\n[engine.temporal]\naddress = \"localhost\"\n"),
            "engine.temporal.address: `localhost` is not host:port (for example 127.0.0.1:7233)"
        );
        assert!(
            error_of("[engine]\nkind = \"temporal\"\n[engine.temporal]\ntask_queue = \" \"\n")
                .starts_with("engine.temporal.task_queue: must be 1 to 255")
        );
    }
}
