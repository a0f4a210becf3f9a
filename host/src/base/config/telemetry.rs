//! `[telemetry]`: what the harness tells an operator's monitoring. `metrics` serves
//! `GET /metrics` in the Prometheus text format; by default only on a loopback `bind`, where
//! only this machine can read it (it names tools, agents and models). `otlp_endpoint` sends
//! traces there (OTLP over HTTP), else to `OTEL_EXPORTER_OTLP_ENDPOINT`; neither: no traces.

use serde::{Deserialize, Deserializer};

use super::Config;

/// What a trace's `service.name` is when neither `telemetry.service_name` nor
/// `OTEL_SERVICE_NAME` says.
pub const DEFAULT_SERVICE_NAME: &str = "tiny-harness";
/// The longest `telemetry.service_name`: a name, not a description.
pub const MAX_SERVICE_NAME_CHARS: usize = 128;
/// The variables read when `otlp_endpoint` and `service_name` are not set (OpenTelemetry's own).
pub const ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// See [`ENDPOINT_VAR`].
pub const SERVICE_NAME_VAR: &str = "OTEL_SERVICE_NAME";

/// `[telemetry]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// Serve `GET /metrics`; unset: served when `server.bind` is a loopback address.
    #[serde(default)]
    pub metrics: Option<bool>,
    /// Where traces go: the OTLP/HTTP collector's base URL (`/v1/traces` is appended, as for
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`). Unset: that variable, else no traces.
    #[serde(default, deserialize_with = "endpoint")]
    pub otlp_endpoint: Option<String>,
    /// The traces' `service.name`; unset: `OTEL_SERVICE_NAME`, else `tiny-harness`.
    #[serde(default, deserialize_with = "service_name")]
    pub service_name: Option<String>,
    /// Put prompt and completion text into the `chat` spans (`gen_ai.input.messages`,
    /// `gen_ai.output.messages`), capped. Off: spans hold names, ids and token counts only.
    #[serde(default)]
    pub capture_content: bool,
}

/// What traces are sent where, once the settings and the environment are read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceExport {
    /// The URL spans are posted to (`…/v1/traces`).
    pub url: String,
    /// The traces' `service.name`.
    pub service_name: String,
    /// `telemetry.capture_content`.
    pub capture_content: bool,
}

impl TelemetryConfig {
    /// Where traces go, from the settings, else from `env` (the OpenTelemetry variables); `None`
    /// when traces are off. A variable that is not an http(s) URL is an error naming it.
    pub fn trace_export(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<TraceExport>, super::ConfigError> {
        let base = match &self.otlp_endpoint {
            Some(url) => url.clone(),
            None => match env(ENDPOINT_VAR).filter(|v| !v.trim().is_empty()) {
                Some(url) => {
                    super::validate::check_http_url(ENDPOINT_VAR, url.trim())?;
                    url.trim().to_string()
                }
                None => return Ok(None),
            },
        };
        let service_name = self
            .service_name
            .clone()
            .or_else(|| env(SERVICE_NAME_VAR).and_then(|v| plain_name(&v).ok()))
            .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_string());
        Ok(Some(TraceExport {
            url: format!("{}/v1/traces", base.trim_end_matches('/')),
            service_name,
            capture_content: self.capture_content,
        }))
    }
}

fn endpoint<'de, D: Deserializer<'de>>(de: D) -> Result<Option<String>, D::Error> {
    let url = String::deserialize(de)?;
    super::validate::check_http_url("telemetry.otlp_endpoint", &url).map_err(|_| {
        serde::de::Error::custom(format!("`{url}` is not an http:// or https:// URL"))
    })?;
    Ok(Some(url))
}

fn service_name<'de, D: Deserializer<'de>>(de: D) -> Result<Option<String>, D::Error> {
    plain_name(&String::deserialize(de)?)
        .map(Some)
        .map_err(serde::de::Error::custom)
}

/// A service name: not blank, at most [`MAX_SERVICE_NAME_CHARS`], no control character.
fn plain_name(name: &str) -> Result<String, String> {
    let name = name.trim();
    if name.is_empty()
        || name.chars().count() > MAX_SERVICE_NAME_CHARS
        || name.chars().any(char::is_control)
    {
        return Err(format!(
            "a service name is 1 to {MAX_SERVICE_NAME_CHARS} characters with no control character"
        ));
    }
    Ok(name.to_string())
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

    fn export(text: &str, vars: &[(&str, &str)]) -> Option<super::TraceExport> {
        let config = Config::parse(text, std::path::Path::new("c.toml")).unwrap();
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let env = |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        config.telemetry.trace_export(env).unwrap()
    }

    #[test]
    fn traces_are_off_unless_a_setting_or_the_standard_variable_names_an_endpoint() {
        assert_eq!(export("", &[]), None);
        assert_eq!(export("", &[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")]), None);
        let from_var = export("", &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")]).unwrap();
        assert_eq!(from_var.url, "http://c:4318/v1/traces");
        assert_eq!(from_var.service_name, "tiny-harness");
        assert!(!from_var.capture_content);
        let set = export(
            "[telemetry]\notlp_endpoint = \"https://o.example\"\nservice_name = \"desk\"\ncapture_content = true\n",
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://ignored"), ("OTEL_SERVICE_NAME", "ignored")],
        )
        .unwrap();
        assert_eq!(set.url, "https://o.example/v1/traces");
        assert_eq!(set.service_name, "desk");
        assert!(set.capture_content);
        let named = export(
            "",
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
                ("OTEL_SERVICE_NAME", "ledger"),
            ],
        );
        assert_eq!(named.unwrap().service_name, "ledger");
    }

    #[test]
    fn a_bad_endpoint_or_service_name_names_the_setting() {
        for (text, setting) in [
            (
                "[telemetry]\notlp_endpoint = \"collector:4318\"\n",
                "telemetry.otlp_endpoint",
            ),
            (
                "[telemetry]\nservice_name = \"\"\n",
                "telemetry.service_name",
            ),
        ] {
            let err = Config::parse(text, std::path::Path::new("c.toml")).unwrap_err();
            assert!(err.to_string().contains(setting), "{err}");
        }
        let config = Config::parse("", std::path::Path::new("c.toml")).unwrap();
        let err = config
            .telemetry
            .trace_export(|_| Some("ftp://x".to_string()))
            .unwrap_err();
        assert!(
            err.to_string().contains("OTEL_EXPORTER_OTLP_ENDPOINT"),
            "{err}"
        );
    }
}
