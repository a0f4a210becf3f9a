"""A tiny-harness plugin in Python that calls HTTP APIs through `wasi:http`: `http_get` fetches a
URL and `http_get_json` fetches one and reads a field of the JSON it answers.

The host sends each request only to the `host:port`s this plugin's grant lists
(`[plugins.grants.python-http] http = [...]`), adds the secrets it grants (an `Authorization`
header) itself, and masks them in every answer: the plugin never reads a secret. It follows a
redirect itself, with a new request the host checks against the grant like the first.

componentize-py generates the `wit_world` bindings when it builds the component, from the
plugin contract (`../../wit`) and the `wasi:http` WIT of the host's `wasmtime-wasi-http`
(`scripts/build-plugins` finds it): `types` is wasi:http's, `harness_types` the contract's.
"""

import asyncio
import json
from urllib.parse import urlsplit

import poll_loop
from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import host
from wit_world.imports.harness_types import PluginInfo, PromptContext, ToolDefinition, ToolError
from wit_world.imports.types import (
    Fields,
    IncomingResponse,
    Method_Get,
    OutgoingRequest,
    Scheme_Http,
    Scheme_Https,
)

HTTP_GET = "http_get"
HTTP_GET_JSON = "http_get_json"
# Redirects followed before giving up: enough for an API that moved, not a loop.
MAX_REDIRECTS = 3
# What the model reads of a body: the host caps it again, this keeps the plugin's memory small.
MAX_BODY_CHARS = 16 * 1024

URL = {"type": "string", "description": "An http:// or https:// URL on a granted host."}
TOOLS = {
    HTTP_GET: (
        "GETs a URL and returns its status line and body (redirects followed).",
        {"url": URL},
    ),
    HTTP_GET_JSON: (
        "GETs a URL that answers JSON and returns the value at `field` (a dotted path).",
        {"url": URL, "field": {"type": "string", "description": "A dotted path: `a.b.0`."}},
    ),
}


def schema(properties: dict) -> str:
    return json.dumps(
        {
            "type": "object",
            "properties": properties,
            "required": sorted(properties),
            "additionalProperties": False,
        }
    )


def request(url: str) -> OutgoingRequest:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise Err(ToolError(code="http.bad_url", message=f"not an http(s) URL: {url}"))
    req = OutgoingRequest(Fields())
    req.set_method(Method_Get())
    req.set_scheme(Scheme_Https() if parts.scheme == "https" else Scheme_Http())
    req.set_authority(parts.netloc)
    req.set_path_with_query(parts.path + (f"?{parts.query}" if parts.query else "") or "/")
    return req


async def fetch_once(url: str) -> tuple[int, dict[str, str], bytes]:
    try:
        response: IncomingResponse = await poll_loop.send(request(url))
    except Err as err:
        if isinstance(err.value, ToolError):
            raise
        # The host's refusal (a host not granted, a private address, a body over the cap) or a
        # network failure, named as wasi:http names it.
        raise Err(ToolError(code="http.refused", message=type(err.value).__name__))
    status = response.status()
    headers = {name: value.decode("utf-8", "replace") for name, value in response.headers().entries()}
    stream = poll_loop.Stream(response.consume())
    body = bytearray()
    while (chunk := await stream.next()) is not None:
        body.extend(chunk)
    return status, headers, bytes(body)


async def fetch(url: str) -> tuple[int, bytes]:
    for _ in range(MAX_REDIRECTS + 1):
        status, headers, body = await fetch_once(url)
        location = headers.get("location")
        if not (300 <= status < 400 and location):
            return status, body
        host.log(host.Level.INFO, f"following a {status} redirect")
        url = location
    raise Err(ToolError(code="http.redirects", message=f"more than {MAX_REDIRECTS} redirects"))


def run(url: str) -> tuple[int, bytes]:
    loop = poll_loop.PollLoop()
    asyncio.set_event_loop(loop)
    return loop.run_until_complete(fetch(url))


def field_of(value, path: str):
    for key in filter(None, path.split(".")):
        value = value[int(key)] if isinstance(value, list) else value[key]
    return value


class Plugin(exports.Plugin):
    def info(self) -> PluginInfo:
        return PluginInfo(name="python-http", version="0.1.0")

    def sections(self, ctx: PromptContext) -> list:
        return []

    def tools(self, ctx: PromptContext) -> list[ToolDefinition]:
        return [
            ToolDefinition(name=name, description=description, parameters=schema(properties))
            for name, (description, properties) in TOOLS.items()
        ]

    def invoke(self, name: str, arguments: str) -> str:
        args = json.loads(arguments)
        if name == HTTP_GET:
            status, body = run(args["url"])
            return f"status {status}\n\n{body.decode('utf-8', 'replace')[:MAX_BODY_CHARS]}"
        if name == HTTP_GET_JSON:
            status, body = run(args["url"])
            # Not caught on purpose: an answer that is not JSON, or lacks the field, raises, and
            # the harness logs the traceback and gives the model a tool error.
            value = field_of(json.loads(body), args["field"])
            return json.dumps(value)[:MAX_BODY_CHARS]
        raise Err(ToolError(code="tool.not_found", message=f'no tool named "{name}"'))
