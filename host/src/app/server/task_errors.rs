//! Task errors as A2A errors: each [`TaskError`] becomes the JSON-RPC error (with its
//! `ErrorInfo`) that every binding answers with, so a refusal reads the same on JSON-RPC,
//! HTTP+JSON and 0.3.

use crate::base::protocol::jsonrpc::{
    RpcError, TASK_NOT_CANCELABLE, TASK_NOT_FOUND, UNSUPPORTED_OPERATION,
};
use crate::state::tasks::TaskError;
use crate::state::tasks::hops::{self, HopRefusal, RefusalReason};

impl From<TaskError> for RpcError {
    fn from(error: TaskError) -> RpcError {
        let message = error.to_string();
        match error {
            TaskError::NotFound(id) => {
                RpcError::new(TASK_NOT_FOUND, message).with_metadata("taskId", id)
            }
            TaskError::NotCancelable { id, state } => RpcError::new(TASK_NOT_CANCELABLE, message)
                .with_metadata("taskId", id)
                .with_metadata("state", state.wire_name()),
            TaskError::Terminal { id, state } => RpcError::new(UNSUPPORTED_OPERATION, message)
                .with_metadata("taskId", id)
                .with_metadata("state", state.wire_name()),
            TaskError::Ended {
                id,
                state,
                context_id,
            } => RpcError::new(UNSUPPORTED_OPERATION, message)
                .with_metadata("taskId", id)
                .with_metadata("state", state.wire_name())
                .with_metadata("contextId", context_id),
            TaskError::InvalidParams(detail) => RpcError::invalid_params("", detail),
            TaskError::Delegation(refusal) => delegation_refused(&refusal),
            TaskError::Unsupported(detail) => RpcError::unsupported(detail),
            TaskError::Internal(detail) => RpcError::internal(detail),
        }
    }
}

/// A new task refused for its delegation: invalid params naming the field, its `ErrorInfo`
/// metadata saying why ([`hops::REFUSAL_KEY`]) and, for too many hops, the count and the limit,
/// so that a parent harness tells a loop from a chain gone too far on every binding.
fn delegation_refused(refusal: &HopRefusal) -> RpcError {
    let error = RpcError::invalid_params(&refusal.field, &refusal.message)
        .with_metadata(hops::REFUSAL_KEY, refusal.reason.code());
    match refusal.reason {
        RefusalReason::Cycle => error,
        RefusalReason::TooManyHops { hops: count, max } => error
            .with_metadata(hops::HOPS_KEY, count.to_string())
            .with_metadata(hops::MAX_HOPS_KEY, max.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::jsonrpc::{
        BAD_REQUEST_TYPE, ERROR_DOMAIN, ERROR_INFO_TYPE, INTERNAL_ERROR, INVALID_PARAMS, reason_of,
    };
    use crate::base::protocol::types::TaskState;

    #[test]
    fn task_errors_map_to_a2a_codes_with_error_info() {
        let cases = [
            (TaskError::NotFound("t".into()), TASK_NOT_FOUND),
            (
                TaskError::NotCancelable {
                    id: "t".into(),
                    state: TaskState::Completed,
                },
                TASK_NOT_CANCELABLE,
            ),
            (
                TaskError::Terminal {
                    id: "t".into(),
                    state: TaskState::Failed,
                },
                UNSUPPORTED_OPERATION,
            ),
            (
                TaskError::Ended {
                    id: "t".into(),
                    state: TaskState::Completed,
                    context_id: "c".into(),
                },
                UNSUPPORTED_OPERATION,
            ),
            (TaskError::InvalidParams("bad".into()), INVALID_PARAMS),
            (TaskError::Unsupported("no".into()), UNSUPPORTED_OPERATION),
            (TaskError::Internal("db".into()), INTERNAL_ERROR),
        ];
        for (task_error, code) in cases {
            let error = RpcError::from(task_error);
            assert_eq!(error.code, code);
            assert_eq!(error.data[0]["@type"], ERROR_INFO_TYPE);
            assert_eq!(error.data[0]["domain"], ERROR_DOMAIN);
            assert_eq!(error.data[0]["reason"], reason_of(code));
        }
        let error = RpcError::from(TaskError::NotFound("t9".into()));
        assert_eq!(error.data[0]["reason"], "TASK_NOT_FOUND");
        assert_eq!(error.data[0]["metadata"]["taskId"], "t9");
    }

    #[test]
    fn a_delegation_refusal_is_invalid_params_naming_the_field_and_the_reason() {
        let refusal = |reason| {
            RpcError::from(TaskError::Delegation(HopRefusal {
                field: "task.delegation.hops".into(),
                reason,
                message: "5 hops".into(),
            }))
        };
        let error = refusal(RefusalReason::TooManyHops { hops: 5, max: 4 });
        assert_eq!(error.code, INVALID_PARAMS);
        assert_eq!(
            error.message,
            "invalid params: task.delegation.hops: 5 hops"
        );
        let metadata = &error.data[0]["metadata"];
        assert_eq!(metadata[hops::REFUSAL_KEY], hops::HOPS_REASON);
        assert_eq!(metadata[hops::HOPS_KEY], "5");
        assert_eq!(metadata[hops::MAX_HOPS_KEY], "4");
        assert_eq!(metadata["field"], "task.delegation.hops");
        assert_eq!(error.data[1]["@type"], BAD_REQUEST_TYPE);
        let error = refusal(RefusalReason::Cycle);
        assert_eq!(
            error.data[0]["metadata"][hops::REFUSAL_KEY],
            hops::CYCLE_REASON
        );
        assert_eq!(error.data[0]["reason"], "INVALID_PARAMS");
    }

    #[test]
    fn internal_details_are_not_sent_to_the_caller() {
        let error = RpcError::from(TaskError::Internal("disk I/O at /var/secret".into()));
        assert!(!error.message.contains("secret"));
    }

    #[test]
    fn a_message_to_an_ended_task_is_told_to_go_on_in_its_context() {
        let error = RpcError::from(TaskError::Ended {
            id: "t1".into(),
            state: TaskState::Completed,
            context_id: "c1".into(),
        });
        assert_eq!(
            error.message,
            "task t1 is COMPLETED and accepts no further messages; to go on with this \
             conversation, send the message without taskId and with contextId c1: the new task \
             reads this task's exchange"
        );
        assert_eq!(error.data[0]["metadata"]["contextId"], "c1");
    }
}
