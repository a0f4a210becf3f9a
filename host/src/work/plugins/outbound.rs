//! A plugin's outbound HTTP (`wasi:http/outgoing-handler`), sent by the host: refused unless the
//! plugin's grant lists the host and port; the name resolved once and each address checked
//! (loopback, private and link-local only when listed by address); the connection opened to the
//! checked address; the grant's secrets injected; the response read whole within its cap and
//! the call's deadline, with any echo of a secret masked, before the guest sees it. Redirects
//! are not followed: a guest that follows one makes a new request, checked the same way.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Request, Response};
use http_body_util::{BodyExt, Full};
use tokio::time::Instant;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use super::grants::{Grant, address_allowed, mask};
use crate::base::text::log_field::escape;

/// The largest response body a plugin may receive: it is read whole into the host (to mask
/// secrets before the guest sees any byte), so it is bounded. 4 MiB fits any API answer a tool
/// should hand a model.
pub const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;
/// Names one request may resolve to that are tried in turn.
const MAX_ADDRESSES_TRIED: usize = 4;

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
            let target = Target::of(&request);
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

/// Where a request goes, from its URI.
struct Target {
    /// Lower-case, IPv6 without brackets.
    host: String,
    port: u16,
    https: bool,
}

impl Target {
    fn of(request: &Request<WasiBody>) -> Target {
        let uri = request.uri();
        let https = uri.scheme() == Some(&http::uri::Scheme::HTTPS);
        let host = uri.host().unwrap_or_default().to_ascii_lowercase();
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .map(str::to_string)
            .unwrap_or(host);
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        Target { host, port, https }
    }

    fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

async fn send(
    grant: &Option<Arc<Grant>>,
    mut request: Request<WasiBody>,
    target: &Target,
) -> Result<Response<WasiBody>, Refusal> {
    let refused = |why: String| Refusal::Refused(Error::HttpRequestDenied, why);
    let Some(grant) = grant else {
        return Err(refused(
            "the plugin has no http grant (plugins.grants.<name>.http)".into(),
        ));
    };
    let patterns = grant.matching(&target.host, target.port);
    if target.host.is_empty() || patterns.is_empty() {
        return Err(refused(format!(
            "{} is not in the plugin's http grant",
            target.authority()
        )));
    }
    let addresses: Vec<SocketAddr> = match target.host.parse::<IpAddr>() {
        Ok(address) => vec![SocketAddr::new(address, target.port)],
        Err(_) => tokio::net::lookup_host((target.host.as_str(), target.port))
            .await
            .map_err(|err| {
                Refusal::Failed(
                    Error::DnsError {
                        rcode: None,
                        info_code: None,
                    },
                    err.to_string(),
                )
            })?
            .collect(),
    };
    let allowed: Vec<SocketAddr> = addresses
        .iter()
        .copied()
        .filter(|a| address_allowed(a.ip(), &patterns))
        .take(MAX_ADDRESSES_TRIED)
        .collect();
    if allowed.is_empty() {
        let shown: Vec<String> = addresses.iter().map(|a| a.ip().to_string()).collect();
        return Err(Refusal::Refused(
            Error::DestinationIpProhibited,
            format!(
                "{} resolves to {}: a loopback, private or link-local address is reached only \
                 when the grant lists that address",
                target.host,
                shown.join(", ")
            ),
        ));
    }
    let stream = connect(&allowed).await?;
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
        let tls = tls_connect(&target.host, stream).await?;
        exchange(tls, request).await?
    } else {
        exchange(stream, request).await?
    };
    Ok(masked(response, &grant.secrets))
}

async fn connect(addresses: &[SocketAddr]) -> Result<tokio::net::TcpStream, Refusal> {
    let mut last = None;
    for address in addresses {
        match tokio::net::TcpStream::connect(address).await {
            Ok(stream) => return Ok(stream),
            Err(err) => last = Some(err),
        }
    }
    let err = last.map(|e| e.to_string()).unwrap_or_default();
    Err(Refusal::Failed(Error::ConnectionRefused, err))
}

async fn tls_connect(
    host: &str,
    stream: tokio::net::TcpStream,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, Refusal> {
    use tokio_rustls::rustls;
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|err| Refusal::Failed(Error::TlsProtocolError, err.to_string()))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|err| Refusal::Failed(Error::TlsProtocolError, err.to_string()))?;
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, stream)
        .await
        .map_err(|err| Refusal::Failed(Error::TlsCertificateError, err.to_string()))
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
