"""A loopback OpenID Connect issuer for the TCK run: one Ed25519 key, its JWKS served over HTTP.

Usage: tck_issuer.py DIR

Writes DIR/issuer-key.pem (the private key, for the pytest plugin tck_caller.py to sign each
test's token with) and serves `/jwks.json` on 127.0.0.1 at a free port, which it writes to
DIR/issuer-port once it listens. scripts/tck points `[server.oidc] jwks_url` at it, so every
test of the kit can call as a caller of its own (see tck_caller.py). Runs until killed.
"""

import base64
import http.server
import json
import sys
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

KEY_ID = "tck-issuer"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def main(directory: Path) -> None:
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    (directory / "issuer-key.pem").write_bytes(pem)
    public = key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    jwks = json.dumps(
        {
            "keys": [
                {
                    "kty": "OKP",
                    "crv": "Ed25519",
                    "x": b64url(public),
                    "kid": KEY_ID,
                    "alg": "EdDSA",
                    "use": "sig",
                }
            ]
        }
    ).encode()

    class Jwks(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/jwks.json":
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(jwks)))
            self.end_headers()
            self.wfile.write(jwks)

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Jwks)
    (directory / "issuer-port").write_text(str(server.server_address[1]))
    server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
