"""The gateway under test and the small helpers most test files share: a tokengate process
with its config in a temp dir (`Gateway`), the plain config in front of one upstream
(`basic_config`), raw requests, a JSON server, a raw TCP server. Imported as
`from support.gateway import ...` (the conftest.py files hold only fixtures: with a conftest
in each subject folder, `conftest` is no longer one module a test can import)."""
import http.server
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import requests

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from echo_upstream import Upstream  # noqa: E402,F401
# One source of ports for the gateways, the AS and every other server the tests start.
from support.authserver.server import free_port  # noqa: E402,F401
from support.waiting import wait_for  # noqa: E402

BIN = os.environ.get("TOKENGATE_BIN", os.path.join(ROOT, ".build", "debug", "tokengate"))


class Gateway:
    """One tokengate process with a config written to a temp dir."""

    def __init__(self, config_text, workers=2, env=None):
        self.env = env
        self.dir = tempfile.mkdtemp(prefix="tg-it-")
        self.port = free_port()
        self.admin = free_port()
        self.config_path = os.path.join(self.dir, "tokengate.yaml")
        self.write_config(config_text)
        self.log_path = os.path.join(self.dir, "out.log")
        self.proc = None
        self.workers = workers
        # "https" for a gateway whose admin listener has TLS (its readiness is asked so).
        self.admin_scheme = "http"

    def render(self, text):
        return text.replace("{PORT}", str(self.port)).replace("{ADMIN}", str(self.admin))

    def write_config(self, text):
        with open(self.config_path, "w") as f:
            f.write(self.render(text))

    def start(self, path="/readyz"):
        self.spawn()
        return self.wait_ready(path)

    def spawn(self):
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([BIN, "serve", "--config", self.config_path],
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     env={**os.environ, **self.env} if self.env else None)

    def wait_ready(self, path):
        """Returns once the admin listener answers `path` with 200; a gateway that exits or
        is not ready within 10 s is an error (and is stopped: it must not outlive its test)."""
        context = ssl._create_unverified_context() if self.admin_scheme == "https" else None

        def ready():
            if self.proc.poll() is not None:
                raise RuntimeError("tokengate exited: " + self.output())
            try:
                with urllib.request.urlopen(f"{self.admin_scheme}://127.0.0.1:{self.admin}{path}", timeout=1,
                                            context=context) as r:
                    return r.status == 200
            except OSError:
                return False
        try:
            wait_for(ready, timeout=10, interval=0.05, what="readiness")
        except AssertionError:
            output = self.output()
            self.stop()
            raise RuntimeError("tokengate did not become ready: " + output) from None
        return self

    def start_no_wait(self):
        """Starts and waits only for liveness (/healthz), not readiness."""
        return self.start("/healthz")

    def output(self, settle=0.05):
        """The process's output so far. Log lines reach the file from the log sink's writer
        thread a moment after the response they describe, so this first waits until the file
        has not grown for `settle` seconds (at most half a second in all)."""
        deadline, size = time.time() + 0.5, -1
        while settle and time.time() < deadline:
            now = os.path.getsize(self.log_path)
            if now == size:
                break
            size = now
            # The log sink's writer thread says nothing when it has written: a file that has
            # stopped growing is the only sign.
            time.sleep(settle)
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def logged(self, text, timeout=5.0):
        """Waits until `text` is in the output (the writer thread may write it a moment after
        the response); True, else an AssertionError that quotes the output's end."""
        return wait_for(lambda: text in self.output(settle=0), timeout,
                        what=lambda: f"{text!r} in the log; output ends: {self.output()[-2000:]}")

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def rss_kb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.log.close()


def basic_config(upstream_port, extra="", timeout="2s", connect_timeout="1s", body="4MB", workers=2):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: {workers}
limits: {{ max_body_size: {body}, shutdown_grace: 5s }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream_port}", timeout: {timeout}, connect_timeout: {connect_timeout} }}
{extra}
routes:
  - match: {{ path_prefix: / }}
    upstream: app
    auth: none
"""


def raw_request(port, data, timeout=5):
    """Sends bytes as they are (no client-side normalization) and returns the status code
    and the whole response."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        chunks = []
        while True:
            try:
                b = s.recv(65536)
            except socket.timeout:
                break
            if not b:
                break
            chunks.append(b)
            # A request that asked for close is read to the end (interim 1xx heads come
            # first); otherwise the first whole response is enough.
            if b"Connection: close" not in data and b"\r\n\r\n" in b"".join(chunks) and b"Connection: close" not in b"".join(chunks):
                head, _, rest = b"".join(chunks).partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                if len(rest) >= length:
                    break
        resp = b"".join(chunks)
    status = int(resp.split(b" ", 2)[1]) if resp.startswith(b"HTTP/") else 0
    return status, resp


class JSONServer:
    """A real HTTP server on 127.0.0.1 answering every GET with `body()` as JSON; counts
    requests; answers 503 while `down` is set (an identity provider's JWKS, for example)."""

    def __init__(self, body):
        self.body = body
        self.hits = 0
        self.down = False
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.hits += 1
                data = b"" if outer.down else json.dumps(outer.body()).encode()
                self.send_response(503 if outer.down else 200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        # Non-blocking listener: a connection reset between select() and accept() must not
        # leave serve_forever (and stop()'s shutdown()) waiting in accept().
        self.srv.socket.setblocking(False)
        self.url = f"http://127.0.0.1:{self.srv.server_address[1]}/jwks"
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()


def bearer_get(gw, tok=None, path="/api/orders/1", headers=None):
    """GET through the gateway, with `Authorization: Bearer tok` when tok is given."""
    h = dict(headers or {})
    if tok is not None:
        h["Authorization"] = f"Bearer {tok}"
    return requests.get(gw.url(path), headers=h, timeout=10)


def sent_headers(r):
    """The request headers the echo upstream received, names lowercased. A reply that is not
    the echo's fails with what it was, so a wrong server or a mixed-up reply can be told
    apart from a missing header."""
    body = r.json()
    assert isinstance(body, dict) and "headers" in body, \
        f"not the echo upstream's reply: {r.status_code} {dict(r.headers)} {r.text[:400]!r}"
    return {k.lower(): v for k, v in body["headers"]}


class RawServer:
    """A TCP server on 127.0.0.1 handing each accepted connection to `serve(conn)` on a
    thread of its own: the base of the test upstreams that speak raw bytes."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn):
        raise NotImplementedError

    def stop(self):
        self.sock.close()


def echo_headers(resp):
    """The request headers the echo upstream saw, from a raw HTTP response (lower-case names)."""
    body = json.loads(resp.split(b"\r\n\r\n", 1)[1])
    return {k.lower(): v for k, v in body["headers"]}
