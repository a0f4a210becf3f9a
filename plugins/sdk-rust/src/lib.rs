//! Write tiny-harness plugins in Rust. Implement [`Plugin`] (every method but `info` has a
//! default that contributes nothing) and export it:
//!
//! ```ignore
//! use tiny_harness_plugin_sdk::{Plugin, PluginInfo};
//! struct Hello;
//! impl Plugin for Hello {
//!     fn info() -> PluginInfo { PluginInfo { name: "hello".into(), version: "0.1.0".into() } }
//! }
//! tiny_harness_plugin_sdk::export!(Hello with_types_in tiny_harness_plugin_sdk);
//! ```
//!
//! Settings the operator grants the plugin (`[plugins.grants.<name>] config`) are read with
//! `host::config("key")`, which returns a [`Setting`] (text, integer, number or flag):
//!
//! ```ignore
//! let units = match tiny_harness_plugin_sdk::host::config("units") {
//!     Some(tiny_harness_plugin_sdk::Setting::Text(units)) => units,
//!     _ => "metric".to_string(),
//! };
//! ```
//!
//! Build with `cargo build --release --target wasm32-wasip2`: the `.wasm` it writes is a
//! component the harness loads from its plugins folder.

wit_bindgen::generate!({
    world: "harness-plugin",
    path: "../../wit",
    pub_export_macro: true,
    default_bindings_module: "tiny_harness_plugin_sdk",
});

pub use exports::tiny_harness::plugin::plugin::Guest;
pub use tiny_harness::plugin::host;
/// A setting the operator gave the plugin, read with [`host::config`] (and listed by
/// [`host::config_keys`]): `[plugins.grants.<name>] config` in the harness's configuration.
pub use tiny_harness::plugin::host::Setting;
pub use tiny_harness::plugin::types::{
    AgentEntry, EditKind, Participant, PluginInfo, PromptContext, SectionEdit, SkillEntry,
    SkillSummary, ToolDefinition, ToolError,
};

/// A plugin. Implement what you change; the defaults contribute nothing.
pub trait Plugin {
    /// The plugin's name and version.
    fn info() -> PluginInfo;

    /// Edits to the system prompt.
    fn sections(_ctx: PromptContext) -> Vec<SectionEdit> {
        Vec::new()
    }

    /// The tools this plugin provides.
    fn tools(_ctx: PromptContext) -> Vec<ToolDefinition> {
        Vec::new()
    }

    /// Runs one of this plugin's tools.
    fn invoke(name: String, _arguments: String) -> Result<String, ToolError> {
        Err(ToolError {
            code: "tool.not_found".into(),
            message: format!("no tool named \"{name}\""),
        })
    }
}

impl<T: Plugin> Guest for T {
    fn info() -> PluginInfo {
        <T as Plugin>::info()
    }
    fn sections(ctx: PromptContext) -> Vec<SectionEdit> {
        <T as Plugin>::sections(ctx)
    }
    fn tools(ctx: PromptContext) -> Vec<ToolDefinition> {
        <T as Plugin>::tools(ctx)
    }
    fn invoke(name: String, arguments: String) -> Result<String, ToolError> {
        <T as Plugin>::invoke(name, arguments)
    }
}

/// A section edit.
pub fn edit(kind: EditKind, name: &str, body: &str) -> SectionEdit {
    SectionEdit {
        kind,
        name: name.to_string(),
        body: body.to_string(),
    }
}

/// A tool error with a stable code.
pub fn tool_error(code: &str, message: impl Into<String>) -> ToolError {
    ToolError {
        code: code.to_string(),
        message: message.into(),
    }
}
