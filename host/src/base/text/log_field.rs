//! Untrusted text as it may appear in a log line: escaped and capped, so that a plugin, a peer
//! or a model endpoint can neither forge a line (a newline followed by a fake timestamp and
//! level), hide text (terminal escapes, bidirectional controls) nor flood the log with one field.

use std::fmt::Write;

use crate::base::text::untrusted::is_invisible;

/// The most characters of one untrusted value a log line carries; the rest is counted, not
/// written. Enough for an error message or a plugin's line, far below a flood.
pub const MAX_LOG_FIELD_CHARS: usize = 2_000;

/// `text` on one line with `\n`, `\r`, `\t`, every other control character and every invisible
/// or direction-changing character escaped (`\n`, `\u{1b}`), cut at [`MAX_LOG_FIELD_CHARS`]
/// characters with a note of how many were left out.
pub fn escape(text: &str) -> String {
    escape_capped(text, MAX_LOG_FIELD_CHARS)
}

/// [`escape`] with its own cap, counted in characters of the input.
pub fn escape_capped(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars) + 16);
    let mut chars = text.chars();
    for (taken, c) in chars.by_ref().enumerate() {
        if taken == max_chars {
            // Put the character back into the count of those left out.
            let rest = 1 + chars.count();
            let _ = write!(out, "… ({rest} more characters)");
            return out;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() || is_invisible(c) || matches!(c, '\u{2028}' | '\u{2029}') => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newline_cannot_start_a_forged_line() {
        let forged = "ok\n2026-12-02T00:00:00Z  INFO tiny_harness: admin logged in\r\x1b[2K";
        assert_eq!(
            escape(forged),
            "ok\\n2026-12-02T00:00:00Z  INFO tiny_harness: admin logged in\\r\\u{1b}[2K"
        );
    }

    #[test]
    fn hidden_characters_are_shown_and_backslashes_doubled() {
        assert_eq!(
            escape("a\u{202E}b\u{200B}c\\n"),
            "a\\u{202e}b\\u{200b}c\\\\n"
        );
    }

    #[test]
    fn a_long_value_is_cut_with_the_count_of_what_was_left() {
        assert_eq!(escape_capped("abcdef", 4), "abcd… (2 more characters)");
        assert_eq!(escape_capped("abcd", 4), "abcd");
        let flood = "x".repeat(30 * 1024 * 1024);
        assert!(escape(&flood).len() < MAX_LOG_FIELD_CHARS + 64);
    }
}
