//! How the REST binding answers: success bodies as `application/json`, and every A2A error as a
//! `google.rpc.Status` object (§11.6) under the HTTP status §5.4 maps its code to.

use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::RESPONSE_MEDIA_TYPE;
use crate::app::server::identity::{self, IdentityError};
use crate::base::protocol::jsonrpc::{self, RpcError};
use crate::base::text::log_field;

/// The HTTP status and `google.rpc.Code` name of an A2A (or JSON-RPC) error code: the table of
/// §5.4 as A2A 1.0.1 gives it, where each HTTP status is the one `google.rpc.Code` maps its code
/// to (1.0.0 had 409 for a task that cannot be canceled, 415 for an unsupported content type,
/// 502 for an invalid agent response and `UNIMPLEMENTED` for three errors; docs/conformance.md).
/// Errors that share a status are told apart by the `ErrorInfo` reason every error carries.
pub fn http_status(code: i32) -> (StatusCode, &'static str) {
    match code {
        jsonrpc::TASK_NOT_FOUND | jsonrpc::METHOD_NOT_FOUND => (StatusCode::NOT_FOUND, "NOT_FOUND"),
        jsonrpc::TASK_NOT_CANCELABLE
        | jsonrpc::PUSH_NOTIFICATION_NOT_SUPPORTED
        | jsonrpc::UNSUPPORTED_OPERATION
        | jsonrpc::VERSION_NOT_SUPPORTED
        | jsonrpc::EXTENDED_AGENT_CARD_NOT_CONFIGURED
        | jsonrpc::EXTENSION_SUPPORT_REQUIRED => (StatusCode::BAD_REQUEST, "FAILED_PRECONDITION"),
        jsonrpc::CONTENT_TYPE_NOT_SUPPORTED => (StatusCode::BAD_REQUEST, "INVALID_ARGUMENT"),
        jsonrpc::INVALID_AGENT_RESPONSE => (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL"),
        jsonrpc::PARSE_ERROR | jsonrpc::INVALID_REQUEST | jsonrpc::INVALID_PARAMS => {
            (StatusCode::BAD_REQUEST, "INVALID_ARGUMENT")
        }
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL"),
    }
}

/// An error as §11.6 writes it: `{"error": {code, status, message, details}}`, the details
/// holding the `ErrorInfo` (and any `BadRequest`) the JSON-RPC error carries.
pub fn status_body(error: &RpcError) -> Value {
    let (status, name) = http_status(error.code);
    json!({
        "error": {
            "code": status.as_u16(),
            "status": name,
            "message": error.message,
            "details": error.data,
        }
    })
}

/// An error as an HTTP response.
pub(crate) fn error_response(error: &RpcError) -> Response {
    tracing::debug!(code = error.code, message = %log_field::escape(&error.message), "REST error");
    let (status, _) = http_status(error.code);
    with_json(status, &status_body(error))
}

/// An error that asks for credentials as HTTP 401 with `WWW-Authenticate: Bearer` and a §11.6
/// body whose status is `UNAUTHENTICATED`.
pub(crate) fn unauthorized(rpc: &RpcError) -> Response {
    let body = json!({
        "error": {
            "code": StatusCode::UNAUTHORIZED.as_u16(),
            "status": "UNAUTHENTICATED",
            "message": rpc.message,
            "details": rpc.data,
        }
    });
    let mut response = with_json(StatusCode::UNAUTHORIZED, &body);
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

pub(super) fn with_json<T: serde::Serialize>(status: StatusCode, value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => {
            let content_type = HeaderValue::from_static(RESPONSE_MEDIA_TYPE);
            (status, [(header::CONTENT_TYPE, content_type)], body).into_response()
        }
        Err(err) => error_response(&RpcError::internal(err)),
    }
}

/// Why a REST request is refused before its operation runs.
pub(super) enum Refusal {
    /// An A2A error, answered as §11.6 says.
    A2a(RpcError),
    /// The body could not be read (413 over the size limit, 400 otherwise).
    Body(BytesRejection),
    /// Who the caller is was refused: HTTP 401 (with `WWW-Authenticate: Bearer`) or 403, as
    /// REST clients expect of a credential the server does not accept.
    Identity(IdentityError),
}

impl From<RpcError> for Refusal {
    fn from(error: RpcError) -> Refusal {
        Refusal::A2a(error)
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::A2a(error) => error_response(&error),
            Refusal::Body(rejection) => (rejection.status(), rejection.body_text()).into_response(),
            Refusal::Identity(error) => identity::refusal_response(&error, false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a2a_errors_map_to_the_statuses_of_section_5_4_in_1_0_1() {
        let cases = [
            (jsonrpc::TASK_NOT_FOUND, 404, "NOT_FOUND"),
            (jsonrpc::TASK_NOT_CANCELABLE, 400, "FAILED_PRECONDITION"),
            (
                jsonrpc::PUSH_NOTIFICATION_NOT_SUPPORTED,
                400,
                "FAILED_PRECONDITION",
            ),
            (jsonrpc::UNSUPPORTED_OPERATION, 400, "FAILED_PRECONDITION"),
            (jsonrpc::CONTENT_TYPE_NOT_SUPPORTED, 400, "INVALID_ARGUMENT"),
            (jsonrpc::INVALID_AGENT_RESPONSE, 500, "INTERNAL"),
            (
                jsonrpc::EXTENDED_AGENT_CARD_NOT_CONFIGURED,
                400,
                "FAILED_PRECONDITION",
            ),
            (
                jsonrpc::EXTENSION_SUPPORT_REQUIRED,
                400,
                "FAILED_PRECONDITION",
            ),
            (jsonrpc::VERSION_NOT_SUPPORTED, 400, "FAILED_PRECONDITION"),
            (jsonrpc::INVALID_PARAMS, 400, "INVALID_ARGUMENT"),
            (jsonrpc::INTERNAL_ERROR, 500, "INTERNAL"),
        ];
        for (code, status, name) in cases {
            assert_eq!(
                http_status(code),
                (StatusCode::from_u16(status).unwrap(), name),
                "code {code}"
            );
        }
    }

    #[test]
    fn an_error_body_is_a_google_rpc_status_with_its_error_info() {
        let error = RpcError::new(jsonrpc::TASK_NOT_FOUND, "task not found: t")
            .with_metadata("taskId", "t");
        let body = status_body(&error);
        assert_eq!(body["error"]["code"], 404);
        assert_eq!(body["error"]["status"], "NOT_FOUND");
        assert_eq!(body["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
        assert_eq!(body["error"]["details"][0]["metadata"]["taskId"], "t");
    }
}
