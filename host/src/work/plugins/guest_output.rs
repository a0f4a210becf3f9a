//! A plugin's standard output and error, as log lines of the plugin: each line one record,
//! escaped and counted against the same caps as its `log` calls (per call and per plugin), so a
//! Python traceback or a Rust panic message is visible without letting a guest flood or forge
//! the log.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

use super::bindings::host::Level;
use super::plugin_log::CallLog;

/// A line longer than this is written as it stands rather than held for its end: a guest that
/// never writes a newline cannot make the host buffer without bound.
pub const MAX_PENDING_LINE_BYTES: usize = 16 * 1024;
/// How much a guest may write in one go: what `check-write` grants.
const WRITE_BUDGET: usize = 64 * 1024;

/// The call's log, shared by the `log` host function and the standard streams.
pub type SharedLog = Arc<Mutex<CallLog>>;

/// Locks the call's log, a poisoned lock included (a log line is worth more than the panic).
pub fn lock(log: &SharedLog) -> std::sync::MutexGuard<'_, CallLog> {
    log.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One of the standard streams of a call: standard output logs at `info`, standard error at
/// `warn`.
#[derive(Clone)]
pub struct GuestOutput {
    log: SharedLog,
    level: Level,
}

impl GuestOutput {
    /// The standard output of the call whose log is `log`.
    pub fn stdout(log: SharedLog) -> GuestOutput {
        GuestOutput {
            log,
            level: Level::Info,
        }
    }

    /// Its standard error.
    pub fn stderr(log: SharedLog) -> GuestOutput {
        GuestOutput {
            log,
            level: Level::Warn,
        }
    }
}

impl IsTerminal for GuestOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for GuestOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(LineWriter {
            out: self.clone(),
            pending: Vec::new(),
        })
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        // Only the p2 interfaces are linked; nothing reaches this.
        Box::new(tokio::io::sink())
    }
}

/// Splits what a guest writes into lines and logs each whole one; the last, unfinished line is
/// logged when the stream goes.
struct LineWriter {
    out: GuestOutput,
    pending: Vec<u8>,
}

impl LineWriter {
    fn emit(&mut self, line: &[u8]) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let text = String::from_utf8_lossy(line);
        lock(&self.out.log).write(self.out.level, &text);
    }
}

#[async_trait::async_trait]
impl OutputStream for LineWriter {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.pending.extend_from_slice(&bytes);
        while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            self.emit(&line[..end]);
        }
        if self.pending.len() > MAX_PENDING_LINE_BYTES {
            let line = std::mem::take(&mut self.pending);
            self.emit(&line);
        }
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(WRITE_BUDGET)
    }
}

#[async_trait::async_trait]
impl Pollable for LineWriter {
    async fn ready(&mut self) {}
}

impl Drop for LineWriter {
    fn drop(&mut self) {
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.emit(&line);
        }
    }
}
