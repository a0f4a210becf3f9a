//! A2A 1.0 as protobuf: the messages and the `A2AService` gRPC service generated from
//! `proto/a2a.proto` (package `lf.a2a.v1`; see build.rs), and the one conversion between them
//! and the protobuf-JSON-shaped types of [`crate::base::protocol::types`] and
//! [`crate::base::protocol::requests`].
//!
//! The conversion goes through protobuf JSON (pbjson's serde of every generated message), the
//! shape those types already are: a gRPC request is decoded by the same serde code, with the
//! same `InvalidParams` errors naming the field, as a JSON-RPC or REST request, so the bindings
//! cannot disagree on what a message means. A hand-written mapping of some thirty messages would
//! be faster by a serialisation per message and would have to be kept in step with both.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::base::protocol::jsonrpc::{RpcError, parse_params};

/// The generated code of package `lf.a2a.v1`: messages, their protobuf-JSON serde, and the
/// `A2AService` server and client.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod v1 {
    include!(concat!(env!("OUT_DIR"), "/lf.a2a.v1.rs"));
    include!(concat!(env!("OUT_DIR"), "/lf.a2a.v1.serde.rs"));
}

/// The `google.rpc` messages of a gRPC error's details (§5.4: a `google.rpc.Status` whose
/// details hold an `ErrorInfo`), as googleapis defines them; only these three are sent.
pub mod rpc {
    use std::collections::HashMap;

    /// `google.rpc.Status`: what `grpc-status-details-bin` carries.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Status {
        /// The `google.rpc.Code`.
        #[prost(int32, tag = "1")]
        pub code: i32,
        /// What went wrong, for the caller to read.
        #[prost(string, tag = "2")]
        pub message: String,
        /// `ErrorInfo`, and `BadRequest` for a field that was refused.
        #[prost(message, repeated, tag = "3")]
        pub details: Vec<Any>,
    }

    /// `google.protobuf.Any`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Any {
        /// `type.googleapis.com/google.rpc.ErrorInfo` and the like.
        #[prost(string, tag = "1")]
        pub type_url: String,
        /// The message, encoded.
        #[prost(bytes = "vec", tag = "2")]
        pub value: Vec<u8>,
    }

    /// `google.rpc.ErrorInfo`: the A2A error's name (`reason`) and its context.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ErrorInfo {
        /// The A2A error in UPPER_SNAKE_CASE without `Error` (`TASK_NOT_FOUND`).
        #[prost(string, tag = "1")]
        pub reason: String,
        /// `a2a-protocol.org`.
        #[prost(string, tag = "2")]
        pub domain: String,
        /// Context as strings (the task id, the field, the time).
        #[prost(map = "string, string", tag = "3")]
        pub metadata: HashMap<String, String>,
    }

    /// `google.rpc.BadRequest`: the fields a request was refused for.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct BadRequest {
        /// One per refused field.
        #[prost(message, repeated, tag = "1")]
        pub field_violations: Vec<FieldViolation>,
    }

    /// One refused field of a `BadRequest`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct FieldViolation {
        /// The field's path (`message.parts[1]`).
        #[prost(string, tag = "1")]
        pub field: String,
        /// Why it was refused.
        #[prost(string, tag = "2")]
        pub description: String,
    }
}

/// The gRPC service's full name: the path prefix of every method (`/lf.a2a.v1.A2AService/…`).
pub const SERVICE_NAME: &str = "lf.a2a.v1.A2AService";

/// A received protobuf message as the protocol type it is in protobuf JSON; a message that does
/// not fit (an unknown enum value, a oneof left empty) is `InvalidParams` naming the field, as it
/// would be in JSON.
pub fn from_proto<P: Serialize, T: DeserializeOwned>(message: &P) -> Result<T, RpcError> {
    let value = serde_json::to_value(message).map_err(RpcError::internal)?;
    parse_params(value)
}

/// A protocol value as the protobuf message it is in protobuf JSON. Absent values (JSON nulls)
/// are left out first: protobuf JSON reads a null list or map as an error, where the protocol
/// types mean "none".
pub fn to_proto<T: Serialize, P: DeserializeOwned>(value: &T) -> Result<P, RpcError> {
    let mut value = serde_json::to_value(value).map_err(RpcError::internal)?;
    drop_nulls(&mut value);
    serde_json::from_value(value).map_err(RpcError::internal)
}

fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, field| !field.is_null());
            map.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::requests::SendMessageRequest;
    use crate::base::protocol::types::{Role, StreamResponse, Task, TaskState};

    #[test]
    fn a_proto_request_reads_as_the_json_request_it_is() {
        let message = v1::SendMessageRequest {
            message: Some(v1::Message {
                message_id: "m1".into(),
                role: v1::Role::User as i32,
                parts: vec![v1::Part {
                    content: Some(v1::part::Content::Text("hello".into())),
                    ..v1::Part::default()
                }],
                ..v1::Message::default()
            }),
            ..v1::SendMessageRequest::default()
        };
        let request: SendMessageRequest = from_proto(&message).unwrap();
        assert_eq!(request.message.message_id, "m1");
        assert_eq!(request.message.role, Role::User);
        assert_eq!(request.message.text(), "hello");
    }

    #[test]
    fn a_proto_request_missing_a_required_field_is_invalid_params() {
        let error =
            from_proto::<_, SendMessageRequest>(&v1::SendMessageRequest::default()).unwrap_err();
        assert_eq!(error.code, crate::base::protocol::jsonrpc::INVALID_PARAMS);
    }

    #[test]
    fn a_task_event_becomes_its_proto_stream_message() {
        let task = Task {
            id: "t".into(),
            context_id: "c".into(),
            ..Task::default()
        };
        let mut event = StreamResponse::Task(task);
        if let StreamResponse::Task(task) = &mut event {
            task.status.state = TaskState::Working;
        }
        let proto: v1::StreamResponse = to_proto(&event).unwrap();
        let Some(v1::stream_response::Payload::Task(task)) = proto.payload else {
            panic!("a task payload, got {proto:?}");
        };
        assert_eq!(task.id, "t");
        assert_eq!(task.status.unwrap().state, v1::TaskState::Working as i32);
    }
}
