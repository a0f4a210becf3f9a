//! Connecting to one MCP server: starting its program and speaking over its stdio, or opening a
//! streamable-HTTP session; negotiating the newest protocol revision both sides speak; and the
//! program's stderr, which goes to the log escaped and capped.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::ClientHandler;
use rmcp::model::{ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::base::config::McpServerConfig;
use crate::base::text::log_field::escape_capped;

/// How long one attempt at connecting (starting the program and the handshake) may take before
/// it counts as failed: a server that does not answer in this time at start-up would hold up the
/// whole harness. There are two attempts at most (see [`connect`]).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
/// The longest line of a server's stderr the log keeps: enough for a traceback line.
pub const MAX_STDERR_LINE_CHARS: usize = 2_000;
/// Stderr lines of one server logged per minute; past it they are counted, not logged, so a
/// chatty server cannot flood the log.
pub const MAX_STDERR_LINES_PER_MINUTE: u32 = 600;

/// A connected server: the rmcp client session, which owns the child process (if any).
pub type Client = RunningService<RoleClient, Harness>;

/// This harness as an MCP client: it answers nothing the server may ask (no sampling, no roots,
/// no elicitation) and names the revision its `initialize` proposes.
pub struct Harness {
    version: ProtocolVersion,
}

impl ClientHandler for Harness {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.protocol_version = self.version.clone();
        info.client_info = Implementation::new("tiny-harness", env!("CARGO_PKG_VERSION"));
        info
    }
}

/// What connecting needs beyond the entry: where relative paths resolve, and the environment the
/// header values are read from.
#[derive(Clone)]
pub struct ConnectContext {
    /// The entry's `cwd`, already resolved against the configuration file's folder.
    pub cwd: Option<PathBuf>,
    /// `headers_env` resolved: header name -> value.
    pub headers: HashMap<String, String>,
}

/// Connects to `server` (the entry `mcp[index]`) at the newest protocol revision both sides
/// speak: the stateless 2026-07-28 revision (`server/discover`) first; when that fails, a fresh
/// connection (a new process, for `command`) with the `initialize` handshake at 2025-11-25, which
/// the server may answer with an older revision rmcp knows. Each attempt is bounded by
/// [`CONNECT_TIMEOUT`]. (rmcp's own fallback on one connection gives up discovery after 10 s,
/// too short for a Python server starting on a busy machine, and then trips over the late
/// answer.) The error says why, in the operator's words; it never holds a header value.
pub async fn connect(
    index: usize,
    server: &McpServerConfig,
    context: &ConnectContext,
) -> Result<Client, String> {
    let modern = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let discovered = match attempt(index, server, context, modern).await {
        Ok(client) => return Ok(client),
        Err(err) => err,
    };
    attempt(index, server, context, ClientLifecycleMode::Initialize)
        .await
        .map_err(|err| format!("{err} (after server/discover: {discovered})"))
}

/// The client for `lifecycle`: `initialize` proposes 2025-11-25, the newest revision that has it.
fn client(lifecycle: &ClientLifecycleMode) -> Harness {
    let version = match lifecycle {
        ClientLifecycleMode::Initialize => ProtocolVersion::V_2025_11_25,
        _ => ProtocolVersion::V_2026_07_28,
    };
    Harness { version }
}

async fn attempt(
    index: usize,
    server: &McpServerConfig,
    context: &ConnectContext,
    lifecycle: ClientLifecycleMode,
) -> Result<Client, String> {
    let connecting = async {
        match (&server.command, &server.url) {
            (Some(command), _) => connect_stdio(index, server, command, context, lifecycle).await,
            (None, Some(url)) => connect_http(url, context, lifecycle).await,
            (None, None) => Err("neither `command` nor `url` is set".to_string()),
        }
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, connecting).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "no answer to the MCP handshake within {} s",
            CONNECT_TIMEOUT.as_secs()
        )),
    }
}

async fn connect_stdio(
    index: usize,
    server: &McpServerConfig,
    command: &[String],
    context: &ConnectContext,
    lifecycle: ClientLifecycleMode,
) -> Result<Client, String> {
    let Some((program, args)) = command.split_first() else {
        return Err("`command` is empty".to_string());
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args).envs(&server.env);
    if let Some(cwd) = &context.cwd {
        cmd.current_dir(cwd);
    }
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| format!("cannot start `{program}`: {err}"))?;
    if let Some(stderr) = stderr {
        tokio::spawn(log_stderr(index, server.name.clone(), stderr));
    }
    client(&lifecycle)
        .serve_with_lifecycle(transport, lifecycle)
        .await
        .map_err(|err| format!("the MCP handshake with `{program}` failed: {err}"))
}

async fn connect_http(
    url: &str,
    context: &ConnectContext,
    lifecycle: ClientLifecycleMode,
) -> Result<Client, String> {
    install_tls_provider();
    let mut headers = HashMap::new();
    for (name, value) in &context.headers {
        let header = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("`{name}` is not a header name"))?;
        let value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|_| format!("the value of header `{name}` is not a header value"))?;
        headers.insert(header, value);
    }
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
    let transport = StreamableHttpClientTransport::from_config(config);
    client(&lifecycle)
        .serve_with_lifecycle(transport, lifecycle)
        .await
        .map_err(|err| format!("the MCP handshake with {url} failed: {err}"))
}

/// rmcp's HTTP client is built without a TLS provider of its own: the process default is ring,
/// the one the rest of the harness uses. Installing it twice is harmless.
fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Logs each line the server writes to stderr, escaped and capped, at most
/// [`MAX_STDERR_LINES_PER_MINUTE`] a minute.
async fn log_stderr(index: usize, name: String, stderr: tokio::process::ChildStderr) {
    let mut lines = BufReader::new(stderr).lines();
    let mut window = Instant::now();
    let (mut logged, mut dropped) = (0u32, 0u32);
    while let Ok(Some(line)) = lines.next_line().await {
        if window.elapsed() >= Duration::from_secs(60) {
            if dropped > 0 {
                tracing::warn!(mcp = %name, entry = index, "{dropped} stderr lines not logged");
            }
            window = Instant::now();
            (logged, dropped) = (0, 0);
        }
        if logged >= MAX_STDERR_LINES_PER_MINUTE {
            dropped += 1;
            continue;
        }
        logged += 1;
        tracing::info!(mcp = %name, entry = index, "stderr: {}", escape_capped(&line, MAX_STDERR_LINE_CHARS));
    }
}
