//! Traces for the process: the OTLP/HTTP exporter and its batch processor, set up from
//! `[telemetry]` (or OpenTelemetry's variables) when the server starts, and flushed when it
//! stops. Spans are made in `base::telemetry`; this is only where they go.

use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracerProvider};

use crate::base::config::{Config, ConfigError, TraceExport};
use crate::base::telemetry::{self, TaskIdGenerator};

/// How long one export may take before it is given up: the collector is someone else's, and a
/// slow one must not hold spans (and memory) for long.
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// The name of the exporter's thread, as the batch processor names it (tests look for it).
pub const EXPORT_THREAD: &str = "OpenTelemetry.Traces.BatchProcessor";

/// Why traces could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// A setting or variable is wrong.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The exporter could not be built.
    #[error("telemetry.otlp_endpoint: cannot build the OTLP exporter: {0}")]
    Exporter(String),
}

/// The process's traces while it serves; [`Traces::shutdown`] exports what is left.
#[derive(Debug, Default)]
pub struct Traces {
    provider: Option<SdkTracerProvider>,
}

impl Traces {
    /// Sets traces up as `config` (else the environment, through `env`) says, naming
    /// `agent_name` in every `invoke_agent` span; nothing at all when no endpoint is set.
    pub fn start(
        config: &Config,
        agent_name: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Traces, TelemetryError> {
        let Some(export) = config.telemetry.trace_export(env)? else {
            return Ok(Traces::default());
        };
        let provider = provider(&export)?;
        let tracer = provider.tracer("tiny-harness");
        if !telemetry::install(tracer, agent_name, export.capture_content) {
            // A process serves once; a second server in it (tests) keeps the first's traces.
            return Ok(Traces::default());
        }
        tracing::info!(
            endpoint = %export.url,
            service = %export.service_name,
            capture_content = export.capture_content,
            "sending traces"
        );
        Ok(Traces {
            provider: Some(provider),
        })
    }

    /// Exports the spans still queued and stops the exporter, off the async threads (it
    /// blocks until the collector answers or [`EXPORT_TIMEOUT`] passes).
    pub async fn shutdown(self) {
        let Some(provider) = self.provider else {
            return;
        };
        let stopped = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        if let Ok(Err(err)) = stopped {
            tracing::warn!("traces not all exported at shutdown: {err}");
        }
    }
}

fn provider(export: &TraceExport) -> Result<SdkTracerProvider, TelemetryError> {
    // The exporter's reqwest has no TLS provider of its own: rustls with ring, as for MCP.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(export.url.clone())
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|err| TelemetryError::Exporter(err.to_string()))?;
    let resource = Resource::builder()
        .with_service_name(export.service_name.clone())
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build();
    Ok(SdkTracerProvider::builder()
        .with_span_processor(BatchSpanProcessor::builder(exporter).build())
        .with_id_generator(TaskIdGenerator::default())
        .with_resource(resource)
        .build())
}
