//! A loopback HTTP server for the plugin grant tests, recording what it was sent: the hits and
//! the `authorization` header of each request.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tiny_harness::work::plugins::MAX_RESPONSE_BYTES;

/// The secret the tests grant, as the environment would hold it.
pub const TOKEN: &str = "tok-4f9a1c7e-never-in-the-guest";

/// A loopback HTTP server that records what it was sent.
pub struct Server {
    pub address: SocketAddr,
    pub hits: Arc<AtomicUsize>,
    /// The `authorization` header of each request, as received.
    pub authorizations: Arc<Mutex<Vec<Option<String>>>>,
    _task: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Serves `/hello`, `/echo-auth` (the authorization it got, in its body and a header),
    /// `/redirect?to=URL` (302 to it), `/big` (one byte over the cap) and `/json`
    /// (`{"city": {"temperatures": [11, 14]}}`).
    pub async fn start() -> Server {
        let hits = Arc::new(AtomicUsize::new(0));
        let authorizations = Arc::new(Mutex::new(Vec::new()));
        let (h, a) = (hits.clone(), authorizations.clone());
        let record = move |headers: &HeaderMap| {
            h.fetch_add(1, Ordering::SeqCst);
            let auth = headers
                .get(header::AUTHORIZATION)
                .map(|v| v.to_str().unwrap().to_string());
            a.lock().unwrap().push(auth.clone());
            auth
        };
        let (r1, r2, r3, r4, r5) = (
            record.clone(),
            record.clone(),
            record.clone(),
            record.clone(),
            record,
        );
        let app = Router::new()
            .route(
                "/hello",
                get(move |headers: HeaderMap| async move {
                    r1(&headers);
                    "hello from the granted server"
                }),
            )
            .route(
                "/echo-auth",
                get(move |headers: HeaderMap| async move {
                    let auth = r2(&headers).unwrap_or_default();
                    let encoding = headers
                        .get(header::ACCEPT_ENCODING)
                        .map(|v| v.to_str().unwrap().to_string())
                        .unwrap_or_default();
                    (
                        [("x-echo", auth.clone()), ("x-accept-encoding", encoding)],
                        format!("you sent: {auth}"),
                    )
                }),
            )
            .route(
                "/redirect",
                get(
                    move |headers: HeaderMap,
                          axum::extract::Query(q): axum::extract::Query<
                        BTreeMap<String, String>,
                    >| async move {
                        r3(&headers);
                        (StatusCode::FOUND, [(header::LOCATION, q["to"].clone())]).into_response()
                    },
                ),
            )
            .route(
                "/big",
                get(move |headers: HeaderMap| async move {
                    r4(&headers);
                    "x".repeat(MAX_RESPONSE_BYTES + 1)
                }),
            )
            .route(
                "/json",
                get(move |headers: HeaderMap| async move {
                    r5(&headers);
                    axum::Json(serde_json::json!({ "city": { "temperatures": [11, 14] } }))
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Server {
            address,
            hits,
            authorizations,
            _task: task,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}
