//! `[log]`: how the log is written. `text` (the default) is for people; `json` is one JSON
//! object a line, for a collector. Either way colour codes are written only to a terminal, so a
//! log file or a pipe gets none.

use serde::Deserialize;

/// `log.format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    /// One readable line an event: time, level, target, message and fields.
    #[default]
    Text,
    /// One JSON object a line: `timestamp`, `level`, `target`, `fields` (`message` among them).
    Json,
}

/// `[log]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    /// `text` or `json`; `text` unless set.
    #[serde(default)]
    pub format: LogFormat,
}

#[cfg(test)]
mod tests {
    use crate::base::config::testing::error_of;
    use crate::base::config::{Config, LogFormat};

    #[test]
    fn the_format_is_text_unless_json_is_asked_for() {
        let parse = |text: &str| Config::parse(text, std::path::Path::new("c.toml")).unwrap();
        assert_eq!(parse("").log.format, LogFormat::Text);
        assert_eq!(
            parse("[log]\nformat = \"json\"\n").log.format,
            LogFormat::Json
        );
        let error = error_of("[log]\nformat = \"xml\"\n");
        assert!(error.starts_with("log.format"), "{error}");
    }
}
