//! The HTTP headers that carry A2A service parameters (§3.2.6, §9.2), and the checks the server
//! makes on them before any method runs. Who the caller is, [`crate::app::server::identity`]
//! says.

use axum::http::HeaderMap;

use crate::base::protocol::headers::{
    A2A_EXTENSIONS_HEADER, A2A_VERSION_HEADER, LEGACY_EXTENSIONS_HEADER, LEGACY_VERSION,
    SUPPORTED_VERSION,
};
use crate::base::protocol::jsonrpc::{RpcError, VERSION_NOT_SUPPORTED};

/// Accepts `A2A-Version: 1.0` (a patch such as `1.0.2` is tolerated: §3.6 says patches never
/// matter for compatibility) and refuses any other version with `VersionNotSupportedError`.
///
/// A missing or empty header is accepted as 1.0. §3.6.2 says an empty value means 0.3, but the
/// method names of the two versions differ (`SendMessage`, 0.3's `message/send`), so a request
/// that reaches a 1.0 method was written against 1.0 whatever its headers say; 0.3 clients,
/// which send no header, use 0.3 names and are checked by [`check_legacy_version`].
pub fn check_version(headers: &HeaderMap) -> Result<(), RpcError> {
    check_one_of(headers, SUPPORTED_VERSION)
}

/// For a 0.3 method name: accepts no header, an empty one (§3.6.2: empty means 0.3) and
/// `0.3[.patch]`; a request that names another version is refused.
pub fn check_legacy_version(headers: &HeaderMap) -> Result<(), RpcError> {
    check_one_of(headers, LEGACY_VERSION)
}

fn check_one_of(headers: &HeaderMap, version: &str) -> Result<(), RpcError> {
    let Some(raw) = headers.get(A2A_VERSION_HEADER) else {
        return Ok(());
    };
    let value = String::from_utf8_lossy(raw.as_bytes()).trim().to_string();
    if value.is_empty() || is_version(&value, version) {
        return Ok(());
    }
    let message = format!(
        "A2A version {value:?} is not supported here; this agent supports {SUPPORTED_VERSION} \
         (and {LEGACY_VERSION} by its 0.3 JSON-RPC method names), and this request needs {version}"
    );
    Err(RpcError::new(VERSION_NOT_SUPPORTED, message)
        .with_metadata("requestedVersion", value)
        .with_metadata(
            "supportedVersions",
            format!("{SUPPORTED_VERSION}, {LEGACY_VERSION}"),
        ))
}

/// Whether a `Content-Type` value is JSON: `application/json`, or a `+json` type such as
/// `application/a2a+json` (§11.1), parameters ignored.
pub fn is_json_media_type(value: &str) -> bool {
    let essence = media_essence(value);
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// The media type A2A 1.0.1 prefers for HTTP+JSON payloads (§11.1).
pub const A2A_JSON_MEDIA_TYPE: &str = "application/a2a+json";

/// Whether a request asks for [`A2A_JSON_MEDIA_TYPE`] answers: its `Accept` names it, or, with
/// no `Accept` that names a JSON type, its body came as it. A client that sends and accepts
/// plain `application/json` (most JSON clients, the TCK among them) keeps getting it.
pub fn prefers_a2a_json(headers: &HeaderMap) -> bool {
    let named = |name| {
        headers.get_all(name).iter().any(|value| {
            String::from_utf8_lossy(value.as_bytes())
                .split(',')
                .any(|item| media_essence(item) == A2A_JSON_MEDIA_TYPE)
        })
    };
    if named(axum::http::header::ACCEPT) {
        return true;
    }
    let accepts_json = headers
        .get_all(axum::http::header::ACCEPT)
        .iter()
        .any(|value| String::from_utf8_lossy(value.as_bytes()).contains("json"));
    !accepts_json && named(axum::http::header::CONTENT_TYPE)
}

/// A media type's essence: before its parameters, trimmed, lower case.
fn media_essence(value: &str) -> String {
    value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// `version` or `version.<patch>`, where the patch is digits.
fn is_version(value: &str, version: &str) -> bool {
    let Some(rest) = value.strip_prefix(version) else {
        return false;
    };
    match rest.strip_prefix('.') {
        None => rest.is_empty(),
        Some(patch) => !patch.is_empty() && patch.bytes().all(|b| b.is_ascii_digit()),
    }
}

/// The extensions a request activates: every URI its extension headers name (`A2A-Extensions`,
/// and for a 0.3 method also 0.3's `X-A2A-Extensions`), each once, in the order named. A URI
/// this server does not implement is ignored (§4.6.3), and since only activated extensions are
/// echoed back, a client can tell it was not in force.
pub fn activated_extensions(
    headers: &HeaderMap,
    legacy: bool,
    supported: &[String],
) -> Result<Vec<String>, RpcError> {
    let names: &[&str] = if legacy {
        &[A2A_EXTENSIONS_HEADER, LEGACY_EXTENSIONS_HEADER]
    } else {
        &[A2A_EXTENSIONS_HEADER]
    };
    let mut activated: Vec<String> = Vec::new();
    let values = names.iter().flat_map(|name| headers.get_all(*name));
    for raw in values {
        let value = String::from_utf8_lossy(raw.as_bytes()).to_string();
        for uri in value
            .split(',')
            .map(str::trim)
            .filter(|uri| !uri.is_empty())
        {
            // §4.6.3: an extension this agent does not implement is ignored for the request
            // (none the card offers is required), not refused: it is neither activated nor
            // echoed.
            if !supported.iter().any(|known| known == uri) {
                tracing::debug!(extension = %crate::base::text::log_field::escape(uri), "ignoring an extension this agent does not implement");
                continue;
            }
            if !activated.iter().any(|known| known == uri) {
                activated.push(uri.to_string());
            }
        }
    }
    Ok(activated)
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
    fn a_legacy_method_takes_no_header_an_empty_one_or_zero_point_three() {
        assert!(check_legacy_version(&HeaderMap::new()).is_ok());
        assert!(check_legacy_version(&with(A2A_VERSION_HEADER, "")).is_ok());
        assert!(check_legacy_version(&with(A2A_VERSION_HEADER, "0.3")).is_ok());
        assert!(check_legacy_version(&with(A2A_VERSION_HEADER, "0.3.0")).is_ok());
        let err = check_legacy_version(&with(A2A_VERSION_HEADER, "1.0")).unwrap_err();
        assert_eq!(err.code, VERSION_NOT_SUPPORTED);
    }

    #[test]
    fn json_media_types_include_the_a2a_type_and_parameters() {
        assert!(is_json_media_type("application/json"));
        assert!(is_json_media_type("Application/JSON; charset=utf-8"));
        assert!(is_json_media_type("application/a2a+json"));
        assert!(!is_json_media_type("text/plain"));
        assert!(!is_json_media_type("application/xml"));
    }

    #[test]
    fn unknown_extensions_are_ignored_and_known_ones_activated() {
        let supported = vec!["https://a/ext".to_string()];
        let ok = with(A2A_EXTENSIONS_HEADER, " https://a/ext ,");
        assert_eq!(
            activated_extensions(&ok, false, &supported).unwrap(),
            ["https://a/ext"]
        );
        let mixed = with(A2A_EXTENSIONS_HEADER, "https://b/ext, https://a/ext");
        assert_eq!(
            activated_extensions(&mixed, false, &supported).unwrap(),
            ["https://a/ext"]
        );
    }

    #[test]
    fn no_header_activates_nothing_and_a_repeated_uri_is_activated_once() {
        let supported = vec!["https://a/ext".to_string()];
        assert!(
            activated_extensions(&HeaderMap::new(), false, &supported)
                .unwrap()
                .is_empty()
        );
        let mut twice = with(A2A_EXTENSIONS_HEADER, "https://a/ext,https://a/ext");
        twice.append(
            A2A_EXTENSIONS_HEADER,
            HeaderValue::from_static("https://a/ext"),
        );
        assert_eq!(
            activated_extensions(&twice, false, &supported).unwrap(),
            ["https://a/ext"]
        );
    }

    #[test]
    fn the_0_3_header_name_counts_only_for_a_0_3_method() {
        let supported = vec!["https://a/ext".to_string()];
        let legacy = with(LEGACY_EXTENSIONS_HEADER, "https://a/ext");
        assert_eq!(
            activated_extensions(&legacy, true, &supported).unwrap(),
            ["https://a/ext"]
        );
        assert!(
            activated_extensions(&legacy, false, &supported)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a2a_json_answers_go_to_clients_that_ask_for_them() {
        let with = |pairs: &[(&str, &str)]| {
            let mut headers = HeaderMap::new();
            for (name, value) in pairs {
                headers.append(
                    axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                    value.parse().unwrap(),
                );
            }
            prefers_a2a_json(&headers)
        };
        assert!(with(&[("accept", "application/a2a+json")]));
        assert!(with(&[(
            "accept",
            "text/plain, Application/A2A+JSON; q=0.9"
        )]));
        assert!(with(&[("content-type", "application/a2a+json")]));
        assert!(with(&[
            ("content-type", "application/a2a+json"),
            ("accept", "*/*")
        ]));
        assert!(!with(&[
            ("content-type", "application/a2a+json"),
            ("accept", "application/json")
        ]));
        assert!(!with(&[("content-type", "application/json")]));
        assert!(!with(&[]));
    }
}
