"""An echo agent on the official A2A Python SDK (a2a-sdk 1.x): answers every SendMessage with a
Message that repeats the text it was sent. No store beyond the SDK's in-memory one, no model: the
SDK's own cost per request, measured beside the harness by scripts/bench-load.

    bench/python-echo/.venv/bin/python bench/python-echo/echo_agent.py --port 9100
"""

import argparse

import uvicorn
from starlette.applications import Starlette

from a2a.helpers.proto_helpers import get_message_text, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill


class EchoExecutor(AgentExecutor):
    """Answers with the text of the message it was given."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = get_message_text(context.message) if context.message else ""
        await event_queue.enqueue_event(new_text_message(text, context_id=context.context_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError("an echo has nothing to cancel")


def card(url: str) -> AgentCard:
    return AgentCard(
        name="Echo",
        description="Repeats what it is sent.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(id="echo", name="Echo", description="Repeats the text.", tags=["echo"])
        ],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=9100)
    args = parser.parse_args()
    agent_card = card(f"http://127.0.0.1:{args.port}/")
    handler = DefaultRequestHandler(
        agent_executor=EchoExecutor(),
        task_store=InMemoryTaskStore(),
        agent_card=agent_card,
    )
    routes = create_agent_card_routes(agent_card) + create_jsonrpc_routes(handler, rpc_url="/")
    uvicorn.run(Starlette(routes=routes), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
