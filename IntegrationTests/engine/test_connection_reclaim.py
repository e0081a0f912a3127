"""limits.max_connections against sockets that say nothing: at the cap the gateway closes
its oldest idle connections (no byte of a request head yet, or keep-alive between requests)
and serves the new client at once, as nginx does when its worker_connections run out
("worker_connections are not enough, reusing connections"). A connection in the middle of a
request head or waiting for its upstream is never closed for it. Real tokengate process,
real upstream, 127.0.0.1 only; header and idle timeouts are a minute, so nothing here is
freed by a timeout."""
import socket
import time

import requests

from support.gateway import Gateway
from support.waiting import wait_for

WARNING = "limits.max_connections reached"


def make_gateway(upstream_port, max_connections, workers=1):
    g = Gateway(f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: {workers}
access_log: false
limits: {{ max_connections: {max_connections}, header_timeout: 60s, client_idle_timeout: 60s }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream_port}", timeout: 30s }}
routes:
  - match: {{ path_prefix: / }}
    upstream: app
    auth: none
""", workers=workers)
    g.start_no_wait()
    return g


def metric(g, name):
    text = requests.get(f"http://127.0.0.1:{g.admin}/metrics", timeout=5).text
    for line in text.splitlines():
        if line.startswith(name + " "):
            return int(float(line.split()[1]))
    raise AssertionError(f"{name} not in /metrics")


def wait_for_metric(g, name, value, limit=10):
    wait_for(lambda: metric(g, name) == value, limit, what=f"{name} {value}")


def connect(g):
    return socket.create_connection(("127.0.0.1", g.port), timeout=5)


def accepted(g, count):
    """A silent socket, once the gateway holds it (the accept order is the idle order)."""
    s = connect(g)
    wait_for_metric(g, "tokengate_client_connections", count)
    return s


def get(s, path="/echo"):
    """One keep-alive GET on `s`; returns the status and the seconds it took."""
    started = time.time()
    s.sendall(b"GET %s HTTP/1.1\r\nHost: a\r\n\r\n" % path.encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        assert chunk, "closed before an answer"
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
    while len(rest) < length:
        rest += s.recv(65536)
    return int(head.split(b" ")[1]), time.time() - started


def closed_by_gateway(s, wait=2.0):
    s.settimeout(wait)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def still_open(s):
    return not closed_by_gateway(s, wait=0.1)


def test_silent_sockets_at_the_cap_do_not_keep_a_new_client_waiting(upstream):
    g = make_gateway(upstream.port, max_connections=20)
    silent = []
    fresh = []
    try:
        silent = [accepted(g, n) for n in range(1, 21)]
        for i in range(5):
            s = connect(g)
            fresh.append(s)
            status, seconds = get(s)
            assert status == 200 and seconds < 1, (status, seconds)
            # The oldest silent one went; every younger one stays.
            assert closed_by_gateway(silent[i])
            assert all(still_open(x) for x in silent[i + 1:i + 3])
        assert all(still_open(x) for x in silent[5:])
        assert metric(g, "tokengate_connections_reclaimed_total") == 5
        assert metric(g, "tokengate_client_connections") == 20
        assert metric(g, "tokengate_accept_pauses_total") == 0
        # Five reclaims within the minute: one warning.
        assert g.output().count(WARNING) == 1, g.output()
    finally:
        for s in silent + fresh:
            s.close()
        g.stop()


def test_a_half_sent_head_and_a_request_on_a_slow_upstream_are_never_reclaimed(upstream):
    g = make_gateway(upstream.port, max_connections=6)
    socks = []
    try:
        half = accepted(g, 1)
        half.sendall(b"GET /echo HTTP/1.1\r\nHost: a\r\nX-Slow: ")
        slow = accepted(g, 2)
        slow.sendall(b"GET /slow?delay=3 HTTP/1.1\r\nHost: a\r\n\r\n")
        silent = [accepted(g, n) for n in range(3, 7)]
        socks = [half, slow] + silent
        # Four newcomers take the four silent ones' places, oldest first; the two busy
        # connections, older than all of them, stay.
        for i in range(4):
            s = connect(g)
            socks.append(s)
            status, seconds = get(s)
            assert status == 200 and seconds < 1
            assert closed_by_gateway(silent[i])
        # Now only the newcomers are idle (keep-alive between requests): the next one
        # replaces the first of them, not a busy connection.
        s = connect(g)
        socks.append(s)
        assert get(s)[0] == 200
        assert closed_by_gateway(socks[6])
        assert still_open(half)
        assert metric(g, "tokengate_connections_reclaimed_total") == 5
        # The slow request is answered in full, and the half-sent head can still finish.
        slow.settimeout(5)
        buf = b""
        while b"slow" not in buf:
            chunk = slow.recv(65536)
            assert chunk, "the slow request's connection was closed"
            buf += chunk
        assert buf.startswith(b"HTTP/1.1 200 ")
        half.sendall(b"x\r\n\r\n")
        assert get_rest(half).startswith(b"HTTP/1.1 200 ")
        assert metric(g, "tokengate_connections_reclaimed_total") == 5
    finally:
        for s in socks:
            s.close()
        g.stop()


def get_rest(s):
    s.settimeout(5)
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    return buf


def test_with_two_workers_the_cap_is_per_process(upstream):
    """The cap is one count for the process: 40 silent sockets against max_connections 16 on
    two workers hold at most 16, whichever worker the kernel gave each to."""
    g = make_gateway(upstream.port, max_connections=16, workers=2)
    socks = []
    try:
        for _ in range(40):
            socks.append(connect(g))
            assert metric(g, "tokengate_client_connections") <= 16
        wait_for_metric(g, "tokengate_connections_reclaimed_total", 24)
        assert metric(g, "tokengate_client_connections") == 16
        s = connect(g)
        socks.append(s)
        status, seconds = get(s)
        assert status == 200 and seconds < 1
        assert metric(g, "tokengate_client_connections") == 16
    finally:
        for s in socks:
            s.close()
        g.stop()
