//! OpenID Connect bearer JWTs (`[server.oidc]`): who a caller is, proven by a token the
//! configured issuer signed. [`Oidc::start`] finds the issuer's keys (its JWKS, from
//! `jwks_url` or the issuer's discovery document, [`fetch`]) and keeps them ([`keys`]);
//! [`Oidc::participant`] checks one token ([`verify`]) and names its participant, or says why
//! not ([`OidcRefusal`]).
//!
//! Keys are refreshed on demand: a token whose `kid` the cached JWKS lacks (a rotated key), or
//! a cache older than [`KEYS_MAX_AGE`], triggers one fetch, at most once per
//! [`MIN_REFRESH_INTERVAL`] however many tokens ask, so tokens minted with made-up key ids
//! cannot make this server hammer the issuer. The start-up fetch does not count against that
//! interval, so a key rotated in just after start is found at once. While no fetch has
//! succeeded every token is refused; once one has, a failed refresh keeps the keys it has.

mod fetch;
mod keys;
mod refusal;
mod verify;

use std::time::{Duration, Instant};

use tokio::sync::{Mutex, RwLock};

pub use fetch::{FetchError, MAX_DISCOVERY_BYTES, MAX_JWKS_BYTES};
pub use keys::{ACCEPTED_ALGORITHMS, MAX_JWKS_KEYS};
pub use refusal::{MAX_PARTICIPANT_CHARS, OidcRefusal};
pub use verify::{CLOCK_SKEW_LEEWAY_SECS, MAX_TOKEN_BYTES};

use crate::app::server::identity::BearerVerifier;
use crate::base::config::OidcConfig;
use keys::{KeySet, Lookup};

/// How long one fetch of the discovery document or the JWKS may take, body included.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The least time between two on-demand JWKS fetches (unknown `kid`, stale keys).
pub const MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(60);
/// How long fetched keys are used before the next token triggers a refresh, so a key the
/// issuer withdrew stops verifying within this time.
pub const KEYS_MAX_AGE: Duration = Duration::from_secs(60 * 60);

/// The timings of an [`Oidc`]: [`OidcTuning::default`] in production; tests shorten them with
/// [`Oidc::start_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OidcTuning {
    /// [`MIN_REFRESH_INTERVAL`] by default.
    pub min_refresh_interval: Duration,
    /// [`FETCH_TIMEOUT`] by default.
    pub fetch_timeout: Duration,
    /// [`KEYS_MAX_AGE`] by default.
    pub keys_max_age: Duration,
}

impl Default for OidcTuning {
    fn default() -> Self {
        OidcTuning {
            min_refresh_interval: MIN_REFRESH_INTERVAL,
            fetch_timeout: FETCH_TIMEOUT,
            keys_max_age: KEYS_MAX_AGE,
        }
    }
}

/// The issuer's keys as last fetched.
#[derive(Default)]
struct Cache {
    keys: KeySet,
    /// When a fetch last succeeded; `None` until one has.
    fetched_at: Option<Instant>,
    /// The JWKS URL once configured or discovered.
    jwks_url: Option<String>,
}

/// The verifier of `[server.oidc]` bearer JWTs; share it behind an `Arc`.
pub struct Oidc {
    config: OidcConfig,
    client: reqwest::Client,
    tuning: OidcTuning,
    cache: RwLock<Cache>,
    /// Held while fetching, so concurrent misses make one fetch; holds when the last on-demand
    /// fetch started.
    refreshing: Mutex<Option<Instant>>,
}

impl Oidc {
    /// Finds the issuer's keys and returns the verifier. A failure is logged as a warning
    /// naming the setting, and the verifier starts anyway: every token is refused until a
    /// later refresh succeeds. `client` should not follow redirects (keys are read only from
    /// the URL configured or discovered; an answer from elsewhere is refused either way).
    pub async fn start(config: &OidcConfig, client: reqwest::Client) -> Oidc {
        Oidc::start_with(config, client, OidcTuning::default()).await
    }

    /// [`Oidc::start`] with other timings (tests shorten the refresh interval).
    pub async fn start_with(
        config: &OidcConfig,
        client: reqwest::Client,
        tuning: OidcTuning,
    ) -> Oidc {
        let oidc = Oidc {
            config: config.clone(),
            client,
            tuning,
            cache: RwLock::new(Cache::default()),
            refreshing: Mutex::new(None),
        };
        oidc.fetch().await;
        oidc
    }

    /// The participant a bearer JWT names, or why it names none.
    pub async fn participant(&self, token: &str) -> Result<String, OidcRefusal> {
        let header = verify::header(token)?;
        let kid = header.kid.as_deref();
        let stale = self
            .cache
            .read()
            .await
            .fetched_at
            .is_none_or(|at| at.elapsed() >= self.tuning.keys_max_age);
        if stale {
            self.refresh().await;
        }
        let mut refreshed = stale;
        loop {
            {
                let cache = self.cache.read().await;
                match cache.keys.find(kid, header.alg) {
                    Lookup::Found(key) => {
                        return verify::participant(token, header.alg, &key.decoding, &self.config);
                    }
                    Lookup::WrongType => return Err(OidcRefusal::KeyMismatch),
                    Lookup::Ambiguous => return Err(OidcRefusal::NoKeyId),
                    Lookup::Missing if refreshed && cache.fetched_at.is_none() => {
                        return Err(OidcRefusal::KeysUnavailable);
                    }
                    Lookup::Missing if refreshed => return Err(OidcRefusal::UnknownKey),
                    Lookup::Missing => {}
                }
            }
            self.refresh().await;
            refreshed = true;
        }
    }

    /// How many keys the verifier holds now (for logs and tests).
    pub async fn key_count(&self) -> usize {
        self.cache.read().await.keys.len()
    }

    /// An on-demand fetch, unless one started less than the minimum interval ago. A caller
    /// that waited for another's fetch reads the keys that fetch brought.
    async fn refresh(&self) {
        let mut last = self.refreshing.lock().await;
        if last.is_some_and(|at| at.elapsed() < self.tuning.min_refresh_interval) {
            return;
        }
        *last = Some(Instant::now());
        self.fetch().await;
    }

    /// Fetches the JWKS (discovering its URL first if needed) and replaces the keys; on
    /// failure, logs a warning naming the setting and keeps what it had.
    async fn fetch(&self) {
        let timeout = self.tuning.fetch_timeout;
        let known = self.cache.read().await.jwks_url.clone();
        let url = match known {
            Some(url) => url,
            None => match fetch::jwks_url(&self.config, &self.client, timeout).await {
                Ok(url) => url,
                Err(err) => {
                    tracing::warn!(
                        setting = "server.oidc.issuer",
                        error = %err,
                        "OpenID Connect discovery failed; bearer JWTs are refused until it succeeds (or set server.oidc.jwks_url)"
                    );
                    return;
                }
            },
        };
        self.cache.write().await.jwks_url = Some(url.clone());
        let setting = if self.config.jwks_url.is_some() {
            "server.oidc.jwks_url"
        } else {
            "server.oidc.issuer"
        };
        let fetched = fetch::fetch_json(&self.client, &url, timeout, MAX_JWKS_BYTES)
            .await
            .and_then(|document| {
                KeySet::parse(&document).map_err(|reason| FetchError::Invalid {
                    url: url.clone(),
                    reason,
                })
            });
        match fetched {
            Ok((keys, skipped)) => {
                if keys.is_empty() {
                    tracing::warn!(setting, %url, skipped, "the issuer's JWKS holds no usable signing key (RSA, P-256 or Ed25519)");
                } else {
                    tracing::debug!(%url, keys = keys.len(), skipped, "OpenID Connect keys fetched");
                }
                let mut cache = self.cache.write().await;
                cache.keys = keys;
                cache.fetched_at = Some(Instant::now());
            }
            Err(err) => {
                let has_keys = self.cache.read().await.fetched_at.is_some();
                tracing::warn!(
                    setting,
                    error = %err,
                    keeping_previous_keys = has_keys,
                    "fetching the issuer's JWKS failed"
                );
            }
        }
    }
}

/// The identity's port for bearer tokens that are none of its credentials: a JWT names the
/// participant its claim holds, or is refused with a reason safe to show the caller.
#[async_trait::async_trait]
impl BearerVerifier for Oidc {
    async fn participant(&self, token: &str) -> Result<String, String> {
        Oidc::participant(self, token)
            .await
            .map_err(|refusal| refusal.to_string())
    }
}
