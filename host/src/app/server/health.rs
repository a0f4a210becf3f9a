//! `GET /healthz` (the process serves) and `GET /readyz` (it can take work: the store commits a
//! write, the engine runs, the Temporal server answers when that engine is used).
//!
//! Both are anonymous whatever `server.allow_anonymous` says (a load balancer or an orchestrator
//! holds no token) and outside the per-caller rate limit (a prober polling every second from one
//! address would otherwise be refused and take the harness out of rotation). What makes that
//! safe: the answers carry no configuration, address, version or error text, only fixed words
//! per check, and a readiness answer is reused for [`READY_CACHE`], so polling `/readyz` at any
//! rate costs at most one store write per [`READY_CACHE`]. The connection limits still apply.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Map, Value, json};

use crate::base::metrics::METRICS;
use crate::state::store::Store;
use crate::state::tasks::engine_port::Engine;

/// Liveness: answered by the process itself, whatever its parts' state.
pub const HEALTH_PATH: &str = "/healthz";
/// Where the metrics are served.
pub const METRICS_PATH: &str = "/metrics";
/// Readiness: whether the harness can take work now.
pub const READY_PATH: &str = "/readyz";
/// How long one readiness answer is reused. Probers ask every few seconds; anyone asking more
/// often (the route is anonymous) gets the last answer instead of another store write.
pub const READY_CACHE: Duration = Duration::from_secs(1);
/// How long the store's probe write may take before the store counts as not writable: below
/// the usual 5 s probe timeout of load balancers, and well above a commit's milliseconds (a
/// write waiting this long on a lock is a store that cannot take work).
pub const STORE_PROBE_DEADLINE: Duration = Duration::from_secs(2);
/// How long the engine's own check may take (the Temporal engine connects to its server).
pub const ENGINE_PROBE_DEADLINE: Duration = Duration::from_secs(3);

/// The parts `/readyz` checks. A server built without a store or an engine of its own (a test
/// server in front of a fake task service) checks only what it has.
#[derive(Default)]
pub struct Health {
    store: Option<Arc<Store>>,
    engine: Option<Arc<dyn Engine>>,
    /// The last answer and when it was made; the lock also makes concurrent probes share one.
    last: tokio::sync::Mutex<Option<(Instant, Arc<Readiness>)>>,
}

/// One readiness answer: each part checked, `Ok` or a fixed reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readiness {
    /// `(part, result)`, in the order checked.
    pub checks: Vec<(&'static str, Result<(), &'static str>)>,
}

impl Readiness {
    /// Whether every part is ready.
    pub fn is_ready(&self) -> bool {
        self.checks.iter().all(|(_, result)| result.is_ok())
    }

    /// `{"status": "ready" | "not ready", "checks": {"store": "ok", "engine": "shutting down"}}`.
    pub fn to_json(&self) -> Value {
        let checks: Map<String, Value> = self
            .checks
            .iter()
            .map(|(part, result)| {
                let word = match result {
                    Ok(()) => "ok",
                    Err(reason) => reason,
                };
                ((*part).to_string(), Value::from(word))
            })
            .collect();
        let status = if self.is_ready() {
            "ready"
        } else {
            "not ready"
        };
        json!({ "status": status, "checks": checks })
    }
}

impl Health {
    /// The readiness of a harness with this store and engine.
    pub fn new(store: Arc<Store>, engine: Arc<dyn Engine>) -> Health {
        Health {
            store: Some(store),
            engine: Some(engine),
            last: tokio::sync::Mutex::new(None),
        }
    }

    /// The last answer if it is younger than [`READY_CACHE`], else a new one. Callers that
    /// arrive while a check runs wait for it and share its answer.
    pub async fn readiness(&self) -> Arc<Readiness> {
        let mut last = self.last.lock().await;
        if let Some((at, readiness)) = last.as_ref()
            && at.elapsed() < READY_CACHE
        {
            return readiness.clone();
        }
        let readiness = Arc::new(self.check().await);
        if !readiness.is_ready() {
            tracing::warn!(readiness = %readiness.to_json(), "not ready");
        }
        *last = Some((Instant::now(), readiness.clone()));
        readiness
    }

    async fn check(&self) -> Readiness {
        let mut checks = Vec::new();
        if let Some(store) = &self.store {
            // Off the executor: a write waiting on a lock blocks its thread.
            let probe = tokio::task::spawn_blocking({
                let store = store.clone();
                move || store.probe_write()
            });
            let result = match tokio::time::timeout(STORE_PROBE_DEADLINE, probe).await {
                Ok(Ok(Ok(()))) => Ok(()),
                Ok(Err(_)) => Err("not writable"),
                Ok(Ok(Err(err))) => {
                    tracing::warn!("the store's probe write failed: {err}");
                    Err("not writable")
                }
                Err(_) => {
                    tracing::warn!(
                        deadline_ms = STORE_PROBE_DEADLINE.as_millis() as u64,
                        "the store's probe write did not land in time"
                    );
                    Err("not writable")
                }
            };
            checks.push(("store", result));
        }
        if let Some(engine) = &self.engine {
            let result = match tokio::time::timeout(ENGINE_PROBE_DEADLINE, engine.readiness()).await
            {
                Ok(result) => result,
                Err(_) => Err("did not answer in time"),
            };
            checks.push(("engine", result));
        }
        Readiness { checks }
    }
}

/// The two routes, with no identity, rate limit or body limit: see the module's comment.
pub fn routes(health: Arc<Health>) -> Router {
    Router::new()
        .route(HEALTH_PATH, get(healthz))
        .route(READY_PATH, get(readyz))
        .with_state(health)
}

/// `GET /metrics`: every metric of the process in the Prometheus text format, beside the
/// health routes and like them outside the caller layers, for a scraper holding no token
/// (served only where `[telemetry] metrics` says; see `config::telemetry`).
pub fn metrics_route() -> Router {
    Router::new().route(METRICS_PATH, get(metrics))
}

async fn metrics() -> Response {
    let mut response = METRICS.render().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

async fn healthz() -> Response {
    answer(StatusCode::OK, json!({ "status": "ok" }))
}

async fn readyz(State(health): State<Arc<Health>>) -> Response {
    let readiness = health.readiness().await;
    let status = if readiness.is_ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    answer(status, readiness.to_json())
}

/// JSON that no cache keeps: a probe must see the state of now.
fn answer(status: StatusCode, body: Value) -> Response {
    let headers = [
        (
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        ),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
    ];
    (status, headers, body.to_string()).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_readiness_answer_names_each_part_in_fixed_words_golden() {
        let ready = Readiness {
            checks: vec![("store", Ok(())), ("engine", Ok(()))],
        };
        assert_eq!(
            ready.to_json().to_string(),
            r#"{"checks":{"engine":"ok","store":"ok"},"status":"ready"}"#
        );
        let not_ready = Readiness {
            checks: vec![("store", Err("not writable")), ("engine", Ok(()))],
        };
        assert!(!not_ready.is_ready());
        assert_eq!(
            not_ready.to_json().to_string(),
            r#"{"checks":{"engine":"ok","store":"not writable"},"status":"not ready"}"#
        );
    }

    #[tokio::test]
    async fn a_store_that_takes_a_write_is_ready_and_the_answer_is_reused_within_the_cache() {
        let store = Arc::new(Store::open_in_memory().unwrap());
        let health = Health {
            store: Some(store.clone()),
            ..Health::default()
        };
        let first = health.readiness().await;
        assert!(first.is_ready(), "{first:?}");
        let writes = store.write_counts().writes();
        let again = health.readiness().await;
        assert!(Arc::ptr_eq(&first, &again), "reused within READY_CACHE");
        assert_eq!(
            store.write_counts().writes(),
            writes,
            "no second probe write"
        );
    }
}
