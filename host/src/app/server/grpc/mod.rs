//! The gRPC binding of A2A 1.0 (§10): the `lf.a2a.v1.A2AService` of the official `a2a.proto`,
//! served over HTTP/2 without TLS (h2c, prior knowledge) on `server.grpc_bind`, by the same
//! connection loop, limits and caller identification as the HTTP bindings.
//!
//! Each method only converts: its protobuf request to the protocol types
//! ([`crate::base::protocol::proto`]), the same [`ops`] call JSON-RPC and REST make, the answer
//! back to protobuf, and an error to its gRPC status ([`status`]). Service parameters travel as
//! metadata (`a2a-version`, `a2a-extensions`, `authorization`), which HTTP/2 carries as the
//! headers the other bindings read, so the same checks read them.

mod status;

use std::pin::Pin;
use std::sync::Arc;

use axum::Router;
use axum::middleware;
use futures::{Stream, StreamExt};
use tonic::metadata::MetadataValue;
use tonic::{Request, Response, Status};
use tower_http::catch_panic::CatchPanicLayer;

use crate::app::server::extended_card;
use crate::app::server::extensions::Activated;
use crate::app::server::headers;
use crate::app::server::identity::{self, Identified, Identifier};
use crate::app::server::ops::{self, App, Requester, Streaming};
use crate::app::server::push_ops;
use crate::app::server::rate_limit::{self, RateLimit};
use crate::app::server::{fair_share, sse, trace};
use crate::base::protocol::headers::A2A_EXTENSIONS_HEADER;
use crate::base::protocol::proto::v1::a2a_service_server::{A2aService, A2aServiceServer};
use crate::base::protocol::proto::{SERVICE_NAME, from_proto, to_proto, v1};
use crate::base::protocol::requests::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, SendMessageRequest, SubscribeToTaskRequest,
};
use crate::state::tasks::push_configs::PushConfigs;

/// The gRPC routes with the shared limits: the caller identified once, its connection share and
/// rate checked, a message over `server.max_request_bytes` refused (`RESOURCE_EXHAUSTED`) before
/// it is decoded, and every refusal written as a gRPC status.
pub(crate) fn router(
    app: Arc<App>,
    identifier: Arc<Identifier>,
    limiter: Option<Arc<RateLimit>>,
) -> Router {
    let max_message_bytes = app.state.max_request_bytes;
    let service =
        A2aServiceServer::new(GrpcBinding { app }).max_decoding_message_size(max_message_bytes);
    let mut router = Router::new()
        .route_service(&format!("/{SERVICE_NAME}/{{*method}}"), service)
        .fallback(|| async {
            status::status_response(Status::unimplemented(format!(
                "this server serves only {SERVICE_NAME}"
            )))
        });
    // Layers run outside-in in the reverse of the order they are added, as on the HTTP routes;
    // a refused identity is answered by each method, as a status.
    if let Some(limiter) = limiter {
        router = router.layer(middleware::from_fn_with_state(limiter, rate_limit::limit));
    }
    router
        .layer(middleware::from_fn(fair_share::enforce))
        .layer(middleware::from_fn_with_state(
            identifier,
            identity::identify_request,
        ))
        // Outside every limit, as on the HTTP routes: a refused call is traced too. The
        // operations name the span (`ops`), the same on every binding.
        .layer(middleware::from_fn(trace::traced))
        .layer(middleware::from_fn(status::grpc_refusals))
        .layer(CatchPanicLayer::custom(status::panic_response))
}

/// The service: the operations' shared state.
struct GrpcBinding {
    app: Arc<App>,
}

/// The messages of a server stream.
type Events = Pin<Box<dyn Stream<Item = Result<v1::StreamResponse, Status>> + Send>>;

impl GrpcBinding {
    /// Who the caller is (identified before the limits; a refusal is answered here, as a
    /// status), and the version and extensions its metadata names.
    fn requester<T>(&self, request: &Request<T>) -> Result<Requester, Status> {
        let caller = match request.extensions().get::<Identified>() {
            Some(Identified(Ok(caller))) => caller.clone(),
            Some(Identified(Err(error))) => return Err(status::identity(error)),
            None => return Err(Status::internal("the request was not identified")),
        };
        let headers = request.metadata().clone().into_headers();
        headers::check_version(&headers).map_err(|error| status::of(&error))?;
        let activated = Activated::from_headers(&headers, false, &self.app.supported_extensions)
            .map_err(|error| status::of(&error))?;
        Ok(Requester { caller, activated })
    }

    /// A message to send, decoded, its claimed sender checked as on every binding.
    fn message(
        &self,
        requester: &Requester,
        request: &v1::SendMessageRequest,
    ) -> Result<SendMessageRequest, Status> {
        let request: SendMessageRequest =
            from_proto(request).map_err(|error| status::of(&error))?;
        ops::check_message_sender(&self.app, &requester.caller, &request.message)
            .map_err(|error| status::identity(&error))?;
        Ok(request)
    }

    /// The caller of a push-config method and the push configs, or `PushNotificationNotSupported`
    /// before the request is read when push is off (`[push] allowed_hosts`), as on JSON-RPC.
    fn push_requester<T>(
        &self,
        request: &Request<T>,
    ) -> Result<(Requester, Option<&PushConfigs>), Status> {
        let requester = self.requester(request)?;
        let push = self.app.state.push.as_deref();
        if push.is_none() {
            return Err(status::of(&push_ops::push_not_supported()));
        }
        Ok((requester, push))
    }

    /// A stream's items as protobuf `StreamResponse`s; an error ends it with its status.
    fn events(&self, streaming: Streaming) -> Events {
        let items = sse::follow(self.app.state.service.clone(), streaming).map(|item| {
            item.and_then(|event| to_proto(&event))
                .map_err(|error| status::of(&error))
        });
        Box::pin(items)
    }
}

/// An answer with the extensions its request activated named in `a2a-extensions` (§3.2.6).
fn reply<T>(requester: &Requester, message: T) -> Response<T> {
    let mut response = Response::new(message);
    let uris = requester.activated.uris();
    if !uris.is_empty()
        && let Ok(value) = MetadataValue::try_from(uris.join(", "))
    {
        response.metadata_mut().insert(A2A_EXTENSIONS_HEADER, value);
    }
    response
}

/// An operation's result as protobuf, or its error as a status.
fn answer<T: serde::Serialize, P: serde::de::DeserializeOwned>(
    requester: &Requester,
    result: Result<T, crate::base::protocol::jsonrpc::RpcError>,
) -> Result<Response<P>, Status> {
    result
        .and_then(|value| to_proto(&value))
        .map(|message| reply(requester, message))
        .map_err(|error| status::of(&error))
}

fn decoded<P: serde::Serialize, T: serde::de::DeserializeOwned>(message: &P) -> Result<T, Status> {
    from_proto(message).map_err(|error| status::of(&error))
}

#[tonic::async_trait]
impl A2aService for GrpcBinding {
    async fn send_message(
        &self,
        request: Request<v1::SendMessageRequest>,
    ) -> Result<Response<v1::SendMessageResponse>, Status> {
        let requester = self.requester(&request)?;
        let message = self.message(&requester, request.get_ref())?;
        answer(
            &requester,
            ops::send_message(&self.app, &requester, message).await,
        )
    }

    type SendStreamingMessageStream = Events;

    async fn send_streaming_message(
        &self,
        request: Request<v1::SendMessageRequest>,
    ) -> Result<Response<Events>, Status> {
        let requester = self.requester(&request)?;
        let message = self.message(&requester, request.get_ref())?;
        let streaming = ops::send_streaming_message(&self.app, &requester, message)
            .await
            .map_err(|error| status::of(&error))?;
        Ok(reply(&requester, self.events(streaming)))
    }

    async fn get_task(
        &self,
        request: Request<v1::GetTaskRequest>,
    ) -> Result<Response<v1::Task>, Status> {
        let requester = self.requester(&request)?;
        let query: GetTaskRequest = decoded(request.get_ref())?;
        answer(
            &requester,
            ops::get_task(&self.app, &requester, query).await,
        )
    }

    async fn list_tasks(
        &self,
        request: Request<v1::ListTasksRequest>,
    ) -> Result<Response<v1::ListTasksResponse>, Status> {
        let requester = self.requester(&request)?;
        let query: ListTasksRequest = decoded(request.get_ref())?;
        answer(
            &requester,
            ops::list_tasks(&self.app, &requester, query).await,
        )
    }

    async fn cancel_task(
        &self,
        request: Request<v1::CancelTaskRequest>,
    ) -> Result<Response<v1::Task>, Status> {
        let requester = self.requester(&request)?;
        let cancel: CancelTaskRequest = decoded(request.get_ref())?;
        answer(
            &requester,
            ops::cancel_task(&self.app, &requester, cancel).await,
        )
    }

    type SubscribeToTaskStream = Events;

    async fn subscribe_to_task(
        &self,
        request: Request<v1::SubscribeToTaskRequest>,
    ) -> Result<Response<Events>, Status> {
        let requester = self.requester(&request)?;
        let subscribe: SubscribeToTaskRequest = decoded(request.get_ref())?;
        let streaming = ops::subscribe(&self.app, &requester, subscribe)
            .await
            .map_err(|error| status::of(&error))?;
        Ok(reply(&requester, self.events(streaming)))
    }

    async fn create_task_push_notification_config(
        &self,
        request: Request<v1::TaskPushNotificationConfig>,
    ) -> Result<Response<v1::TaskPushNotificationConfig>, Status> {
        let (requester, push) = self.push_requester(&request)?;
        let config = decoded(request.get_ref())?;
        let created = push_ops::create_push_config(push, &requester.caller, config).await;
        answer(&requester, created)
    }

    async fn get_task_push_notification_config(
        &self,
        request: Request<v1::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<v1::TaskPushNotificationConfig>, Status> {
        let (requester, push) = self.push_requester(&request)?;
        let query = decoded(request.get_ref())?;
        let config = push_ops::get_push_config(push, &requester.caller, query).await;
        answer(&requester, config)
    }

    async fn list_task_push_notification_configs(
        &self,
        request: Request<v1::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<v1::ListTaskPushNotificationConfigsResponse>, Status> {
        let (requester, push) = self.push_requester(&request)?;
        let query = decoded(request.get_ref())?;
        let configs = push_ops::list_push_configs(push, &requester.caller, query).await;
        answer(&requester, configs)
    }

    async fn delete_task_push_notification_config(
        &self,
        request: Request<v1::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<pbjson_types::Empty>, Status> {
        let (requester, push) = self.push_requester(&request)?;
        let query = decoded(request.get_ref())?;
        push_ops::delete_push_config(push, &requester.caller, query)
            .await
            .map_err(|error| status::of(&error))?;
        Ok(reply(&requester, pbjson_types::Empty::default()))
    }

    async fn get_extended_agent_card(
        &self,
        request: Request<v1::GetExtendedAgentCardRequest>,
    ) -> Result<Response<v1::AgentCard>, Status> {
        let requester = self.requester(&request)?;
        let caller = &requester.caller;
        match extended_card::extended_agent_card(&self.app, caller) {
            Ok(card) => answer(&requester, Ok(card)),
            Err(error)
                if extended_card::extended_card_unauthenticated(&self.app, caller).is_some() =>
            {
                Err(status::with_details(tonic::Code::Unauthenticated, &error))
            }
            Err(error) => Err(status::of(&error)),
        }
    }
}
