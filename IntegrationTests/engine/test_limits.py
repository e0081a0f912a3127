"""The HTTP engine under load and abuse, on 127.0.0.1 only, each test bounded in time: bodies
stream both ways with backpressure (a 1 GB upload, a slow upstream), 100-continue, 10,000
idle connections, 2,000 slowloris connections, and limits.max_connections. Memory is read
from /proc (VmRSS, VmHWM)."""
import json
import socket
import threading
import time

import pytest
import requests

from support.gateway import Gateway, RawServer
from support.waiting import wait_for


class SinkUpstream(RawServer):
    """Reads each request's Content-Length body and throws it away (optionally slowly),
    then answers with the byte count: an upstream that never holds a body."""

    def __init__(self, delay_per_read=0.0):
        self.delay = delay_per_read
        self.received = 0
        super().__init__()

    def serve(self, conn):
        with conn:
            buf = b""
            while b"\r\n\r\n" not in buf:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buf += chunk
            head, _, rest = buf.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            got = len(rest)
            self.received += got
            while got < length:
                chunk = conn.recv(min(65536, length - got))
                if not chunk:
                    return
                got += len(chunk)
                self.received += len(chunk)
                if self.delay:
                    # A slow upstream is the input: no event to wait for.
                    time.sleep(self.delay)
            body = json.dumps({"received": got}).encode()
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))


def status_kb(gw, field):
    with open(f"/proc/{gw.proc.pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def make_gateway(upstream_port, limits, workers=1):
    g = Gateway(f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: {workers}
access_log: false
limits: {{ {limits} }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream_port}", timeout: 30s }}
routes:
  - name: api
    match: {{ path_prefix: /api/ }}
    upstream: app
    auth: bearer
    issuers: [one]
  - match: {{ path_prefix: / }}
    upstream: app
    auth: none
    request_buffering: false
issuers:
  one: {{ issuer: "https://idp.one", jwks_file: "/dev/null", audiences: [api] }}
""")
    g.start_no_wait()
    return g


def warm_up(g):
    for _ in range(20):
        requests.get(g.url("/warm"), timeout=5)


def post_raw(port, length, chunk=1 << 20, stop=None, counter=None):
    """POSTs `length` zero bytes (Content-Length) and returns the response bytes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(b"POST /upload HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % length)
    block = bytes(chunk)
    sent = 0
    while sent < length and not (stop and stop.is_set()):
        n = min(chunk, length - sent)
        s.sendall(block[:n])
        sent += n
        if counter is not None:
            counter[0] = sent
    resp = b""
    if sent == length:
        while True:
            data = s.recv(65536)
            if not data:
                break
            resp += data
    s.close()
    return resp


def test_a_1gb_upload_streams_through_without_growing_memory():
    up = SinkUpstream()
    g = make_gateway(up.port, "max_body_size: 2GB")
    try:
        warm_up(g)
        base = status_kb(g, "VmRSS")
        t = time.time()
        resp = post_raw(g.port, 1 << 30)
        took = time.time() - t
        assert resp.startswith(b"HTTP/1.1 200 "), resp[:200]
        assert json.loads(resp.split(b"\r\n\r\n", 1)[1])["received"] == 1 << 30
        peak = status_kb(g, "VmHWM")
        growth_mb = (peak - base) / 1024
        print(f"1 GB upload: {took:.1f} s, peak RSS growth {growth_mb:.1f} MB")
        assert growth_mb < 16, f"RSS grew by {growth_mb:.1f} MB"
    finally:
        g.stop()
        up.stop()


def test_a_1gb_download_streams_with_buffering_on_and_memory_bounded(upstream):
    # Proxy buffering on (the default): a client that keeps up is written to as the answer
    # comes; one that falls behind has the rest spooled to disk, never to memory.
    g = make_gateway(upstream.port, "max_body_size: 1MB")
    try:
        warm_up(g)
        base = status_kb(g, "VmRSS")
        t = time.time()
        got = 0
        with requests.get(g.url(f"/big?size={1 << 30}"), stream=True, timeout=60) as r:
            assert r.status_code == 200
            for piece in r.iter_content(1 << 20):
                got += len(piece)
        took = time.time() - t
        growth_mb = (status_kb(g, "VmHWM") - base) / 1024
        print(f"1 GB download: {took:.1f} s, peak RSS growth {growth_mb:.1f} MB")
        assert got == 1 << 30
        assert growth_mb < 32, f"RSS grew by {growth_mb:.1f} MB"
    finally:
        g.stop()


def test_a_slow_upstream_holds_the_client_back():
    up = SinkUpstream(delay_per_read=0.02)
    g = make_gateway(up.port, "max_body_size: 1GB")
    try:
        warm_up(g)
        base = status_kb(g, "VmRSS")
        stop, counter = threading.Event(), [0]
        th = threading.Thread(target=post_raw, args=(g.port, 256 << 20), kwargs={"stop": stop, "counter": counter}, daemon=True)
        th.start()
        # Measured once the slow upstream has read 8 MB (two seconds or more at its pace):
        # a gateway that did not hold the client back would have taken the whole 256 MB by then.
        wait_for(lambda: up.received >= 8 << 20, 60, interval=0.05, what="8 MB at the slow upstream")
        sent, received = counter[0], up.received
        peak = status_kb(g, "VmHWM")
        stop.set()
        # What the client got to send is what the upstream took plus the socket buffers in
        # between — never the whole body into the gateway's memory.
        print(f"slow upstream: client sent {sent >> 20} MB, upstream read {received >> 20} MB, RSS +{(peak - base) >> 10} MB")
        assert sent < 256 << 20
        assert sent - received < 48 << 20
        assert (peak - base) / 1024 < 16
    finally:
        g.stop()
        up.stop()


def read_until(s, marker, timeout=5):
    s.settimeout(timeout)
    buf = b""
    while marker not in buf:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    return buf


def test_100_continue_only_when_the_body_is_wanted(upstream, gateway_factory):
    g = make_gateway(upstream.port, "max_body_size: 1MB")
    try:
        s = socket.create_connection(("127.0.0.1", g.port))
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        assert read_until(s, b"\r\n\r\n").startswith(b"HTTP/1.1 100 Continue\r\n")
        s.sendall(b"hello")
        resp = read_until(s, b"}")
        assert resp.startswith(b"HTTP/1.1 200 ") and b'"body_length": 5' in resp
        s.close()
        # Refused on the head: no 100, the body is never asked for.
        s = socket.create_connection(("127.0.0.1", g.port))
        s.sendall(b"POST /api/x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        resp = read_until(s, b"}")
        assert resp.startswith(b"HTTP/1.1 401 ") and b"100 Continue" not in resp
        s.close()
    finally:
        g.stop()


def test_10000_idle_connections_cost_at_most_40mb(upstream):
    g = make_gateway(upstream.port, "max_connections: 20000, header_timeout: 60s, client_idle_timeout: 60s")
    conns = []
    try:
        warm_up(g)
        base = status_kb(g, "VmRSS")
        for _ in range(10_000):
            conns.append(socket.create_connection(("127.0.0.1", g.port)))
        def held():
            m = requests.get(f"http://127.0.0.1:{g.admin}/metrics", timeout=5).text
            n = int(next(line.split()[1] for line in m.splitlines() if line.startswith("tokengate_client_connections ")))
            return n >= 10_000
        wait_for(held, 20, interval=0.2, what="10,000 connections held")
        growth = (status_kb(g, "VmRSS") - base) / 1024
        print(f"10,000 idle connections: RSS +{growth:.1f} MB")
        assert growth <= 40
        assert requests.get(g.url("/still-serving"), timeout=5).status_code == 200
    finally:
        for c in conns:
            c.close()
        g.stop()


def test_slowloris_connections_are_closed_within_the_header_timeout(upstream):
    g = make_gateway(upstream.port, "header_timeout: 2s, max_connections: 20000", workers=2)
    conns = []
    try:
        for _ in range(2000):
            c = socket.create_connection(("127.0.0.1", g.port))
            c.sendall(b"GET / HTTP/1.1\r\nHost: a\r\nX-Slow: ")
            conns.append(c)
        started = time.time()
        ok = 0
        # Normal requests keep being served while the slow ones wait.
        while time.time() - started < 1.5:
            ok += requests.get(g.url("/echo"), timeout=5).status_code == 200
        assert ok > 0
        closed_408 = 0
        for c in conns:
            c.settimeout(max(0.1, started + 6 - time.time()))
            try:
                data = c.recv(4096)
                closed_408 += data.startswith(b"HTTP/1.1 408 ")
                while data:
                    data = c.recv(4096)
            except socket.timeout:
                pytest.fail("a slowloris connection outlived the header timeout")
        assert closed_408 == 2000
        assert time.time() - started < 6
        assert requests.get(g.url("/echo"), timeout=5).status_code == 200
    finally:
        for c in conns:
            c.close()
        g.stop()


def test_max_connections_holds(upstream):
    g = make_gateway(upstream.port, "max_connections: 50, header_timeout: 60s, client_idle_timeout: 60s")
    idle = []
    try:
        for _ in range(50):
            c = socket.create_connection(("127.0.0.1", g.port))
            # In the middle of a head, so not idle: idle ones would be reclaimed for the
            # extra client (test_connection_reclaim.py).
            c.sendall(b"GET /echo HTTP/1.1\r\n")
            idle.append(c)
        metrics_url = f"http://127.0.0.1:{g.admin}/metrics"
        wait_for(lambda: "tokengate_client_connections 50" in requests.get(metrics_url, timeout=5).text,
                 what="the 50 connections held")
        extra = socket.create_connection(("127.0.0.1", g.port))  # the kernel's backlog takes it
        extra.sendall(b"GET /echo HTTP/1.1\r\nHost: a\r\n\r\n")
        extra.settimeout(1)
        with pytest.raises(socket.timeout):
            extra.recv(100)
        metrics = requests.get(metrics_url, timeout=5).text
        assert "tokengate_client_connections 50" in metrics
        assert "tokengate_accept_pauses_total 0" not in metrics
        for c in idle[:10]:
            c.close()
        extra.settimeout(5)
        assert read_until(extra, b"}").startswith(b"HTTP/1.1 200 ")
        extra.close()
    finally:
        for c in idle:
            c.close()
        g.stop()
