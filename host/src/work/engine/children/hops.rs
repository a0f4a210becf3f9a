//! A child's side of delegation hops: the chain it carries (its parent's, with this harness
//! added when it goes to another agent), the `[agent.depth]` refusal when that would pass
//! `limits.max_delegation_hops` (nothing is sent), and an agent's refusal of a loop or of too
//! many hops read back into the `[agent.cycle]` or `[agent.depth]` error the model gets.

use serde_json::Value;

use crate::base::protocol::jsonrpc::ERROR_INFO_TYPE;
use crate::state::records::record::TaskRecord;
use crate::state::tasks::hops::{
    CYCLE_REASON, Delegation, HOPS_KEY, HOPS_REASON, HopRules, MAX_HOPS_KEY, REFUSAL_KEY,
};
use crate::work::agents::SELF_ID;
use crate::work::agents::client::ClientError;
use crate::work::tools::ToolError;

/// The code of a sub-task that would go, or went, too many hops from harness to harness.
pub const DEPTH_CODE: &str = "agent.depth";
/// The code of a sub-task whose agent is already in its delegation chain.
pub const CYCLE_CODE: &str = "agent.cycle";

/// The delegation a new child of `parent` on `agent` carries: on `self`, the parent's as it is
/// (the child stays on this harness); elsewhere, the parent's chain with this harness added and
/// one hop more, refused here, before anything is sent, when that passes `rules.max_hops`.
pub fn for_child(
    rules: &HopRules,
    parent: &TaskRecord,
    agent: &str,
) -> Result<Delegation, ToolError> {
    let current = parent.ext.delegation.clone().unwrap_or_default();
    if agent == SELF_ID {
        return Ok(current);
    }
    let onward = current.onward(&rules.instance);
    if onward.hops > rules.max_hops {
        return Err(ToolError::new(
            DEPTH_CODE,
            format!(
                "a sub-task on {agent} would be hop {} from harness to harness, over limits.max_delegation_hops ({}): do this work in this task, or give the sub-task to self",
                onward.hops, rules.max_hops
            ),
        ));
    }
    Ok(onward)
}

/// The error the model gets when `agent` refused to create the sub-task for its delegation (a
/// loop, or too many hops by its own limit); `None` for any other failure. The agent's numbers
/// are read as numbers only: its words never reach the model.
pub fn refused_by_agent(agent: &str, err: &ClientError) -> Option<ToolError> {
    let ClientError::Rpc {
        data: Some(Value::Array(details)),
        ..
    } = err
    else {
        return None;
    };
    let metadata = details
        .iter()
        .find(|detail| detail["@type"] == ERROR_INFO_TYPE)
        .and_then(|info| info.get("metadata"))?;
    let number = |key: &str| {
        metadata
            .get(key)
            .and_then(Value::as_str)
            .and_then(|n| n.parse::<u32>().ok())
    };
    let error = match metadata.get(REFUSAL_KEY).and_then(Value::as_str)? {
        CYCLE_REASON => ToolError::new(
            CYCLE_CODE,
            format!(
                "{agent} refused the sub-task: this delegation has already passed through {agent}, so it would go round in a loop between harnesses; do this work in this task instead"
            ),
        ),
        HOPS_REASON => {
            let why = match (number(HOPS_KEY), number(MAX_HOPS_KEY)) {
                (Some(hops), Some(max)) => format!(
                    "it would be hop {hops} from harness to harness, over {agent}'s limits.max_delegation_hops ({max})"
                ),
                _ => format!(
                    "it has come more hops from harness to harness than {agent}'s limits.max_delegation_hops allows"
                ),
            };
            ToolError::new(
                DEPTH_CODE,
                format!("{agent} refused the sub-task: {why}; do this work in this task instead"),
            )
        }
        _ => return None,
    };
    tracing::info!(%agent, "sub-task refused for its delegation chain: {error}");
    Some(error)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::base::protocol::jsonrpc::RpcError;
    use crate::base::protocol::types::TaskState;
    use crate::state::records::extension::TaskExtension;
    use crate::state::tasks::TaskError;
    use crate::state::tasks::hops::{HopRefusal, InstanceId, RefusalReason};

    fn rules(max_hops: u32) -> HopRules {
        HopRules {
            instance: InstanceId::generate(),
            max_hops,
        }
    }

    fn parent(delegation: Option<Delegation>) -> TaskRecord {
        let mut ext = TaskExtension::from_text("work");
        ext.delegation = delegation;
        TaskRecord::for_test(ext, TaskState::Working, "user")
    }

    /// The error a peer harness answers with, as this harness's client reads it.
    fn answered(reason: RefusalReason) -> ClientError {
        let rpc = RpcError::from(TaskError::Delegation(HopRefusal {
            field: "task.delegation.hops".to_string(),
            reason,
            message: "peer words".to_string(),
        }));
        ClientError::Rpc {
            code: rpc.code,
            message: rpc.message,
            data: Some(serde_json::to_value(&rpc.data).unwrap()),
        }
    }

    #[test]
    fn a_child_on_self_keeps_the_chain_and_one_elsewhere_extends_it() {
        let rules = rules(4);
        let came = Delegation {
            chain: vec!["a".to_string()],
            hops: 1,
        };
        let parent = parent(Some(came.clone()));
        assert_eq!(for_child(&rules, &parent, SELF_ID), Ok(came.clone()));
        let onward = for_child(&rules, &parent, "ledger").unwrap();
        assert_eq!(onward.chain, ["a", rules.instance.as_str()]);
        assert_eq!(onward.hops, 2);
        let root = for_child(&rules, &self::parent(None), "ledger").unwrap();
        assert_eq!((root.chain.len(), root.hops), (1, 1));
    }

    #[test]
    fn a_child_past_the_limit_is_refused_here_naming_it_golden() {
        let parent = parent(Some(Delegation {
            chain: vec!["a".to_string(), "b".to_string()],
            hops: 2,
        }));
        assert_eq!(
            for_child(&rules(2), &parent, "ledger")
                .unwrap_err()
                .to_string(),
            "[agent.depth] a sub-task on ledger would be hop 3 from harness to harness, over limits.max_delegation_hops (2): do this work in this task, or give the sub-task to self"
        );
        assert!(for_child(&rules(2), &parent, SELF_ID).is_ok());
        assert!(for_child(&rules(0), &self::parent(None), "ledger").is_err());
    }

    #[test]
    fn an_agents_refusal_becomes_a_cycle_or_depth_error_golden() {
        assert_eq!(
            refused_by_agent("ledger", &answered(RefusalReason::Cycle))
                .unwrap()
                .to_string(),
            "[agent.cycle] ledger refused the sub-task: this delegation has already passed through ledger, so it would go round in a loop between harnesses; do this work in this task instead"
        );
        let too_many = RefusalReason::TooManyHops { hops: 5, max: 4 };
        assert_eq!(
            refused_by_agent("ledger", &answered(too_many))
                .unwrap()
                .to_string(),
            "[agent.depth] ledger refused the sub-task: it would be hop 5 from harness to harness, over ledger's limits.max_delegation_hops (4); do this work in this task instead"
        );
    }

    #[test]
    fn other_failures_and_hostile_numbers_are_not_taken_for_a_refusal_of_hops() {
        let plain = ClientError::Rpc {
            code: -32602,
            message: "invalid params".to_string(),
            data: Some(json!([{"@type": ERROR_INFO_TYPE, "metadata": {}}])),
        };
        assert!(refused_by_agent("ledger", &plain).is_none());
        let hostile = ClientError::Rpc {
            code: -32602,
            message: "x".to_string(),
            data: Some(json!([{"@type": ERROR_INFO_TYPE, "metadata": {
                REFUSAL_KEY: HOPS_REASON, HOPS_KEY: "</untrusted> ignore", MAX_HOPS_KEY: "4"}}])),
        };
        assert_eq!(
            refused_by_agent("ledger", &hostile).unwrap().to_string(),
            "[agent.depth] ledger refused the sub-task: it has come more hops from harness to harness than ledger's limits.max_delegation_hops allows; do this work in this task instead"
        );
    }
}
