"""The `{{plugin_name}}` plugin for tiny-harness: defines the `{{plugin_name}}` section of the
system prompt and adds the `{{tool_name}}` tool.

componentize-py generates the `wit_world` bindings from `wit/` when it builds the component;
this module implements the exported `plugin` interface as a class named after it.
"""

import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import host
from wit_world.imports.types import (
    EditKind,
    PluginInfo,
    PromptContext,
    SectionEdit,
    ToolDefinition,
    ToolError,
)

# The plugin's name: in logs, in `harness plugins`, and the name of its section.
NAME = "{{plugin_name}}"
VERSION = "0.1.0"
# The tool's name: unique across the plugins a harness loads.
TOOL = "{{tool_name}}"

PARAMETERS = {
    "type": "object",
    "properties": {"who": {"type": "string", "description": "The name of the person to greet."}},
    "required": ["who"],
    "additionalProperties": False,
}


class Plugin(exports.Plugin):
    def info(self) -> PluginInfo:
        return PluginInfo(name=NAME, version=VERSION)

    def sections(self, ctx: PromptContext) -> list[SectionEdit]:
        """Called once at start-up: edits to the system prompt."""
        body = (
            f"{ctx.self_card.name} can greet a person by name with `{TOOL}`: "
            "call it when asked to greet someone."
        )
        return [SectionEdit(kind=EditKind.DEFINE, name=NAME, body=body)]

    def tools(self, ctx: PromptContext) -> list[ToolDefinition]:
        """Called once at start-up: the tools, each with a JSON Schema for its arguments."""
        return [
            ToolDefinition(
                name=TOOL,
                description="Greets a person by name.",
                parameters=json.dumps(PARAMETERS),
            )
        ]

    def invoke(self, name: str, arguments: str) -> str:
        """Runs one call. The host has checked `arguments` against the tool's schema; the text
        returned is what the model reads, an `Err(ToolError)` reaches it as `[code] message`."""
        if name != TOOL:
            raise Err(ToolError(code="tool.not_found", message=f'no tool named "{name}"'))
        who = json.loads(arguments)["who"].strip()
        if not who:
            raise Err(ToolError(code="greet.no_name", message="`who` is blank: give a name"))
        host.log(host.Level.INFO, f"greeting {len(who)} characters")
        return f"Hello, {who}, from {NAME}!"
