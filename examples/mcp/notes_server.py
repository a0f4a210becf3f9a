"""A tiny MCP tool server: a notebook the model can add to and read.

Runs on the official MCP Python SDK (`pip install "mcp>=2"`), over stdio. Notes are kept in
the JSON file NOTES_FILE names (default notes.json in the current folder).
"""

import json
import os
from pathlib import Path

from mcp.server import MCPServer

server = MCPServer("notes")
store = Path(os.environ.get("NOTES_FILE", "notes.json"))


def load() -> list[str]:
    return json.loads(store.read_text()) if store.exists() else []


@server.tool()
def add_note(text: str) -> str:
    """Adds a note to the notebook; says how many notes it holds."""
    notes = load() + [text]
    store.write_text(json.dumps(notes, indent=2))
    return f"noted; the notebook holds {len(notes)} notes"


@server.tool()
def list_notes() -> list[str]:
    """Every note in the notebook, oldest first."""
    return load()


if __name__ == "__main__":
    server.run("stdio")
