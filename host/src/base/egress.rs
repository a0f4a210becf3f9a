//! Outbound HTTP to hosts an operator allowed: which addresses a `host:port` pattern lets the
//! harness reach (public ones; loopback, private and link-local only when a pattern lists that
//! address), the name resolved once and every address checked, and the connection opened to
//! the checked address, never to a second lookup's answer. A plugin's granted requests
//! (`work::plugins::outbound`) and push notifications (`app::push`) both go through here, so the
//! two cannot drift apart.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use crate::base::config::{HostMatch, HostPattern};

/// Addresses one name may resolve to that are tried in turn: enough for a dual-stack host with
/// a spare, few enough that a name resolving to hundreds cannot stall a request.
pub const MAX_ADDRESSES_TRIED: usize = 4;

/// Why a request was not sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EgressError {
    /// The target matches no allowed pattern.
    #[error("{0} is not an allowed host")]
    NotAllowed(String),
    /// The name resolved only to addresses the patterns do not let it reach.
    #[error(
        "{host} resolves to {addresses}: a loopback, private or link-local address is reached \
         only when the allowed hosts list that address"
    )]
    Prohibited {
        /// The name, as requested.
        host: String,
        /// What it resolved to, comma-separated.
        addresses: String,
    },
    /// The name could not be resolved.
    #[error("cannot resolve {host}: {why}")]
    Dns {
        /// The name.
        host: String,
        /// The resolver's reason.
        why: String,
    },
    /// No allowed address took the connection.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The TLS handshake failed.
    #[error("TLS failed: {0}")]
    Tls(String),
}

/// Where a request goes: a lower-case host (IPv6 without brackets) and a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Lower-case; an IPv6 address without its brackets.
    pub host: String,
    /// The port, the scheme's default when the URL names none.
    pub port: u16,
    /// Whether the connection is TLS.
    pub https: bool,
}

impl Target {
    /// The target of an `http` or `https` URI; `None` for any other scheme or no host.
    pub fn of_uri(uri: &http::Uri) -> Option<Target> {
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return None,
        };
        let host = uri.host().filter(|h| !h.is_empty())?.to_ascii_lowercase();
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .map(str::to_string)
            .unwrap_or(host);
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        Some(Target { host, port, https })
    }

    /// `host:port`, IPv6 in brackets: as patterns are written.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The patterns of `allowed` that admit this target.
    pub fn matching<'a>(&self, allowed: &'a [HostPattern]) -> Vec<&'a HostPattern> {
        allowed
            .iter()
            .filter(|p| p.admits(&self.host, self.port))
            .collect()
    }
}

/// The addresses of `target` that `patterns` (those it matched) let the harness reach, at most
/// [`MAX_ADDRESSES_TRIED`]: the name resolved once here, and these are the addresses to
/// connect to.
pub async fn resolve_allowed(
    target: &Target,
    patterns: &[&HostPattern],
) -> Result<Vec<SocketAddr>, EgressError> {
    if target.host.is_empty() || patterns.is_empty() {
        return Err(EgressError::NotAllowed(target.authority()));
    }
    let addresses: Vec<SocketAddr> = match target.host.parse::<IpAddr>() {
        Ok(address) => vec![SocketAddr::new(address, target.port)],
        Err(_) => tokio::net::lookup_host((target.host.as_str(), target.port))
            .await
            .map_err(|err| EgressError::Dns {
                host: target.host.clone(),
                why: err.to_string(),
            })?
            .collect(),
    };
    let allowed: Vec<SocketAddr> = addresses
        .iter()
        .copied()
        .filter(|a| address_allowed(a.ip(), patterns))
        .take(MAX_ADDRESSES_TRIED)
        .collect();
    if allowed.is_empty() {
        let shown: Vec<String> = addresses.iter().map(|a| a.ip().to_string()).collect();
        return Err(EgressError::Prohibited {
            host: target.host.clone(),
            addresses: shown.join(", "),
        });
    }
    Ok(allowed)
}

/// A TCP connection to the first of `addresses` that takes it.
pub async fn connect(addresses: &[SocketAddr]) -> Result<tokio::net::TcpStream, EgressError> {
    let mut last = None;
    for address in addresses {
        match tokio::net::TcpStream::connect(address).await {
            Ok(stream) => return Ok(stream),
            Err(err) => last = Some(err),
        }
    }
    Err(EgressError::Connect(
        last.map(|e| e.to_string()).unwrap_or_default(),
    ))
}

/// TLS over `stream` to `host`, checked against the Mozilla roots.
pub async fn tls_connect(
    host: &str,
    stream: tokio::net::TcpStream,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, EgressError> {
    use tokio_rustls::rustls;
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|err| EgressError::Tls(err.to_string()))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|err| EgressError::Tls(err.to_string()))?;
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, stream)
        .await
        .map_err(|err| EgressError::Tls(err.to_string()))
}

/// Whether a request that matched `patterns` may connect to `address`: a public address, or
/// one a pattern lists itself (the only way to reach loopback, private or link-local).
pub fn address_allowed(address: IpAddr, patterns: &[&HostPattern]) -> bool {
    let address = address.to_canonical();
    let listed = patterns.iter().any(|p| match p.host {
        HostMatch::Address(a) => a.to_canonical() == address,
        _ => false,
    });
    listed || is_public(address)
}

/// Whether an address is on the public internet: not loopback, private, link-local, shared
/// (CGNAT), unspecified, multicast, broadcast or reserved, and not an IPv6 form that carries
/// such an IPv4 address (mapped, NAT64, 6to4) or hides one (Teredo).
pub fn is_public(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            let s = v6.segments();
            let embedded = |hi: u16, lo: u16| Ipv4Addr::from(((hi as u32) << 16) | lo as u32);
            if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
                return is_public_v4(embedded(s[6], s[7])); // NAT64 64:ff9b::/96
            }
            if s[0] == 0x2002 {
                return is_public_v4(embedded(s[1], s[2])); // 6to4
            }
            !(v6.is_unspecified()
                || v6.is_loopback()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link-local
                || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
                || (s[0] == 0x2001 && s[1] == 0) // Teredo
                || s[..6] == [0, 0, 0, 0, 0, 0]) // IPv4-compatible and the rest of ::/96
        }
    }
}

fn is_public_v4(v4: Ipv4Addr) -> bool {
    let [a, b, ..] = v4.octets();
    !(v4.is_unspecified()
        || v4.is_loopback()
        || v4.is_private()
        || v4.is_link_local()
        || v4.is_multicast()
        || v4.is_broadcast()
        || a == 0 // "this network"
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && v4.octets()[2] == 0) // IETF protocol assignments
        || a >= 240) // reserved
}

/// Addresses written into tests of [`is_public`]: the forms a hostile name may resolve to.
#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn loopback_private_link_local_and_their_ipv6_forms_are_not_public() {
        for text in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "fe80::1",
            "fd00::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "::127.0.0.1",
        ] {
            assert!(!is_public(ip(text)), "{text}");
        }
        for text in ["93.184.216.34", "2606:4700::1111", "::ffff:8.8.8.8"] {
            assert!(is_public(ip(text)), "{text}");
        }
    }

    #[test]
    fn a_private_address_is_allowed_only_when_listed_as_that_address() {
        let listed = HostPattern::parse("127.0.0.1:8080").unwrap();
        let named = HostPattern::parse("localhost:8080").unwrap();
        assert!(address_allowed(ip("127.0.0.1"), &[&listed]));
        assert!(address_allowed(ip("::ffff:127.0.0.1"), &[&listed]));
        assert!(!address_allowed(ip("127.0.0.2"), &[&listed]));
        assert!(!address_allowed(ip("127.0.0.1"), &[&named]));
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_loopback_is_refused_unless_its_address_is_listed() {
        let target = Target::of_uri(&"http://localhost:8080/hook".parse().unwrap()).unwrap();
        let by_name = [HostPattern::parse("localhost:8080").unwrap()];
        let err = resolve_allowed(&target, &target.matching(&by_name))
            .await
            .unwrap_err();
        assert!(matches!(err, EgressError::Prohibited { .. }), "{err}");
        let other_port = [HostPattern::parse("localhost:9090").unwrap()];
        assert_eq!(
            resolve_allowed(&target, &target.matching(&other_port)).await,
            Err(EgressError::NotAllowed("localhost:8080".into()))
        );
        let literal = Target::of_uri(&"http://127.0.0.1:8080/".parse().unwrap()).unwrap();
        let listed = [HostPattern::parse("127.0.0.1:8080").unwrap()];
        let addresses = resolve_allowed(&literal, &literal.matching(&listed))
            .await
            .unwrap();
        assert_eq!(addresses, vec!["127.0.0.1:8080".parse().unwrap()]);
    }
}
