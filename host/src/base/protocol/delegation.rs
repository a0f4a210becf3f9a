//! The delegation a task carries across harnesses, as the wire holds it: the chain of harness
//! instances it passed through and its hop count (in the task envelope, else under
//! [`METADATA_KEY`] in the message's metadata), and the `ErrorInfo` keys of a refusal. The rules
//! that check it on the way in are `crate::state::tasks::hops`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The key under `Message.metadata` that carries a delegation for an agent that does not take
/// the task envelope (a tiny-harness reads it either way; other agents ignore it).
pub const METADATA_KEY: &str = "io.github.madarauchiha-314.tiny-harness/delegation";
/// The most instances a chain may hold: far more than an honest delegation needs, small enough
/// that a hostile chain costs nothing to check or store. The largest
/// `limits.max_delegation_hops` is the same (`config::MAX_DELEGATION_HOPS`, held equal by a test).
pub const MAX_CHAIN_LEN: usize = 32;
/// The longest instance id accepted: this harness's own are UUIDs (36 characters); a longer one
/// is no id but a way to fill records and logs.
pub const MAX_INSTANCE_ID_CHARS: usize = 64;
/// The `ErrorInfo.metadata` key whose value says why a delegation was refused.
pub const REFUSAL_KEY: &str = "delegationRefusal";
/// [`REFUSAL_KEY`]'s value when the chain already held the refusing harness.
pub const CYCLE_REASON: &str = "DELEGATION_CYCLE";
/// [`REFUSAL_KEY`]'s value when the hops were over the refusing harness's limit.
pub const HOPS_REASON: &str = "DELEGATION_HOPS_EXCEEDED";
/// The `ErrorInfo.metadata` key of the refused hop count.
pub const HOPS_KEY: &str = "hops";
/// The `ErrorInfo.metadata` key of the limit the refused hops passed.
pub const MAX_HOPS_KEY: &str = "maxDelegationHops";

/// This harness's name in delegation chains: a random UUID made when the process starts. Not
/// kept in the store: a loop that spans a restart is caught one hop later (the next harness finds
/// itself in the chain) and the hop limit bounds everything, so a durable id would buy little
/// for a migration of its own; per process, every process of a shared store (the Temporal
/// engine's workers) is its own instance, which the same two rules cover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceId(pub(crate) String);

impl InstanceId {
    /// A fresh id.
    pub fn generate() -> InstanceId {
        InstanceId(uuid::Uuid::new_v4().to_string())
    }

    /// The id as it goes in a chain.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The delegation a task came with: the harness instances it passed through, oldest first (not
/// including the harness that holds it), and how many hops from harness to harness it took.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delegation {
    /// The instance ids the task passed through, oldest first; finding its own id here refuses a loop.
    #[serde(default)]
    pub chain: Vec<String>,
    /// Hops from harness to harness so far; over `limits.max_delegation_hops` is refused.
    #[serde(default)]
    pub hops: u32,
}

impl Delegation {
    /// What a child sent to another agent carries: this chain, then `own`, one hop more.
    pub fn onward(&self, own: &InstanceId) -> Delegation {
        let mut chain = self.chain.clone();
        chain.push(own.as_str().to_string());
        Delegation {
            chain,
            hops: self.hops.saturating_add(1),
        }
    }

    /// The delegation as JSON, for an envelope or the message metadata.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}
