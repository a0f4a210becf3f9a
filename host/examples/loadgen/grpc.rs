//! The gRPC side of the load generator: a tonic client of the harness's `A2AService` and one
//! blocking `SendMessage` with it.

use tiny_harness::base::protocol::proto::v1;
use tiny_harness::base::protocol::proto::v1::a2a_service_client::A2aServiceClient;
use tonic::transport::Channel;

/// A client over one HTTP/2 connection; the workers' calls share it as concurrent streams, as a
/// gRPC client does.
pub type Client = A2aServiceClient<Channel>;

/// Connects to the card's gRPC target (`host:port`).
pub async fn connect(target: &str) -> Client {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{target}"))
        .expect("a gRPC target")
        .connect()
        .await
        .expect("the harness's gRPC port answers");
    A2aServiceClient::new(channel)
}

/// Sends one task; returns its id if the answer is a COMPLETED task, else why not.
pub async fn send(mut client: Client, text: &str) -> Result<String, String> {
    let request = v1::SendMessageRequest {
        message: Some(v1::Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            role: v1::Role::User as i32,
            parts: vec![v1::Part {
                content: Some(v1::part::Content::Text(text.to_string())),
                ..v1::Part::default()
            }],
            ..v1::Message::default()
        }),
        ..v1::SendMessageRequest::default()
    };
    let reply = client
        .send_message(request)
        .await
        .map_err(|status| format!("gRPC {:?}: {}", status.code(), status.message()))?
        .into_inner();
    match reply.payload {
        Some(v1::send_message_response::Payload::Task(task)) => {
            let state = task.status.map(|status| status.state).unwrap_or_default();
            if state == v1::TaskState::Completed as i32 {
                Ok(task.id)
            } else {
                Err(format!("task ended {state}"))
            }
        }
        other => Err(format!("no task: {other:?}")),
    }
}
