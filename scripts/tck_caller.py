"""A pytest plugin that makes the A2A TCK call tiny-harness as callers who prove who they are.

The kit has no setting for credentials, and this harness serves some operations only to a
caller that proves who it is (ListTasks lists nothing for an anonymous caller; only a proven
caller reads the extended card). scripts/tck loads this plugin (`-p tck_caller`) so that every
request of the kit's HTTP clients carries `Authorization: Bearer <token>`, and every gRPC call
the same as `authorization` metadata (a request the kit gives its own `Authorization` keeps it).

Which token:

- With TCK_ISSUER_KEY (the PEM of the key scripts/tck_issuer.py made), TCK_ISSUER and
  TCK_AUDIENCE set, each test calls as a caller of its own: a JWT for `[server.oidc]`, signed
  with that key, whose `sub` is derived from the test's id. The harness creates one task per
  sender and `messageId` (a repeated message returns the task it created), and the kit sends
  the same `messageId` for every task a scenario's helper makes in one run; as one caller, all
  its tests would share those tasks. As separate callers each test gets tasks of its own, as a
  client of its own would (docs/conformance.md).
- Otherwise, with A2A_AUTH_TOKEN set, the whole run is that one caller (`[[server.callers]]`).
- With neither, it does nothing.
"""

import collections
import hashlib
import os
import time

import grpc
import httpx
import pytest

_STATIC_TOKEN = os.environ.get("A2A_AUTH_TOKEN", "")
_ISSUER_KEY = os.environ.get("TCK_ISSUER_KEY", "")
_ISSUER = os.environ.get("TCK_ISSUER", "")
_AUDIENCE = os.environ.get("TCK_AUDIENCE", "")

# How long a test's token is valid: longer than any test runs.
_TOKEN_LIFETIME_SECS = 3600

_current = {"token": _STATIC_TOKEN}


def _token_for(test_id: str) -> str:
    import jwt  # pyjwt[crypto], installed into the TCK's venv by scripts/tck

    with open(_ISSUER_KEY, "rb") as pem:
        key = pem.read()
    now = int(time.time())
    subject = "tck-" + hashlib.sha256(test_id.encode()).hexdigest()[:16]
    claims = {"iss": _ISSUER, "aud": _AUDIENCE, "sub": subject, "iat": now,
              "exp": now + _TOKEN_LIFETIME_SECS}
    return jwt.encode(claims, key, algorithm="EdDSA", headers={"kid": "tck-issuer"})


if _ISSUER_KEY:

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(item):
        """Before the test's fixtures run, so what they send is the test's caller too."""
        _current["token"] = _token_for(item.nodeid)


if _ISSUER_KEY or _STATIC_TOKEN:
    _original_send = httpx.Client.send

    def _send_with_caller_token(self, request, *args, **kwargs):
        if "authorization" not in request.headers and _current["token"]:
            request.headers["Authorization"] = f"Bearer {_current['token']}"
        return _original_send(self, request, *args, **kwargs)

    httpx.Client.send = _send_with_caller_token


class _CallDetails(
    collections.namedtuple(
        "_CallDetails",
        ("method", "timeout", "metadata", "credentials", "wait_for_ready", "compression"),
    ),
    grpc.ClientCallDetails,
):
    pass


class _CallerToken(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
    """Adds the current caller's bearer token to each call's metadata."""

    def _with_token(self, details):
        metadata = list(details.metadata or ())
        if not any(k == "authorization" for k, _ in metadata) and _current["token"]:
            metadata.append(("authorization", f"Bearer {_current['token']}"))
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


if _ISSUER_KEY or _STATIC_TOKEN:
    _original_channel = grpc.insecure_channel

    def _channel_with_caller_token(target, *args, **kwargs):
        return grpc.intercept_channel(_original_channel(target, *args, **kwargs), _CallerToken())

    grpc.insecure_channel = _channel_with_caller_token
