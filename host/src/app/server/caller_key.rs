//! Who a request counts against, for the limits kept per caller (the request rate, the share of
//! open connections): this harness itself, a trusted delegator by its id, anyone else by address.

use std::fmt;
use std::net::IpAddr;

use axum::http::HeaderMap;

use crate::app::server::headers;
use crate::base::config::SELF_AGENT_ID;
use crate::state::tasks::Delegators;

/// A caller the per-caller limits tell apart. A caller whose identity is proven (today a
/// delegator's bearer token) is known by it wherever it calls from; anyone else by address,
/// since a claimed participant id costs nothing to invent. Authenticated callers of other kinds
/// get a variant of their own here, and every per-caller limit follows.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CallerKey {
    /// A trusted delegator, by its id: its token proved who it is, and nobody else can spend
    /// what it is allowed.
    Delegator(String),
    /// Anyone else, by peer address.
    Peer(IpAddr),
}

impl fmt::Display for CallerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallerKey::Delegator(id) => write!(f, "delegator {id}"),
            CallerKey::Peer(address) => write!(f, "address {address}"),
        }
    }
}

/// The caller a request counts against, or `None` for this harness's own calls (the self
/// secret: its sub-tasks on `self` and their followers), which no per-caller limit holds back: a
/// flood from anyone must not fail the harness's own sub-tasks. A bearer token that is nobody's
/// gets no pass: it counts against its address (and the request is refused later, as without
/// any limit).
pub fn key_of(headers: &HeaderMap, peer: IpAddr, delegators: &Delegators) -> Option<CallerKey> {
    match headers::caller(headers, delegators) {
        Ok(caller) if caller.trusted && caller.participant_id == SELF_AGENT_ID => None,
        Ok(caller) if caller.trusted => Some(CallerKey::Delegator(caller.participant_id)),
        _ => Some(CallerKey::Peer(peer)),
    }
}
