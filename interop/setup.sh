#!/usr/bin/env bash
# Installs the official A2A clients the interop tests drive (host/tests/interop_clients.rs):
#   interop/python/.venv    a2a-sdk 1.x   (python/requirements.txt)
#   interop/python/.venv03  a2a-sdk 0.3.x (python/requirements-v03.txt)
#   interop/python/.venv-mcp mcp 2.x, the MCP server of the MCP tests (python/requirements-mcp.txt)
#   interop/js/node_modules @a2a-js/sdk   (js/package-lock.json, npm ci)
# Needs python3 (3.11+) with venv and pip, and node 20+ with npm; reaches PyPI and npm only.
# Safe to run again: an existing environment is reused and brought up to the pins.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python3}"

venv() {
  local dir="$1" requirements="$2"
  if [[ ! -x "$dir/bin/python" ]]; then
    echo "creating $dir"
    "$python" -m venv "$dir"
  fi
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
  echo "installed $(basename "$requirements") into $dir"
}

venv "$here/python/.venv" "$here/python/requirements.txt"
venv "$here/python/.venv03" "$here/python/requirements-v03.txt"
venv "$here/python/.venv-mcp" "$here/python/requirements-mcp.txt"

(cd "$here/js" && npm ci --no-audit --no-fund --loglevel=error)
echo "installed @a2a-js/sdk into $here/js/node_modules"
