//! One bearer JWT checked against one key and the configured issuer, audience, participant
//! claim and scopes, by `jsonwebtoken`; what is left is the participant it names.

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Header, Validation};
use serde_json::{Map, Value};

use super::keys::ACCEPTED_ALGORITHMS;
use super::refusal::{MAX_PARTICIPANT_CHARS, OidcRefusal};
use crate::base::config::{OidcConfig, SELF_AGENT_ID};

/// Seconds of clock difference allowed around `exp` and `nbf`: the issuer's clock and this
/// host's are never quite the same, and a minute is what issuers and verifiers commonly allow.
pub const CLOCK_SKEW_LEEWAY_SECS: u64 = 60;
/// The longest bearer JWT read: real ones are one to a few kilobytes; past this, nothing is
/// decoded.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// The token's header, when it is readable and names an accepted algorithm.
pub fn header(token: &str) -> Result<Header, OidcRefusal> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(OidcRefusal::Malformed);
    }
    let header = jsonwebtoken::decode_header(token).map_err(|err| match err.kind() {
        // `none` and names the library does not know fail as an unreadable header.
        ErrorKind::Json(_) if token.split('.').count() == 3 => OidcRefusal::Algorithm,
        _ => OidcRefusal::Malformed,
    })?;
    if !ACCEPTED_ALGORITHMS.contains(&header.alg) {
        return Err(OidcRefusal::Algorithm);
    }
    Ok(header)
}

/// Verifies `token` (signed with `alg`) with `key`, then reads its participant and checks its
/// scopes.
pub fn participant(
    token: &str,
    alg: Algorithm,
    key: &DecodingKey,
    config: &OidcConfig,
) -> Result<String, OidcRefusal> {
    let mut validation = Validation::new(alg);
    validation.leeway = CLOCK_SKEW_LEEWAY_SECS;
    validation.validate_exp = true;
    validation.validate_nbf = true;
    validation.validate_aud = true;
    validation.set_issuer(&[config.issuer.as_str()]);
    validation.set_audience(&[config.audience.as_str()]);
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    let data = jsonwebtoken::decode::<Map<String, Value>>(token, key, &validation)
        .map_err(|err| refusal_of(err.kind()))?;
    let claims = data.claims;
    let participant = claims
        .get(&config.participant_claim)
        .and_then(Value::as_str)
        .filter(|id| is_clean_participant(id))
        .ok_or_else(|| OidcRefusal::Participant(config.participant_claim.clone()))?;
    for scope in &config.required_scopes {
        if !has_scope(&claims, scope) {
            return Err(OidcRefusal::Scope(scope.clone()));
        }
    }
    Ok(participant.to_string())
}

/// A participant id a token may name: not blank, capped, no control characters, and not the
/// id that stands for this harness's own secret.
fn is_clean_participant(id: &str) -> bool {
    !id.trim().is_empty()
        && id.chars().count() <= MAX_PARTICIPANT_CHARS
        && !id.chars().any(char::is_control)
        && id != SELF_AGENT_ID
}

/// Whether the token grants `scope`: in `scope` (RFC 8693 §4.2: space-separated) or `scp`
/// (a list, or a space-separated string as some issuers write it).
fn has_scope(claims: &Map<String, Value>, scope: &str) -> bool {
    ["scope", "scp"].iter().any(|name| match claims.get(*name) {
        Some(Value::String(list)) => list.split_whitespace().any(|s| s == scope),
        Some(Value::Array(list)) => list.iter().any(|s| s.as_str() == Some(scope)),
        _ => false,
    })
}

/// The public reason for a library error.
fn refusal_of(kind: &ErrorKind) -> OidcRefusal {
    match kind {
        ErrorKind::ExpiredSignature => OidcRefusal::Expired,
        ErrorKind::ImmatureSignature => OidcRefusal::NotYetValid,
        ErrorKind::InvalidIssuer => OidcRefusal::Issuer,
        ErrorKind::InvalidAudience => OidcRefusal::Audience,
        ErrorKind::InvalidSignature => OidcRefusal::Signature,
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => OidcRefusal::KeyMismatch,
        ErrorKind::MissingRequiredClaim(claim) | ErrorKind::InvalidClaimFormat(claim) => {
            OidcRefusal::Claim(claim.clone())
        }
        _ => OidcRefusal::Malformed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scopes_are_read_from_either_claim_in_either_form() {
        let claims = |v: Value| v.as_object().unwrap().clone();
        assert!(has_scope(&claims(json!({"scope": "a b"})), "b"));
        assert!(has_scope(&claims(json!({"scp": ["a", "b"]})), "a"));
        assert!(has_scope(&claims(json!({"scp": "a b"})), "a"));
        assert!(!has_scope(&claims(json!({"scope": "ab"})), "a"));
        assert!(!has_scope(&claims(json!({"scope": ["a"], "scp": 1})), "b"));
    }

    #[test]
    fn participant_ids_are_clean_capped_and_never_self() {
        assert!(is_clean_participant("alice@example.com"));
        assert!(is_clean_participant(&"x".repeat(MAX_PARTICIPANT_CHARS)));
        for bad in ["", "  ", "a\nb", "a\u{7}", "self"] {
            assert!(!is_clean_participant(bad), "{bad:?}");
        }
        assert!(!is_clean_participant(
            &"x".repeat(MAX_PARTICIPANT_CHARS + 1)
        ));
    }

    #[test]
    fn an_unsigned_or_hmac_header_is_refused_before_any_key_is_looked_up() {
        use jsonwebtoken::{EncodingKey, Header, encode};
        let none = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJhIn0.";
        assert_eq!(header(none).unwrap_err(), OidcRefusal::Algorithm);
        let hs = encode(
            &Header::new(Algorithm::HS256),
            &json!({"sub": "a"}),
            &EncodingKey::from_secret(b"k").unwrap(),
        )
        .unwrap();
        assert_eq!(header(&hs).unwrap_err(), OidcRefusal::Algorithm);
        assert_eq!(header("a.b").unwrap_err(), OidcRefusal::Malformed);
        assert_eq!(
            header(&"a".repeat(MAX_TOKEN_BYTES + 1)).unwrap_err(),
            OidcRefusal::Malformed
        );
    }
}
