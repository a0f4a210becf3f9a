//! The builtin plugin: the default system prompt, as sections, and the intrinsic tools. It runs
//! sandboxed like any other plugin; every effect of a tool goes through a host function that the
//! harness checks.

mod tools;

use tiny_harness_plugin_sdk::{
    EditKind, Plugin, PluginInfo, PromptContext, SectionEdit, ToolDefinition, ToolError, edit,
};

/// The default prompt's sections, in order.
const SECTIONS: [(&str, &str); 7] = [
    ("role", include_str!("prompt/role.md")),
    ("task", include_str!("prompt/task.md")),
    ("participants", include_str!("prompt/participants.md")),
    ("tools", include_str!("prompt/tools.md")),
    ("skills", include_str!("prompt/skills.md")),
    ("agents", include_str!("prompt/agents.md")),
    ("rules", include_str!("prompt/rules.md")),
];

struct Builtin;

impl Plugin for Builtin {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "builtin".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }

    fn sections(_ctx: PromptContext) -> Vec<SectionEdit> {
        SECTIONS
            .iter()
            .map(|(name, body)| edit(EditKind::Define, name, body.trim_end()))
            .collect()
    }

    fn tools(_ctx: PromptContext) -> Vec<ToolDefinition> {
        tools::definitions()
    }

    fn invoke(name: String, arguments: String) -> Result<String, ToolError> {
        tools::invoke(&name, &arguments)
    }
}

tiny_harness_plugin_sdk::export!(Builtin with_types_in tiny_harness_plugin_sdk);
