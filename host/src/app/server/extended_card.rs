//! `GetExtendedAgentCard` on every binding: the extended card (`[card.extended]` on top of the
//! public card) for a caller who proved who it is; for anyone else the binding's
//! authentication error, an HTTP 401 with `WWW-Authenticate: Bearer`.

use crate::app::server::ops::App;
use crate::base::protocol::card::AgentCard;
use crate::base::protocol::jsonrpc::{
    EXTENDED_AGENT_CARD_NOT_CONFIGURED, INVALID_REQUEST, RpcError,
};
use crate::state::tasks::Caller;

/// Whether `caller` may read the extended card: a caller that proved who it is. The one place
/// that says so for every binding.
pub fn may_read_extended_card(caller: &Caller) -> bool {
    caller.proven
}

/// Whether a request for the extended card is to be answered as unauthenticated (HTTP 401
/// with `WWW-Authenticate: Bearer` on every binding): the card offers one and `caller` may not
/// read it. The TCK reads a 401 as "authentication required" on JSON-RPC too.
pub(crate) fn extended_card_unauthenticated(app: &App, caller: &Caller) -> Option<RpcError> {
    (app.state.card.capabilities.extended_agent_card == Some(true)
        && !may_read_extended_card(caller))
    .then(|| {
        RpcError::new(
            INVALID_REQUEST,
            "GetExtendedAgentCard is served only to authenticated callers: send Authorization: Bearer <token>, a token of this server's callers or delegators or a JWT of its OpenID Connect issuer (see the card's securitySchemes)",
        )
        .with_metadata("header", "Authorization")
    })
}

/// `GetExtendedAgentCard`: the extended card for a caller who may read it; without one on the
/// card, `UnsupportedOperationError` (§3.3.4).
pub(crate) fn extended_agent_card(app: &App, caller: &Caller) -> Result<AgentCard, RpcError> {
    if app.state.card.capabilities.extended_agent_card != Some(true) {
        return Err(RpcError::unsupported(
            "GetExtendedAgentCard is not supported: the agent card does not declare \
             capabilities.extendedAgentCard",
        ));
    }
    if let Some(refusal) = extended_card_unauthenticated(app, caller) {
        return Err(refusal);
    }
    app.state.extended_card.clone().ok_or_else(|| {
        RpcError::new(
            EXTENDED_AGENT_CARD_NOT_CONFIGURED,
            "this agent has no extended agent card configured",
        )
    })
}
