"""Plain client sockets are watched by edge (EPOLLET): a readiness event comes once, when
bytes arrive. A peer's last bytes and its end (FIN, or a reset) often arrive together, in
one event; these tests send them so, from both sides, and check that the gateway reads to
the end and sees the end without a second event. Missing either shows as a wait for a
timeout, which is set far above what the tests allow."""
import json
import socket
import struct
import time

import pytest

from support.gateway import RawServer

CONFIG = """
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 1
limits: {{ client_idle_timeout: 60s, shutdown_grace: 5s, max_body_size: 16MB }}
upstreams:
  app: {{ url: "http://127.0.0.1:{port}", timeout: 60s, connect_timeout: 2s }}
routes:
  - match: {{ path_prefix: / }}
    upstream: app
    auth: none
"""


class CloseDelimitedUpstream(RawServer):
    """Answers each connection's request with a body that ends where the connection does
    (no Content-Length, no chunking: RFC 9112 §6.3 rule 8), written in one send followed at
    once by the FIN."""

    def __init__(self, size, reset=False):
        self.body = bytes((i * 7) % 251 for i in range(size))
        self.reset = reset
        super().__init__()

    def serve(self, conn):
        with conn:
            conn.settimeout(10)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n" + self.body)
            if self.reset:
                # SO_LINGER 0: the close sends a reset (RST) instead of a FIN.
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                return
            conn.shutdown(socket.SHUT_WR)


def dechunk(body):
    """The gateway passes a close-delimited body on to an HTTP/1.1 client chunked."""
    out = b""
    while True:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return out
        out += body[:size]
        body = body[size + 2:]


def read_to_end(s, deadline, enough=lambda got: False):
    """Reads until the gateway closes (True) or the deadline passes or `enough` says so
    (False)."""
    chunks = []
    while time.monotonic() < deadline and not enough(b"".join(chunks)):
        s.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            b = s.recv(1 << 20)
        except socket.timeout:
            break
        if not b:
            return b"".join(chunks), True
        chunks.append(b)
    return b"".join(chunks), False


def get_file_twenty_times(upstream, gateway_factory):
    """GET /file through a gateway in front of `upstream`, twenty times (the end comes in the
    same readiness event as the last bytes in most); yields each answer, read to its end
    within 5 s, else the test fails (the gateway waits for a timeout)."""
    g = gateway_factory(CONFIG.format(port=upstream.port))
    try:
        for _ in range(20):
            started = time.monotonic()
            with socket.create_connection(("127.0.0.1", g.port)) as s:
                s.sendall(b"GET /file HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
                resp, ended = read_to_end(s, started + 5)
            assert ended, "the gateway did not end the response within 5 s (it waits for a timeout)"
            yield resp
    finally:
        upstream.stop()


@pytest.mark.parametrize("size", [100, 5000, 1 << 20])
def test_a_body_that_ends_with_the_upstreams_fin_arrives_whole_at_once(gateway_factory, size):
    up = CloseDelimitedUpstream(size)
    for resp in get_file_twenty_times(up, gateway_factory):
        head, _, body = resp.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head
        assert b"Transfer-Encoding: chunked" in head
        assert dechunk(body) == up.body


def test_a_body_that_ends_with_the_upstreams_reset_ends_at_once(gateway_factory):
    # libevent reports a reset as EPOLLERR, without EV_CLOSED: an edge-triggered upstream
    # socket would not see it until the response timeout (60 s here), so upstream sockets
    # stay level-triggered. The body ends where the connection does; the reset cuts it, so
    # the client's chunked answer is cut too, at once.
    for resp in get_file_twenty_times(CloseDelimitedUpstream(100, reset=True), gateway_factory):
        assert resp.startswith(b"HTTP/1.1 200") or resp.startswith(b"HTTP/1.1 502"), resp[:100]


def test_a_request_sent_with_the_clients_fin_is_answered_and_the_connection_closed(upstream, gateway_factory):
    g = gateway_factory(CONFIG.format(port=upstream.port))
    for _ in range(20):
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", g.port)) as s:
            # The request and the FIN in one go: a client that half-closes after its last request.
            s.sendall(b"GET /echo HTTP/1.1\r\nHost: a\r\n\r\n")
            s.shutdown(socket.SHUT_WR)
            resp, ended = read_to_end(s, started + 5)
        # The gateway saw the end: it closes well before its 60 s idle timeout. A client that
        # half-closes is gone (HTTP1ConnectionHandler.connectionPeerClosed): depending on when
        # the FIN is read, it gets the answer, part of it or nothing, never a wrong one.
        assert ended, "the gateway kept a half-closed connection open"
        assert resp == b"" or resp.startswith(b"HTTP/1.1 200"), resp[:200]


def test_a_request_body_sent_in_one_go_is_read_to_its_end(upstream, gateway_factory):
    # 8 MiB in one send: the gateway's reads take a piece each, and after the first no new
    # readiness event comes while the socket still holds the rest.
    g = gateway_factory(CONFIG.format(port=upstream.port))
    size = 8 << 20
    for _ in range(3):
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", g.port)) as s:
            s.sendall(b"POST /echo HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % size
                      + b"b" * size)
            resp, ended = read_to_end(s, started + 10)
        assert ended
        head, _, body = resp.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head
        assert json.loads(body)["body_length"] == size


def test_a_keep_alive_client_that_sends_many_requests_at_once_gets_every_answer(upstream, gateway_factory):
    # 200 pipelined requests in one send: more than one read takes, so the reads after the
    # first are the gateway's own (no new readiness event comes for bytes already there).
    g = gateway_factory(CONFIG.format(port=upstream.port))
    n = 200
    with socket.create_connection(("127.0.0.1", g.port)) as s:
        s.sendall(b"".join(b"GET /echo/%d HTTP/1.1\r\nHost: a\r\nX-Pad: %s\r\n\r\n" % (i, b"p" * 400) for i in range(n)))
        # Read until the last answer's body is in: its head alone can come a read earlier.
        last = b"/echo/%d" % (n - 1)
        got, _ = read_to_end(s, time.monotonic() + 10, lambda got: last in got)
    assert got.count(b"HTTP/1.1 200 OK") == n
    assert last in got
