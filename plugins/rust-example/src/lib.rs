//! A tiny-harness plugin in Rust: extends the `rules` section and adds `word_count`, which logs
//! through the host.

use serde_json::{Value, json};
use tiny_harness_plugin_sdk::host::{self, Level};
use tiny_harness_plugin_sdk::{
    EditKind, Plugin, PluginInfo, PromptContext, SectionEdit, ToolDefinition, ToolError, edit,
    tool_error,
};

const WORD_COUNT: &str = "word_count";

struct RustExample;

impl Plugin for RustExample {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "rust-example".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }

    fn sections(_ctx: PromptContext) -> Vec<SectionEdit> {
        vec![edit(
            EditKind::Extend,
            "rules",
            "- Before you state how long a text is, count its words with `word_count`.",
        )]
    }

    fn tools(_ctx: PromptContext) -> Vec<ToolDefinition> {
        let parameters = json!({
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "The text whose words to count."}
            },
            "required": ["text"],
            "additionalProperties": false
        });
        vec![ToolDefinition {
            name: WORD_COUNT.into(),
            description: "Counts the words (runs of non-whitespace) in a text.".into(),
            parameters: parameters.to_string(),
        }]
    }

    fn invoke(name: String, arguments: String) -> Result<String, ToolError> {
        if name != WORD_COUNT {
            return Err(tool_error(
                "tool.not_found",
                format!("no tool named \"{name}\""),
            ));
        }
        // The host validated the arguments against the schema, so `text` is a string.
        let arguments: Value = serde_json::from_str(&arguments)
            .map_err(|err| tool_error("word_count.invalid_arguments", err.to_string()))?;
        let text = arguments["text"].as_str().unwrap_or_default();
        let words = text.split_whitespace().count();
        host::log(Level::Info, &format!("counted {words} words"));
        Ok(format!("{words} words"))
    }
}

tiny_harness_plugin_sdk::export!(RustExample with_types_in tiny_harness_plugin_sdk);
