//! The HTTP headers that carry A2A service parameters (§3.2.6, §9.2) and the caller's identity,
//! and the checks the server makes on them before any method runs.

use axum::http::HeaderMap;

use crate::a2a::jsonrpc::{RpcError, UNSUPPORTED_OPERATION, VERSION_NOT_SUPPORTED};
use crate::tasks::Caller;

/// The protocol version the client speaks.
pub const A2A_VERSION_HEADER: &str = "a2a-version";
/// Comma-separated URIs of the extensions the client wants to use.
pub const A2A_EXTENSIONS_HEADER: &str = "a2a-extensions";
/// Who the caller is; see [`Caller::from_header`].
pub const PARTICIPANT_HEADER: &str = "x-participant-id";
/// The `Major.Minor` version this server speaks.
pub const SUPPORTED_VERSION: &str = "1.0";

/// Accepts `A2A-Version: 1.0` (a patch such as `1.0.2` is tolerated: §3.6 says patches never
/// matter for compatibility) and refuses any other version with `VersionNotSupportedError`.
///
/// A missing or empty header is accepted as 1.0. §3.6.2 says an empty value means 0.3, but this
/// server only knows the 1.0 method names (`SendMessage`, not 0.3's `message/send`), so a request
/// that reaches a method here was written against 1.0 whatever its headers say, and a real 0.3
/// client gets `Method not found` for its 0.3 method names anyway.
pub fn check_version(headers: &HeaderMap) -> Result<(), RpcError> {
    let Some(raw) = headers.get(A2A_VERSION_HEADER) else {
        return Ok(());
    };
    let value = String::from_utf8_lossy(raw.as_bytes()).trim().to_string();
    if value.is_empty() || is_supported_version(&value) {
        return Ok(());
    }
    let message =
        format!("A2A version {value:?} is not supported; this agent supports {SUPPORTED_VERSION}");
    Err(RpcError::new(VERSION_NOT_SUPPORTED, message)
        .with_metadata("requestedVersion", value)
        .with_metadata("supportedVersions", SUPPORTED_VERSION))
}

/// `1.0` or `1.0.<patch>`, where the patch is digits.
fn is_supported_version(value: &str) -> bool {
    let Some(rest) = value.strip_prefix(SUPPORTED_VERSION) else {
        return false;
    };
    match rest.strip_prefix('.') {
        None => rest.is_empty(),
        Some(patch) => !patch.is_empty() && patch.bytes().all(|b| b.is_ascii_digit()),
    }
}

/// Refuses a request that asks for an extension this server does not implement, naming it, so a
/// client never believes an extension is in force when it is not.
pub fn check_extensions(headers: &HeaderMap, supported: &[String]) -> Result<(), RpcError> {
    for raw in headers.get_all(A2A_EXTENSIONS_HEADER) {
        let value = String::from_utf8_lossy(raw.as_bytes()).to_string();
        let unknown = value
            .split(',')
            .map(str::trim)
            .filter(|uri| !uri.is_empty())
            .find(|uri| !supported.iter().any(|known| known == uri));
        if let Some(uri) = unknown {
            let message = format!(
                "extension {uri} is not supported; supported extensions: {}",
                supported.join(", ")
            );
            return Err(
                RpcError::new(UNSUPPORTED_OPERATION, message).with_metadata("extension", uri)
            );
        }
    }
    Ok(())
}

/// The caller named by `X-Participant-Id`, or the anonymous participant. A value that is not
/// valid UTF-8 names nobody.
pub fn caller(headers: &HeaderMap) -> Caller {
    let value = headers
        .get(PARTICIPANT_HEADER)
        .and_then(|value| value.to_str().ok());
    Caller::from_header(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with(name: &'static str, value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(name, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn version_one_point_zero_with_or_without_a_patch_is_accepted() {
        assert!(check_version(&HeaderMap::new()).is_ok());
        assert!(check_version(&with(A2A_VERSION_HEADER, "1.0")).is_ok());
        assert!(check_version(&with(A2A_VERSION_HEADER, " 1.0.2 ")).is_ok());
    }

    #[test]
    fn other_versions_are_refused_naming_the_version() {
        for version in ["0.3", "1.1", "1.01", "1.0.", "1.0.x", "2"] {
            let err = check_version(&with(A2A_VERSION_HEADER, version)).unwrap_err();
            assert_eq!(err.code, VERSION_NOT_SUPPORTED);
            assert!(err.message.contains(version), "{}", err.message);
            assert!(err.message.contains("supports 1.0"), "{}", err.message);
        }
    }

    #[test]
    fn unknown_extensions_are_refused_by_uri() {
        let supported = vec!["https://a/ext".to_string()];
        let ok = with(A2A_EXTENSIONS_HEADER, " https://a/ext ,");
        assert!(check_extensions(&ok, &supported).is_ok());
        let bad = with(A2A_EXTENSIONS_HEADER, "https://a/ext, https://b/ext");
        let err = check_extensions(&bad, &supported).unwrap_err();
        assert_eq!(err.code, UNSUPPORTED_OPERATION);
        assert!(err.message.contains("https://b/ext"));
    }

    #[test]
    fn participant_header_names_the_caller() {
        assert_eq!(
            caller(&with(PARTICIPANT_HEADER, "alice")).participant_id,
            "alice"
        );
        assert_eq!(caller(&HeaderMap::new()).participant_id, "user");
    }
}
