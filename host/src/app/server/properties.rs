//! Properties of JSON-RPC decoding, the first thing a hostile peer reaches: any bytes, and any
//! JSON near a request's shape, become a request or a JSON-RPC error (never a panic); the params
//! of every method decode to their type and pass the checks of [`crate::app::server::validate`], or are
//! refused naming the field; valid requests and decoded params round-trip.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Map, Number, Value};

use crate::app::server::validate;
use crate::base::protocol::extension::ENVELOPE_MEDIA_TYPE;
use crate::base::protocol::jsonrpc::*;
use crate::base::protocol::requests::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, SendMessageRequest, SubscribeToTaskRequest,
};
use crate::base::protocol::types::Task;

/// The 1.0 methods whose params are decoded, and names a peer might try instead.
const METHODS: [&str; 9] = [
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "ListTasks",
    "CancelTask",
    "SubscribeToTask",
    "message/send",
    "",
    "sendmessage",
];

/// The keys of the envelope and of every method's params, so random objects hit real fields.
const KEYS: [&str; 28] = [
    "jsonrpc",
    "id",
    "method",
    "params",
    "message",
    "messageId",
    "message_id",
    "role",
    "parts",
    "text",
    "raw",
    "url",
    "data",
    "mediaType",
    "filename",
    "metadata",
    "contextId",
    "taskId",
    "extensions",
    "referenceTaskIds",
    "configuration",
    "historyLength",
    "returnImmediately",
    "acceptedOutputModes",
    "pageSize",
    "pageToken",
    "status",
    "tenant",
];

/// Strings that mean something to the decoder.
const WORDS: [&str; 12] = [
    "2.0",
    "1.0",
    "ROLE_USER",
    "ROLE_AGENT",
    "ROLE_UNSPECIFIED",
    "TASK_STATE_WORKING",
    "UNRECOGNIZED",
    "text/plain",
    ENVELOPE_MEDIA_TYPE,
    "task",
    "  ",
    "",
];

fn number() -> BoxedStrategy<Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        select(vec![
            0i64,
            -1,
            1,
            100,
            101,
            i64::from(i32::MAX) + 1,
            i64::from(i32::MIN)
        ])
        .prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
    ]
    .boxed()
}

fn leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        number(),
        select(WORDS.to_vec()).prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ]
    .boxed()
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => select(KEYS.to_vec()).prop_map(str::to_string),
        1 => "[a-zA-Z_]{0,8}",
    ]
}

/// Any JSON value, its object keys mostly the real ones.
fn json() -> BoxedStrategy<Value> {
    leaf()
        .prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                vec(inner.clone(), 0..6).prop_map(Value::Array),
                vec((key(), inner), 0..6)
                    .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
            ]
        })
        .boxed()
}

/// `value` most of the time; otherwise the field is missing or holds any JSON.
fn mostly(value: impl Strategy<Value = Value>) -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        4 => value.prop_map(Some),
        1 => Just(None),
        1 => json().prop_map(Some),
    ]
}

/// An object of the named fields that are present.
fn object(fields: Vec<(&'static str, Option<Value>)>) -> Value {
    Value::Object(
        fields
            .into_iter()
            .filter_map(|(key, value)| value.map(|value| (key.to_string(), value)))
            .collect::<Map<_, _>>(),
    )
}

fn text() -> BoxedStrategy<Value> {
    prop_oneof![
        select(WORDS.to_vec()).prop_map(Value::from),
        ".{0,12}".prop_map(Value::from)
    ]
    .boxed()
}

fn part() -> BoxedStrategy<Value> {
    (
        mostly(text()),
        prop_oneof![Just(None), mostly(text())],
        prop_oneof![Just(None), mostly(json())],
        prop_oneof![Just(None), mostly(text())],
        prop_oneof![Just(None), mostly(text())],
    )
        .prop_map(|(text, url, data, media_type, raw)| {
            object(vec![
                ("text", text),
                ("url", url),
                ("data", data),
                ("mediaType", media_type),
                ("raw", raw),
            ])
        })
        .boxed()
}

fn message() -> BoxedStrategy<Value> {
    (
        mostly(text()),
        mostly(select(vec!["ROLE_USER", "ROLE_AGENT", "ROLE_UNSPECIFIED"]).prop_map(Value::from)),
        mostly(vec(part(), 0..4).prop_map(Value::Array)),
        prop_oneof![Just(None), mostly(text())],
        prop_oneof![Just(None), mostly(json())],
    )
        .prop_map(|(id, role, parts, context, metadata)| {
            object(vec![
                ("messageId", id),
                ("role", role),
                ("parts", parts),
                ("contextId", context),
                ("metadata", metadata),
            ])
        })
        .boxed()
}

fn send_params() -> BoxedStrategy<Value> {
    let configuration = (
        mostly(number()),
        mostly(any::<bool>().prop_map(Value::from)),
    )
        .prop_map(|(history, immediately)| {
            object(vec![
                ("historyLength", history),
                ("returnImmediately", immediately),
            ])
        });
    (
        mostly(message()),
        prop_oneof![Just(None), mostly(configuration)],
    )
        .prop_map(|(message, configuration)| {
            object(vec![("message", message), ("configuration", configuration)])
        })
        .boxed()
}

fn task_params() -> BoxedStrategy<Value> {
    (mostly(text()), prop_oneof![Just(None), mostly(number())])
        .prop_map(|(id, history)| object(vec![("id", id), ("historyLength", history)]))
        .boxed()
}

fn list_params() -> BoxedStrategy<Value> {
    (
        prop_oneof![Just(None), mostly(number())],
        prop_oneof![Just(None), mostly(text())],
        prop_oneof![Just(None), mostly(prop_oneof![text(), number()])],
        prop_oneof![Just(None), mostly(number())],
    )
        .prop_map(|(size, token, status, history)| {
            object(vec![
                ("pageSize", size),
                ("pageToken", token),
                ("status", status),
                ("historyLength", history),
            ])
        })
        .boxed()
}

/// Params near the shape of any method's.
fn params() -> BoxedStrategy<Value> {
    prop_oneof![send_params(), task_params(), list_params(), json()].boxed()
}

/// A request envelope near the valid shape: each member usually right, sometimes missing or
/// any JSON, sometimes beside an unknown member.
fn envelope() -> BoxedStrategy<Value> {
    (
        mostly(prop_oneof![text(), number(), Just(Value::Null)]),
        mostly(Just(Value::from("2.0"))),
        mostly(select(METHODS.to_vec()).prop_map(Value::from)),
        mostly(params()),
        prop_oneof![Just(None), mostly(json())],
    )
        .prop_map(|(id, version, method, params, extra)| {
            object(vec![
                ("id", id),
                ("jsonrpc", version),
                ("method", method),
                ("params", params),
                ("x-extra", extra),
            ])
        })
        .boxed()
}

/// The codes decoding may answer with.
const DECODING_CODES: [i32; 3] = [PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS];

/// Every error carries its `ErrorInfo`, and the whole answer serialises.
fn assert_well_formed(id: RequestId, error: RpcError) -> Result<(), TestCaseError> {
    prop_assert_eq!(&error.data[0]["@type"], ERROR_INFO_TYPE);
    prop_assert_eq!(&error.data[0]["reason"], reason_of(error.code));
    prop_assert!(serde_json::to_vec(&Response::failure(id, error)).is_ok());
    Ok(())
}

/// Decodes `params` as `method`'s and runs the checks `server::ops` runs before the task service.
fn decode(method: &str, params: Value) -> Result<Value, RpcError> {
    fn again<T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(
        decoded: T,
    ) -> Result<Value, RpcError> {
        let encoded = serde_json::to_value(&decoded).expect("decoded params serialise");
        let twice: T = parse_params(encoded.clone()).expect("encoded params decode again");
        assert_eq!(twice, decoded, "params round-trip");
        Ok(encoded)
    }
    match method {
        "SendMessage" | "SendStreamingMessage" => {
            let request: SendMessageRequest = parse_params(params)?;
            validate::sent_message(&request.message)?;
            if let Some(config) = &request.configuration {
                validate::history_length("configuration.historyLength", config.history_length)?;
            }
            again(request)
        }
        "GetTask" => {
            let request: GetTaskRequest = parse_params(params)?;
            validate::task_id("id", &request.id)?;
            validate::history_length("historyLength", request.history_length)?;
            again(request)
        }
        "ListTasks" => {
            let request: ListTasksRequest = parse_params(params)?;
            validate::page_size(request.page_size)?;
            validate::history_length("historyLength", request.history_length)?;
            again(request)
        }
        "CancelTask" => {
            let request: CancelTaskRequest = parse_params(params)?;
            validate::task_id("id", &request.id)?;
            again(request)
        }
        _ => {
            let request: SubscribeToTaskRequest = parse_params(params)?;
            validate::task_id("id", &request.id)?;
            again(request)
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    #[test]
    fn any_bytes_are_a_request_or_a_decoding_error(bytes in vec(any::<u8>(), 0..300)) {
        if let Err((id, error)) = Request::parse(&bytes) {
            prop_assert!(DECODING_CODES.contains(&error.code), "{error:?}");
            assert_well_formed(id, error)?;
        }
    }

    #[test]
    fn any_json_is_a_request_or_an_error_answered_with_its_readable_id(
        value in prop_oneof![envelope(), json()]
    ) {
        let bytes = serde_json::to_vec(&value).unwrap();
        match Request::parse(&bytes) {
            Ok(request) => {
                prop_assert_eq!(&value["jsonrpc"], "2.0");
                prop_assert_eq!(&value["method"], request.method.as_str());
                prop_assert!(request.params.is_object());
            }
            Err((id, error)) => {
                prop_assert!(DECODING_CODES.contains(&error.code), "{error:?}");
                let readable = value
                    .as_object()
                    .and_then(|object| object.get("id"))
                    .and_then(RequestId::from_value);
                prop_assert_eq!(&id, &readable.unwrap_or_default());
                assert_well_formed(id, error)?;
            }
        }
    }

    #[test]
    fn valid_requests_round_trip(
        id in prop_oneof![
            any::<String>().prop_map(RequestId::String),
            any::<i64>().prop_map(|n| RequestId::Number(n.into())),
            Just(RequestId::Null),
        ],
        method in prop_oneof![select(METHODS.to_vec()).prop_map(str::to_string), any::<String>()],
        params in vec((key(), json()), 0..6),
    ) {
        let params = Value::Object(params.into_iter().collect());
        let text = serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": method, "params": params
        })
        .to_string();
        let request = Request::parse(text.as_bytes()).unwrap();
        prop_assert_eq!(&request, &Request { id: id.clone(), method, params: params.clone() });
        let answer = serde_json::to_string(&Response::success(id, params)).unwrap();
        let read: Response = serde_json::from_str(&answer).unwrap();
        prop_assert_eq!(read.id, request.id);
        prop_assert_eq!(read.result, Some(request.params));
    }

    #[test]
    fn method_params_decode_and_pass_the_checks_or_are_refused_naming_the_field(
        method in select(METHODS[..6].to_vec()),
        params in params(),
    ) {
        if let Err(error) = decode(method, params) {
            prop_assert_eq!(error.code, INVALID_PARAMS);
            prop_assert!(error.message.starts_with("invalid params"), "{}", error.message);
            if let Some(field) = error.data[0]["metadata"]["field"].as_str() {
                prop_assert!(
                    error.message.starts_with(&format!("invalid params: {field}: ")),
                    "{}", error.message
                );
                prop_assert_eq!(&error.data[1]["fieldViolations"][0]["field"], field);
            }
            assert_well_formed(RequestId::Null, error)?;
        }
    }

    #[test]
    fn any_history_length_trims_without_panic(
        length in prop_oneof![any::<i32>().prop_map(Some), Just(None)],
        messages in 0usize..8,
    ) {
        let history = (0..messages)
            .map(|n| crate::base::protocol::types::Message::agent_text("t", "c", n.to_string()))
            .collect();
        let mut task = Task { history: Some(history), ..Task::default() };
        validate::trim_history(&mut task, length);
        let kept = task.history.as_ref().map_or(0, Vec::len);
        match length {
            None => prop_assert_eq!(kept, messages),
            Some(n) => prop_assert_eq!(kept, usize::try_from(n).unwrap_or(0).min(messages)),
        }
    }
}
