"""A pytest plugin that makes the A2A TCK call tiny-harness as a token caller.

The kit has no setting for credentials, and this harness serves some operations only to a
caller that proves who it is (ListTasks lists nothing for an anonymous caller; only a proven
caller reads the extended card). scripts/tck loads this plugin (`-p tck_caller`) so that every
HTTP client the kit makes sends `Authorization: Bearer $A2A_AUTH_TOKEN`, the token of the
`[[server.callers]]` entry scripts/tck configures for the run. Without A2A_AUTH_TOKEN it does
nothing.
"""

import os

import httpx

_TOKEN = os.environ.get("A2A_AUTH_TOKEN", "")

if _TOKEN:
    _original_init = httpx.Client.__init__

    def _init_with_caller_token(self, *args, **kwargs):
        headers = dict(kwargs.pop("headers", None) or {})
        headers.setdefault("Authorization", f"Bearer {_TOKEN}")
        _original_init(self, *args, headers=headers, **kwargs)

    httpx.Client.__init__ = _init_with_caller_token
