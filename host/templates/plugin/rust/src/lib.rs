//! The `{{plugin_name}}` plugin for tiny-harness: defines the `{{plugin_name}}` section of the
//! system prompt and adds the `{{tool_name}}` tool.

use serde_json::{Value, json};
use tiny_harness_plugin_sdk::host::{self, Level};
use tiny_harness_plugin_sdk::{
    EditKind, Plugin, PluginInfo, PromptContext, SectionEdit, ToolDefinition, ToolError, edit,
    tool_error,
};

/// The plugin's name: in logs, in `harness plugins`, and the name of its section.
const NAME: &str = "{{plugin_name}}";
/// The tool's name: unique across the plugins a harness loads.
const TOOL: &str = "{{tool_name}}";

struct ThisPlugin;

impl Plugin for ThisPlugin {
    fn info() -> PluginInfo {
        PluginInfo {
            name: NAME.into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }

    /// Called once at start-up: edits to the system prompt (define, override, extend, replace).
    fn sections(ctx: PromptContext) -> Vec<SectionEdit> {
        let body = format!(
            "{} can greet a person by name with `{TOOL}`: call it when asked to greet someone.",
            ctx.self_card.name
        );
        vec![edit(EditKind::Define, NAME, &body)]
    }

    /// Called once at start-up: the tools, each with a JSON Schema for its arguments.
    fn tools(_ctx: PromptContext) -> Vec<ToolDefinition> {
        let parameters = json!({
            "type": "object",
            "properties": {
                "who": {"type": "string", "description": "The name of the person to greet."}
            },
            "required": ["who"],
            "additionalProperties": false
        });
        vec![ToolDefinition {
            name: TOOL.into(),
            description: "Greets a person by name.".into(),
            parameters: parameters.to_string(),
        }]
    }

    /// Runs one call. The host has checked `arguments` against the tool's schema; the text
    /// returned is what the model reads, an error reaches it as `[code] message`.
    fn invoke(name: String, arguments: String) -> Result<String, ToolError> {
        if name != TOOL {
            return Err(tool_error(
                "tool.not_found",
                format!("no tool named \"{name}\""),
            ));
        }
        let arguments: Value = serde_json::from_str(&arguments)
            .map_err(|err| tool_error("greet.invalid_arguments", err.to_string()))?;
        let who = arguments["who"].as_str().unwrap_or_default().trim();
        if who.is_empty() {
            return Err(tool_error("greet.no_name", "`who` is blank: give a name"));
        }
        host::log(Level::Info, &format!("greeting {} characters", who.len()));
        Ok(format!("Hello, {who}, from {NAME}!"))
    }
}

tiny_harness_plugin_sdk::export!(ThisPlugin with_types_in tiny_harness_plugin_sdk);
