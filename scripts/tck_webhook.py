"""A pytest plugin that serves the A2A TCK's webhook receiver where tiny-harness may reach it.

The kit's receiver (`tck.webhook.server.WebhookReceiver`) listens on every interface at a port
the system picks. The harness POSTs only to webhooks `[push] allowed_hosts` lists, a loopback
one only by address and port (there is no port wildcard). scripts/tck picks a free loopback port,
lists `127.0.0.1:PORT`, passes `--webhook-host 127.0.0.1` and loads this plugin
(`-p tck_webhook`), which makes the receiver listen on 127.0.0.1 at TCK_WEBHOOK_PORT: on
loopback only, and where the allow-list says. Without TCK_WEBHOOK_PORT it does nothing.
"""

import os

_PORT = os.environ.get("TCK_WEBHOOK_PORT", "")

if _PORT:
    from tck.webhook import server

    class _LoopbackServer(server.HTTPServer):
        def __init__(self, _address, handler, *args, **kwargs):
            super().__init__(("127.0.0.1", int(_PORT)), handler, *args, **kwargs)

    server.HTTPServer = _LoopbackServer
