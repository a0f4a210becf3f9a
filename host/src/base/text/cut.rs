//! Cutting text to a number of characters, on a character boundary, with `…` where text was left
//! out: the one cut for peer answers, tool results and quoted card fields. The roster's cut
//! (`agents::clean::cut`) differs on purpose: its cap counts the `…` and trims the space before
//! it, because the roster's caps are the operator's budget for the static prefix; and log fields
//! ([`super::log_field::escape_capped`]) say how many characters were left out, since an
//! operator reading a log wants the size of what is missing.

use std::borrow::Cow;

/// What marks the place where text was left out.
pub const ELLIPSIS: char = '…';

/// `text` if it has at most `max_chars` characters, else its first `max_chars` characters and
/// [`ELLIPSIS`].
pub fn cut(text: &str, max_chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        None => Cow::Borrowed(text),
        Some((at, _)) => {
            let mut out = String::with_capacity(at + ELLIPSIS.len_utf8());
            out.push_str(&text[..at]);
            out.push(ELLIPSIS);
            Cow::Owned(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_within_the_cap_is_kept_whole_and_longer_text_is_cut_on_a_character() {
        assert_eq!(cut("héllo", 5), "héllo");
        assert!(matches!(cut("héllo", 5), Cow::Borrowed(_)));
        assert_eq!(cut("héllo", 2), "hé…");
        assert_eq!(cut("日本語のテキスト", 3), "日本語…");
        assert_eq!(cut("", 0), "");
        assert_eq!(cut("a", 0), "…");
    }
}
