//! The engine `[engine] kind` names, started from its parts, and how its process holds the
//! store.

use std::sync::Arc;

use super::StartError;
#[cfg(not(feature = "temporal"))]
use crate::base::config::ConfigError;
use crate::base::config::{Config, EngineKind};
use crate::state::store::LockMode;
use crate::state::tasks::engine_port::Engine;
use crate::work::engine::{EmbeddedEngine, EngineParts};

/// The engine `[engine] kind` names, from its parts.
pub(super) async fn start_engine(
    config: &Config,
    parts: EngineParts,
) -> Result<Arc<dyn Engine>, StartError> {
    match config.engine.kind {
        EngineKind::Embedded => Ok(EmbeddedEngine::start(parts)),
        #[cfg(feature = "temporal")]
        EngineKind::Temporal => {
            let temporal = &config.engine.temporal;
            let settings = crate::work::engine::temporal::TemporalSettings {
                address: temporal.address.clone(),
                namespace: temporal.namespace.clone(),
                task_queue: temporal.task_queue.clone(),
            };
            let engine =
                crate::work::engine::temporal::TemporalEngine::start(parts, settings).await?;
            tracing::info!(
                address = %temporal.address,
                namespace = %temporal.namespace,
                task_queue = %temporal.task_queue,
                "tasks run as Temporal workflows"
            );
            Ok(engine)
        }
        // Refused when the configuration was checked; said again rather than run embedded.
        #[cfg(not(feature = "temporal"))]
        EngineKind::Temporal => Err(StartError::Config(ConfigError::invalid(
            "engine.kind",
            "\"temporal\" needs a harness built with the cargo feature `temporal`",
        ))),
    }
}

/// How this process holds its store: the embedded engine alone (it resumes and works every
/// open task of the store), the Temporal engine's processes together (they share the work).
pub(super) fn lock_mode(kind: EngineKind) -> LockMode {
    match kind {
        EngineKind::Embedded => LockMode::Exclusive,
        EngineKind::Temporal => LockMode::Shared,
    }
}
