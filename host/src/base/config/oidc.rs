//! `[server.oidc]`: the OpenID Connect issuer whose JWTs prove who a caller is, and its checks.
//!
//! Plain `http://` is accepted for the issuer and the JWKS only on a loopback host: the keys
//! that decide who a caller is must not travel where someone else could swap them, and a local
//! issuer (a test or development identity provider on the same machine) has no one in between.

use serde::Deserialize;

use super::ConfigError;

/// The claim that names the participant when `participant_claim` is not set: the subject.
pub const DEFAULT_PARTICIPANT_CLAIM: &str = "sub";
/// The path of the discovery document below the issuer (OpenID Connect Discovery 1.0 §4).
pub const DISCOVERY_PATH: &str = "/.well-known/openid-configuration";
/// The longest `audience`, claim name or scope: identifiers, not documents.
pub const MAX_OIDC_NAME_CHARS: usize = 256;
/// The most `required_scopes`: a token carrying more is unusual, and each is checked per request.
pub const MAX_REQUIRED_SCOPES: usize = 32;

/// `[server.oidc]`: bearer JWTs from this issuer, for this audience, name their caller.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcConfig {
    /// The issuer's URL, exactly as its tokens carry it in `iss`.
    pub issuer: String,
    /// Where the issuer's signing keys are; when absent, the `jwks_uri` of the issuer's
    /// discovery document (`{issuer}/.well-known/openid-configuration`).
    #[serde(default)]
    pub jwks_url: Option<String>,
    /// The value a token's `aud` must hold: this server's client id or API identifier at the
    /// issuer.
    pub audience: String,
    /// The claim whose string value is the caller's participant id.
    #[serde(default = "default_participant_claim")]
    pub participant_claim: String,
    /// Scopes every token must carry (in `scope`, space-separated, or `scp`, a list); none when
    /// empty.
    #[serde(default)]
    pub required_scopes: Vec<String>,
}

fn default_participant_claim() -> String {
    DEFAULT_PARTICIPANT_CLAIM.to_string()
}

impl OidcConfig {
    /// The issuer's discovery document: `{issuer}/.well-known/openid-configuration`, the issuer
    /// without a trailing slash (Discovery §4.1), which the card's OpenID Connect scheme names.
    pub fn discovery_url(&self) -> String {
        format!("{}{DISCOVERY_PATH}", self.issuer.trim_end_matches('/'))
    }
}

/// Checks `[server.oidc]`, when present, naming the dotted setting at fault.
pub(super) fn validate_oidc(oidc: Option<&OidcConfig>) -> Result<(), ConfigError> {
    let Some(oidc) = oidc else {
        return Ok(());
    };
    check_key_url("server.oidc.issuer", &oidc.issuer)?;
    if let Some(url) = &oidc.jwks_url {
        check_key_url("server.oidc.jwks_url", url)?;
    }
    check_name("server.oidc.audience", &oidc.audience)?;
    check_name("server.oidc.participant_claim", &oidc.participant_claim)?;
    if oidc.required_scopes.len() > MAX_REQUIRED_SCOPES {
        return Err(ConfigError::invalid(
            "server.oidc.required_scopes",
            format!("lists more than {MAX_REQUIRED_SCOPES} scopes"),
        ));
    }
    for (index, scope) in oidc.required_scopes.iter().enumerate() {
        check_name(&format!("server.oidc.required_scopes[{index}]"), scope)?;
    }
    Ok(())
}

/// An issuer or JWKS URL: `https://`, or `http://` on a loopback host; no query or fragment
/// (an issuer has neither, Discovery §3, and a key URL needs neither). The verifier checks a
/// discovered `jwks_uri` by the same rule.
pub fn check_key_url(setting: &str, url: &str) -> Result<(), ConfigError> {
    let parsed = reqwest::Url::parse(url).map_err(|_| {
        ConfigError::invalid(
            setting,
            format!(
                "`{}` is not a URL; write it as https://host/path",
                url.escape_debug()
            ),
        )
    })?;
    let Some(host) = parsed.host_str() else {
        return Err(ConfigError::invalid(
            setting,
            format!("`{url}` has no host"),
        ));
    };
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(ConfigError::invalid(
            setting,
            format!("`{url}` has a query or fragment; an issuer or key URL has neither"),
        ));
    }
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if is_loopback_host(host) => Ok(()),
        "http" => Err(ConfigError::invalid(
            setting,
            format!(
                "`{url}` is plain http on a host that is not loopback; use https:// (plain http is accepted only for 127.0.0.1, ::1 or localhost, where no one in between can swap the keys)"
            ),
        )),
        other => Err(ConfigError::invalid(
            setting,
            format!("`{url}` uses {other}://; use https://"),
        )),
    }
}

/// Whether a URL's host is this machine: `localhost`, 127.0.0.0/8 or `::1`.
pub fn is_loopback_host(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// An audience, claim name or scope: not blank, no whitespace or control characters, capped.
fn check_name(setting: &str, value: &str) -> Result<(), ConfigError> {
    if value.is_empty() {
        return Err(ConfigError::invalid(setting, "must not be blank"));
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ConfigError::invalid(
            setting,
            format!(
                "`{}` holds whitespace or a control character",
                value.escape_debug()
            ),
        ));
    }
    if value.chars().count() > MAX_OIDC_NAME_CHARS {
        return Err(ConfigError::invalid(
            setting,
            format!("is longer than {MAX_OIDC_NAME_CHARS} characters"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::base::config::testing::error_of;

    fn oidc(body: &str) -> String {
        format!("[server.oidc]\n{body}\n")
    }

    #[test]
    fn a_minimal_oidc_table_reads_with_the_subject_as_participant() {
        let text = oidc("issuer = \"https://id.example/realms/a/\"\naudience = \"harness\"");
        let config =
            crate::base::config::Config::parse(&text, std::path::Path::new("config.toml")).unwrap();
        let oidc = config.server.oidc.unwrap();
        assert_eq!(oidc.participant_claim, "sub");
        assert!(oidc.required_scopes.is_empty());
        assert_eq!(
            oidc.discovery_url(),
            "https://id.example/realms/a/.well-known/openid-configuration"
        );
    }

    #[test]
    fn plain_http_is_refused_off_loopback_naming_the_setting() {
        let err = error_of(&oidc("issuer = \"http://id.example\"\naudience = \"a\""));
        assert!(err.starts_with("server.oidc.issuer: "), "{err}");
        assert!(err.contains("loopback"), "{err}");
        let err = error_of(&oidc(
            "issuer = \"https://id.example\"\naudience = \"a\"\njwks_url = \"http://10.0.0.1/keys\"",
        ));
        assert!(err.starts_with("server.oidc.jwks_url: "), "{err}");
        for ok in ["http://127.0.0.1:9", "http://[::1]:9", "http://localhost:9"] {
            let text = oidc(&format!("issuer = \"{ok}\"\naudience = \"a\""));
            assert!(
                crate::base::config::Config::parse(&text, std::path::Path::new("c")).is_ok(),
                "{ok}"
            );
        }
    }

    #[test]
    fn each_bad_setting_is_named() {
        let cases = [
            ("issuer = \"nope\"\naudience = \"a\"", "server.oidc.issuer"),
            (
                "issuer = \"ftp://x\"\naudience = \"a\"",
                "server.oidc.issuer",
            ),
            (
                "issuer = \"https://x?a=1\"\naudience = \"a\"",
                "server.oidc.issuer",
            ),
            (
                "issuer = \"https://x\"\naudience = \"\"",
                "server.oidc.audience",
            ),
            (
                "issuer = \"https://x\"\naudience = \"a\"\nparticipant_claim = \"a b\"",
                "server.oidc.participant_claim",
            ),
            (
                "issuer = \"https://x\"\naudience = \"a\"\nrequired_scopes = [\"ok\", \"\"]",
                "server.oidc.required_scopes[1]",
            ),
            ("issuer = \"https://x\"", "server.oidc.audience"),
            (
                "issuer = \"https://x\"\naudience = \"a\"\nkeys = 1",
                "server.oidc.keys",
            ),
        ];
        for (body, setting) in cases {
            let err = error_of(&oidc(body));
            assert!(err.starts_with(&format!("{setting}: ")), "{body}: {err}");
        }
    }
}
