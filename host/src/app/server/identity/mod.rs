//! Who a request comes from (design trust boundary 6, "Caller → server"): the one place that
//! turns what a request carries (`Authorization`, `X-Participant-Id`, a message's
//! `metadata.participant_id`) into the [`Caller`] every operation acts for.
//!
//! A bearer token is proof: this harness's own secret (`self`), a trusted delegator's token, a
//! token caller's, or a JWT a [`BearerVerifier`] accepts. A proven caller speaks only as itself:
//! a header or a message naming anyone else is refused (HTTP 403). Without a credential a caller
//! is served only where the operator allows anonymous callers (`server.allow_anonymous`), as
//! the participant it claims, and never as an id a credential stands for (`self`, a delegator,
//! a token caller): such a claim is refused (HTTP 401), not served. Identification runs once per
//! request ([`identify_request`]), before the per-caller limits, which read its answer; the
//! refusal is written after them ([`refuse_unidentified`]), so a caller guessing tokens spends
//! its rate like any other.

pub mod credentials;

use std::sync::Arc;

use async_trait::async_trait;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

pub use credentials::{Credentials, MIN_TOKEN_CHARS, Standing};

use crate::base::protocol::card::CARD_PATH;
use crate::base::protocol::headers::PARTICIPANT_HEADER;
use crate::base::protocol::jsonrpc::{self, INVALID_REQUEST, RequestId, RpcError};
use crate::base::text::log_field;
use crate::state::tasks::Caller;
use crate::state::tasks::service::ANONYMOUS_PARTICIPANT;

/// The authentication scheme of every credential (RFC 6750), matched without case.
pub const BEARER_SCHEME: &str = "bearer";
/// How much of a refused participant id an error quotes: enough to recognise it, not enough to
/// carry a payload back to the caller.
const MAX_ECHOED_ID_CHARS: usize = 32;
/// The field a message names its sender in.
pub const METADATA_FIELD: &str = "message.metadata.participant_id";
/// The participant header as errors name it (the header constant is lower case, as HTTP/2
/// writes it).
pub const PARTICIPANT_FIELD: &str = "X-Participant-Id";

/// Verifies a bearer token that is none of this harness's own credentials (a JWT of a
/// configured issuer, for one). Declared here, implemented by the verifier the runtime builds.
#[async_trait]
pub trait BearerVerifier: Send + Sync {
    /// The participant id the token proves, or a reason safe to show the caller (never the
    /// token, nor anything the token carried that the caller did not already know).
    async fn participant(&self, token: &str) -> Result<String, String>;
}

/// Why a request was refused for who it is. The messages never repeat a token; a claimed id
/// is quoted cut and escaped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    /// The `Authorization` header holds another scheme than `Bearer`, or no token.
    #[error(
        "Authorization: only `Bearer <token>` is accepted, with a token of one of this server's server.callers or server.trusted_delegators"
    )]
    NotBearer,
    /// The token is no credential of this harness (and no verifier accepts it): refused rather
    /// than served as anonymous, so a misconfigured client finds out at once.
    #[error(
        "Authorization: the bearer token is not one of this server's server.callers or server.trusted_delegators"
    )]
    UnknownToken,
    /// The verifier refused the token, for the public reason it gave.
    #[error("Authorization: the bearer token was refused: {0}")]
    Rejected(String),
    /// The verifier's participant is an id a credential of this harness stands for.
    #[error(
        "Authorization: the token names `{0}`, an id reserved for one of this server's own credentials"
    )]
    ReservedSubject(String),
    /// No credential, and this server serves no anonymous callers.
    #[error("Authorization: this server requires a bearer token (server.allow_anonymous is false)")]
    CredentialsRequired,
    /// An unproven caller claimed an id only a credential may claim.
    #[error(
        "{field}: `{id}` is claimed by a credential of this server; present its bearer token to act as it"
    )]
    ReservedClaim {
        /// Where the claim was made (`X-Participant-Id`, [`METADATA_FIELD`]).
        field: &'static str,
        /// The id claimed, cut and escaped.
        id: String,
    },
    /// A proven caller named someone else.
    #[error(
        "{field}: `{named}` is not `{id}`, whose credential was presented; a caller speaks only as itself"
    )]
    OtherParticipant {
        /// Where the other participant was named.
        field: &'static str,
        /// The id named, cut and escaped.
        named: String,
        /// The id the credential proved.
        id: String,
    },
}

impl IdentityError {
    /// 401 for a missing or refused credential, 403 for a proven caller asking to be someone
    /// else.
    pub fn status(&self) -> StatusCode {
        match self {
            IdentityError::ReservedSubject(_) | IdentityError::OtherParticipant { .. } => {
                StatusCode::FORBIDDEN
            }
            _ => StatusCode::UNAUTHORIZED,
        }
    }

    /// The refusal as an A2A error: invalid request, with the header or field it is about.
    pub fn rpc_error(&self) -> RpcError {
        let field = match self {
            IdentityError::ReservedClaim { field, .. }
            | IdentityError::OtherParticipant { field, .. } => *field,
            _ => "Authorization",
        };
        RpcError::new(INVALID_REQUEST, self.to_string()).with_metadata("header", field)
    }
}

/// What identification of one request gave, kept in its extensions for the limits and the
/// bindings.
#[derive(Debug, Clone)]
pub struct Identified(pub Result<Caller, IdentityError>);

/// Everything identification needs: the credentials, the verifier of other bearer tokens, and
/// whether anonymous callers are served.
pub struct Identifier {
    credentials: Arc<Credentials>,
    verifier: Option<Arc<dyn BearerVerifier>>,
    anonymous_allowed: bool,
}

impl Identifier {
    /// An identifier over `credentials`, handing other bearer tokens to `verifier` when set.
    pub fn new(
        credentials: Arc<Credentials>,
        verifier: Option<Arc<dyn BearerVerifier>>,
        anonymous_allowed: bool,
    ) -> Identifier {
        Identifier {
            credentials,
            verifier,
            anonymous_allowed,
        }
    }

    /// The caller a request's headers prove or claim.
    pub async fn caller(&self, headers: &HeaderMap) -> Result<Caller, IdentityError> {
        let authorization = headers
            .get(header::AUTHORIZATION)
            .map(|raw| raw.to_str().map_err(|_| IdentityError::NotBearer))
            .transpose()?;
        let participant = headers
            .get(PARTICIPANT_HEADER)
            .and_then(|value| value.to_str().ok());
        self.identify(authorization, participant).await
    }

    /// Who is calling, from the `Authorization` value and the participant header. With a bearer
    /// token the caller is whoever the token proves, and a header naming anyone else is refused;
    /// a token that proves no one is refused rather than served as anonymous. Without one, the
    /// caller is the unproven participant the header names (or the anonymous one), where
    /// anonymous callers are served at all, and never an id a credential stands for.
    pub async fn identify(
        &self,
        authorization: Option<&str>,
        participant: Option<&str>,
    ) -> Result<Caller, IdentityError> {
        let Some(value) = authorization else {
            if !self.anonymous_allowed {
                return Err(IdentityError::CredentialsRequired);
            }
            let caller = Caller::from_header(participant);
            self.check_claim(&caller, PARTICIPANT_FIELD, Some(&caller.participant_id))?;
            return Ok(caller);
        };
        let (scheme, token) = value
            .trim()
            .split_once(' ')
            .ok_or(IdentityError::NotBearer)?;
        let token = token.trim();
        if !scheme.eq_ignore_ascii_case(BEARER_SCHEME) || token.is_empty() {
            return Err(IdentityError::NotBearer);
        }
        let caller = match self.credentials.identify(token) {
            Some((id, Standing::Trusted)) => Caller::delegator(id),
            Some((id, Standing::Participant)) => Caller::authenticated(id),
            None => self.verified(token).await?,
        };
        let named = participant.map(str::trim).filter(|id| !id.is_empty());
        self.check_claim(&caller, PARTICIPANT_FIELD, named)?;
        Ok(caller)
    }

    async fn verified(&self, token: &str) -> Result<Caller, IdentityError> {
        let Some(verifier) = &self.verifier else {
            return Err(IdentityError::UnknownToken);
        };
        let id = verifier
            .participant(token)
            .await
            .map_err(IdentityError::Rejected)?;
        let id = id.trim();
        if id.is_empty() {
            return Err(IdentityError::Rejected(
                "the token names no participant".to_string(),
            ));
        }
        // `user` is who every caller that names no one is: a token naming it would list every
        // task created without a name.
        if self.credentials.is_reserved(id) || id == ANONYMOUS_PARTICIPANT {
            return Err(IdentityError::ReservedSubject(echoed(id)));
        }
        Ok(Caller::authenticated(id))
    }

    /// Whether `caller` may act as `named` (claimed in `field`): a proven caller only as
    /// itself, an unproven one as anyone but an id a credential stands for.
    pub fn check_claim(
        &self,
        caller: &Caller,
        field: &'static str,
        named: Option<&str>,
    ) -> Result<(), IdentityError> {
        let Some(named) = named else {
            return Ok(());
        };
        if caller.proven {
            if named != caller.participant_id {
                return Err(IdentityError::OtherParticipant {
                    field,
                    named: echoed(named),
                    id: caller.participant_id.clone(),
                });
            }
        } else if self.credentials.is_reserved(named) {
            return Err(IdentityError::ReservedClaim {
                field,
                id: echoed(named),
            });
        }
        Ok(())
    }

    /// Whether the caller is this harness itself (the self secret), which no per-caller limit
    /// holds back.
    pub fn is_self(caller: &Caller) -> bool {
        caller.trusted && caller.participant_id == crate::base::config::SELF_AGENT_ID
    }
}

/// A claimed id as an error quotes it: cut, and escaped so it cannot end the quote.
fn echoed(value: &str) -> String {
    let cut: String = value.chars().take(MAX_ECHOED_ID_CHARS).collect();
    let mark = if cut.len() < value.len() { "…" } else { "" };
    format!("{}{mark}", cut.escape_debug())
}

/// The middleware that identifies every request once, before the per-caller limits read who it
/// is; what it found goes into the request's extensions ([`Identified`]).
pub async fn identify_request(
    State(identifier): State<Arc<Identifier>>,
    mut request: Request,
    next: Next,
) -> Response {
    let identified = identifier.caller(request.headers()).await;
    request.extensions_mut().insert(Identified(identified));
    next.run(request).await
}

/// The middleware that refuses a request whose identification failed, after the limits: 401
/// (with `WWW-Authenticate: Bearer`) or 403, its body as the binding writes errors (a JSON-RPC
/// error on `POST /`, a `google.rpc.Status` elsewhere). The public card is served to anyone.
pub async fn refuse_unidentified(request: Request, next: Next) -> Response {
    if request.uri().path() == CARD_PATH {
        return next.run(request).await;
    }
    let refusal = match request.extensions().get::<Identified>() {
        Some(Identified(Err(error))) => error.clone(),
        _ => return next.run(request).await,
    };
    let json_rpc = request.uri().path() == "/";
    refusal_response(&refusal, json_rpc)
}

/// A refusal for who the caller is, on the JSON-RPC endpoint or the REST binding.
pub fn refusal_response(error: &IdentityError, json_rpc: bool) -> Response {
    tracing::debug!(
        status = error.status().as_u16(),
        reason = %log_field::escape(&error.to_string()),
        "request refused for its identity"
    );
    let rpc = error.rpc_error();
    let status = error.status();
    // Written here rather than by the bindings, which sit above this module: a JSON-RPC error
    // object on `POST /`, a §11.6 `google.rpc.Status` elsewhere.
    let body = if json_rpc {
        serde_json::to_value(jsonrpc::Response::failure(RequestId::Null, rpc)).unwrap_or_default()
    } else {
        json!({
            "error": {
                "code": status.as_u16(),
                "status": match status {
                    StatusCode::FORBIDDEN => "PERMISSION_DENIED",
                    _ => "UNAUTHENTICATED",
                },
                "message": rpc.message,
                "details": rpc.data,
            }
        })
    };
    let mut response = (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        serde_json::to_vec(&body).unwrap_or_default(),
    )
        .into_response();
    if status == StatusCode::UNAUTHORIZED {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    response
}

#[cfg(test)]
mod tests;
