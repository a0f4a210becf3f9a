//! The checks of the gRPC binding's settings (`server.grpc_bind`, `server.grpc_url`).

use super::ConfigError;
use super::server::{ServerConfig, parse_bind};
use super::validate::check_http_url;

/// A gRPC target `host:port` (what gRPC clients dial), as opposed to a URL.
fn parse_target(url: &str) -> Option<(&str, u16)> {
    let (host, port) = url.rsplit_once(':')?;
    let host_ok = !host.is_empty() && !host.contains(['/', ' ']);
    port.parse::<u16>()
        .ok()
        .filter(|_| host_ok)
        .map(|port| (host, port))
}

impl ServerConfig {
    /// `grpc_bind` a socket address that is not `bind` itself (two listeners cannot share a
    /// port), `grpc_url` a `host:port` target or an HTTP URL, and only with `grpc_bind`.
    pub(super) fn validate_grpc(&self) -> Result<(), ConfigError> {
        validate_grpc(self)
    }
}

fn validate_grpc(server: &ServerConfig) -> Result<(), ConfigError> {
    let Some(bind) = &server.grpc_bind else {
        if server.grpc_url.is_some() {
            return Err(ConfigError::invalid(
                "server.grpc_url",
                "is set but server.grpc_bind is not, so there is no gRPC interface to list; set grpc_bind (e.g. 127.0.0.1:50051) or remove grpc_url",
            ));
        }
        return Ok(());
    };
    let Some(addr) = parse_bind(bind) else {
        return Err(ConfigError::invalid(
            "server.grpc_bind",
            format!(
                "`{bind}` is not a socket address; write an IP address and a port, e.g. 127.0.0.1:50051, [::1]:50051, 0.0.0.0:50051, or localhost:50051"
            ),
        ));
    };
    if addr.port() != 0 && server.bind_addr() == Some(addr) {
        return Err(ConfigError::invalid(
            "server.grpc_bind",
            format!("`{bind}` is server.bind too; the gRPC binding needs a port of its own"),
        ));
    }
    if let Some(url) = &server.grpc_url
        && parse_target(url).is_none()
    {
        check_http_url("server.grpc_url", url)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::base::config::testing::error_of;

    #[test]
    fn grpc_settings_are_checked_golden() {
        assert_eq!(
            error_of("[server]\ngrpc_bind = \"grpc.example:1\"\n"),
            "server.grpc_bind: `grpc.example:1` is not a socket address; write an IP address and a port, e.g. 127.0.0.1:50051, [::1]:50051, 0.0.0.0:50051, or localhost:50051"
        );
        assert_eq!(
            error_of("[server]\nbind = \"127.0.0.1:9000\"\ngrpc_bind = \"127.0.0.1:9000\"\n"),
            "server.grpc_bind: `127.0.0.1:9000` is server.bind too; the gRPC binding needs a port of its own"
        );
        assert_eq!(
            error_of("[server]\ngrpc_url = \"http://127.0.0.1:50051\"\n"),
            "server.grpc_url: is set but server.grpc_bind is not, so there is no gRPC interface to list; set grpc_bind (e.g. 127.0.0.1:50051) or remove grpc_url"
        );
        assert!(
            error_of("[server]\ngrpc_bind = \"127.0.0.1:0\"\ngrpc_url = \"ftp://x\"\n")
                .starts_with("server.grpc_url:")
        );
    }

    #[test]
    fn a_public_grpc_bind_needs_caller_authentication_like_a_public_bind() {
        let error = error_of("[server]\nbind = \"127.0.0.1:0\"\ngrpc_bind = \"0.0.0.0:50051\"\n");
        assert!(
            error.starts_with("server.allow_anonymous: server.bind 127.0.0.1:0 (or server.grpc_bind 0.0.0.0:50051) is not a loopback address"),
            "{error}"
        );
    }
}
