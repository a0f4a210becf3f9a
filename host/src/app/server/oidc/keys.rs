//! The issuer's signing keys as read from its JWKS: only RSA, P-256 and Ed25519 public keys
//! meant for signatures; symmetric keys, other curves and keys for encryption are left out.

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use serde_json::Value;

/// The most keys read from one JWKS: an issuer publishes a handful (current, next, previous);
/// more would only make each unknown `kid` cost more.
pub const MAX_JWKS_KEYS: usize = 64;
/// The algorithms a token may be signed with. HMAC is absent on purpose: its key is a shared
/// secret, and a verifier that accepted it could be handed a token "signed" with the public key.
pub const ACCEPTED_ALGORITHMS: [Algorithm; 3] =
    [Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA];

/// One verification key.
pub struct Key {
    kid: Option<String>,
    /// The `alg` the JWK pins, if any: the token's must then be the same.
    alg: Option<Algorithm>,
    family: AlgorithmFamily,
    /// What verifies a signature.
    pub decoding: DecodingKey,
}

impl Key {
    /// Whether this key may verify a token signed with `alg`: its type fits the algorithm (RSA
    /// for RS256, P-256 for ES256, Ed25519 for EdDSA), and an `alg` pinned on the key agrees.
    fn fits(&self, alg: Algorithm) -> bool {
        alg.family() == self.family && self.alg.is_none_or(|pinned| pinned == alg)
    }
}

/// What a token's `kid` finds.
pub enum Lookup<'a> {
    /// A key that fits the token's algorithm.
    Found(&'a Key),
    /// The key named is there but of another type or algorithm: no refresh will change that.
    WrongType,
    /// No key of that id (or, for a token without `kid`, none of its type): a refresh may help.
    Missing,
    /// The token names no `kid` and several keys fit: which one is meant is not guessed.
    Ambiguous,
}

/// The keys of one JWKS fetch.
#[derive(Default)]
pub struct KeySet {
    keys: Vec<Key>,
}

impl KeySet {
    /// The usable keys of a JWKS document, and how many were left out. A key that cannot be
    /// read is skipped rather than failing the set, so one odd key does not lock every caller
    /// out.
    pub fn parse(document: &Value) -> Result<(KeySet, usize), String> {
        let Some(entries) = document.get("keys").and_then(Value::as_array) else {
            return Err("not a JWKS: no `keys` list".to_string());
        };
        let mut skipped = entries.len().saturating_sub(MAX_JWKS_KEYS);
        let mut keys = Vec::new();
        for entry in entries.iter().take(MAX_JWKS_KEYS) {
            match read_key(entry) {
                Some(key) => keys.push(key),
                None => skipped += 1,
            }
        }
        Ok((KeySet { keys }, skipped))
    }

    /// How many keys the set holds.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the set holds no key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The key a token with this `kid` and `alg` is to be verified with.
    pub fn find(&self, kid: Option<&str>, alg: Algorithm) -> Lookup<'_> {
        match kid {
            Some(kid) => match self.keys.iter().find(|k| k.kid.as_deref() == Some(kid)) {
                Some(key) if key.fits(alg) => Lookup::Found(key),
                Some(_) => Lookup::WrongType,
                None => Lookup::Missing,
            },
            None => {
                let mut fitting = self.keys.iter().filter(|k| k.fits(alg));
                match (fitting.next(), fitting.next()) {
                    (Some(key), None) => Lookup::Found(key),
                    (Some(_), Some(_)) => Lookup::Ambiguous,
                    (None, _) => Lookup::Missing,
                }
            }
        }
    }
}

/// One JWK as a [`Key`], or `None` when it is not a public signing key of an accepted type.
fn read_key(entry: &Value) -> Option<Key> {
    let jwk: Jwk = serde_json::from_value(entry.clone()).ok()?;
    if jwk
        .common
        .public_key_use
        .as_ref()
        .is_some_and(|usage| *usage != PublicKeyUse::Signature)
    {
        return None;
    }
    let family = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => AlgorithmFamily::Rsa,
        AlgorithmParameters::EllipticCurve(ec) if ec.curve == EllipticCurve::P256 => {
            AlgorithmFamily::Ec
        }
        AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => {
            AlgorithmFamily::Ed
        }
        _ => return None,
    };
    let alg = match jwk.common.key_algorithm {
        None => None,
        Some(declared) => {
            let alg = Algorithm::try_from(declared).ok()?;
            if !ACCEPTED_ALGORITHMS.contains(&alg) || alg.family() != family {
                return None;
            }
            Some(alg)
        }
    };
    let decoding = DecodingKey::from_jwk(&jwk).ok()?;
    Some(Key {
        kid: jwk.common.key_id.clone(),
        alg,
        family,
        decoding,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const RSA_N: &str = "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw";

    #[test]
    fn symmetric_and_encryption_keys_are_left_out() {
        let document = json!({"keys": [
            {"kty": "oct", "k": "c2VjcmV0", "kid": "h"},
            {"kty": "RSA", "n": RSA_N, "e": "AQAB", "kid": "enc", "use": "enc"},
            {"kty": "RSA", "n": RSA_N, "e": "AQAB", "kid": "r", "alg": "RS256"},
            {"kty": "RSA", "n": RSA_N, "e": "AQAB", "kid": "hs", "alg": "HS256"},
            {"kty": "weird"},
            "not an object"
        ]});
        let (keys, skipped) = KeySet::parse(&document).unwrap();
        assert_eq!((keys.len(), skipped), (1, 5));
        assert!(matches!(
            keys.find(Some("r"), Algorithm::RS256),
            Lookup::Found(_)
        ));
        assert!(matches!(
            keys.find(Some("r"), Algorithm::ES256),
            Lookup::WrongType
        ));
        assert!(matches!(
            keys.find(Some("h"), Algorithm::RS256),
            Lookup::Missing
        ));
        assert!(matches!(
            keys.find(None, Algorithm::RS256),
            Lookup::Found(_)
        ));
        assert!(matches!(keys.find(None, Algorithm::EdDSA), Lookup::Missing));
        assert!(KeySet::parse(&json!({"nokeys": []})).is_err());
    }
}
