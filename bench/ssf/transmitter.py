#!/usr/bin/env python3
"""The bearer-ssf scenario's Shared Signals transmitter: the test suite's stub
(IntegrationTests/support/ssf_transmitter.py: SSF metadata, its JWKS, stream management and
verification, ES256-signed SETs) on 127.0.0.1, and beside it a control listener. Runs until
SIGTERM.

usage: transmitter.py TOKEN_FILE READY_FILE ISS

Writes the management token the stub requires to TOKEN_FILE (the gateway's
`auth.bearer_file`), then `ISSUER_PORT CONTROL_PORT` to READY_FILE once both listen.

`POST /revoke?count=N` on the control port waits (up to 20 s) for the stream the gateway made
to be verified, then pushes N CAEP `session-revoked` events, one per subject `user-0` ..
`user-(N-1)` at ISS (`iss_sub`), each its own SET (its own `jti`), from PARALLEL threads with
a keep-alive connection each. It answers once every push is answered: 200 and
{"pushed": N, "statuses": {"202": N}, "seconds": S}, or 504 with no verified stream."""
import json
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import requests

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "IntegrationTests"))
from support.ssf_transmitter import CAEP, Transmitter  # noqa: E402

PARALLEL = 8

token_file, ready_file, iss = sys.argv[1], sys.argv[2], sys.argv[3]
tx = Transmitter()
with open(token_file, "w") as f:
    f.write(tx.management_token + "\n")
local = threading.local()


def verified_stream(timeout):
    """The stream once its verification event came back 202, or None after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with tx.lock:
            streams = list(tx.streams.values())
        if len(streams) == 1 and 202 in tx.verifications:
            return streams[0]
        time.sleep(0.05)
    return None


def push(stream, i):
    """One session-revoked SET about user-i, on this thread's connection; its status."""
    if not hasattr(local, "session"):
        local.session = requests.Session()
    subject = {"format": "iss_sub", "iss": iss, "sub": f"user-{i}"}
    token = tx.sign(tx.claims(CAEP + "session-revoked", subject))
    r = local.session.post(stream["delivery"]["endpoint_url"], data=token, timeout=10, headers={
        "Content-Type": "application/secevent+jwt",
        "Authorization": stream["delivery"]["authorization_header"]})
    return r.status_code


class Control(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _send(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        url = urlsplit(self.path)
        if url.path != "/revoke":
            return self._send(404, {"error": "not_found"})
        count = int(parse_qs(url.query).get("count", ["1"])[0])
        stream = verified_stream(20)
        if stream is None:
            return self._send(504, {"error": "no verified stream", "streams": len(tx.streams),
                                    "verifications": tx.verifications})
        started = time.monotonic()
        statuses = {}
        with ThreadPoolExecutor(PARALLEL) as pool:
            for status in pool.map(lambda i: push(stream, i), range(count)):
                statuses[str(status)] = statuses.get(str(status), 0) + 1
        self._send(200, {"pushed": count, "statuses": statuses, "seconds": round(time.monotonic() - started, 2)})


control = ThreadingHTTPServer(("127.0.0.1", 0), Control)
threading.Thread(target=control.serve_forever, daemon=True).start()
with open(ready_file + ".tmp", "w") as f:
    f.write(f"{tx.port} {control.server_address[1]}\n")
os.replace(ready_file + ".tmp", ready_file)
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
stop.wait()
control.shutdown()
tx.stop()
