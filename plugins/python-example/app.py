"""A tiny-harness plugin in Python: defines a `word-play` section and adds `reverse_words`.

componentize-py generates the `wit_world` bindings from `../../wit` when it builds the
component; this module implements the exported `plugin` interface as a class named after it.
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

REVERSE_WORDS = "reverse_words"

PARAMETERS = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "The text whose words to reverse."}
    },
    "required": ["text"],
    "additionalProperties": False,
}


class Plugin(exports.Plugin):
    def info(self) -> PluginInfo:
        return PluginInfo(name="python-example", version="0.1.0")

    def sections(self, ctx: PromptContext) -> list[SectionEdit]:
        body = (
            f"{ctx.self_card.name} can reverse the order of the words in a text with "
            f"`{REVERSE_WORDS}`: use it instead of reversing words yourself."
        )
        return [SectionEdit(kind=EditKind.DEFINE, name="word-play", body=body)]

    def tools(self, ctx: PromptContext) -> list[ToolDefinition]:
        return [
            ToolDefinition(
                name=REVERSE_WORDS,
                description="Reverses the order of the words in a text.",
                parameters=json.dumps(PARAMETERS),
            )
        ]

    def invoke(self, name: str, arguments: str) -> str:
        if name != REVERSE_WORDS:
            raise Err(ToolError(code="tool.not_found", message=f'no tool named "{name}"'))
        words = json.loads(arguments)["text"].split()
        if not words:
            raise Err(ToolError(code="reverse_words.empty", message="the text has no words"))
        host.log(host.Level.INFO, f"reversing {len(words)} words")
        return " ".join(reversed(words))
