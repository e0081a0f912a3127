"""The WebSocket opening handshake, from the attacker's side (RFC 6455 §4): a tunnel opens
only on a 101 that answers the client's key, so an upstream that answers 101 without
switching (a status-echoing endpoint, a framework's catch-all) cannot turn a route into a
raw pipe past the gateway's checks ("WebSocket smuggling"); an upgrade request that is not
a handshake never reaches the upstream; an unmasked client frame ends the tunnel."""
import json
import socket
import threading

import pytest

from support.gateway import RawServer
from support.waiting import wait_for
from test_bearer import token
from test_websocket import (accept_for, client_frame, handshake, idp, read_frame, read_head,  # noqa: F401
                            ws_config, ws_upstream)

SMUGGLED = b"GET /admin/secret HTTP/1.1\r\nHost: a\r\nX-User-Id: admin\r\nX-Forwarded-For: 10.0.0.1\r\n\r\n"


class LyingUpstream(RawServer):
    """Answers every request with a 101 of the test's choosing (`answer(request_head)` gives
    the bytes), then keeps reading: `received` holds every byte it got, per connection, and
    `closed` counts the connections that have ended."""

    def __init__(self, answer):
        self.answer = answer
        self.received = []
        self.closed = 0
        self.lock = threading.Lock()
        super().__init__()

    def serve(self, conn):
        got = bytearray()
        with self.lock:
            self.received.append(got)
        with conn:
            conn.settimeout(5)
            try:
                while b"\r\n\r\n" not in got:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    got += chunk
                conn.sendall(self.answer(bytes(got)))
                while chunk := conn.recv(65536):
                    got += chunk
            except OSError:
                pass
            finally:
                with self.lock:
                    self.closed += 1

    def everything(self):
        with self.lock:
            return b"".join(bytes(r) for r in self.received)

    def ended(self):
        """Everything, once every connection has ended (the gateway closed it, or the 5 s
        read timeout ran out): no byte can be added to it after that."""
        wait_for(lambda: self.closed == len(self.received), 10, what="the upstream's connections to end")
        return self.everything()


def switching(upgrade=b"websocket", connection=b"Upgrade", accept=True):
    def answer(request):
        head = b"HTTP/1.1 101 Switching Protocols\r\n"
        if upgrade:
            head += b"Upgrade: " + upgrade + b"\r\n"
        if connection:
            head += b"Connection: " + connection + b"\r\n"
        if accept is True:
            head += b"Sec-WebSocket-Accept: " + accept_for(request) + b"\r\n"
        elif accept:
            head += b"Sec-WebSocket-Accept: " + accept + b"\r\n"
        return head + b"\r\n"
    return answer


def read_all(sock):
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except OSError:
        pass
    return data


FAKE_101S = [
    ("no-accept", switching(accept=False)),
    ("wrong-accept", switching(accept=b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")),
    ("no-upgrade-field", switching(upgrade=None)),
    ("upgrade-h2c", switching(upgrade=b"h2c")),
    ("no-connection-upgrade", switching(connection=b"keep-alive")),
]


@pytest.mark.parametrize("route", ["public", "bearer"])
@pytest.mark.parametrize("name,answer", FAKE_101S, ids=[c[0] for c in FAKE_101S])
def test_a_101_that_does_not_answer_the_key_opens_no_tunnel(gateway_factory, idp, route, name, answer):
    up = LyingUpstream(answer)
    try:
        gw = gateway_factory(ws_config(up.port, idp.url))
        extra = b""
        path = "/chat"
        if route == "bearer":
            # A caller whose token this route accepts: it may upgrade, not get a raw pipe.
            extra = b"Authorization: Bearer " + token(idp.keys[0]).encode() + b"\r\n"
            path = "/bearer/chat"
        with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as s:
            s.sendall(handshake(path=path, extra=extra) + SMUGGLED)
            answer_bytes = read_all(s)
        assert answer_bytes.startswith(b"HTTP/1.1 502 "), answer_bytes[:200]
        assert b"did not complete the WebSocket handshake" in answer_bytes
        # One answer, then the connection closed: the smuggled request got none.
        assert answer_bytes.count(b"HTTP/1.1 ") == 1
        seen = up.ended()
        assert seen.count(b"GET ") == 1 and b"/admin/secret" not in seen and b"X-User-Id" not in seen
        assert len(up.received) == 1
    finally:
        up.stop()


def key_of(head):
    return next(l.split(b":", 1)[1].strip() for l in head.split(b"\r\n") if l.lower().startswith(b"sec-websocket-key:"))


def test_a_true_101_still_opens_the_tunnel(gateway_factory, idp):
    up = LyingUpstream(lambda req: switching()(req) + bytes([0x81, 2]) + b"hi")
    try:
        gw = gateway_factory(ws_config(up.port, idp.url))
        request = handshake(extra=b"Sec-WebSocket-Accept: forged\r\n")
        with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as s:
            s.sendall(request)
            head, rest = read_head(s)
            assert head.startswith(b"HTTP/1.1 101 ")
            assert read_frame(s, rest)[:2] == (0x1, b"hi")
        # The upstream was asked with a key of the gateway's own, and the client heard the
        # answer to its key; a client's Sec-WebSocket-Accept never went up.
        upstream_request = up.everything().split(b"\r\n\r\n")[0]
        assert key_of(upstream_request) != key_of(request)
        assert upstream_request.lower().count(b"sec-websocket-key:") == 1
        assert b"sec-websocket-accept" not in upstream_request.lower() and b"forged" not in upstream_request
        answer = [l for l in head.split(b"\r\n") if l.lower().startswith(b"sec-websocket-accept:")]
        assert answer == [b"Sec-WebSocket-Accept: " + accept_for(request)]
    finally:
        up.stop()


def test_an_upstream_that_echoes_the_clients_accept_opens_no_tunnel(gateway_factory):
    # The client chooses its key, so it knows the accept for it (RFC 6455 §1.3's example
    # here). An upstream that reflects caller-chosen headers could answer with it; only an
    # answer to the key the gateway sent opens a tunnel.
    up = LyingUpstream(switching(accept=b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo="))
    try:
        gw = gateway_factory(ws_config(up.port))
        request = handshake()
        request = request.replace(key_of(request), b"dGhlIHNhbXBsZSBub25jZQ==")
        with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as s:
            s.sendall(request + SMUGGLED)
            answer_bytes = read_all(s)
        assert answer_bytes.startswith(b"HTTP/1.1 502 "), answer_bytes[:200]
        assert b"/admin/secret" not in up.everything()
    finally:
        up.stop()


BAD_HANDSHAKES = [
    ("no-key", lambda h: h.replace(b"Sec-WebSocket-Key:", b"X-Not-Key:"), 400, b"Sec-WebSocket-Key"),
    ("short-key", lambda h: h.split(b"Sec-WebSocket-Key: ")[0] + b"Sec-WebSocket-Key: c2hvcnQ=\r\n"
     + h.split(b"Sec-WebSocket-Key: ")[1].split(b"\r\n", 1)[1], 400, b"Sec-WebSocket-Key"),
    ("two-keys", lambda h: h.replace(b"\r\n\r\n", b"\r\nSec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r\n\r\n"), 400,
     b"Sec-WebSocket-Key"),
    ("no-version", lambda h: h.replace(b"Sec-WebSocket-Version: 13\r\n", b""), 400, b"Sec-WebSocket-Version"),
    ("version-8", lambda h: h.replace(b"Sec-WebSocket-Version: 13", b"Sec-WebSocket-Version: 8"), 426, b"13"),
    ("two-versions", lambda h: h.replace(b"\r\n\r\n", b"\r\nSec-WebSocket-Version: 1\r\n\r\n"), 426, b"13"),
    # Hop-by-hop by Connection, the key or version would never reach the upstream.
    ("connection-names-key", lambda h: h.replace(b"Connection: Upgrade", b"Connection: Upgrade, Sec-WebSocket-Key"),
     400, b"Connection"),
    ("key-with-nbsp", lambda h: h.replace(b"==\r\n", b"==\xc2\xa0\r\n", 1), 400, b"Sec-WebSocket-Key"),
]


@pytest.mark.parametrize("name,mutate,status,mention", BAD_HANDSHAKES, ids=[c[0] for c in BAD_HANDSHAKES])
def test_an_upgrade_that_is_not_a_handshake_never_reaches_the_upstream(gateway_factory, name, mutate, status,
                                                                       mention):
    up = LyingUpstream(switching())
    try:
        gw = gateway_factory(ws_config(up.port, workers=1))
        with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as s:
            s.sendall(mutate(handshake()))
            head, _ = read_head(s)
        assert head.startswith(b"HTTP/1.1 %d " % status), head
        if status == 426:
            # RFC 6455 §4.4: the versions the server speaks, in the refusal.
            assert b"\r\nsec-websocket-version: 13" in head.lower()
        # A good handshake after it, on the one worker: by the time it is at the upstream,
        # the refused one would have been too.
        with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as s:
            s.sendall(handshake(path="/after"))
            assert read_head(s)[0].startswith(b"HTTP/1.1 101 ")
        assert len(up.received) == 1 and up.everything().startswith(b"GET /after "), up.everything()[:200]
    finally:
        up.stop()


def test_an_upgrade_to_another_protocol_is_served_as_plain_http(gateway_factory):
    # `Upgrade: h2c` is not a WebSocket handshake: the request goes on without it (RFC 9110
    # §7.8 lets a server ignore it), and a 101 to it is a 502, never a tunnel.
    up = LyingUpstream(switching(accept=b"x"))
    try:
        gw = gateway_factory(ws_config(up.port))
        with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as s:
            s.sendall(b"GET /x HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
                      b"HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\nConnection: close\r\n\r\n")
            answer_bytes = read_all(s)
        assert answer_bytes.startswith(b"HTTP/1.1 502 "), answer_bytes[:200]
        assert answer_bytes.count(b"HTTP/1.1 ") == 1
        seen = up.ended()
        assert seen.startswith(b"GET /x HTTP/1.1\r\n") and seen.count(b"GET ") == 1
        assert b"upgrade" not in seen.lower() and b"http2-settings" not in seen.lower()
    finally:
        up.stop()


def test_an_unmasked_client_frame_ends_the_tunnel_with_1002(gateway_factory):
    up = LyingUpstream(switching())
    try:
        gw = gateway_factory(ws_config(up.port))
        with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as s:
            s.sendall(handshake())
            head, rest = read_head(s)
            assert head.startswith(b"HTTP/1.1 101 ")
            good = client_frame(b"masked", opcode=0x1)
            s.sendall(good)
            wait_for(lambda: up.everything().endswith(good), what="the masked frame at the upstream")
            # RFC 6455 §5.1: a client frame without a mask (its bytes spell a request, too).
            s.sendall(bytes([0x81, 100]) + SMUGGLED[:100])
            opcode, payload, rest = read_frame(s, rest)
            assert opcode == 0x8 and payload[:2] == (1002).to_bytes(2, "big")
            assert read_all(s) == b""
        seen = up.ended()
        assert seen.endswith(good) and b"/admin/secret" not in seen
        tunnels = [json.loads(line) for line in gw.output().splitlines() if '"tunnel"' in line]
        assert tunnels and tunnels[-1]["reason"] == "client_protocol_error"
    finally:
        up.stop()
