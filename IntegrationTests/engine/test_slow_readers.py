"""Slow readers cannot hold the app: with proxy buffering (the default) the upstream's answer
is read at the upstream's pace and what the client has not taken goes to a temp file, so an
app that serves a few requests at a time keeps serving while slow clients read. Streams (an
event stream, `X-Accel-Buffering: no`, a route with `buffering: false`) are never buffered,
and past the disk cap the upstream is paused as before."""
import hashlib
import http.server
import socket
import subprocess
import threading
import time

import requests

from support.gateway import BIN, basic_config
from support.pacing import paced
from support.waiting import wait_for, wait_until_still
from test_access_log import metric

SPOOLS = "tokengate_spools_total"


class CappedApp:
    """An HTTP/1.1 app that serves at most `cap` requests at a time, as a worker pool does.
    /big?n=N writes N bytes (a repeating pattern) and records when its last write returned;
    /sse writes three events 0.3 s apart; /accel is /big marked X-Accel-Buffering: no.
    `written` counts the body bytes whose write returned, `answering` the answers under way."""

    def __init__(self, cap):
        self.slots = threading.BoundedSemaphore(cap)
        self.finished = []
        self.written = 0
        self.answering = 0
        self.lock = threading.Lock()
        app = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                with app.slots:
                    if self.path.startswith("/sse"):
                        return self.events()
                    n = int(self.path.split("n=")[1]) if "n=" in self.path else 5
                    self.send_response(200)
                    self.send_header("Content-Length", str(n))
                    self.send_header("Content-Type", "application/octet-stream")
                    if self.path.startswith("/accel"):
                        self.send_header("X-Accel-Buffering", "no")
                    self.end_headers()
                    piece = bytes(range(256)) * 256
                    sent = 0
                    with app.lock:
                        app.answering += 1
                    try:
                        while sent < n:
                            part = piece[: min(len(piece), n - sent)]
                            self.wfile.write(part)
                            sent += len(part)
                            with app.lock:
                                app.written += len(part)
                        app.finished.append(time.time())
                    except OSError:
                        pass
                    finally:
                        with app.lock:
                            app.answering -= 1

            def events(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for i in paced(range(3), 0.3):
                    data = f"data: event {i}\n\n".encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

            def log_message(self, *a):
                pass

        class Server(http.server.ThreadingHTTPServer):
            request_queue_size = 128  # the default 5 would refuse a burst of connections

        self.server = Server(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def pattern_sha(n):
    piece = bytes(range(256)) * 256
    h = hashlib.sha256()
    while n > 0:
        h.update(piece[: min(n, len(piece))])
        n -= len(piece)
    return h.hexdigest()


def slow_reader(port, path):
    """A client that sends its request and then reads nothing (a small receive buffer, so the
    kernel does not read for it)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    s.connect(("127.0.0.1", port))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    return s


def read_all(s, n, timeout=60):
    """Reads the rest: the head, then the body, whose SHA-256 is returned."""
    s.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(65536)
    head, body = data.split(b"\r\n\r\n", 1)
    h = hashlib.sha256(body)
    got = len(body)
    while got < n:
        b = s.recv(1 << 20)
        assert b, "the connection closed early"
        h.update(b)
        got += len(b)
    return head.split(b"\r\n")[0], h.hexdigest()


def gateway_for(app, gateway_factory, limits="", route=""):
    cfg = basic_config(app.port, timeout="60s").replace(
        "limits: { max_body_size: 4MB, shutdown_grace: 5s }",
        f"limits: {{ max_body_size: 4MB, shutdown_grace: 5s{limits} }}").replace(
        "    auth: none\n", f"    auth: none\n{route}")
    return gateway_factory(cfg, workers=1)


def held_back(app, answers):
    """Waits until the app is answering `answers` requests and its writes have stopped: each is
    blocked on a full connection, held back by the gateway."""
    def written():
        with app.lock:
            return app.written if app.answering == answers else 0
    wait_until_still(written, what=f"the app's writes to {answers} answers to stop")


def probe(port, seconds):
    try:
        return requests.get(f"http://127.0.0.1:{port}/small", timeout=seconds).status_code
    except requests.exceptions.RequestException:
        return None


SIZE = 16 << 20


def test_slow_readers_do_not_hold_the_app(gateway_factory, tmp_path):
    app = CappedApp(cap=3)
    try:
        g = gateway_for(app, gateway_factory, limits=f", spool_dir: {tmp_path}")
        readers = [slow_reader(g.port, f"/big?n={SIZE}") for _ in range(6)]
        # Every answer is read from the app at its pace and spooled: the app finishes all six.
        wait_for(lambda: len(app.finished) >= 6, 30, interval=0.1, what="the app to finish six answers")
        assert len(app.finished) == 6
        assert probe(g.port, 2) == 200
        assert metric(g, SPOOLS)[SPOOLS] == 6
        assert metric(g, "tokengate_spool_bytes")["tokengate_spool_bytes"] > 6 * (SIZE // 2)
        # The slow readers get their whole answers, byte for byte.
        for s in readers:
            status, digest = read_all(s, SIZE)
            assert status == b"HTTP/1.1 200 OK" and digest == pattern_sha(SIZE)
            s.close()
        assert metric(g, "tokengate_spool_bytes")["tokengate_spool_bytes"] == 0
    finally:
        app.stop()


def test_without_buffering_slow_readers_hold_the_app(gateway_factory):
    # The same attack on a route with buffering: false: the app's three slots stay held.
    app = CappedApp(cap=3)
    try:
        g = gateway_for(app, gateway_factory, route="    buffering: false\n")
        readers = [slow_reader(g.port, f"/big?n={SIZE}") for _ in range(3)]
        held_back(app, 3)
        assert app.finished == []
        assert probe(g.port, 2) is None
        assert metric(g, SPOOLS)[SPOOLS] == 0
        for s in readers:
            s.close()
    finally:
        app.stop()


def test_streams_are_never_spooled(gateway_factory, tmp_path):
    app = CappedApp(cap=8)
    try:
        g = gateway_for(app, gateway_factory, limits=f", spool_dir: {tmp_path}")
        # X-Accel-Buffering: no — back-pressure, as without a spool.
        s = slow_reader(g.port, f"/accel?n={SIZE}")
        held_back(app, 1)
        assert app.finished == []
        s.close()
        # An event stream: each event reaches the client as it is sent.
        started = time.time()
        with requests.get(f"http://127.0.0.1:{g.port}/sse", stream=True, timeout=10) as r:
            arrivals = []
            for line in r.iter_lines():
                if line.startswith(b"data:"):
                    arrivals.append(time.time() - started)
        assert len(arrivals) == 3 and arrivals[0] < 0.25 and arrivals[2] > 0.5
        assert metric(g, SPOOLS)[SPOOLS] == 0
    finally:
        app.stop()


def test_past_the_disk_cap_the_upstream_is_paused_and_the_answer_stays_whole(gateway_factory, tmp_path):
    app = CappedApp(cap=4)
    try:
        g = gateway_for(app, gateway_factory, limits=f", spool_dir: {tmp_path}, response_spool_max: 1MB")
        s = slow_reader(g.port, f"/big?n={SIZE}")
        held_back(app, 1)
        assert app.finished == []  # paused at the cap, not read to the end
        assert metric(g, SPOOLS)[SPOOLS] == 1
        status, digest = read_all(s, SIZE)
        assert status == b"HTTP/1.1 200 OK" and digest == pattern_sha(SIZE)
        s.close()
    finally:
        app.stop()


def test_memory_per_slow_connection_stays_bounded(gateway_factory, tmp_path):
    app = CappedApp(cap=64)
    try:
        g = gateway_for(app, gateway_factory, limits=f", spool_dir: {tmp_path}")
        before = g.rss_kb()
        readers = [slow_reader(g.port, f"/big?n={4 << 20}") for _ in range(40)]
        wait_for(lambda: len(app.finished) >= 40, 30, interval=0.1, what="the app to finish 40 answers")
        assert len(app.finished) == 40
        grown = g.rss_kb() - before
        # 160 MB of answers wait for their clients; the gateway's memory grows by far less
        # (about the 64 KB response buffer and a socket's worth per connection).
        print(f"RSS grew by {grown} KB for 40 slow readers")
        assert grown < 40 * 1024, f"RSS grew by {grown} KB"
        for s in readers:
            s.close()
    finally:
        app.stop()


def test_spool_settings_are_checked(tmp_path):
    app_port = 9
    cases = [
        (", spool_dir: /nonexistent/dir", "limits.spool_dir: /nonexistent/dir is not a directory"),
        (", response_buffer: 1KB", "limits.response_buffer: must be from 4KB to 16MB"),
        (", response_spool_max: lots", "limits.response_spool_max"),
        (", request_buffer: 32MB", "limits.request_buffer: must be from 4KB to 16MB"),
        (", spool_total: -1", "limits.spool_total"),
        (", request_spool_total: lots", "limits.request_spool_total"),
    ]
    for limits, expected in cases:
        cfg = tmp_path / "c.yaml"
        cfg.write_text(basic_config(app_port).replace("shutdown_grace: 5s", f"shutdown_grace: 5s{limits}")
                       .replace("{PORT}", "8080").replace("{ADMIN}", "9901"))
        r = subprocess.run([BIN, "check-config", str(cfg)], capture_output=True, text=True)
        assert r.returncode == 1 and expected in r.stdout, r.stdout
