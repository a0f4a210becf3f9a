//! What a plugin's `log` calls may put in the harness's log. A message is one log record: its
//! `\n`-separated lines each count toward the caps, and they are written escaped on that one
//! record (`\n`, control and invisible characters shown, never raw), so a plugin can neither
//! start a forged line nor flood the log. Each guest call may log so much; each plugin, all its
//! calls together, so many lines a second; what is dropped is counted and said.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::bindings::host::Level;
use crate::base::text::log_field::{MAX_LOG_FIELD_CHARS, escape};

/// Lines one guest call may log: plenty to trace an honest call, a bound on a runaway one.
pub const MAX_LOG_LINES_PER_CALL: usize = 100;
/// Bytes one guest call may log, counted as written (escaped): 64 KiB.
pub const MAX_LOG_BYTES_PER_CALL: usize = 64 * 1024;
/// Lines one plugin may log a second, all its calls together, so that many short calls of a
/// chatty plugin cannot flood the log either.
pub const MAX_LOG_LINES_PER_SECOND: usize = 100;
/// The window [`MAX_LOG_LINES_PER_SECOND`] is counted over.
const RATE_WINDOW: Duration = Duration::from_secs(1);

/// One plugin's log rate, shared by all its calls.
#[derive(Debug, Default)]
pub struct LogRate(Mutex<RateWindow>);

#[derive(Debug, Default)]
struct RateWindow {
    started: Option<Instant>,
    used: usize,
    /// Lines dropped since the plugin went over the rate, reported when it may log again.
    dropped: usize,
}

impl LogRate {
    fn lock(&self) -> MutexGuard<'_, RateWindow> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl RateWindow {
    /// Opens a new window when the current one is over; returns the lines dropped in the
    /// windows before, once.
    fn open(&mut self, now: Instant) -> Option<usize> {
        if self
            .started
            .is_some_and(|started| now.duration_since(started) < RATE_WINDOW)
        {
            return None;
        }
        self.started = Some(now);
        self.used = 0;
        Some(std::mem::take(&mut self.dropped)).filter(|&n| n > 0)
    }

    fn available(&self) -> usize {
        MAX_LOG_LINES_PER_SECOND.saturating_sub(self.used)
    }
}

/// The log of one guest call: its caps, and its plugin's rate.
#[derive(Debug)]
pub struct CallLog {
    /// The plugin's file name, escaped: how every record names the plugin.
    plugin: String,
    rate: Arc<LogRate>,
    lines_left: usize,
    bytes_left: usize,
    /// Lines and bytes dropped after this call used up its caps, said once when it ends.
    dropped_lines: usize,
    dropped_bytes: usize,
}

/// The part of a message that fits, escaped, and what was left out.
#[derive(Debug, PartialEq, Eq)]
struct Cut {
    text: String,
    lines: usize,
    rest_bytes: usize,
    rest_lines: usize,
    /// Whether the bytes left ran out: then the call has nothing more to write.
    out_of_bytes: bool,
}

impl CallLog {
    /// A fresh call's log for `plugin` (its file name), counted against the plugin's `rate`.
    pub fn new(plugin: &str, rate: Arc<LogRate>) -> CallLog {
        CallLog {
            plugin: escape(plugin),
            rate,
            lines_left: MAX_LOG_LINES_PER_CALL,
            bytes_left: MAX_LOG_BYTES_PER_CALL,
            dropped_lines: 0,
            dropped_bytes: 0,
        }
    }

    /// The plugin's file name, as records name it.
    pub fn plugin(&self) -> &str {
        &self.plugin
    }

    /// Writes one message of the guest's at `level`, within the caps.
    pub fn write(&mut self, level: Level, message: &str) {
        self.write_at(level, message, Instant::now());
    }

    fn write_at(&mut self, level: Level, message: &str, now: Instant) {
        // A trailing newline ends the message; it does not start another line.
        let message = message.strip_suffix('\n').unwrap_or(message);
        let lines = 1 + message.matches('\n').count();
        if self.lines_left == 0 || self.bytes_left == 0 {
            self.dropped_lines += lines;
            self.dropped_bytes += message.len();
            return;
        }
        let mut window = self.rate.lock();
        if let Some(dropped) = window.open(now) {
            tracing::warn!(
                plugin = %self.plugin,
                "{dropped} log lines of this plugin were dropped: a plugin logs at most {MAX_LOG_LINES_PER_SECOND} lines a second"
            );
        }
        let allowance = self.lines_left.min(window.available());
        if allowance == 0 {
            window.dropped += lines;
            return;
        }
        let cut = cut(message, allowance, self.bytes_left);
        window.used += cut.lines;
        drop(window);
        self.lines_left -= cut.lines;
        self.bytes_left = if cut.out_of_bytes {
            0
        } else {
            self.bytes_left.saturating_sub(cut.text.len())
        };
        let text = if cut.rest_bytes > 0 {
            format!(
                "{} … (cut: {} more bytes, {} more lines)",
                cut.text, cut.rest_bytes, cut.rest_lines
            )
        } else {
            cut.text
        };
        let plugin = self.plugin.as_str();
        match level {
            Level::Debug => tracing::debug!(plugin = %plugin, "{text}"),
            Level::Info => tracing::info!(plugin = %plugin, "{text}"),
            Level::Warn => tracing::warn!(plugin = %plugin, "{text}"),
            Level::Error => tracing::error!(plugin = %plugin, "{text}"),
        }
    }
}

impl Drop for CallLog {
    /// Says once, when the call is over, how much it tried to log past its caps.
    fn drop(&mut self) {
        if self.dropped_lines > 0 {
            tracing::warn!(
                plugin = %self.plugin,
                "{} more log lines ({} bytes) of one call were dropped: a call logs at most {MAX_LOG_LINES_PER_CALL} lines and {} KiB",
                self.dropped_lines,
                self.dropped_bytes,
                MAX_LOG_BYTES_PER_CALL / 1024
            );
        }
    }
}

/// The longest prefix of `message` with at most `max_lines` lines, [`MAX_LOG_FIELD_CHARS`]
/// characters and `max_bytes` bytes once escaped, escaped.
fn cut(message: &str, max_lines: usize, max_bytes: usize) -> Cut {
    let mut buf = [0u8; 4];
    let (mut lines, mut width, mut chars, mut end) = (1, 0, 0, 0);
    let mut out_of_bytes = false;
    for (i, c) in message.char_indices() {
        if (c == '\n' && lines == max_lines) || chars == MAX_LOG_FIELD_CHARS {
            break;
        }
        let w = escape(c.encode_utf8(&mut buf)).len();
        if width + w > max_bytes {
            out_of_bytes = true;
            break;
        }
        lines += usize::from(c == '\n');
        width += w;
        chars += 1;
        end = i + c.len_utf8();
    }
    let rest = &message[end..];
    Cut {
        text: escape(&message[..end]),
        lines,
        rest_bytes: rest.len(),
        rest_lines: rest.matches('\n').count(),
        out_of_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What `run` logged, one record a line, without timestamps.
    fn logged(run: impl FnOnce()) -> Vec<String> {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .without_time()
            .with_ansi(false)
            .with_target(false)
            .finish();
        tracing::subscriber::with_default(subscriber, run);
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn a_message_with_newlines_is_one_escaped_record() {
        let records = logged(|| {
            let mut log = CallLog::new("p.wasm", Arc::default());
            log.write(
                Level::Info,
                "done\n2030-01-01T00:00:00Z  INFO tiny_harness: admin logged in\x1b[2K\n",
            );
        });
        assert_eq!(
            records,
            [
                " INFO done\\n2030-01-01T00:00:00Z  INFO tiny_harness: admin logged in\\u{1b}[2K plugin=p.wasm"
            ]
        );
    }

    #[test]
    fn a_message_is_cut_at_the_lines_and_bytes_left_with_what_was_dropped() {
        assert_eq!(
            cut("a\nb\nc\nd", 2, 100),
            Cut {
                text: "a\\nb".into(),
                lines: 2,
                rest_bytes: 4,
                rest_lines: 2,
                out_of_bytes: false,
            }
        );
        let cut_by_bytes = cut("abc\u{1b}def", 1, 5);
        assert_eq!(cut_by_bytes.text, "abc", "an escape does not fit whole");
        assert_eq!(cut_by_bytes.rest_bytes, 4);
        assert!(cut_by_bytes.out_of_bytes);
        let long = "x".repeat(MAX_LOG_FIELD_CHARS + 10);
        assert_eq!(cut(&long, 1, usize::MAX).rest_bytes, 10);
    }

    #[test]
    fn a_call_logs_at_most_its_lines_then_says_how_much_it_dropped() {
        let records = logged(|| {
            let mut log = CallLog::new("p.wasm", Arc::default());
            log.write(Level::Info, &"line\n".repeat(MAX_LOG_LINES_PER_CALL - 1));
            log.write(Level::Info, "last\nover");
            log.write(Level::Info, "dropped\ndropped");
        });
        assert_eq!(records.len(), 3, "{records:?}");
        assert!(
            records[1].ends_with("last … (cut: 5 more bytes, 1 more lines) plugin=p.wasm"),
            "{}",
            records[1]
        );
        assert_eq!(
            records[2],
            " WARN 2 more log lines (15 bytes) of one call were dropped: a call logs at most 100 lines and 64 KiB plugin=p.wasm"
        );
    }

    #[test]
    fn a_call_logs_at_most_64_kib() {
        let records = logged(|| {
            let mut log = CallLog::new("p.wasm", Arc::default());
            for _ in 0..MAX_LOG_LINES_PER_CALL {
                log.write(Level::Info, &"\u{1b}".repeat(10_000));
            }
        });
        let written: usize = records.iter().map(String::len).sum();
        assert!(written < MAX_LOG_BYTES_PER_CALL + 1_024, "{written}");
        assert_eq!(
            records.len(),
            7,
            "six records fill 64 KiB, then one warning"
        );
        assert!(records.last().unwrap().contains("of one call were dropped"));
    }

    #[test]
    fn a_plugin_over_its_rate_is_dropped_and_told_when_it_resumes() {
        let rate = Arc::new(LogRate::default());
        let start = Instant::now();
        let records = logged(|| {
            for _ in 0..3 {
                let mut call = CallLog::new("p.wasm", rate.clone());
                for _ in 0..60 {
                    call.write_at(Level::Info, "x", start);
                }
            }
            let mut later = CallLog::new("p.wasm", rate.clone());
            later.write_at(Level::Info, "back", start + RATE_WINDOW);
        });
        assert_eq!(records.len(), MAX_LOG_LINES_PER_SECOND + 2, "{records:?}");
        assert_eq!(
            records[MAX_LOG_LINES_PER_SECOND],
            " WARN 80 log lines of this plugin were dropped: a plugin logs at most 100 lines a second plugin=p.wasm"
        );
        assert_eq!(records.last().unwrap(), " INFO back plugin=p.wasm");
    }
}
