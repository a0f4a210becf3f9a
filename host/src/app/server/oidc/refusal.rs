//! Why a bearer JWT was refused: one public sentence per reason, which never repeats the token
//! or anything read from it (a claim's value, its key id): only settings and claim names.

/// The longest participant id a token may name: it is stored on tasks and shown to the model.
pub const MAX_PARTICIPANT_CHARS: usize = 256;

/// Why a bearer JWT does not name a caller. The message ([`std::fmt::Display`]) is what the
/// caller may be told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OidcRefusal {
    /// Not three base64url parts, a header that is not JSON, or a larger token than accepted.
    #[error("the bearer token is not a JWT this server can read")]
    Malformed,
    /// The header names an algorithm other than RS256, ES256 and EdDSA (`none` and every HMAC
    /// algorithm among them), or one the JOSE library does not know.
    #[error(
        "the bearer token's algorithm is not accepted; this server accepts JWTs signed with RS256, ES256 or EdDSA"
    )]
    Algorithm,
    /// The key the token names is of another type than its algorithm needs.
    #[error("the bearer token's algorithm does not fit the type of the issuer's key it names")]
    KeyMismatch,
    /// No key of the issuer's JWKS has the token's `kid`, even after a refresh.
    #[error("the bearer token names a signing key (kid) the issuer does not publish")]
    UnknownKey,
    /// The token names no `kid` and the issuer publishes several keys of its type.
    #[error("the bearer token names no signing key (kid) and the issuer publishes several")]
    NoKeyId,
    /// The issuer's keys could not be fetched yet.
    #[error("the issuer's signing keys are not available right now; try again later")]
    KeysUnavailable,
    /// The signature does not verify with the issuer's key.
    #[error("the bearer token's signature does not verify")]
    Signature,
    /// `exp` is past (beyond the clock-skew leeway).
    #[error("the bearer token has expired")]
    Expired,
    /// `nbf` is ahead (beyond the clock-skew leeway).
    #[error("the bearer token is not valid yet (nbf)")]
    NotYetValid,
    /// `iss` is not the configured issuer.
    #[error("the bearer token's issuer (iss) is not the one this server trusts")]
    Issuer,
    /// `aud` does not hold the configured audience.
    #[error("the bearer token's audience (aud) does not name this server")]
    Audience,
    /// A claim this server needs is absent or of the wrong type.
    #[error("the bearer token's `{0}` claim is missing or malformed")]
    Claim(String),
    /// The participant claim is not a non-empty string, is too long, holds a control character
    /// or names this harness (`self`).
    #[error(
        "the bearer token's `{0}` claim is not a usable participant id: a non-empty string of at most {max} characters without control characters, and not `self`",
        max = MAX_PARTICIPANT_CHARS
    )]
    Participant(String),
    /// A required scope is not among the token's scopes.
    #[error("the bearer token lacks the scope `{0}`, which this server requires")]
    Scope(String),
}
