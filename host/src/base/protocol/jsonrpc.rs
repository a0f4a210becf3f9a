//! The JSON-RPC 2.0 envelope A2A rides on: request parsing that never panics, responses, and the
//! error object with its `google.rpc.ErrorInfo` details and A2A error codes.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value, json};

use crate::base::protocol::types::timestamp_now;

/// The only JSON-RPC version spoken.
pub const JSONRPC_VERSION: &str = "2.0";
/// The `ErrorInfo.domain` of every error, as A2A §10.6 and §11.6 name it.
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";
/// The protobuf-JSON `Any` type of the error detail every error carries.
pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";
/// The protobuf-JSON `Any` type of the field-violation detail of invalid params.
pub const BAD_REQUEST_TYPE: &str = "type.googleapis.com/google.rpc.BadRequest";

/// The body is not JSON.
pub const PARSE_ERROR: i32 = -32700;
/// The JSON is not a JSON-RPC request object.
pub const INVALID_REQUEST: i32 = -32600;
/// No such method.
pub const METHOD_NOT_FOUND: i32 = -32601;
/// The params do not fit the method.
pub const INVALID_PARAMS: i32 = -32602;
/// The server failed; the caller did nothing wrong.
pub const INTERNAL_ERROR: i32 = -32603;
/// A2A `TaskNotFoundError`.
pub const TASK_NOT_FOUND: i32 = -32001;
/// A2A `TaskNotCancelableError`.
pub const TASK_NOT_CANCELABLE: i32 = -32002;
/// A2A `PushNotificationNotSupportedError`.
pub const PUSH_NOTIFICATION_NOT_SUPPORTED: i32 = -32003;
/// A2A `UnsupportedOperationError`.
pub const UNSUPPORTED_OPERATION: i32 = -32004;
/// A2A `ContentTypeNotSupportedError`.
pub const CONTENT_TYPE_NOT_SUPPORTED: i32 = -32005;
/// A2A `InvalidAgentResponseError`.
pub const INVALID_AGENT_RESPONSE: i32 = -32006;
/// A2A `ExtendedAgentCardNotConfiguredError`.
pub const EXTENDED_AGENT_CARD_NOT_CONFIGURED: i32 = -32007;
/// A2A `ExtensionSupportRequiredError`.
pub const EXTENSION_SUPPORT_REQUIRED: i32 = -32008;
/// A2A `VersionNotSupportedError`.
pub const VERSION_NOT_SUPPORTED: i32 = -32009;

/// The `ErrorInfo.reason` of a code: the A2A error name in UPPER_SNAKE_CASE without `Error`.
pub fn reason_of(code: i32) -> &'static str {
    match code {
        PARSE_ERROR => "JSON_PARSE",
        INVALID_REQUEST => "INVALID_REQUEST",
        METHOD_NOT_FOUND => "METHOD_NOT_FOUND",
        INVALID_PARAMS => "INVALID_PARAMS",
        TASK_NOT_FOUND => "TASK_NOT_FOUND",
        TASK_NOT_CANCELABLE => "TASK_NOT_CANCELABLE",
        PUSH_NOTIFICATION_NOT_SUPPORTED => "PUSH_NOTIFICATION_NOT_SUPPORTED",
        UNSUPPORTED_OPERATION => "UNSUPPORTED_OPERATION",
        CONTENT_TYPE_NOT_SUPPORTED => "CONTENT_TYPE_NOT_SUPPORTED",
        INVALID_AGENT_RESPONSE => "INVALID_AGENT_RESPONSE",
        EXTENDED_AGENT_CARD_NOT_CONFIGURED => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
        EXTENSION_SUPPORT_REQUIRED => "EXTENSION_SUPPORT_REQUIRED",
        VERSION_NOT_SUPPORTED => "VERSION_NOT_SUPPORTED",
        _ => "INTERNAL",
    }
}

/// A request id: a string, a number or null. Echoed back verbatim, so numbers keep their form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(untagged)]
pub enum RequestId {
    /// A string id, echoed as sent.
    String(String),
    /// A numeric id, echoed digit for digit.
    Number(Number),
    /// A null id, also what an error answers with when the request's id could not be read.
    #[default]
    Null,
}

impl RequestId {
    /// The id as a JSON value, or `None` when the value cannot be an id (bool, array, object).
    pub(crate) fn from_value(value: &Value) -> Option<RequestId> {
        match value {
            Value::String(s) => Some(RequestId::String(s.clone())),
            Value::Number(n) => Some(RequestId::Number(n.clone())),
            Value::Null => Some(RequestId::Null),
            _ => None,
        }
    }
}

/// A JSON-RPC error object. Every one carries an `ErrorInfo` detail so a client can tell A2A
/// errors apart by `reason` as well as by code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{message} (JSON-RPC error {code})")]
pub struct RpcError {
    /// The JSON-RPC or A2A error code (the constants above).
    pub code: i32,
    /// What went wrong, for the caller to read.
    pub message: String,
    /// The error details: this server always sends an `ErrorInfo`, plus a `BadRequest` naming the field for invalid params.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub data: Vec<Value>,
}

impl RpcError {
    /// An error with an `ErrorInfo` detail whose metadata holds only the time it happened.
    pub fn new(code: i32, message: impl Into<String>) -> RpcError {
        let info = json!({
            "@type": ERROR_INFO_TYPE,
            "reason": reason_of(code),
            "domain": ERROR_DOMAIN,
            "metadata": { "timestamp": timestamp_now() },
        });
        RpcError {
            code,
            message: message.into(),
            data: vec![info],
        }
    }

    /// Adds context to the `ErrorInfo` metadata (a string map, as in `google.rpc.ErrorInfo`).
    pub fn with_metadata(mut self, key: &str, value: impl Into<String>) -> RpcError {
        let metadata = self
            .data
            .iter_mut()
            .find(|detail| detail["@type"] == ERROR_INFO_TYPE)
            .and_then(|info| info.get_mut("metadata"))
            .and_then(Value::as_object_mut);
        if let Some(metadata) = metadata {
            metadata.insert(key.to_string(), Value::String(value.into()));
        }
        self
    }

    /// The `ErrorInfo.reason`, as derived from the code.
    pub fn reason(&self) -> &'static str {
        reason_of(self.code)
    }

    /// The body was not JSON.
    pub fn parse_error(detail: impl std::fmt::Display) -> RpcError {
        RpcError::new(PARSE_ERROR, format!("invalid JSON payload: {detail}"))
    }

    /// The JSON was not a valid request object.
    pub fn invalid_request(message: impl Into<String>) -> RpcError {
        RpcError::new(INVALID_REQUEST, message)
    }

    /// The method is not one this server knows.
    pub fn method_not_found(method: &str) -> RpcError {
        RpcError::new(METHOD_NOT_FOUND, format!("method not found: {method}"))
            .with_metadata("method", method)
    }

    /// Invalid params; `field` (a path such as `message.parts[1]`) goes into a `BadRequest`
    /// field violation as well as the message, so both people and programs can find it.
    pub fn invalid_params(field: &str, description: impl Into<String>) -> RpcError {
        let description = description.into();
        let message = if field.is_empty() || field == "." {
            format!("invalid params: {description}")
        } else {
            format!("invalid params: {field}: {description}")
        };
        let mut error = RpcError::new(INVALID_PARAMS, message);
        if !field.is_empty() && field != "." {
            error = error.with_metadata("field", field);
            error.data.push(json!({
                "@type": BAD_REQUEST_TYPE,
                "fieldViolations": [{ "field": field, "description": description }],
            }));
        }
        error
    }

    /// Something failed inside the server. The detail is logged, not sent.
    pub fn internal(detail: impl std::fmt::Display) -> RpcError {
        tracing::error!(%detail, "internal error answering a JSON-RPC request");
        RpcError::new(INTERNAL_ERROR, "internal error")
    }

    /// The operation or one aspect of it is not supported.
    pub fn unsupported(message: impl Into<String>) -> RpcError {
        RpcError::new(UNSUPPORTED_OPERATION, message)
    }
}

/// A request whose envelope has been checked; `params` is `{}` when the request had none.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id to answer with.
    pub id: RequestId,
    /// The A2A method called (`SendMessage`, `GetTask`, …).
    pub method: String,
    /// The method's parameters, always an object.
    pub params: Value,
}

impl Request {
    /// Parses a request body. On failure, returns the error together with the id to answer with:
    /// the request's own id when it was readable, null otherwise.
    pub fn parse(body: &[u8]) -> Result<Request, (RequestId, RpcError)> {
        let value: Value = serde_json::from_slice(body)
            .map_err(|err| (RequestId::Null, RpcError::parse_error(err)))?;
        Request::from_value(value)
    }

    /// Checks a parsed JSON value is a JSON-RPC 2.0 request object.
    pub fn from_value(value: Value) -> Result<Request, (RequestId, RpcError)> {
        let mut object = match value {
            Value::Object(object) => object,
            Value::Array(_) => {
                return Err(invalid(RequestId::Null, "batch requests are not supported"));
            }
            _ => {
                return Err(invalid(
                    RequestId::Null,
                    "the request must be a JSON object",
                ));
            }
        };
        // The id comes first so that every later error can be answered with it.
        let id = match object.get("id") {
            None => {
                return Err(invalid(
                    RequestId::Null,
                    "`id` is required: every A2A method answers",
                ));
            }
            Some(raw) => RequestId::from_value(raw).ok_or_else(|| {
                invalid(RequestId::Null, "`id` must be a string, a number or null")
            })?,
        };
        if object.get("jsonrpc").and_then(Value::as_str) != Some(JSONRPC_VERSION) {
            return Err(invalid(id, "`jsonrpc` must be exactly \"2.0\""));
        }
        let method = match object.remove("method") {
            Some(Value::String(method)) => method,
            Some(_) => return Err(invalid(id, "`method` must be a string")),
            None => return Err(invalid(id, "`method` is required")),
        };
        let params = match object.remove("params") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(Value::Object(params)) => Value::Object(params),
            Some(Value::Array(_)) => {
                let error = RpcError::invalid_params("", "params must be an object, not an array");
                return Err((id, error));
            }
            Some(_) => return Err(invalid(id, "`params` must be an object")),
        };
        Ok(Request { id, method, params })
    }
}

fn invalid(id: RequestId, message: &str) -> (RequestId, RpcError) {
    (id, RpcError::invalid_request(message))
}

/// A JSON-RPC response: exactly one of `result` and `error` is set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// Always `2.0`.
    pub jsonrpc: String,
    /// The id of the request this answers.
    pub id: RequestId,
    /// The method's result, on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The error, on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RpcError>,
}

impl Response {
    /// A successful response.
    pub fn success(id: RequestId, result: Value) -> Response {
        Response {
            jsonrpc: JSONRPC_VERSION.to_string(),
            id,
            result: Some(result),
            error: None,
        }
    }

    /// An error response.
    pub fn failure(id: RequestId, error: RpcError) -> Response {
        Response {
            jsonrpc: JSONRPC_VERSION.to_string(),
            id,
            result: None,
            error: Some(error),
        }
    }
}

/// Deserialises a method's params, naming the offending field (`message.parts[0]`) on failure.
pub fn parse_params<T: serde::de::DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    serde_path_to_error::deserialize(params).map_err(|err| {
        let field = err.path().to_string();
        RpcError::invalid_params(&field, err.into_inner().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::requests::SendMessageRequest;

    fn refused(body: &str) -> (RequestId, RpcError) {
        Request::parse(body.as_bytes()).unwrap_err()
    }

    #[test]
    fn malformed_json_is_a_parse_error_answered_with_a_null_id() {
        let (id, error) = refused("{not json");
        assert_eq!((id, error.code), (RequestId::Null, PARSE_ERROR));
    }

    #[test]
    fn envelope_errors_are_invalid_requests_answered_with_the_id_when_readable() {
        let (id, error) = refused(r#"{"jsonrpc":"2.0","id":7}"#);
        assert_eq!(
            (id, error.code),
            (RequestId::Number(7.into()), INVALID_REQUEST)
        );
        let (id, error) = refused(r#"{"jsonrpc":"1.0","id":"a","method":"GetTask"}"#);
        assert_eq!(
            (id, error.code),
            (RequestId::String("a".into()), INVALID_REQUEST)
        );
        let (id, error) = refused(r#"{"jsonrpc":"2.0","id":true,"method":"GetTask"}"#);
        assert_eq!((id, error.code), (RequestId::Null, INVALID_REQUEST));
        let (_, error) = refused(r#"{"jsonrpc":"2.0","id":1,"method":5}"#);
        assert_eq!(error.code, INVALID_REQUEST);
        let (_, error) = refused("[]");
        assert_eq!(error.code, INVALID_REQUEST);
    }

    #[test]
    fn a_fractional_id_is_echoed_exactly_as_it_came() {
        let request = Request::parse(br#"{"jsonrpc":"2.0","id":2.9824325004747e-58,"method":"M"}"#);
        let answer = serde_json::to_string(&Response::success(request.unwrap().id, json!({})));
        assert!(answer.unwrap().contains(r#""id":2.9824325004747e-58"#));
    }

    #[test]
    fn a_request_without_params_gets_an_empty_object() {
        let request = Request::parse(br#"{"jsonrpc":"2.0","id":null,"method":"M"}"#).unwrap();
        assert_eq!(request.params, json!({}));
        assert_eq!(request.id, RequestId::Null);
    }

    #[test]
    fn params_errors_name_the_field() {
        let err = parse_params::<SendMessageRequest>(json!({})).unwrap_err();
        assert_eq!(err.code, INVALID_PARAMS);
        assert!(err.message.contains("`message`"), "{}", err.message);
        let params = json!({"message":{"messageId":"m","role":"ROLE_USER","parts":[{"txt":"x"}]}});
        let err = parse_params::<SendMessageRequest>(params).unwrap_err();
        assert!(err.message.contains("message.parts[0]"), "{}", err.message);
        assert_eq!(err.data[1]["@type"], BAD_REQUEST_TYPE);
    }

    #[test]
    fn responses_carry_exactly_one_of_result_and_error() {
        let ok = serde_json::to_value(Response::success(RequestId::Number(1.into()), json!({})))
            .unwrap();
        assert_eq!(ok, json!({"jsonrpc":"2.0","id":1,"result":{}}));
        let err = Response::failure(RequestId::Null, RpcError::method_not_found("X"));
        let err = serde_json::to_value(err).unwrap();
        assert!(err.get("result").is_none());
        assert_eq!(err["error"]["code"], METHOD_NOT_FOUND);
        assert_eq!(err["id"], Value::Null);
    }
}
