"""A pytest plugin that makes the A2A TCK call tiny-harness as a token caller.

The kit has no setting for credentials, and this harness serves some operations only to a
caller that proves who it is (ListTasks lists nothing for an anonymous caller; only a proven
caller reads the extended card). scripts/tck loads this plugin (`-p tck_caller`) so that every
HTTP client the kit makes sends `Authorization: Bearer $A2A_AUTH_TOKEN`, and every gRPC call
the same as `authorization` metadata: the token of the `[[server.callers]]` entry scripts/tck
configures for the run. Without A2A_AUTH_TOKEN it does nothing.
"""

import collections
import os

import grpc
import httpx

_TOKEN = os.environ.get("A2A_AUTH_TOKEN", "")

if _TOKEN:
    _original_init = httpx.Client.__init__

    def _init_with_caller_token(self, *args, **kwargs):
        headers = dict(kwargs.pop("headers", None) or {})
        headers.setdefault("Authorization", f"Bearer {_TOKEN}")
        _original_init(self, *args, headers=headers, **kwargs)

    httpx.Client.__init__ = _init_with_caller_token


class _CallDetails(
    collections.namedtuple(
        "_CallDetails",
        ("method", "timeout", "metadata", "credentials", "wait_for_ready", "compression"),
    ),
    grpc.ClientCallDetails,
):
    pass


class _CallerToken(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
    """Adds the caller's bearer token to each call's metadata."""

    def _with_token(self, details):
        metadata = [(k, v) for k, v in (details.metadata or ()) if k != "authorization"]
        metadata.append(("authorization", f"Bearer {_TOKEN}"))
        return _CallDetails(
            details.method,
            details.timeout,
            metadata,
            details.credentials,
            getattr(details, "wait_for_ready", None),
            getattr(details, "compression", None),
        )

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(self._with_token(details), request)

    def intercept_unary_stream(self, continuation, details, request):
        return continuation(self._with_token(details), request)


if _TOKEN:
    _original_channel = grpc.insecure_channel

    def _channel_with_caller_token(target, *args, **kwargs):
        return grpc.intercept_channel(_original_channel(target, *args, **kwargs), _CallerToken())

    grpc.insecure_channel = _channel_with_caller_token
