//! The harness's log as the `harness` binary writes it (tracing's fmt format, no colours),
//! captured in memory so tests can read what a plugin or the host wrote.
#![allow(dead_code)]

use std::io::Write;
use std::sync::{Arc, Mutex};

/// A shared buffer the log is written to.
#[derive(Clone, Default)]
pub struct CapturedLogs(Arc<Mutex<Vec<u8>>>);

impl CapturedLogs {
    /// Everything written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    /// The subscriber writing into this buffer, with thread names so tests can see where an
    /// event happened.
    fn subscriber(&self) -> impl tracing::Subscriber + Send + Sync + 'static {
        let writer = self.clone();
        tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_thread_names(true)
            .with_max_level(tracing::Level::DEBUG)
            .finish()
    }

    /// Captures what this thread logs while the guard lives (every call of a current-thread
    /// test runtime, not what other threads log).
    pub fn on_this_thread() -> (CapturedLogs, tracing::subscriber::DefaultGuard) {
        let logs = CapturedLogs::default();
        let guard = tracing::subscriber::set_default(logs.subscriber());
        (logs, guard)
    }

    /// Captures what every thread of the test binary logs from now on; once per binary.
    pub fn process_wide() -> CapturedLogs {
        static LOGS: std::sync::OnceLock<CapturedLogs> = std::sync::OnceLock::new();
        LOGS.get_or_init(|| {
            let logs = CapturedLogs::default();
            tracing::subscriber::set_global_default(logs.subscriber())
                .expect("no other global subscriber in this test binary");
            logs
        })
        .clone()
    }
}

impl Write for CapturedLogs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
