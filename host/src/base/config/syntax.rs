//! A TOML syntax error placed at its line and column, so an operator finds it without counting.

use std::path::Path;

use super::ConfigError;

/// `text`'s syntax error as a [`ConfigError::Syntax`] naming where the parser stopped.
pub(super) fn error(text: &str, path: &Path, err: &toml::de::Error) -> ConfigError {
    ConfigError::Syntax {
        path: path.to_path_buf(),
        at: err.span().map(|span| line_and_column(text, span.start)),
        message: err.message().trim_end().to_string(),
    }
}

/// `:LINE:COLUMN` after the file's name, or nothing when the parser gave no place.
pub(super) fn at(at: Option<(usize, usize)>) -> String {
    at.map(|(line, column)| format!(":{line}:{column}"))
        .unwrap_or_default()
}

/// The line and column (both from 1; columns count characters, not bytes) of byte `offset`.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use crate::base::config::testing::error_of;

    #[test]
    fn a_syntax_error_names_its_line_and_column_golden() {
        let text = "[server]\nbind = \"127.0.0.1:8080\"\n\n[model]\nprovider = openai\n";
        assert_eq!(
            error_of(text),
            "config.toml:5:12: TOML syntax error: string values must be quoted, expected literal string"
        );
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        assert_eq!(
            super::line_and_column("é = x\n", 5),
            (1, 5),
            "x is the fifth character"
        );
        assert_eq!(super::line_and_column("a\nbé", 4), (2, 2));
    }

    #[test]
    fn an_unclosed_table_header_is_placed_on_its_line() {
        let error = error_of("[server]\nbind = \"127.0.0.1:0\"\n[model\nprovider = \"scripted\"\n");
        assert!(error.starts_with("config.toml:3:"), "{error}");
    }
}
