//! Who a request counts against, for the limits kept per caller (the request rate, the share of
//! open connections): this harness itself, a proven participant by its id, anyone else by
//! address.

use std::fmt;
use std::net::IpAddr;

use crate::app::server::identity::{Identified, Identifier};

/// A caller the per-caller limits tell apart. A caller whose identity is proven (a trusted
/// delegator's or a token caller's bearer token, a verified JWT) is known by it wherever it
/// calls from; anyone else by address, since a claimed participant id costs nothing to invent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CallerKey {
    /// A proven participant, by its id: its credential proved who it is, and nobody else can
    /// spend what it is allowed. Ids are unique across delegators, token callers and JWT
    /// subjects (a JWT naming a reserved id is refused), so one id is one caller.
    Proven(String),
    /// Anyone else, by peer address.
    Peer(IpAddr),
}

impl fmt::Display for CallerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallerKey::Proven(id) => write!(f, "participant {id}"),
            CallerKey::Peer(address) => write!(f, "address {address}"),
        }
    }
}

/// The caller a request counts against, or `None` for this harness's own calls (the self
/// secret: its sub-tasks on `self` and their followers), which no per-caller limit holds back: a
/// flood from anyone must not fail the harness's own sub-tasks. A request whose identification
/// failed (a bearer token that is nobody's) gets no pass: it counts against its address (and
/// is refused later, as without any limit); so does one not identified at all.
pub fn key_of(identified: Option<&Identified>, peer: IpAddr) -> Option<CallerKey> {
    match identified {
        Some(Identified(Ok(caller))) if Identifier::is_self(caller) => None,
        Some(Identified(Ok(caller))) if caller.proven => {
            Some(CallerKey::Proven(caller.participant_id.clone()))
        }
        _ => Some(CallerKey::Peer(peer)),
    }
}
