//! `[server]`: where and how the A2A server listens, its limits, and the callers it knows by
//! their credentials (trusted delegators, token callers) or serves anonymously.

use serde::Deserialize;

use super::defaults;
use super::oidc::OidcConfig;

/// `[server]`: where and how the A2A server listens.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// Socket address to listen on.
    #[serde(default = "defaults::bind")]
    pub bind: String,
    /// The URL other agents reach this one at; derived from `bind` when absent.
    #[serde(default)]
    pub base_url: Option<String>,
    /// Socket address the gRPC binding listens on (HTTP/2 without TLS); no gRPC when absent.
    #[serde(default)]
    pub grpc_bind: Option<String>,
    /// The URL the card lists for the gRPC interface (`host:port`, or an `http(s)://` URL); the
    /// bound `grpc_bind` address when absent.
    #[serde(default)]
    pub grpc_url: Option<String>,
    /// Larger request bodies get HTTP 413.
    #[serde(default = "defaults::max_request_bytes")]
    pub max_request_bytes: usize,
    /// Requests per minute one caller may make before getting HTTP 429 (a trusted delegator is
    /// one caller by its id, anyone else by peer address; this harness itself is never
    /// limited); 0 turns it off.
    #[serde(default = "defaults::rate_limit_per_minute")]
    pub rate_limit_per_minute: u32,
    /// Callers that may shape the brief of a task they create (participants, lifecycle, model,
    /// reasoning effort, parent tasks), each known by the bearer token it presents.
    #[serde(default)]
    pub trusted_delegators: Vec<TrustedDelegatorConfig>,
    /// Callers that prove who they are with a bearer token: each is the participant its id
    /// names, untrusted (it may not shape a brief), and no one else may claim that id.
    #[serde(default)]
    pub callers: Vec<CallerConfig>,
    /// Whether a request without valid credentials is served (as an untrusted participant that
    /// can list nothing). `None`: true when `bind` is a loopback address, false otherwise
    /// ([`ServerConfig::anonymous_allowed`]).
    #[serde(default)]
    pub allow_anonymous: Option<bool>,
    /// Seconds a request head may take to arrive whole (the first from when the connection
    /// opens, later ones from their first byte) before the connection is closed.
    #[serde(default = "defaults::header_read_timeout_secs")]
    pub header_read_timeout_secs: u64,
    /// Seconds a request body may take to arrive whole, from its head, before HTTP 408.
    #[serde(default = "defaults::body_read_timeout_secs")]
    pub body_read_timeout_secs: u64,
    /// Seconds a connection may stay open with no request in flight before it is closed.
    #[serde(default = "defaults::idle_timeout_secs")]
    pub idle_timeout_secs: u64,
    /// Connections open at once; past it, new ones wait unaccepted until one closes.
    #[serde(default = "defaults::max_connections")]
    pub max_connections: usize,
    /// Connections one caller may hold of `max_connections`, event streams included; past it
    /// a request gets HTTP 503 with `Retry-After` and its connection closes. `None`: a quarter
    /// of `max_connections` ([`ServerConfig::connections_per_caller`]).
    #[serde(default)]
    pub max_connections_per_caller: Option<usize>,
    /// Seconds between the keep-alive comments an event stream sends while its task is quiet.
    #[serde(default = "defaults::stream_keep_alive_secs")]
    pub stream_keep_alive_secs: u64,
    /// `[server.oidc]`: bearer JWTs of this OpenID Connect issuer name their caller; off when
    /// absent.
    #[serde(default)]
    pub oidc: Option<OidcConfig>,
}

/// `[[server.trusted_delegators]]`: a caller that presents `Authorization: Bearer <token>`. The
/// token itself is read from the environment at start-up, never from the file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustedDelegatorConfig {
    /// The participant id the delegator acts as; `self` is reserved for this harness.
    pub id: String,
    /// The environment variable that holds the delegator's bearer token.
    pub token_env: String,
}

/// `[[server.callers]]`: a participant that presents `Authorization: Bearer <token>`. The token
/// is read from the environment at start-up, never from the file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallerConfig {
    /// The participant id the caller is; `self` and the delegators' ids are taken.
    pub id: String,
    /// The environment variable that holds the caller's bearer token.
    pub token_env: String,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            bind: defaults::bind(),
            base_url: None,
            grpc_bind: None,
            grpc_url: None,
            max_request_bytes: defaults::max_request_bytes(),
            rate_limit_per_minute: defaults::rate_limit_per_minute(),
            trusted_delegators: Vec::new(),
            callers: Vec::new(),
            allow_anonymous: None,
            header_read_timeout_secs: defaults::header_read_timeout_secs(),
            body_read_timeout_secs: defaults::body_read_timeout_secs(),
            idle_timeout_secs: defaults::idle_timeout_secs(),
            max_connections: defaults::max_connections(),
            max_connections_per_caller: None,
            stream_keep_alive_secs: defaults::stream_keep_alive_secs(),
            oidc: None,
        }
    }
}

impl ServerConfig {
    /// `max_connections_per_caller`, else a quarter of `max_connections`, but at least 8 (a
    /// client's connection pool and a few streams) when the cap allows it.
    pub fn connections_per_caller(&self) -> usize {
        self.max_connections_per_caller.unwrap_or_else(|| {
            (self.max_connections / defaults::CALLER_SHARE_DIVISOR)
                .max(defaults::MIN_DEFAULT_CONNECTIONS_PER_CALLER)
                .min(self.max_connections)
        })
    }

    /// `allow_anonymous`, else whether `bind` is a loopback address: on loopback only this
    /// machine can call, elsewhere anyone who reaches the port could.
    pub fn anonymous_allowed(&self) -> bool {
        self.allow_anonymous
            .unwrap_or_else(|| self.binds_loopback())
    }

    /// Whether every listener binds a loopback address (`127.0.0.0/8`, `::1`, `localhost`):
    /// `bind`, and `grpc_bind` when set, since both serve the same operations to the same
    /// callers. An address that does not parse is not loopback.
    pub fn binds_loopback(&self) -> bool {
        let loopback =
            |addr: Option<std::net::SocketAddr>| addr.is_some_and(|a| a.ip().is_loopback());
        loopback(self.bind_addr())
            && self
                .grpc_bind
                .as_deref()
                .is_none_or(|bind| loopback(parse_bind(bind)))
    }

    /// `bind` as a socket address: an IP address and port, or `localhost:PORT`, which is
    /// `127.0.0.1:PORT`. `localhost` is not looked up: what it names is decided here, so the
    /// loopback rule for anonymous callers and the address bound cannot disagree.
    pub fn bind_addr(&self) -> Option<std::net::SocketAddr> {
        parse_bind(&self.bind)
    }

    /// `grpc_bind` as a socket address, read as [`ServerConfig::bind_addr`] reads `bind`.
    pub fn grpc_bind_addr(&self) -> Option<std::net::SocketAddr> {
        self.grpc_bind.as_deref().and_then(parse_bind)
    }

    /// Whether callers may prove who they are with a bearer token this server issued
    /// (`[[server.trusted_delegators]]`, `[[server.callers]]`): the card then declares an HTTP bearer scheme.
    pub fn has_bearer_callers(&self) -> bool {
        !self.trusted_delegators.is_empty() || !self.callers.is_empty()
    }

    /// Whether any caller can authenticate (a bearer token or an OpenID Connect JWT): the card
    /// then declares its schemes and offers the extended card.
    pub fn authenticates_callers(&self) -> bool {
        self.has_bearer_callers() || self.oidc.is_some()
    }

    /// `base_url`, or `http://{bind}` when it is not set.
    pub fn effective_base_url(&self) -> String {
        match &self.base_url {
            Some(url) => url.trim_end_matches('/').to_string(),
            None => format!("http://{}", self.bind),
        }
    }
}

/// `host:port` with an IP address, or `localhost:PORT` (any case) as `127.0.0.1:PORT`.
pub fn parse_bind(bind: &str) -> Option<std::net::SocketAddr> {
    if let Ok(addr) = bind.parse::<std::net::SocketAddr>() {
        return Some(addr);
    }
    let (host, port) = bind.rsplit_once(':')?;
    if !host.eq_ignore_ascii_case("localhost") {
        return None;
    }
    let port = port.parse::<u16>().ok()?;
    Some(std::net::SocketAddr::from((
        std::net::Ipv4Addr::LOCALHOST,
        port,
    )))
}

/// Whether any way for a caller to prove who it is is configured: token callers or trusted
/// delegators (each method of authentication the server gains is added here, and start-up's
/// check of a network `bind` follows).
pub fn has_caller_auth(server: &ServerConfig) -> bool {
    !server.callers.is_empty() || !server.trusted_delegators.is_empty() || server.oidc.is_some()
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::path::Path;

    use super::parse_bind;
    use crate::base::config::Config;

    #[test]
    fn localhost_binds_the_ipv4_loopback_address_and_counts_as_loopback() {
        assert_eq!(
            parse_bind("localhost:8080"),
            Some("127.0.0.1:8080".parse::<SocketAddr>().unwrap())
        );
        assert_eq!(parse_bind("LocalHost:0").map(|a| a.port()), Some(0));
        let config = Config::parse(
            "[server]\nbind = \"localhost:8080\"\n",
            Path::new("config.toml"),
        )
        .unwrap();
        assert!(config.server.binds_loopback());
        assert!(config.server.anonymous_allowed(), "loopback default");
        assert_eq!(config.server.effective_base_url(), "http://localhost:8080");
    }

    #[test]
    fn other_host_names_are_still_refused_with_the_forms_that_work() {
        assert_eq!(parse_bind("example.com:8080"), None);
        assert_eq!(parse_bind("localhost"), None);
        assert_eq!(parse_bind("localhost:http"), None);
        assert_eq!(
            crate::base::config::testing::error_of("[server]\nbind = \"myhost:8080\"\n"),
            "server.bind: `myhost:8080` is not a socket address; write an IP address and a port, e.g. 127.0.0.1:8080, [::1]:8080, 0.0.0.0:8080, or localhost:8080"
        );
    }
}
