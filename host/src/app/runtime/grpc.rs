//! The gRPC listener (`server.grpc_bind`): bound beside `server.bind` at start-up, listed on the
//! card, and served with the HTTP routes until shutdown.

use std::future::Future;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::StartError;
use crate::app::server::router::{ConnectionLimits, ServerState, Wire, routers, serve, serve_wire};
use crate::base::config::{Config, ServerConfig};
use crate::base::protocol::card::{AgentCard, add_grpc_interface};
use crate::work::agents::served_cards;

/// The bound gRPC listener and the URL the card lists for it (`server.grpc_url`, else the bound
/// `host:port`).
pub(super) struct GrpcListener {
    listener: TcpListener,
    url: String,
}

/// Binds `server.grpc_bind` when it is set.
pub(super) async fn bind(server: &ServerConfig) -> Result<Option<GrpcListener>, StartError> {
    let Some(bind) = &server.grpc_bind else {
        return Ok(None);
    };
    let refused = |source| StartError::Bind {
        setting: "server.grpc_bind",
        addr: bind.clone(),
        source,
    };
    let addr = server.grpc_bind_addr().ok_or_else(|| {
        refused(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a socket address",
        ))
    })?;
    let listener = TcpListener::bind(addr).await.map_err(refused)?;
    let local = listener.local_addr().map_err(StartError::Serve)?;
    let url = match &server.grpc_url {
        Some(url) => url.trim_end_matches('/').to_string(),
        // The gRPC target form (`host:port`), as gRPC clients take it and as the official SDKs'
        // own agents list it; an `http://` URL is read by some clients only.
        None => local.to_string(),
    };
    Ok(Some(GrpcListener { listener, url }))
}

/// The public and extended cards, the gRPC interface listed on both when it is served.
pub(super) fn cards(
    config: &Config,
    base_url: &str,
    grpc: Option<&GrpcListener>,
) -> (AgentCard, Option<AgentCard>) {
    let (mut card, mut extended) = served_cards(config, base_url);
    if let Some(grpc) = grpc {
        add_grpc_interface(&mut card, &grpc.url);
        if let Some(extended) = &mut extended {
            add_grpc_interface(extended, &grpc.url);
        }
    }
    (card, extended)
}

/// Serves the HTTP routes on `listener`, and the gRPC binding on its own listener when there is
/// one, under the same limits and one rate limit, until `shutdown`; either failing stops both.
pub(super) async fn serve_all(
    listener: TcpListener,
    grpc: Option<GrpcListener>,
    state: ServerState,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (http_router, grpc_router) = routers(state);
    let Some(grpc) = grpc else {
        return serve(listener, http_router, limits, shutdown).await;
    };
    let local = grpc.listener.local_addr()?;
    tracing::info!(
        "gRPC (lf.a2a.v1.A2AService) listening on {local} (h2c; card URL {})",
        grpc.url
    );
    // One stop for both: shutdown, or either server ending (an I/O error) stops the other.
    let stop = CancellationToken::new();
    let watch = async {
        tokio::select! {
            () = shutdown => {}
            () = stop.cancelled() => {}
        }
        stop.cancel();
    };
    let http = async {
        let result = serve(
            listener,
            http_router,
            limits,
            stop.clone().cancelled_owned(),
        )
        .await;
        stop.cancel();
        result
    };
    let grpc = async {
        let stopped = stop.clone().cancelled_owned();
        let result = serve_wire(grpc.listener, grpc_router, limits, Wire::H2c, stopped).await;
        stop.cancel();
        result
    };
    let ((), http, grpc) = tokio::join!(watch, http, grpc);
    http.and(grpc)
}
