//! Server-sent events as another agent streams them, read with caps: the `data` of each event,
//! line by line in one pass over the bytes, so that an agent cannot make this harness buffer
//! without bound or rescan what it already read (one line that never ends would otherwise cost
//! memory and a core for as long as the agent keeps sending it).

use futures::{Stream, StreamExt};

use super::ClientError;
use super::http::invalid;

/// The longest line of an event stream: an A2A event is one JSON object on one `data:` line,
/// and no honest task event comes near a mebibyte.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;
/// The most `data` one event may carry, over all its lines.
pub const MAX_EVENT_BYTES: usize = 1024 * 1024;

/// The data of each event in `bytes`, in order. Comments (keep-alives) and the `event`, `id` and
/// `retry` fields are read and dropped; an event with no data is skipped. A line or an event
/// over its cap, or data that is not UTF-8, ends the stream with an error naming the cap.
pub(super) fn event_data(
    url: String,
    bytes: impl Stream<Item = Result<bytes::Bytes, ClientError>> + Send + 'static,
) -> impl Stream<Item = Result<String, ClientError>> + Send {
    let state = Some((Box::pin(bytes), Reader::default()));
    futures::stream::unfold(state, move |state| {
        let url = url.clone();
        async move {
            let (mut bytes, mut reader) = state?;
            loop {
                if let Some(data) = reader.ready.pop_front() {
                    return Some((Ok(data), Some((bytes, reader))));
                }
                match bytes.next().await {
                    None => return None,
                    Some(Err(err)) => return Some((Err(err), None)),
                    Some(Ok(chunk)) => {
                        if let Err(why) = reader.feed(&chunk) {
                            return Some((Err(invalid(&url, why)), None));
                        }
                    }
                }
            }
        }
    })
}

/// The parser's state between chunks.
#[derive(Debug, Default)]
struct Reader {
    /// The line being read, without its terminator.
    line: Vec<u8>,
    /// The last byte seen was `\r`: a `\n` right after it ends no second line.
    after_cr: bool,
    /// The data of the event being read, lines joined with `\n`.
    data: Vec<u8>,
    /// Whether the event has a `data` field yet (an empty one counts).
    has_data: bool,
    /// Events read whole, not yet handed out.
    ready: std::collections::VecDeque<String>,
}

impl Reader {
    /// Reads a chunk; each byte is looked at once.
    fn feed(&mut self, chunk: &[u8]) -> Result<(), String> {
        let mut rest = chunk;
        while !rest.is_empty() {
            if self.after_cr && rest[0] == b'\n' {
                rest = &rest[1..];
                self.after_cr = false;
                continue;
            }
            self.after_cr = false;
            match rest.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(end) => {
                    self.extend_line(&rest[..end])?;
                    self.after_cr = rest[end] == b'\r';
                    rest = &rest[end + 1..];
                    self.end_line()?;
                }
                None => {
                    self.extend_line(rest)?;
                    rest = &[];
                }
            }
        }
        Ok(())
    }

    fn extend_line(&mut self, bytes: &[u8]) -> Result<(), String> {
        if self.line.len() + bytes.len() > MAX_LINE_BYTES {
            return Err(format!(
                "an event-stream line longer than {MAX_LINE_BYTES} bytes"
            ));
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    /// One whole line: a field of the event being read, or the blank line that ends it.
    fn end_line(&mut self) -> Result<(), String> {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            return self.dispatch();
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (&line[..], &[][..]),
        };
        if field == b"data" {
            if self.has_data {
                self.data.push(b'\n');
            }
            if self.data.len() + value.len() > MAX_EVENT_BYTES {
                return Err(format!(
                    "an event carrying more than {MAX_EVENT_BYTES} bytes of data"
                ));
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
        Ok(())
    }

    fn dispatch(&mut self) -> Result<(), String> {
        let data = std::mem::take(&mut self.data);
        if !std::mem::take(&mut self.has_data) {
            return Ok(());
        }
        let text = String::from_utf8(data).map_err(|_| "an event that is not UTF-8".to_string())?;
        if !text.trim().is_empty() {
            self.ready.push_back(text);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(chunks: &[&[u8]]) -> Result<Vec<String>, String> {
        let mut reader = Reader::default();
        for chunk in chunks {
            reader.feed(chunk)?;
        }
        Ok(reader.ready.into_iter().collect())
    }

    #[test]
    fn events_are_split_on_blank_lines_with_any_line_ending() {
        let events = read(&[b": keep-alive\n\ndata: {\"a\":1}\n\ndata: one\r\ndata: two\r\n\r\nevent: x\rdata:three\r\r"]).unwrap();
        assert_eq!(events, ["{\"a\":1}", "one\ntwo", "three"]);
    }

    #[test]
    fn an_event_split_across_chunks_anywhere_reads_the_same() {
        let whole: &[u8] = b"data: {\"state\":\"working\"}\r\n\r\ndata: next\n\n";
        for cut in 0..whole.len() {
            let events = read(&[&whole[..cut], &whole[cut..]]).unwrap();
            assert_eq!(events, ["{\"state\":\"working\"}", "next"], "cut at {cut}");
        }
    }

    #[test]
    fn a_line_that_never_ends_is_refused_at_the_cap() {
        let mut reader = Reader::default();
        let chunk = vec![b'x'; 64 * 1024];
        let mut fed = 0;
        let err = loop {
            match reader.feed(&chunk) {
                Ok(()) => fed += chunk.len(),
                Err(err) => break err,
            }
        };
        assert!(fed <= MAX_LINE_BYTES, "{fed}");
        assert_eq!(err, "an event-stream line longer than 1048576 bytes");
    }

    #[test]
    fn many_short_data_lines_cannot_make_an_event_over_the_cap() {
        let mut reader = Reader::default();
        let line = format!("data: {}\n", "y".repeat(1000));
        let err = (0..2_000)
            .find_map(|_| reader.feed(line.as_bytes()).err())
            .expect("refused");
        assert_eq!(err, "an event carrying more than 1048576 bytes of data");
    }
}
