//! Delegation hops across harnesses: the chain of harness instances a delegated task passed
//! through and its hop count, as a child's message carries them (in the task envelope, else in
//! the message's metadata), checked on the way in so that harnesses delegating to each other end
//! at a bound instead of recursing without end.
//!
//! A task a person created has no chain and 0 hops. A child this harness sends to another agent
//! carries its parent's chain with this harness's instance added and one hop more; a child on
//! `self` stays on this harness and carries its parent's chain unchanged (the depth bound,
//! `limits.max_subtask_depth`, bounds those). A new task whose chain already holds this harness's
//! instance closed a loop, and one with more hops than `limits.max_delegation_hops` went too far:
//! both are refused with nothing created, with a reason a parent can read
//! ([`REFUSAL_KEY`] in the error's `ErrorInfo` metadata).

pub use crate::base::protocol::delegation::{
    CYCLE_REASON, Delegation, HOPS_KEY, HOPS_REASON, InstanceId, MAX_CHAIN_LEN, MAX_HOPS_KEY,
    MAX_INSTANCE_ID_CHARS, METADATA_KEY, REFUSAL_KEY,
};
use crate::base::protocol::types::Message;

/// What a new task's delegation is checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HopRules {
    /// This harness in chains.
    pub instance: InstanceId,
    /// `limits.max_delegation_hops`.
    pub max_hops: u32,
}

impl Default for HopRules {
    /// A fresh instance and the loosest bound, the longest chain accepted; a harness built from
    /// its configuration gets `limits.max_delegation_hops` instead.
    fn default() -> HopRules {
        HopRules {
            instance: InstanceId::generate(),
            max_hops: MAX_CHAIN_LEN as u32,
        }
    }
}

/// Why a delegation was refused, as the caller's error carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalReason {
    /// The chain already held this harness.
    Cycle,
    /// More hops than `limits.max_delegation_hops`.
    TooManyHops {
        /// The hops the delegation had already made (its count, or its chain if longer).
        hops: u32,
        /// `limits.max_delegation_hops`.
        max: u32,
    },
}

impl RefusalReason {
    /// The value of [`REFUSAL_KEY`].
    pub fn code(self) -> &'static str {
        match self {
            RefusalReason::Cycle => CYCLE_REASON,
            RefusalReason::TooManyHops { .. } => HOPS_REASON,
        }
    }
}

/// A new task refused for its delegation: the field at fault, why, and the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct HopRefusal {
    /// The dotted field at fault (`…delegation.chain`).
    pub field: String,
    /// The rule broken; its code goes in the error's data for a parent to read.
    pub reason: RefusalReason,
    /// What was refused and why, for the caller.
    pub message: String,
}

/// Why a new task's delegation was not admitted. The task service turns each into its own
/// error (`TaskError::InvalidParams`, `TaskError::Delegation`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HopError {
    /// Malformed: the message names the field and what is wrong with it.
    #[error("{0}")]
    Invalid(String),
    /// Well-formed, but a loop or too many hops.
    #[error(transparent)]
    Refused(#[from] HopRefusal),
}

/// Where a delegation came from, for naming the field at fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The task envelope's `delegation`.
    Envelope,
    /// `Message.metadata[METADATA_KEY]`.
    Metadata,
}

impl Source {
    fn field(self) -> String {
        match self {
            Source::Envelope => "task.delegation".to_string(),
            Source::Metadata => format!("message.metadata.{METADATA_KEY}"),
        }
    }
}

/// The delegation a new task keeps: what its message carries ([`read`]), [`admit`]ted.
pub fn of_new_task(
    rules: &HopRules,
    message: &Message,
    from_envelope: Option<Delegation>,
) -> Result<Option<Delegation>, HopError> {
    read(message, from_envelope)?
        .map(|(delegation, source)| admit(rules, delegation, source))
        .transpose()
}

/// The delegation a new task's message carries: the envelope's (`from_envelope`, already parsed
/// with the brief) or the metadata's; a message carrying both is refused, so no sender can show
/// one chain to one reader and another to the next.
pub fn read(
    message: &Message,
    from_envelope: Option<Delegation>,
) -> Result<Option<(Delegation, Source)>, HopError> {
    let in_metadata = message.metadata.as_ref().and_then(|m| m.get(METADATA_KEY));
    match (from_envelope, in_metadata) {
        (Some(_), Some(_)) => Err(HopError::Invalid(format!(
            "{}: the delegation is already in the task envelope; carry it once",
            Source::Metadata.field()
        ))),
        (Some(delegation), None) => Ok(Some((delegation, Source::Envelope))),
        (None, Some(value)) => {
            let field = Source::Metadata.field();
            let delegation = serde_json::from_value(value.clone()).map_err(|err| {
                HopError::Invalid(format!(
                    "{field}: {err}; expected {{\"chain\": [instance ids], \"hops\": n}}"
                ))
            })?;
            Ok(Some((delegation, Source::Metadata)))
        }
        (None, None) => Ok(None),
    }
}

/// Admits a new task's delegation or refuses it: a malformed chain (too long, an id that is
/// empty, too long or not plain) as invalid params naming the field; a chain that holds this
/// harness, or more hops than `rules.max_hops`, as a [`HopRefusal`]. The delegation kept has at
/// least as many hops as its chain has instances, whatever the sender said.
pub fn admit(
    rules: &HopRules,
    delegation: Delegation,
    source: Source,
) -> Result<Delegation, HopError> {
    let field = source.field();
    if delegation.chain.len() > MAX_CHAIN_LEN {
        return Err(HopError::Invalid(format!(
            "{field}.chain: holds {} instances; at most {MAX_CHAIN_LEN} are accepted",
            delegation.chain.len()
        )));
    }
    for (index, id) in delegation.chain.iter().enumerate() {
        if let Some(problem) = instance_id_problem(id) {
            return Err(HopError::Invalid(format!(
                "{field}.chain[{index}]: {problem}"
            )));
        }
    }
    let hops = delegation.hops.max(delegation.chain.len() as u32);
    if delegation
        .chain
        .iter()
        .any(|id| id == rules.instance.as_str())
    {
        return Err(HopError::Refused(HopRefusal {
            field: format!("{field}.chain"),
            reason: RefusalReason::Cycle,
            message: format!(
                "already holds this harness (instance {}): the delegation went round in a loop between harnesses, so no task was created",
                rules.instance.as_str()
            ),
        }));
    }
    if hops > rules.max_hops {
        return Err(HopError::Refused(HopRefusal {
            field: format!("{field}.hops"),
            reason: RefusalReason::TooManyHops {
                hops,
                max: rules.max_hops,
            },
            message: format!(
                "{hops} hops from harness to harness is over this harness's limits.max_delegation_hops ({}), so no task was created",
                rules.max_hops
            ),
        }));
    }
    Ok(Delegation {
        chain: delegation.chain,
        hops,
    })
}

/// What is wrong with an instance id from a peer, if anything: it must be 1 to
/// [`MAX_INSTANCE_ID_CHARS`] ASCII letters, digits, `-`, `_`, `.` or `:`, so it can be stored,
/// compared and logged as it is.
fn instance_id_problem(id: &str) -> Option<String> {
    if id.is_empty() {
        return Some("an instance id must not be empty".to_string());
    }
    if id.len() > MAX_INSTANCE_ID_CHARS {
        return Some(format!(
            "an instance id is at most {MAX_INSTANCE_ID_CHARS} characters (this one has {})",
            id.chars().count()
        ));
    }
    if !id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
    {
        return Some(
            "an instance id holds only ASCII letters, digits, '-', '_', '.' and ':'".to_string(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn rules() -> HopRules {
        HopRules {
            instance: InstanceId("me".to_string()),
            max_hops: 3,
        }
    }

    fn delegation(chain: &[&str], hops: u32) -> Delegation {
        Delegation {
            chain: chain.iter().map(|s| s.to_string()).collect(),
            hops,
        }
    }

    fn message_with(metadata: Value) -> Message {
        Message {
            metadata: Some([(METADATA_KEY.to_string(), metadata)].into_iter().collect()),
            ..Message::default()
        }
    }

    #[test]
    fn the_longest_chain_is_the_largest_hop_limit_a_configuration_may_set() {
        assert_eq!(
            MAX_CHAIN_LEN as u32,
            crate::base::config::MAX_DELEGATION_HOPS
        );
    }

    #[test]
    fn a_child_elsewhere_carries_the_chain_with_this_instance_and_one_hop_more() {
        let onward = delegation(&["a"], 1).onward(&InstanceId("me".into()));
        assert_eq!(onward, delegation(&["a", "me"], 2));
        assert_eq!(onward.to_value(), json!({"chain":["a","me"],"hops":2}));
    }

    #[test]
    fn a_chain_holding_this_harness_is_refused_as_a_cycle_golden() {
        let err = admit(&rules(), delegation(&["x", "me"], 2), Source::Envelope).unwrap_err();
        let HopError::Refused(refusal) = err else {
            panic!("{err:?}")
        };
        assert_eq!(refusal.reason, RefusalReason::Cycle);
        assert_eq!(
            refusal.to_string(),
            "task.delegation.chain: already holds this harness (instance me): the delegation went round in a loop between harnesses, so no task was created"
        );
    }

    #[test]
    fn hops_over_the_limit_are_refused_naming_it_golden() {
        let err = admit(&rules(), delegation(&["a"], 4), Source::Metadata).unwrap_err();
        let HopError::Refused(refusal) = err else {
            panic!("{err:?}")
        };
        assert_eq!(
            refusal.reason,
            RefusalReason::TooManyHops { hops: 4, max: 3 }
        );
        assert_eq!(
            refusal.to_string(),
            format!(
                "message.metadata.{METADATA_KEY}.hops: 4 hops from harness to harness is over this harness's limits.max_delegation_hops (3), so no task was created"
            )
        );
    }

    #[test]
    fn a_chain_longer_than_its_hop_count_counts_its_instances() {
        let err = admit(
            &rules(),
            delegation(&["a", "b", "c", "d"], 0),
            Source::Envelope,
        );
        assert!(
            matches!(
                err,
                Err(HopError::Refused(HopRefusal {
                    reason: RefusalReason::TooManyHops { hops: 4, .. },
                    ..
                }))
            ),
            "{err:?}"
        );
        assert_eq!(
            admit(&rules(), delegation(&["a", "b"], 0), Source::Envelope),
            Ok(delegation(&["a", "b"], 2))
        );
        assert_eq!(
            admit(&rules(), delegation(&[], 3), Source::Envelope),
            Ok(delegation(&[], 3))
        );
    }

    #[test]
    fn hostile_chains_are_refused_naming_the_field() {
        let long = "x".repeat(MAX_INSTANCE_ID_CHARS + 1);
        let too_many: Vec<&str> = vec!["a"; MAX_CHAIN_LEN + 1];
        let cases = [
            (delegation(&too_many, 1), "task.delegation.chain: holds 33"),
            (
                delegation(&["a", ""], 1),
                "task.delegation.chain[1]: an instance id must not be empty",
            ),
            (
                delegation(&[&long], 1),
                "task.delegation.chain[0]: an instance id is at most 64",
            ),
            (
                delegation(&["a\nINFO forged"], 1),
                "task.delegation.chain[0]: an instance id holds only",
            ),
            (
                delegation(&["</untrusted>"], 1),
                "task.delegation.chain[0]: an instance id holds only",
            ),
        ];
        for (delegation, start) in cases {
            match admit(&rules(), delegation, Source::Envelope) {
                Err(HopError::Invalid(message)) => {
                    assert!(message.starts_with(start), "{message}")
                }
                other => panic!("expected invalid params, got {other:?}"),
            }
        }
    }

    #[test]
    fn the_metadata_delegation_is_read_and_a_malformed_one_names_the_field() {
        let read_one = |value: Value| read(&message_with(value), None);
        assert_eq!(
            read_one(json!({"chain":["a"],"hops":1})),
            Ok(Some((delegation(&["a"], 1), Source::Metadata)))
        );
        for bad in [
            json!("a,b"),
            json!({"chain":"a"}),
            json!({"chain":["a"],"hops":-1}),
            json!({"chain":["a"],"hops":1,"extra":true}),
            json!({"chain":[1]}),
        ] {
            let err = read_one(bad.clone()).unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("message.metadata.{METADATA_KEY}: ")),
                "{bad}: {err}"
            );
        }
        assert_eq!(read(&Message::default(), None), Ok(None));
    }

    #[test]
    fn a_delegation_in_both_the_envelope_and_the_metadata_is_refused() {
        let message = message_with(json!({"chain":[],"hops":0}));
        let err = read(&message, Some(Delegation::default())).unwrap_err();
        assert!(err.to_string().contains("carry it once"), "{err}");
    }
}
