//! A plugin's outbound HTTP (`wasi:http/outgoing-handler`), sent by the host: refused unless the
//! plugin's grant lists the host and port; the name resolved once and each address checked
//! (loopback, private and link-local only when listed by address); the connection opened to the
//! checked address; the grant's secrets injected; the response read whole within its cap and
//! the call's deadline, with any echo of a secret masked, before the guest sees it. Redirects
//! are not followed: a guest that follows one makes a new request, checked the same way.

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Request, Response};
use http_body_util::{BodyExt, Full};
use tokio::time::Instant;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use super::grants::{Grant, mask};
use crate::base::egress::{self, EgressError};
use crate::base::text::log_field::escape;

/// The largest response body a plugin may receive: it is read whole into the host (to mask
/// secrets before the guest sees any byte), so it is bounded. 4 MiB fits any API answer a tool
/// should hand a model.
pub const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

type SendFuture = Box<
    dyn Future<
            Output = Result<
                (
                    Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), Error>> + Send>,
                ),
                Error,
            >,
        > + Send,
>;

/// The hooks of one call's store: whose call it is, what it was granted, and until when.
pub struct Outbound {
    /// The plugin's file name, for the log.
    pub plugin: String,
    /// `None`: no `http` grant, every request refused.
    pub grant: Option<Arc<Grant>>,
    /// When the call's deadline passes: every request ends by then.
    pub deadline: Instant,
}

impl WasiHttpHooks for Outbound {
    fn send_request(
        &mut self,
        request: Request<WasiBody>,
        _options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> SendFuture {
        let plugin = self.plugin.clone();
        let grant = self.grant.clone();
        let deadline = self.deadline;
        Box::new(async move {
            let target = egress::Target::of_uri(request.uri()).unwrap_or(egress::Target {
                host: String::new(),
                port: 0,
                https: false,
            });
            let sent = match tokio::time::timeout_at(deadline, send(&grant, request, &target)).await
            {
                Ok(sent) => sent,
                Err(_) => Err(Refusal::Failed(
                    Error::ConnectionTimeout,
                    "the call's deadline passed".into(),
                )),
            };
            match sent {
                Ok(response) => {
                    tracing::info!(plugin = %plugin, host = %escape(&target.authority()), status = response.status().as_u16(), "plugin http request");
                    Ok((
                        response,
                        Box::new(async { Ok(()) }) as Box<dyn Future<Output = _> + Send>,
                    ))
                }
                Err(Refusal::Refused(error, why)) => {
                    tracing::warn!(plugin = %plugin, host = %escape(&target.authority()), "plugin http request refused: {}", escape(&why));
                    Err(error)
                }
                Err(Refusal::Failed(error, why)) => {
                    tracing::info!(plugin = %plugin, host = %escape(&target.authority()), "plugin http request failed: {}", escape(&why));
                    Err(error)
                }
            }
        })
    }
}

/// Why a request did not get a response: refused by the grant, or failed on the way.
enum Refusal {
    Refused(Error, String),
    Failed(Error, String),
}

async fn send(
    grant: &Option<Arc<Grant>>,
    mut request: Request<WasiBody>,
    target: &egress::Target,
) -> Result<Response<WasiBody>, Refusal> {
    let refused = |why: String| Refusal::Refused(Error::HttpRequestDenied, why);
    let Some(grant) = grant else {
        return Err(refused(
            "the plugin has no http grant (plugins.grants.<name>.http)".into(),
        ));
    };
    let patterns = grant.matching(&target.host, target.port);
    let allowed = egress::resolve_allowed(target, &patterns)
        .await
        .map_err(|err| match err {
            EgressError::NotAllowed(_) => refused(format!(
                "{} is not in the plugin's http grant",
                target.authority()
            )),
            EgressError::Prohibited { .. } => {
                Refusal::Refused(Error::DestinationIpProhibited, err.to_string())
            }
            other => Refusal::Failed(
                Error::DnsError {
                    rcode: None,
                    info_code: None,
                },
                other.to_string(),
            ),
        })?;
    let stream = egress::connect(&allowed)
        .await
        .map_err(|err| Refusal::Failed(Error::ConnectionRefused, err.to_string()))?;
    let mut carries_secret = false;
    for secret in grant
        .secrets
        .iter()
        .filter(|s| s.host.admits(&target.host, target.port))
    {
        request
            .headers_mut()
            .insert(secret.header.clone(), secret.value.clone());
        carries_secret = true;
    }
    if carries_secret {
        // A compressed echo of the secret could not be found to be masked: ask for the
        // response as it is.
        request.headers_mut().insert(
            http::header::ACCEPT_ENCODING,
            HeaderValue::from_static("identity"),
        );
    }
    // The request line carries the path only; the host is in the Host header.
    let path = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    *request.uri_mut() = path
        .parse()
        .map_err(|_| Refusal::Failed(Error::HttpRequestUriInvalid, "bad path".into()))?;
    let response = if target.https {
        let tls = egress::tls_connect(&target.host, stream)
            .await
            .map_err(|err| Refusal::Failed(Error::TlsCertificateError, err.to_string()))?;
        exchange(tls, request).await?
    } else {
        exchange(stream, request).await?
    };
    Ok(masked(response, &grant.secrets))
}

/// Sends the request over the connection and reads the whole response, within
/// [`MAX_RESPONSE_BYTES`].
async fn exchange<S>(stream: S, request: Request<WasiBody>) -> Result<Response<Bytes>, Refusal>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let failed = |err: hyper::Error| Refusal::Failed(Error::Hyper(err), String::new());
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(failed)?;
    // Driven until the response is read, then dropped with the connection.
    let _driver = tokio_util::task::AbortOnDropHandle::new(tokio::spawn(connection));
    let response = sender.send_request(request).await.map_err(|err| {
        let why = err.to_string();
        Refusal::Failed(Error::Hyper(err), why)
    })?;
    let (parts, mut body) = response.into_parts();
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|err| {
            let why = err.to_string();
            Refusal::Failed(Error::Hyper(err), why)
        })?;
        if let Some(data) = frame.data_ref() {
            if bytes.len() + data.len() > MAX_RESPONSE_BYTES {
                return Err(Refusal::Refused(
                    Error::HttpResponseBodySize(Some(MAX_RESPONSE_BYTES as u64)),
                    format!("the response is larger than {MAX_RESPONSE_BYTES} bytes"),
                ));
            }
            bytes.extend_from_slice(data);
        }
    }
    Ok(Response::from_parts(parts, Bytes::from(bytes)))
}

/// The response as the guest gets it: every echo of a secret masked, in the body and the
/// headers. The body is whole, so `content-length` is set to its masked length.
fn masked(response: Response<Bytes>, secrets: &[super::grants::Secret]) -> Response<WasiBody> {
    let (mut parts, body) = response.into_parts();
    let body = match mask(&body, secrets) {
        Some(masked) => Bytes::from(masked),
        None => body,
    };
    for value in parts.headers.values_mut() {
        if let Some(masked) = mask(value.as_bytes(), secrets) {
            *value = HeaderValue::from_bytes(&masked).unwrap_or(HeaderValue::from_static(""));
        }
    }
    parts.headers.remove(http::header::TRANSFER_ENCODING);
    parts
        .headers
        .insert(http::header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    let body = Full::new(body)
        .map_err(|never| match never {})
        .boxed_unsync();
    Response::from_parts(parts, body)
}
