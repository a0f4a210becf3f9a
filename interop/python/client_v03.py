"""Drives a running tiny-harness with the A2A 0.3 Python SDK (a2a-sdk 0.3.x).

Usage: client_v03.py BASE_URL

A 0.3 SDK cannot read a 1.0 agent card (it needs a top-level `url`), so the client is given
the JSON-RPC URL in a 0.3 card written here, as a 0.3 agent's card would give it. The card
also lists the 0.3 interface; this script checks that. Then it sends a blocking message, streams
one, gets the task, resubscribes to a running task and cancels another, all with 0.3 method
names and shapes. The harness must run the scripted model of interop/script.toml.
Prints one line per check; exits non-zero at the first failure.
"""

import asyncio
import sys
import uuid

import httpx

from a2a.client import ClientConfig, ClientFactory
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    Message,
    Part,
    Role,
    Task,
    TaskIdParams,
    TaskQueryParams,
    TaskState,
    TextPart,
)


def check(condition: bool, what: str) -> None:
    """Prints the check, or raises with its description."""
    if not condition:
        raise AssertionError(what)
    print(f"ok: {what}", flush=True)


def message(text: str) -> Message:
    return Message(
        message_id=str(uuid.uuid4()),
        role=Role.user,
        parts=[Part(root=TextPart(text=text))],
    )


async def final_task(events) -> Task:
    """The task as the last event of a send or resubscribe leaves it."""
    task = None
    async for event in events:
        if isinstance(event, tuple):
            task = event[0]
    if task is None:
        raise AssertionError("the agent answered without a task")
    return task


def legacy_card(base_url: str) -> AgentCard:
    return AgentCard(
        name="tiny-harness",
        description="tiny-harness, as a 0.3 client sees it",
        url=base_url,
        version="0",
        protocol_version="0.3.0",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[],
    )


async def main(base_url: str) -> None:
    async with httpx.AsyncClient() as http:
        card = (await http.get(f"{base_url}/.well-known/agent-card.json")).json()
    legacy = [
        i for i in card["supportedInterfaces"]
        if i["protocolBinding"] == "JSONRPC" and i["protocolVersion"].startswith("0.3")
    ]
    check(len(legacy) == 1, "the 1.0 card lists a JSON-RPC 0.3 interface")
    card = legacy_card(legacy[0]["url"])
    # `polling` makes a send non-blocking (`blocking: false`); without streaming it is one call.
    blocking = ClientFactory(ClientConfig(streaming=False)).create(card)
    polling = ClientFactory(ClientConfig(streaming=False, polling=True)).create(card)
    streaming = ClientFactory(ClientConfig(streaming=True)).create(card)

    task = await final_task(blocking.send_message(message("hello")))
    check(task.status.state == TaskState.completed, "message/send completes the task")

    fetched = await blocking.get_task(TaskQueryParams(id=task.id, history_length=1))
    check(fetched.status.state == TaskState.completed, "tasks/get")
    check(len(fetched.history or []) == 1, "tasks/get trims history to 1")

    task = await final_task(streaming.send_message(message("stream")))
    check(task.status.state == TaskState.completed, "message/stream ends completed")

    running = await final_task(polling.send_message(message("resubscribe")))
    task = await final_task(streaming.resubscribe(TaskIdParams(id=running.id)))
    check(task.status.state == TaskState.completed, "tasks/resubscribe follows to the end")

    running = await final_task(polling.send_message(message("cancel me")))
    canceled = await blocking.cancel_task(TaskIdParams(id=running.id))
    check(canceled.status.state == TaskState.canceled, "tasks/cancel")
    print("python a2a-sdk 0.3: all checks passed", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    asyncio.run(main(sys.argv[1]))
