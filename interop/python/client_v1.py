"""Drives a running tiny-harness with the official A2A Python SDK (a2a-sdk 1.x).

Usage: client_v1.py BASE_URL

With A2A_BEARER_TOKEN set, every call presents it (`Authorization: Bearer`), as a caller of the
harness's `[[server.callers]]` (over gRPC as `authorization` metadata), and the script also
checks that the same calls without it list nothing (a caller that proves no identity lists no
tasks).

Over each binding the agent card lists (JSON-RPC, HTTP+JSON, then gRPC when the harness serves
it with `server.grpc_bind`) it fetches the card, sends a
blocking message, streams one, gets the task, lists tasks, subscribes to a running task and
cancels another. The harness must run the scripted model with a first reply that waits a
second or more (see interop/script.toml), so that a task is still running when it is canceled.
Prints one line per check; exits non-zero at the first failure.

With A2A_WEBHOOK_URL set (a webhook the harness's `[push] allowed_hosts` lets it reach), it also
sets a push config on a running task over each binding, gets it, lists it, sets and deletes a
second one, and follows the task to its end; it prints `push-token: TOKEN` for each config it
leaves, so the caller can check that the webhook heard that task complete with that token.
"""

import asyncio
import os
import sys
import uuid

import grpc
import httpx

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import (
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.constants import TransportProtocol

BINDINGS = [TransportProtocol.JSONRPC.value, TransportProtocol.HTTP_JSON.value]
GRPC = TransportProtocol.GRPC.value
ENDED = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
}


def check(condition: bool, what: str) -> None:
    """Prints the check, or raises with its description."""
    if not condition:
        raise AssertionError(what)
    print(f"ok: {what}", flush=True)


def request(text: str, return_immediately: bool = False) -> SendMessageRequest:
    message = Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
    )
    send = SendMessageRequest(message=message)
    send.configuration.return_immediately = return_immediately
    return send


async def last_task_state(events) -> tuple[str, int]:
    """The task id and final state a stream of StreamResponse leaves."""
    task_id, state = "", TaskState.TASK_STATE_UNSPECIFIED
    async for event in events:
        if event.HasField("task"):
            task_id, state = event.task.id, event.task.status.state
        elif event.HasField("status_update"):
            task_id, state = event.status_update.task_id, event.status_update.status.state
    return task_id, state


def http_client(token: str | None) -> httpx.AsyncClient:
    """An HTTP client presenting the bearer token, when there is one."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(headers=headers, timeout=60)


class _BearerToken:
    """Adds `authorization: Bearer <token>` to a gRPC call's metadata."""

    def __init__(self, token: str) -> None:
        self.token = token

    def _details(self, details):
        metadata = grpc.aio.Metadata(*(details.metadata or ()))
        metadata["authorization"] = f"Bearer {self.token}"
        return details._replace(metadata=metadata)


# grpc.aio files an interceptor under the first call kind it implements only: one class each.
class BearerUnary(_BearerToken, grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(self, continuation, details, request):
        return await continuation(self._details(details), request)


class BearerStream(_BearerToken, grpc.aio.UnaryStreamClientInterceptor):
    async def intercept_unary_stream(self, continuation, details, request):
        return await continuation(self._details(details), request)


def grpc_channels(token: str | None):
    """The SDK's gRPC channel factory: plaintext HTTP/2 to the card's `host:port`."""
    interceptors = [BearerUnary(token), BearerStream(token)] if token else None
    return lambda url: grpc.aio.insecure_channel(url, interceptors=interceptors)


def config(binding: str, token: str | None, streaming: bool, http=None) -> ClientConfig:
    return ClientConfig(
        streaming=streaming,
        supported_protocol_bindings=[binding],
        httpx_client=http,
        grpc_channel_factory=grpc_channels(token),
    )


async def exercise(card, binding: str, token: str | None) -> None:
    http = http_client(token)
    blocking = ClientFactory(config(binding, token, False, http)).create(card)
    streaming = ClientFactory(config(binding, token, True, http)).create(card)
    try:
        task_id, state = await last_task_state(blocking.send_message(request("hello")))
        check(state == TaskState.TASK_STATE_COMPLETED, f"{binding}: a blocking send completes")

        task = await blocking.get_task(GetTaskRequest(id=task_id, history_length=1))
        check(task.status.state == TaskState.TASK_STATE_COMPLETED, f"{binding}: get_task")
        check(len(task.history) == 1, f"{binding}: get_task trims history to 1")

        page = await blocking.list_tasks(ListTasksRequest(context_id=task.context_id))
        check([t.id for t in page.tasks] == [task_id], f"{binding}: list_tasks by context")
        if token:
            anonymous = ClientFactory(config(binding, None, False)).create(card)
            try:
                page = await anonymous.list_tasks(ListTasksRequest(context_id=task.context_id))
                check(not page.tasks, f"{binding}: without the token list_tasks lists nothing")
            finally:
                await anonymous.close()

        task_id, state = await last_task_state(streaming.send_message(request("stream")))
        check(state == TaskState.TASK_STATE_COMPLETED, f"{binding}: a stream ends completed")

        running, _ = await last_task_state(
            blocking.send_message(request("subscribe", return_immediately=True))
        )
        _, state = await last_task_state(streaming.subscribe(SubscribeToTaskRequest(id=running)))
        check(state == TaskState.TASK_STATE_COMPLETED, f"{binding}: subscribe follows to the end")

        running, _ = await last_task_state(
            blocking.send_message(request("cancel me", return_immediately=True))
        )
        canceled = await blocking.cancel_task(CancelTaskRequest(id=running))
        check(canceled.status.state == TaskState.TASK_STATE_CANCELED, f"{binding}: cancel_task")

        webhook = os.environ.get("A2A_WEBHOOK_URL")
        if webhook:
            await push_configs(blocking, binding, webhook)
    finally:
        await blocking.close()
        await streaming.close()
        await http.aclose()


async def push_configs(blocking, binding: str, webhook: str) -> None:
    """The four push-config calls on a running task, which then ends with a config in place."""
    running, _ = await last_task_state(
        blocking.send_message(request("push me", return_immediately=True))
    )
    slug = binding.lower().replace("+", "-")
    token = f"python-{slug}-{uuid.uuid4().hex[:8]}"
    url = f"{webhook}/python/{slug}"
    created = await blocking.create_task_push_notification_config(
        TaskPushNotificationConfig(task_id=running, id="kept", url=url, token=token)
    )
    check(created.id == "kept" and created.url == url, f"{binding}: create push config")
    got = await blocking.get_task_push_notification_config(
        GetTaskPushNotificationConfigRequest(task_id=running, id="kept")
    )
    check(got.url == url and got.token == token, f"{binding}: get push config")
    await blocking.create_task_push_notification_config(
        TaskPushNotificationConfig(task_id=running, id="dropped", url=url, token="dropped")
    )
    listed = await blocking.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=running)
    )
    check(sorted(c.id for c in listed.configs) == ["dropped", "kept"], f"{binding}: list push configs")
    await blocking.delete_task_push_notification_config(
        DeleteTaskPushNotificationConfigRequest(task_id=running, id="dropped")
    )
    listed = await blocking.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=running)
    )
    check([c.id for c in listed.configs] == ["kept"], f"{binding}: delete push config")
    # Polled, not followed: the task may have ended by now, and a subscription to an ended task
    # is refused.
    for _ in range(300):
        task = await blocking.get_task(GetTaskRequest(id=running))
        if task.status.state in ENDED:
            break
        await asyncio.sleep(0.1)
    check(task.status.state == TaskState.TASK_STATE_COMPLETED, f"{binding}: the pushed task completes")
    print(f"push-token: {token}", flush=True)


async def main(base_url: str) -> None:
    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, base_url).get_agent_card()
    check(card.name == "tiny-harness", "the card is fetched and parsed")
    bindings = [f"{i.protocol_binding} {i.protocol_version}" for i in card.supported_interfaces]
    check(bindings[:2] == [f"{b} 1.0" for b in BINDINGS], f"the card lists {bindings}")
    token = os.environ.get("A2A_BEARER_TOKEN") or None
    served = {i.protocol_binding for i in card.supported_interfaces}
    for binding in BINDINGS + ([GRPC] if GRPC in served else []):
        await exercise(card, binding, token)
    print("python a2a-sdk 1.x: all checks passed", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    asyncio.run(main(sys.argv[1]))
