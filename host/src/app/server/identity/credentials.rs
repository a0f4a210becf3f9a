//! The credentials callers prove who they are with (design trust boundary 6, "Caller →
//! server"), known by the bearer token they present.
//!
//! Three kinds exist: this harness itself, which presents a secret made fresh for each process
//! when it delegates to its own server (`self`); the trusted delegators of
//! `[[server.trusted_delegators]]`, which may shape the brief of a task they create; and the
//! token callers of `[[server.callers]]`, untrusted participants whose id no one else may
//! claim. Tokens are read from the environment at start-up, held only as SHA-256 digests,
//! compared in constant time, and never logged.

use std::fmt;

use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::base::config::{ConfigError, SELF_AGENT_ID, ServerConfig};

/// Random bytes in this harness's own secret: 256 bits, beyond any guessing, and twice the 128
/// the design asks for at least.
const SELF_SECRET_BYTES: usize = 32;
/// The shortest token accepted from the environment: a shorter one could be guessed by a peer
/// that tries tokens as fast as the rate limit lets it.
pub const MIN_TOKEN_CHARS: usize = 16;

/// A token's SHA-256 digest. Comparing digests makes every comparison the same length whatever
/// the token's, and keeps the tokens themselves out of memory that could be logged.
type Digest32 = [u8; 32];

/// What a token proves besides an id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// This harness (`self`) or a trusted delegator: may shape a new task's brief.
    Trusted,
    /// A token caller: an untrusted participant, proven.
    Participant,
}

/// One known credential: its id, the digest of its token and what it proves.
struct Known {
    id: String,
    digest: Digest32,
    standing: Standing,
}

/// Every credential of this harness: `self`, the trusted delegators and the token callers.
pub struct Credentials {
    known: Vec<Known>,
    self_secret: String,
}

impl fmt::Debug for Credentials {
    /// Ids only: a token or the self secret must never reach a log line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("ids", &self.known.iter().map(|k| &k.id).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// The delegators and callers `[server]` names, each token read with `env`, plus `self`. A
    /// token that is missing, empty, shorter than [`MIN_TOKEN_CHARS`] or shared with another
    /// delegator or caller is a configuration error naming the setting and the variable (never
    /// the token).
    pub fn from_config(
        server: &ServerConfig,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Credentials, ConfigError> {
        let mut credentials = Credentials::none();
        let delegators = server.trusted_delegators.iter().enumerate().map(|(i, d)| {
            let setting = format!("server.trusted_delegators[{i}]");
            (setting, "delegator", &d.id, &d.token_env, Standing::Trusted)
        });
        let callers = server.callers.iter().enumerate().map(|(i, c)| {
            let setting = format!("server.callers[{i}]");
            (
                setting,
                "caller",
                &c.id,
                &c.token_env,
                Standing::Participant,
            )
        });
        // The setting of each known entry after `self`, for naming the first of a shared token.
        let mut settings: Vec<String> = Vec::new();
        for (setting, kind, id, variable, standing) in delegators.chain(callers) {
            let field = format!("{setting}.token_env");
            let token = env(variable).unwrap_or_default();
            if token.is_empty() {
                return Err(ConfigError::invalid(
                    field,
                    format!(
                        "environment variable {variable} is not set or is empty; export it with the bearer token {kind} `{id}` presents"
                    ),
                ));
            }
            if token.chars().count() < MIN_TOKEN_CHARS {
                return Err(ConfigError::invalid(
                    field,
                    format!(
                        "the token in {variable} is shorter than {MIN_TOKEN_CHARS} characters; use a long random one (e.g. `openssl rand -hex 32`)"
                    ),
                ));
            }
            let digest = digest(&token);
            if let Some(other) = credentials
                .known
                .iter()
                .position(|k| same(&k.digest, &digest))
            {
                // Index 0 is `self`; configured entries follow in order.
                let first = &settings[other.saturating_sub(1)];
                return Err(ConfigError::invalid(
                    field,
                    format!(
                        "{variable} holds the same token as {first}; give each delegator and caller its own token"
                    ),
                ));
            }
            settings.push(setting);
            credentials.known.push(Known {
                id: id.clone(),
                digest,
                standing,
            });
        }
        Ok(credentials)
    }

    /// Only `self`, with a fresh secret: a harness with no configured delegators, and tests.
    pub fn none() -> Credentials {
        let mut bytes = [0u8; SELF_SECRET_BYTES];
        rand::rng().fill_bytes(&mut bytes);
        let self_secret: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Credentials {
            known: vec![Known {
                id: SELF_AGENT_ID.to_string(),
                digest: digest(&self_secret),
                standing: Standing::Trusted,
            }],
            self_secret,
        }
    }

    /// The bearer token this harness presents to its own server, as hex. It lives only as long
    /// as the process.
    pub fn self_secret(&self) -> &str {
        &self.self_secret
    }

    /// The id whose token `bearer` is (`self` for the self secret), and what it proves, if
    /// any. Every credential is compared, in constant time, whichever matches.
    pub fn identify(&self, bearer: &str) -> Option<(&str, Standing)> {
        let presented = digest(bearer);
        let mut found = None;
        for known in &self.known {
            if same(&known.digest, &presented) && found.is_none() {
                found = Some((known.id.as_str(), known.standing));
            }
        }
        found
    }

    /// Whether `id` stands for a credential (`self`, a delegator, a token caller), so that only
    /// that credential may claim it.
    pub fn is_reserved(&self, id: &str) -> bool {
        self.known.iter().any(|k| k.id == id)
    }

    /// The configured delegators' ids, in configuration order (`self` left out).
    pub fn configured_ids(&self) -> impl Iterator<Item = &str> {
        self.ids_of(Standing::Trusted)
            .filter(|id| *id != SELF_AGENT_ID)
    }

    /// The token callers' ids, in configuration order.
    pub fn caller_ids(&self) -> impl Iterator<Item = &str> {
        self.ids_of(Standing::Participant)
    }

    fn ids_of(&self, standing: Standing) -> impl Iterator<Item = &str> {
        self.known
            .iter()
            .filter(move |k| k.standing == standing)
            .map(|k| k.id.as_str())
    }
}

fn digest(token: &str) -> Digest32 {
    Sha256::digest(token.as_bytes()).into()
}

/// Equality that looks at every byte whatever differs, so its time says nothing about where a
/// guess went wrong.
fn same(a: &Digest32, b: &Digest32) -> bool {
    let difference = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(difference) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::config::TrustedDelegatorConfig;

    const LEDGER_TOKEN: &str = "ledger-token-0123456789abcdef";

    fn server(entries: &[(&str, &str)]) -> ServerConfig {
        ServerConfig {
            trusted_delegators: entries
                .iter()
                .map(|(id, env)| TrustedDelegatorConfig {
                    id: id.to_string(),
                    token_env: env.to_string(),
                })
                .collect(),
            ..ServerConfig::default()
        }
    }

    fn env(name: &str) -> Option<String> {
        match name {
            "LEDGER_TOKEN" => Some(LEDGER_TOKEN.to_string()),
            "COPY_TOKEN" => Some(LEDGER_TOKEN.to_string()),
            "SHORT_TOKEN" => Some("short".to_string()),
            "EMPTY_TOKEN" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn a_configured_token_identifies_its_delegator_and_nothing_else_does() {
        let credentials = Credentials::from_config(&server(&[("ledger", "LEDGER_TOKEN")]), env)
            .expect("the token is set");
        assert_eq!(
            credentials.identify(LEDGER_TOKEN),
            Some(("ledger", Standing::Trusted))
        );
        assert_eq!(credentials.identify("ledger-token-0123456789abcdeX"), None);
        assert_eq!(credentials.identify(""), None);
        assert_eq!(credentials.configured_ids().collect::<Vec<_>>(), ["ledger"]);
    }

    #[test]
    fn the_self_secret_is_256_random_bits_in_hex_and_identifies_self() {
        let credentials = Credentials::none();
        let secret = credentials.self_secret();
        assert_eq!(secret.len(), SELF_SECRET_BYTES * 2);
        assert!(secret.bytes().all(|b| b.is_ascii_hexdigit()), "{secret}");
        assert_eq!(
            credentials.identify(secret),
            Some(("self", Standing::Trusted))
        );
        assert_ne!(
            Credentials::none().self_secret(),
            secret,
            "fresh per process"
        );
    }

    #[test]
    fn comparison_looks_at_every_byte() {
        let a = digest("a");
        let mut first = a;
        first[0] ^= 1;
        let mut last = a;
        last[31] ^= 0x80;
        assert!(same(&a, &a));
        assert!(!same(&a, &first));
        assert!(!same(&a, &last));
    }

    #[test]
    fn a_missing_token_variable_names_the_setting_and_the_variable() {
        let err =
            Credentials::from_config(&server(&[("ledger", "NO_SUCH_TOKEN")]), env).unwrap_err();
        assert_eq!(
            err.to_string(),
            "server.trusted_delegators[0].token_env: environment variable NO_SUCH_TOKEN is not set or is empty; export it with the bearer token delegator `ledger` presents"
        );
        let empty = Credentials::from_config(&server(&[("ledger", "EMPTY_TOKEN")]), env)
            .unwrap_err()
            .to_string();
        assert!(
            empty.contains("EMPTY_TOKEN is not set or is empty"),
            "{empty}"
        );
    }

    #[test]
    fn short_and_shared_tokens_are_refused_without_showing_them() {
        let short = Credentials::from_config(&server(&[("a", "SHORT_TOKEN")]), env)
            .unwrap_err()
            .to_string();
        assert_eq!(
            short,
            "server.trusted_delegators[0].token_env: the token in SHORT_TOKEN is shorter than 16 characters; use a long random one (e.g. `openssl rand -hex 32`)"
        );
        let shared =
            Credentials::from_config(&server(&[("a", "LEDGER_TOKEN"), ("b", "COPY_TOKEN")]), env)
                .unwrap_err()
                .to_string();
        assert_eq!(
            shared,
            "server.trusted_delegators[1].token_env: COPY_TOKEN holds the same token as server.trusted_delegators[0]; give each delegator and caller its own token"
        );
        assert!(!shared.contains(LEDGER_TOKEN));
    }

    #[test]
    fn debug_output_shows_ids_and_no_secret() {
        let credentials =
            Credentials::from_config(&server(&[("ledger", "LEDGER_TOKEN")]), env).unwrap();
        let shown = format!("{credentials:?}");
        assert!(
            shown.contains("ledger") && shown.contains("self"),
            "{shown}"
        );
        assert!(!shown.contains(credentials.self_secret()), "{shown}");
    }

    #[test]
    fn a_caller_token_identifies_an_untrusted_participant_whose_id_is_reserved() {
        let mut config = server(&[("ledger", "LEDGER_TOKEN")]);
        config.callers.push(crate::base::config::CallerConfig {
            id: "alice".into(),
            token_env: "ALICE_TOKEN".into(),
        });
        let env = |name: &str| match name {
            "ALICE_TOKEN" => Some("alice-token-0123456789abcdef".to_string()),
            other => env(other),
        };
        let credentials = Credentials::from_config(&config, env).unwrap();
        assert_eq!(
            credentials.identify("alice-token-0123456789abcdef"),
            Some(("alice", Standing::Participant))
        );
        assert!(credentials.is_reserved("alice") && credentials.is_reserved("ledger"));
        assert!(credentials.is_reserved("self") && !credentials.is_reserved("bob"));
        assert_eq!(credentials.caller_ids().collect::<Vec<_>>(), ["alice"]);
        assert_eq!(credentials.configured_ids().collect::<Vec<_>>(), ["ledger"]);
    }

    #[test]
    fn a_caller_sharing_a_delegators_token_is_refused_naming_both_settings() {
        let mut config = server(&[("ledger", "LEDGER_TOKEN")]);
        config.callers.push(crate::base::config::CallerConfig {
            id: "alice".into(),
            token_env: "COPY_TOKEN".into(),
        });
        let error = Credentials::from_config(&config, env)
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "server.callers[0].token_env: COPY_TOKEN holds the same token as server.trusted_delegators[0]; give each delegator and caller its own token"
        );
    }
}
