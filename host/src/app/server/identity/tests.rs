//! Identification: tokens, claims and the verifier seam, and a property over every combination
//! of what a request can carry.

use proptest::prelude::*;

use super::*;
use crate::base::config::{CallerConfig, ServerConfig, TrustedDelegatorConfig};

const ALICE_TOKEN: &str = "alice-token-0123456789abcdef";
const BOB_TOKEN: &str = "bob-token-0123456789abcdef00";
const LEDGER_TOKEN: &str = "ledger-token-0123456789abcdef";
/// The token the fake verifier accepts, as the participant `carol`.
const JWT_CAROL: &str = "eyJ.carol.sig";
/// A token the fake verifier accepts, naming a reserved id.
const JWT_LEDGER: &str = "eyJ.ledger.sig";

/// A verifier that knows two tokens, for the seam.
struct FakeVerifier;

#[async_trait]
impl BearerVerifier for FakeVerifier {
    async fn participant(&self, token: &str) -> Result<String, String> {
        match token {
            JWT_CAROL => Ok("carol".to_string()),
            JWT_LEDGER => Ok("ledger".to_string()),
            _ => Err("the token is expired".to_string()),
        }
    }
}

fn credentials() -> Arc<Credentials> {
    let server = ServerConfig {
        trusted_delegators: vec![TrustedDelegatorConfig {
            id: "ledger".into(),
            token_env: "LEDGER".into(),
        }],
        callers: vec![
            CallerConfig {
                id: "alice".into(),
                token_env: "ALICE".into(),
            },
            CallerConfig {
                id: "bob".into(),
                token_env: "BOB".into(),
            },
        ],
        ..ServerConfig::default()
    };
    let env = |name: &str| {
        Some(
            match name {
                "LEDGER" => LEDGER_TOKEN,
                "ALICE" => ALICE_TOKEN,
                _ => BOB_TOKEN,
            }
            .to_string(),
        )
    };
    Arc::new(Credentials::from_config(&server, env).unwrap())
}

fn identifier(verifier: bool, anonymous: bool) -> Identifier {
    let verifier = verifier.then(|| Arc::new(FakeVerifier) as Arc<dyn BearerVerifier>);
    Identifier::new(credentials(), verifier, anonymous)
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

#[tokio::test]
async fn a_caller_token_proves_an_untrusted_participant_and_a_delegator_token_a_trusted_one() {
    let ids = identifier(false, true);
    let alice = ids.identify(Some(&bearer(ALICE_TOKEN)), None).await;
    assert_eq!(alice, Ok(Caller::authenticated("alice")));
    let ledger = ids.identify(Some(&bearer(LEDGER_TOKEN)), None).await;
    assert_eq!(ledger, Ok(Caller::delegator("ledger")));
    let own = bearer(ids.credentials.self_secret());
    let own = ids.identify(Some(&own), None).await;
    assert_eq!(own, Ok(Caller::delegator("self")));
    let same = ids
        .identify(Some(&bearer(ALICE_TOKEN)), Some("alice"))
        .await;
    assert_eq!(
        same,
        Ok(Caller::authenticated("alice")),
        "naming itself is fine"
    );
}

#[tokio::test]
async fn a_proven_caller_naming_someone_else_is_forbidden_golden() {
    let ids = identifier(false, true);
    let error = ids
        .identify(Some(&bearer(ALICE_TOKEN)), Some("bob"))
        .await
        .unwrap_err();
    assert_eq!(error.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        error.to_string(),
        "X-Participant-Id: `bob` is not `alice`, whose credential was presented; a caller speaks only as itself"
    );
    let metadata = ids.check_claim(&Caller::delegator("ledger"), METADATA_FIELD, Some("alice"));
    assert_eq!(metadata.unwrap_err().status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn reserved_ids_are_refused_without_their_credential_golden() {
    let ids = identifier(false, true);
    for reserved in ["self", "ledger", "alice", " alice "] {
        let error = ids.identify(None, Some(reserved)).await.unwrap_err();
        assert_eq!(error.status(), StatusCode::UNAUTHORIZED, "{reserved}");
    }
    assert_eq!(
        ids.identify(None, Some("self"))
            .await
            .unwrap_err()
            .to_string(),
        "X-Participant-Id: `self` is claimed by a credential of this server; present its bearer token to act as it"
    );
    let claimed = ids.check_claim(&Caller::from_header(None), METADATA_FIELD, Some("ledger"));
    assert_eq!(claimed.unwrap_err().status(), StatusCode::UNAUTHORIZED);
    let mallory = ids.identify(None, Some("mallory")).await;
    assert_eq!(mallory, Ok(Caller::from_header(Some("mallory"))));
}

#[tokio::test]
async fn a_token_that_is_no_credential_goes_to_the_verifier_and_is_refused_without_one() {
    let without = identifier(false, true);
    let error = without.identify(Some(&bearer(JWT_CAROL)), None).await;
    assert_eq!(error, Err(IdentityError::UnknownToken));
    let with = identifier(true, true);
    let carol = with.identify(Some(&bearer(JWT_CAROL)), None).await;
    assert_eq!(carol, Ok(Caller::authenticated("carol")));
    let expired = with
        .identify(Some(&bearer("eyJ.other")), None)
        .await
        .unwrap_err();
    assert_eq!(
        expired.to_string(),
        "Authorization: the bearer token was refused: the token is expired"
    );
    assert_eq!(expired.status(), StatusCode::UNAUTHORIZED);
    let reserved = with
        .identify(Some(&bearer(JWT_LEDGER)), None)
        .await
        .unwrap_err();
    assert_eq!(reserved, IdentityError::ReservedSubject("ledger".into()));
    assert_eq!(reserved.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn without_anonymous_callers_every_request_needs_a_credential() {
    let ids = identifier(false, false);
    for participant in [None, Some("mallory")] {
        let error = ids.identify(None, participant).await.unwrap_err();
        assert_eq!(error, IdentityError::CredentialsRequired);
    }
    let alice = ids.identify(Some(&bearer(ALICE_TOKEN)), None).await;
    assert_eq!(alice, Ok(Caller::authenticated("alice")));
}

#[tokio::test]
async fn other_schemes_and_empty_tokens_are_refused_without_echoing_them() {
    let ids = identifier(true, true);
    for value in ["Basic dXNlcjpwYXNz", "Bearer", "Bearer   ", "token"] {
        let error = ids.identify(Some(value), None).await.unwrap_err();
        assert_eq!(error, IdentityError::NotBearer, "{value}");
    }
    let unknown = identifier(false, true)
        .identify(Some("Bearer not-a-known-token-at-all"), None)
        .await
        .unwrap_err();
    assert!(!unknown.to_string().contains("not-a-known-token"));
    assert_eq!(unknown.rpc_error().code, INVALID_REQUEST);
}

#[test]
fn a_claimed_id_is_quoted_cut_and_escaped() {
    let long = format!("{}\"\n", "x".repeat(40));
    let error = identifier(false, true)
        .check_claim(&Caller::authenticated("alice"), METADATA_FIELD, Some(&long))
        .unwrap_err()
        .to_string();
    assert!(error.contains(&format!("`{}…`", "x".repeat(32))), "{error}");
}

/// What a request carries in the property below.
#[derive(Debug, Clone)]
enum Token {
    Absent,
    Alice,
    Bob,
    Ledger,
    Own,
    Jwt,
    Invalid,
}

fn token() -> impl Strategy<Value = Token> {
    prop_oneof![
        Just(Token::Absent),
        Just(Token::Alice),
        Just(Token::Bob),
        Just(Token::Ledger),
        Just(Token::Own),
        Just(Token::Jwt),
        Just(Token::Invalid),
    ]
}

/// A participant id as a header or a message may name one: a reserved id, a caller, a stranger.
fn named() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        Just(Some("self".to_string())),
        Just(Some("alice".to_string())),
        Just(Some("bob".to_string())),
        Just(Some("ledger".to_string())),
        Just(Some("carol".to_string())),
        "[a-z ]{1,8}".prop_map(Some),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever a request carries, it is served, if at all, as the participant its credential
    /// proves; an unproven one as a non-reserved id it claimed; never as `self`, a delegator or
    /// a token caller without their token.
    #[test]
    fn no_request_is_served_as_a_participant_it_did_not_prove(
        token in token(),
        header in named(),
        metadata in named(),
        anonymous in any::<bool>(),
    ) {
        let ids = identifier(true, anonymous);
        let own = ids.credentials.self_secret().to_string();
        let (authorization, proves) = match &token {
            Token::Absent => (None, None),
            Token::Alice => (Some(bearer(ALICE_TOKEN)), Some("alice")),
            Token::Bob => (Some(bearer(BOB_TOKEN)), Some("bob")),
            Token::Ledger => (Some(bearer(LEDGER_TOKEN)), Some("ledger")),
            Token::Own => (Some(bearer(&own)), Some("self")),
            Token::Jwt => (Some(bearer(JWT_CAROL)), Some("carol")),
            Token::Invalid => (Some(bearer("eyJ.forged")), None),
        };
        let served = block_on(ids.identify(authorization.as_deref(), header.as_deref()))
            .and_then(|caller| {
                let message_named = metadata.as_deref().map(str::trim).filter(|s| !s.is_empty());
                ids.check_claim(&caller, METADATA_FIELD, message_named)?;
                Ok((caller, message_named.map(str::to_string)))
            });
        let Ok((caller, message_named)) = served else {
            return Ok(());
        };
        match (proves, &token) {
            (Some(id), _) => {
                prop_assert!(caller.proven);
                prop_assert_eq!(&caller.participant_id, id);
                prop_assert_eq!(caller.trusted, matches!(token, Token::Ledger | Token::Own));
                if let Some(named) = &message_named {
                    prop_assert_eq!(named, id, "a proven caller speaks only as itself");
                }
            }
            (None, Token::Absent) => {
                prop_assert!(anonymous, "served without a credential");
                prop_assert!(!caller.proven && !caller.trusted);
                // Served (get, list, cancel) as its header's id; a message sent as the id
                // its metadata names, when it names one: neither may stand for a credential.
                let speaks_as = message_named.unwrap_or(caller.participant_id.clone());
                for reserved in ["self", "ledger", "alice", "bob"] {
                    prop_assert_ne!(caller.participant_id.as_str(), reserved);
                    prop_assert_ne!(speaks_as.as_str(), reserved);
                }
            }
            (None, _) => prop_assert!(false, "an invalid token was served as {caller:?}"),
        }
    }
}
