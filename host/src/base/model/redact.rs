//! The one cleaning a model endpoint's text gets before it is kept in a [`super::ModelError`]:
//! every occurrence of a secret masked, then capped and escaped for the log.
//!
//! An endpoint's error body is hostile text: a misconfigured proxy echoes the request's
//! `Authorization` header, a provider quotes the key it refused, an HTML error page runs to
//! megabytes, a peer writes newlines to forge log lines. The text is kept for the operator's log
//! only (an A2A client reads [`super::ModelError::public_reason`]), and even there the key must
//! not appear.

use std::borrow::Cow;

use crate::base::text::log_field;

/// What stands in for each occurrence of a secret value.
pub const REDACTED: &str = "[redacted]";

/// The most characters of an endpoint's text kept for the log. Providers explain themselves in
/// the first few hundred characters; the rest (HTML error pages, echoed prompts) would flood it.
pub const MAX_DETAIL_CHARS: usize = 500;

/// The secret values one model sends (its API key, its credential headers), and the cleaning
/// that hides them.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Longest first, so a value that contains another is masked whole.
    secrets: Vec<String>,
}

/// Never prints the secrets it holds, only how many.
impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor {{ secrets: {} }}", self.secrets.len())
    }
}

impl Redactor {
    /// A redactor for `secrets` (an API key, a credential header's value): each exactly as sent,
    /// and trimmed (as an endpoint would quote it). A blank one masks nothing.
    pub fn new<S: AsRef<str>>(secrets: impl IntoIterator<Item = S>) -> Redactor {
        let mut kept: Vec<String> = Vec::new();
        for secret in secrets {
            let secret = secret.as_ref();
            if secret.trim().is_empty() {
                continue;
            }
            for value in [secret, secret.trim()] {
                if !kept.iter().any(|known| known == value) {
                    kept.push(value.to_string());
                }
            }
        }
        kept.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
        Redactor { secrets: kept }
    }

    /// `text` with every secret replaced by [`REDACTED`], cut at [`MAX_DETAIL_CHARS`] and
    /// escaped with [`log_field::escape_capped`]. Secrets are masked before the cut, so no part
    /// of one survives at the edge, and again after escaping, so no escape sequence can spell one.
    pub fn clean(&self, text: &str) -> String {
        let masked = self.mask(text);
        let escaped = log_field::escape_capped(&masked, MAX_DETAIL_CHARS);
        self.mask(&escaped).into_owned()
    }

    /// `text` with every secret replaced by [`REDACTED`], and nothing else changed: for text a
    /// model reads whole (an agent's answer), where [`Redactor::clean`]'s cut would lose it.
    pub fn mask_only(&self, text: &str) -> String {
        self.mask(text).into_owned()
    }

    fn mask<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-canary-0123456789";

    #[test]
    fn every_occurrence_of_the_key_is_masked() {
        let redactor = Redactor::new(Some(KEY));
        let body = format!(r#"{{"error":"bad key {KEY}","echo":"Bearer {KEY}"}}"#);
        assert_eq!(
            redactor.clean(&body),
            r#"{"error":"bad key [redacted]","echo":"Bearer [redacted]"}"#
        );
    }

    #[test]
    fn a_key_with_surrounding_whitespace_is_masked_as_sent_and_as_quoted() {
        let redactor = Redactor::new(Some("  padded-secret-value\n"));
        assert_eq!(
            redactor.clean("got padded-secret-value; sent   padded-secret-value\n."),
            "got [redacted]; sent [redacted]."
        );
    }

    #[test]
    fn a_key_at_the_cut_is_masked_before_the_text_is_cut() {
        let redactor = Redactor::new(Some(KEY));
        let body = format!(
            "{}{KEY}{}",
            "x".repeat(MAX_DETAIL_CHARS - 5),
            "y".repeat(50)
        );
        let cleaned = redactor.clean(&body);
        assert!(!cleaned.contains("sk-ca"), "{cleaned}");
        assert!(
            cleaned.ends_with("x[reda… (55 more characters)"),
            "{cleaned}"
        );
    }

    #[test]
    fn the_text_is_escaped_so_it_cannot_forge_a_log_line() {
        let redactor = Redactor::new(None::<&str>);
        assert_eq!(
            redactor.clean("nope\n2030-01-01 INFO forged\u{1b}[2K"),
            "nope\\n2030-01-01 INFO forged\\u{1b}[2K"
        );
    }

    #[test]
    fn an_escape_sequence_cannot_spell_a_key_that_holds_a_backslash() {
        let redactor = Redactor::new(Some(r"key\nwith-backslash"));
        assert_eq!(redactor.clean("key\nwith-backslash"), REDACTED);
    }

    #[test]
    fn every_secret_given_is_masked_the_longest_first() {
        let redactor = Redactor::new(["Bearer sk-1", "sk-1", "dXNlcjpwYXNz"]);
        assert_eq!(
            redactor.clean("echo Bearer sk-1 / sk-1 / Basic dXNlcjpwYXNz"),
            "echo [redacted] / [redacted] / Basic [redacted]"
        );
    }

    #[test]
    fn no_key_or_a_blank_one_masks_nothing_and_debug_hides_the_key() {
        assert_eq!(Redactor::new(None::<&str>).clean("plain"), "plain");
        assert_eq!(Redactor::new(Some("  ")).clean("a  b"), "a  b");
        assert_eq!(
            format!("{:?}", Redactor::new(Some(KEY))),
            "Redactor { secrets: 1 }"
        );
    }
}
