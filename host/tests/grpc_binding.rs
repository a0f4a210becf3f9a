//! The gRPC binding over a real HTTP/2 connection on loopback, called with the tonic client
//! generated from the same `a2a.proto`: every operation round-trips, both server streams follow
//! their task, errors carry their §5.4 code and an `ErrorInfo`, callers are identified as on the
//! HTTP bindings (`UNAUTHENTICATED`, `PERMISSION_DENIED`), and the shared limits hold (an
//! oversized message, the rate limit).

mod support {
    pub mod served;
}

use std::time::Duration;

use prost::Message as _;
use support::served::Served;
use tiny_harness::app::runtime::Runtime;
use tiny_harness::base::config::Config;
use tiny_harness::base::model::build_model;
use tiny_harness::base::protocol::proto::rpc;
use tiny_harness::base::protocol::proto::v1;
use tiny_harness::base::protocol::proto::v1::a2a_service_client::A2aServiceClient;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};

const ALICE_TOKEN: &str = "grpc-binding-alice-token-6512bd43d9caa6e0";
const BOB_TOKEN: &str = "grpc-binding-bob-token-c20ad4d76fe97759aa";
/// A model that asks its creator a question, so the task stays open (INPUT_REQUIRED).
const ASK: &str = "[[reply]]\n[[reply.tool_calls]]\nname = \"ask_participant\"\narguments = { participant_id = \"alice\", question = \"Which month?\" }\n";
/// A model that answers at once.
const ANSWER: &str = "[[reply]]\ntext = \"ok\"\n";
/// How long a test waits for something that must happen: a guard against a hang, not a measure.
const HANG_GUARD: Duration = Duration::from_secs(30);

struct Server {
    served: Served,
    grpc_url: String,
    _dir: tempfile::TempDir,
}

impl Server {
    /// A harness with `alice` and `bob` as token callers and gRPC on its own loopback port;
    /// `server` holds extra `[server]` lines.
    async fn start(script: &str, server: &str) -> Server {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("script.toml"), script).unwrap();
        let text = format!(
            "[server]\nbind = \"127.0.0.1:0\"\ngrpc_bind = \"127.0.0.1:0\"\n{server}\n\
             [[server.callers]]\nid = \"alice\"\ntoken_env = \"ALICE_TOKEN\"\n\
             [[server.callers]]\nid = \"bob\"\ntoken_env = \"BOB_TOKEN\"\n\
             [store]\npath = \"harness.db\"\n\
             [model]\nprovider = \"scripted\"\nscript = \"script.toml\"\n"
        );
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).unwrap();
        let config = Config::load(&path).unwrap();
        let model = build_model(&config.model, |p| config.resolve(p), |_| None).unwrap();
        let env = |name: &str| match name {
            "ALICE_TOKEN" => Some(ALICE_TOKEN.to_string()),
            "BOB_TOKEN" => Some(BOB_TOKEN.to_string()),
            _ => None,
        };
        let runtime = Runtime::build_with_model_and_env(config, model, env)
            .await
            .unwrap();
        let base_url = format!("http://{}", runtime.local_addr());
        let card = runtime.card(&base_url);
        let grpc = card
            .supported_interfaces
            .iter()
            .find(|interface| interface.protocol_binding == "GRPC")
            .expect("the card lists the gRPC interface");
        assert_eq!(grpc.protocol_version, "1.0");
        assert_ne!(
            format!("http://{}", grpc.url),
            base_url,
            "gRPC has a port of its own"
        );
        let grpc_url = format!("http://{}", grpc.url);
        Server {
            served: Served::start(runtime),
            grpc_url,
            _dir: dir,
        }
    }

    async fn client(&self) -> A2aServiceClient<Channel> {
        let channel = tonic::transport::Endpoint::from_shared(self.grpc_url.clone())
            .unwrap()
            .connect()
            .await
            .expect("the gRPC port accepts HTTP/2");
        A2aServiceClient::new(channel)
    }

    async fn stop(self) {
        self.served.stop().await;
    }
}

/// `message` as a request with `Authorization: Bearer {token}` (none when empty).
fn as_caller<T>(token: &str, message: T) -> Request<T> {
    let mut request = Request::new(message);
    if !token.is_empty() {
        let value = format!("Bearer {token}").parse().unwrap();
        request.metadata_mut().insert("authorization", value);
    }
    request
}

/// A text message to send, to `task_id` when not empty.
fn send(text: &str, task_id: &str, return_immediately: bool) -> v1::SendMessageRequest {
    v1::SendMessageRequest {
        message: Some(v1::Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            task_id: task_id.to_string(),
            role: v1::Role::User as i32,
            parts: vec![v1::Part {
                content: Some(v1::part::Content::Text(text.to_string())),
                ..v1::Part::default()
            }],
            ..v1::Message::default()
        }),
        configuration: Some(v1::SendMessageConfiguration {
            return_immediately,
            ..v1::SendMessageConfiguration::default()
        }),
        ..v1::SendMessageRequest::default()
    }
}

/// The `ErrorInfo.reason` a status carries in its `google.rpc.Status` details.
fn reason(status: &Status) -> String {
    let details = rpc::Status::decode(status.details()).expect("google.rpc.Status details");
    assert_eq!(details.code, status.code() as i32);
    let info = details
        .details
        .iter()
        .find(|any| any.type_url == "type.googleapis.com/google.rpc.ErrorInfo")
        .expect("an ErrorInfo detail");
    let info = rpc::ErrorInfo::decode(info.value.as_slice()).unwrap();
    assert_eq!(info.domain, "a2a-protocol.org");
    info.reason
}

fn state_of(event: &v1::StreamResponse) -> i32 {
    match event.payload.as_ref().expect("a payload") {
        v1::stream_response::Payload::Task(task) => task.status.as_ref().unwrap().state,
        v1::stream_response::Payload::StatusUpdate(update) => update.status.as_ref().unwrap().state,
        _ => v1::TaskState::Unspecified as i32,
    }
}

#[tokio::test]
async fn every_unary_operation_round_trips_over_grpc_with_its_errors() {
    let server = Server::start(ANSWER, "").await;
    let mut client = server.client().await;

    let sent = client
        .send_message(as_caller(ALICE_TOKEN, send("Reconcile March", "", false)))
        .await
        .expect("SendMessage")
        .into_inner();
    let task_id = match sent.payload.expect("a payload") {
        v1::send_message_response::Payload::Task(task) => task.id,
        v1::send_message_response::Payload::Message(message) => message.task_id,
    };
    let task = client
        .get_task(as_caller(
            ALICE_TOKEN,
            v1::GetTaskRequest {
                id: task_id.clone(),
                ..v1::GetTaskRequest::default()
            },
        ))
        .await
        .expect("GetTask")
        .into_inner();
    assert_eq!(task.id, task_id);
    assert_eq!(task.status.unwrap().state, v1::TaskState::Completed as i32);

    let listed = client
        .list_tasks(as_caller(ALICE_TOKEN, v1::ListTasksRequest::default()))
        .await
        .expect("ListTasks")
        .into_inner();
    let ids: Vec<_> = listed.tasks.iter().map(|task| task.id.as_str()).collect();
    assert_eq!(ids, [task_id.as_str()]);
    let bobs = client
        .list_tasks(as_caller(BOB_TOKEN, v1::ListTasksRequest::default()))
        .await
        .expect("ListTasks as bob")
        .into_inner();
    assert!(bobs.tasks.is_empty(), "bob sees none of alice's tasks");

    let cancel = client
        .cancel_task(as_caller(
            ALICE_TOKEN,
            v1::CancelTaskRequest {
                id: task_id.clone(),
                ..v1::CancelTaskRequest::default()
            },
        ))
        .await
        .expect_err("a completed task cannot be canceled");
    assert_eq!(cancel.code(), Code::FailedPrecondition);
    assert_eq!(reason(&cancel), "TASK_NOT_CANCELABLE");

    let missing = client
        .get_task(as_caller(
            BOB_TOKEN,
            v1::GetTaskRequest {
                id: task_id.clone(),
                ..v1::GetTaskRequest::default()
            },
        ))
        .await
        .expect_err("another caller's task is not found");
    assert_eq!(missing.code(), Code::NotFound);
    assert_eq!(reason(&missing), "TASK_NOT_FOUND");

    let card = client
        .get_extended_agent_card(as_caller(
            ALICE_TOKEN,
            v1::GetExtendedAgentCardRequest::default(),
        ))
        .await
        .expect("the extended card, for a proven caller")
        .into_inner();
    assert!(
        card.supported_interfaces
            .iter()
            .any(|interface| interface.protocol_binding == "GRPC")
    );
    let anonymous = client
        .get_extended_agent_card(as_caller("", v1::GetExtendedAgentCardRequest::default()))
        .await
        .expect_err("the extended card is for proven callers");
    assert_eq!(anonymous.code(), Code::Unauthenticated);

    let push = client
        .get_task_push_notification_config(as_caller(
            ALICE_TOKEN,
            v1::GetTaskPushNotificationConfigRequest {
                task_id: task_id.clone(),
                id: "c".into(),
                ..Default::default()
            },
        ))
        .await
        .expect_err("push notifications are off");
    // A2A 1.0.1's §5.4: FAILED_PRECONDITION (1.0.0 said UNIMPLEMENTED).
    assert_eq!(push.code(), Code::FailedPrecondition);
    assert_eq!(reason(&push), "PUSH_NOTIFICATION_NOT_SUPPORTED");

    let mut empty = send("x", "", false);
    empty.message.as_mut().unwrap().parts.clear();
    let invalid = client
        .send_message(as_caller(ALICE_TOKEN, empty))
        .await
        .expect_err("a message without parts is invalid");
    assert_eq!(invalid.code(), Code::InvalidArgument);
    assert_eq!(reason(&invalid), "INVALID_PARAMS");

    let mut old = as_caller(ALICE_TOKEN, v1::ListTasksRequest::default());
    old.metadata_mut()
        .insert("a2a-version", "2.0".parse().unwrap());
    let version = client.list_tasks(old).await.expect_err("version 2.0");
    assert_eq!(version.code(), Code::FailedPrecondition);
    assert_eq!(reason(&version), "VERSION_NOT_SUPPORTED");
    server.stop().await;
}

#[tokio::test]
async fn streams_follow_a_task_until_it_settles_and_a_subscription_until_it_ends() {
    let server = Server::start(ASK, "").await;
    let mut client = server.client().await;
    let mut stream = client
        .send_streaming_message(as_caller(ALICE_TOKEN, send("Reconcile March", "", false)))
        .await
        .expect("SendStreamingMessage")
        .into_inner();
    let mut states = Vec::new();
    let mut task_id = String::new();
    while let Some(event) = tokio::time::timeout(HANG_GUARD, stream.message())
        .await
        .expect("the stream moves")
        .expect("a stream message")
    {
        if let Some(v1::stream_response::Payload::Task(task)) = &event.payload {
            task_id = task.id.clone();
        }
        states.push(state_of(&event));
    }
    assert_eq!(states.first(), Some(&(v1::TaskState::Submitted as i32)));
    assert_eq!(
        states.last(),
        Some(&(v1::TaskState::InputRequired as i32)),
        "the stream ends once the task waits: {states:?}"
    );

    let mut subscription = client
        .subscribe_to_task(as_caller(
            ALICE_TOKEN,
            v1::SubscribeToTaskRequest {
                id: task_id.clone(),
                ..Default::default()
            },
        ))
        .await
        .expect("SubscribeToTask")
        .into_inner();
    let first = subscription.message().await.unwrap().expect("the snapshot");
    assert_eq!(state_of(&first), v1::TaskState::InputRequired as i32);
    let canceled = client
        .cancel_task(as_caller(
            ALICE_TOKEN,
            v1::CancelTaskRequest {
                id: task_id.clone(),
                ..Default::default()
            },
        ))
        .await
        .expect("CancelTask")
        .into_inner();
    assert_eq!(
        canceled.status.unwrap().state,
        v1::TaskState::Canceled as i32
    );
    let mut last = None;
    while let Some(event) = tokio::time::timeout(HANG_GUARD, subscription.message())
        .await
        .expect("the subscription moves")
        .expect("a stream message")
    {
        last = Some(state_of(&event));
    }
    assert_eq!(
        last,
        Some(v1::TaskState::Canceled as i32),
        "it ends with the task"
    );

    let ended = client
        .subscribe_to_task(as_caller(
            ALICE_TOKEN,
            v1::SubscribeToTaskRequest {
                id: task_id,
                ..Default::default()
            },
        ))
        .await;
    let status = match ended {
        Err(status) => status,
        Ok(response) => response
            .into_inner()
            .message()
            .await
            .expect_err("a terminal task cannot be subscribed to"),
    };
    // §3.1.6: UnsupportedOperationError, FAILED_PRECONDITION by 1.0.1's §5.4.
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert_eq!(reason(&status), "UNSUPPORTED_OPERATION");
    server.stop().await;
}

#[tokio::test]
async fn callers_are_identified_as_on_the_http_bindings() {
    let server = Server::start(ANSWER, "").await;
    let mut client = server.client().await;
    let forged = client
        .list_tasks(as_caller(
            "grpc-binding-forged-token-aab3238922bcc25a",
            v1::ListTasksRequest::default(),
        ))
        .await
        .expect_err("an unknown token is refused");
    assert_eq!(forged.code(), Code::Unauthenticated);

    let mut posing = send("hi", "", true);
    let mut metadata = pbjson_types::Struct::default();
    metadata.fields.insert(
        "participant_id".into(),
        pbjson_types::Value::from("bob".to_string()),
    );
    posing.message.as_mut().unwrap().metadata = Some(metadata);
    let refused = client
        .send_message(as_caller(ALICE_TOKEN, posing))
        .await
        .expect_err("alice may not send as bob");
    assert_eq!(refused.code(), Code::PermissionDenied);

    let mut claiming = Request::new(v1::ListTasksRequest::default());
    claiming
        .metadata_mut()
        .insert("x-participant-id", "alice".parse().unwrap());
    let claimed = client
        .list_tasks(claiming)
        .await
        .expect_err("alice's id needs her token");
    assert_eq!(claimed.code(), Code::Unauthenticated);
    server.stop().await;
}

#[tokio::test]
async fn the_shared_limits_refuse_an_oversized_message_and_a_caller_over_its_rate() {
    let server = Server::start(
        ANSWER,
        "max_request_bytes = 4096\nrate_limit_per_minute = 4",
    )
    .await;
    let mut client = server.client().await;
    let big = client
        .send_message(as_caller(ALICE_TOKEN, send(&"x".repeat(8192), "", true)))
        .await
        .expect_err("a message over max_request_bytes");
    // tonic's code for a message over its decoding cap, before the message is read.
    assert_eq!(big.code(), Code::OutOfRange, "{big:?}");
    assert!(big.message().contains("4096"), "{big:?}");

    let mut refused = None;
    for _ in 0..5 {
        let listed = client
            .list_tasks(as_caller(BOB_TOKEN, v1::ListTasksRequest::default()))
            .await;
        if let Err(status) = listed {
            refused = Some(status);
            break;
        }
    }
    let refused = refused.expect("bob runs out of his rate within five requests");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(refused.metadata().get("retry-after").is_some());
    // Another caller's quota is its own.
    client
        .list_tasks(as_caller(ALICE_TOKEN, v1::ListTasksRequest::default()))
        .await
        .expect("alice still has her rate");
    server.stop().await;
}

#[tokio::test]
async fn push_configs_are_set_read_listed_and_deleted_over_grpc_by_the_tasks_participants_only() {
    let server = Server::start(ANSWER, "[push]\nallowed_hosts = [\"127.0.0.1:9\"]").await;
    let mut client = server.client().await;
    let sent = client
        .send_message(as_caller(ALICE_TOKEN, send("Reconcile March", "", false)))
        .await
        .expect("SendMessage")
        .into_inner();
    let task_id = match sent.payload.expect("a payload") {
        v1::send_message_response::Payload::Task(task) => task.id,
        v1::send_message_response::Payload::Message(message) => message.task_id,
    };
    let created = client
        .create_task_push_notification_config(as_caller(
            ALICE_TOKEN,
            v1::TaskPushNotificationConfig {
                task_id: task_id.clone(),
                url: "http://127.0.0.1:9/hook".into(),
                token: "client-token".into(),
                ..Default::default()
            },
        ))
        .await
        .expect("CreateTaskPushNotificationConfig")
        .into_inner();
    assert!(!created.id.is_empty(), "the host mints an id");
    assert_eq!(created.url, "http://127.0.0.1:9/hook");

    let read = client
        .get_task_push_notification_config(as_caller(
            ALICE_TOKEN,
            v1::GetTaskPushNotificationConfigRequest {
                task_id: task_id.clone(),
                id: created.id.clone(),
                ..Default::default()
            },
        ))
        .await
        .expect("GetTaskPushNotificationConfig")
        .into_inner();
    assert_eq!(read.token, "client-token");
    let listed = client
        .list_task_push_notification_configs(as_caller(
            ALICE_TOKEN,
            v1::ListTaskPushNotificationConfigsRequest {
                task_id: task_id.clone(),
                ..Default::default()
            },
        ))
        .await
        .expect("ListTaskPushNotificationConfigs")
        .into_inner();
    assert_eq!(listed.configs.len(), 1);

    // Another caller learns nothing of the task or its configs.
    let hidden = client
        .list_task_push_notification_configs(as_caller(
            BOB_TOKEN,
            v1::ListTaskPushNotificationConfigsRequest {
                task_id: task_id.clone(),
                ..Default::default()
            },
        ))
        .await
        .expect_err("bob is no participant");
    assert_eq!(hidden.code(), Code::NotFound);
    // A webhook outside the allowed hosts is refused, naming the setting.
    let refused = client
        .create_task_push_notification_config(as_caller(
            ALICE_TOKEN,
            v1::TaskPushNotificationConfig {
                task_id: task_id.clone(),
                url: "http://127.0.0.1:10/hook".into(),
                ..Default::default()
            },
        ))
        .await
        .expect_err("not an allowed host");
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert!(
        refused.message().contains("push.allowed_hosts"),
        "{refused:?}"
    );

    client
        .delete_task_push_notification_config(as_caller(
            ALICE_TOKEN,
            v1::DeleteTaskPushNotificationConfigRequest {
                task_id: task_id.clone(),
                id: created.id.clone(),
                ..Default::default()
            },
        ))
        .await
        .expect("DeleteTaskPushNotificationConfig");
    let after = client
        .list_task_push_notification_configs(as_caller(
            ALICE_TOKEN,
            v1::ListTaskPushNotificationConfigsRequest {
                task_id,
                ..Default::default()
            },
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(after.configs.is_empty());
    server.stop().await;
}
