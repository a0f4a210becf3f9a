//! How the gRPC binding answers errors (§5.4, §10): every A2A error as the gRPC code the table
//! of §5.4 gives it, with a `google.rpc.Status` in `grpc-status-details-bin` whose details hold
//! the error's `ErrorInfo` (reason, domain `a2a-protocol.org`, metadata) and any `BadRequest`;
//! a refusal of who the caller is as `UNAUTHENTICATED` or `PERMISSION_DENIED`; and the HTTP
//! refusals of the shared limits (rate, connection share) turned into gRPC statuses, since a
//! gRPC client reads trailers, not HTTP status lines.

use std::any::Any;

use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use prost::Message as _;
use serde_json::Value;
use tonic::{Code, Status};

use crate::app::server::identity::IdentityError;
use crate::app::server::rest::http_status;
use crate::base::protocol::jsonrpc::{BAD_REQUEST_TYPE, ERROR_INFO_TYPE, RpcError};
use crate::base::protocol::proto::rpc;
use crate::base::text::log_field;

/// The media type of every gRPC message; a response without it is an HTTP refusal of a limit.
const GRPC_CONTENT_TYPE: &str = "application/grpc";

/// An A2A error as its gRPC status: the code by §5.4 (the same table the REST binding's HTTP
/// statuses come from), the message, and the details.
pub(crate) fn of(error: &RpcError) -> Status {
    let (_, name) = http_status(error.code);
    with_details(code_named(name), error)
}

/// A refusal of who the caller is: `UNAUTHENTICATED` for a missing or refused credential,
/// `PERMISSION_DENIED` for a proven caller naming someone else (HTTP 401 and 403 elsewhere).
pub(crate) fn identity(error: &IdentityError) -> Status {
    tracing::debug!(reason = %log_field::escape(&error.to_string()), "gRPC request refused for its identity");
    let code = match error.status() {
        StatusCode::FORBIDDEN => Code::PermissionDenied,
        _ => Code::Unauthenticated,
    };
    with_details(code, &error.rpc_error())
}

/// An A2A error under another code than its own (the extended card's `UNAUTHENTICATED`).
pub(crate) fn with_details(code: Code, error: &RpcError) -> Status {
    tracing::debug!(code = error.code, message = %log_field::escape(&error.message), "gRPC error");
    let status = rpc::Status {
        code: code as i32,
        message: error.message.clone(),
        details: error.data.iter().filter_map(detail).collect(),
    };
    Status::with_details(code, error.message.clone(), status.encode_to_vec().into())
}

/// One JSON detail of an [`RpcError`] as the `Any` it stands for.
fn detail(value: &Value) -> Option<rpc::Any> {
    let type_url = value.get("@type")?.as_str()?;
    let text = |value: &Value, key: &str| {
        value
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let encoded = match type_url {
        ERROR_INFO_TYPE => rpc::ErrorInfo {
            reason: text(value, "reason"),
            domain: text(value, "domain"),
            metadata: value
                .get("metadata")
                .and_then(Value::as_object)
                .map(|map| {
                    map.iter()
                        .map(|(key, value)| {
                            let value = value
                                .as_str()
                                .map_or_else(|| value.to_string(), str::to_string);
                            (key.clone(), value)
                        })
                        .collect()
                })
                .unwrap_or_default(),
        }
        .encode_to_vec(),
        BAD_REQUEST_TYPE => rpc::BadRequest {
            field_violations: value
                .get("fieldViolations")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|violation| rpc::FieldViolation {
                    field: text(violation, "field"),
                    description: text(violation, "description"),
                })
                .collect(),
        }
        .encode_to_vec(),
        _ => return None,
    };
    Some(rpc::Any {
        type_url: type_url.to_string(),
        value: encoded,
    })
}

/// The `google.rpc.Code` a §5.4 name stands for.
fn code_named(name: &str) -> Code {
    match name {
        "NOT_FOUND" => Code::NotFound,
        "FAILED_PRECONDITION" => Code::FailedPrecondition,
        "UNIMPLEMENTED" => Code::Unimplemented,
        "INVALID_ARGUMENT" => Code::InvalidArgument,
        "UNAUTHENTICATED" => Code::Unauthenticated,
        "PERMISSION_DENIED" => Code::PermissionDenied,
        _ => Code::Internal,
    }
}

/// The middleware, outermost on the gRPC routes: a refusal one of the shared limits wrote as
/// plain HTTP (429 over the rate, 503 over the connection share, 413 over the body size)
/// becomes the gRPC status a client acts on, keeping `Retry-After` as metadata.
pub(crate) async fn grpc_refusals(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let is_grpc = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(GRPC_CONTENT_TYPE.as_bytes()));
    if is_grpc || response.status() == StatusCode::OK {
        return response;
    }
    let code = match response.status() {
        StatusCode::TOO_MANY_REQUESTS | StatusCode::PAYLOAD_TOO_LARGE => Code::ResourceExhausted,
        StatusCode::SERVICE_UNAVAILABLE => Code::Unavailable,
        StatusCode::REQUEST_TIMEOUT => Code::DeadlineExceeded,
        StatusCode::UNAUTHORIZED => Code::Unauthenticated,
        StatusCode::FORBIDDEN => Code::PermissionDenied,
        _ => Code::Internal,
    };
    let retry_after = response.headers().get(header::RETRY_AFTER).cloned();
    let message = format!("refused: HTTP {}", response.status().as_u16());
    let mut status = status_response(Status::new(code, message));
    if let Some(value) = retry_after {
        status.headers_mut().insert(header::RETRY_AFTER, value);
    }
    status
}

/// A status as a trailers-only gRPC response.
pub(crate) fn status_response(status: Status) -> Response {
    status.into_http::<axum::body::Body>()
}

/// The last resort when a handler panics: `INTERNAL`, not a reset stream.
pub(crate) fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response {
    let detail = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("non-string panic payload");
    tracing::error!(detail = %log_field::escape(detail), "gRPC handler panicked");
    let mut response = status_response(Status::internal("internal error"));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(GRPC_CONTENT_TYPE),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::jsonrpc::TASK_NOT_FOUND;

    #[test]
    fn task_not_found_is_not_found_with_its_error_info() {
        let error = RpcError::new(TASK_NOT_FOUND, "task t not found").with_metadata("taskId", "t");
        let status = of(&error);
        assert_eq!(status.code(), Code::NotFound);
        assert_eq!(status.message(), "task t not found");
        let details = rpc::Status::decode(status.details()).unwrap();
        assert_eq!(details.code, Code::NotFound as i32);
        assert_eq!(details.details[0].type_url, ERROR_INFO_TYPE);
        let info = rpc::ErrorInfo::decode(details.details[0].value.as_slice()).unwrap();
        assert_eq!(info.reason, "TASK_NOT_FOUND");
        assert_eq!(info.domain, "a2a-protocol.org");
        assert_eq!(info.metadata["taskId"], "t");
    }

    #[test]
    fn invalid_params_carry_the_refused_field_as_a_bad_request() {
        let status = of(&RpcError::invalid_params("message.parts[0]", "empty"));
        assert_eq!(status.code(), Code::InvalidArgument);
        let details = rpc::Status::decode(status.details()).unwrap();
        let bad = rpc::BadRequest::decode(details.details[1].value.as_slice()).unwrap();
        assert_eq!(bad.field_violations[0].field, "message.parts[0]");
    }
}
