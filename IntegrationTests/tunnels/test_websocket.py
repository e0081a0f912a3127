"""WebSocket upgrades end to end (RFC 9110 §7.8, RFC 6455): a real tokengate in front of a
real WebSocket server (PyPI `websockets`). Echo through the auth kinds, refusals before
anything reaches the upstream, a 1 MB message, pipelined bytes around the 101, a slow
reader against bounded memory, the idle timeout, the cap, a side vanishing mid-stream,
`upgrades: []`, a 101 that answers no upgrade, the metrics and the access log."""
import base64
import hashlib
import json
import os
import signal
import socket
import struct
import time

import pytest
import requests
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from support.gateway import RawServer
from support.waiting import wait_for, wait_until_still
from support.ws_upstream import WSUpstream
from test_bearer import JWKSServer, ec_key, token


@pytest.fixture
def ws_upstream():
    u = WSUpstream()
    yield u
    u.stop()


@pytest.fixture
def idp():
    s = JWKSServer()
    s.keys = [ec_key("one-1")]
    yield s
    s.stop()


def ws_config(upstream_port, idp_url="", limits="", workers=2, extra_routes=""):
    issuers = f"""issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp_url}", audiences: [api], algorithms: [ES256] }}""" if idp_url else ""
    bearer_route = f"""  - name: ws-bearer
    match: {{ path_prefix: /bearer/ }}
    upstream: ws
    auth: bearer
    issuers: [one]
    require: {{ scopes: [orders:read] }}
  - name: ws-token
    match: {{ path_prefix: /token/ }}
    upstream: ws
    auth: token
    issuers: [one]
  - name: ws-dpop
    match: {{ path_prefix: /dpop/ }}
    upstream: ws
    auth: dpop
    issuers: [one]
  - name: ws-expiring
    match: {{ path_prefix: /expiring/ }}
    upstream: ws
    auth: bearer
    issuers: [one]
    close_at_token_expiry: true""" if idp_url else ""
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
public_url: "http://127.0.0.1:{{PORT}}"
workers: {workers}
limits: {{ shutdown_grace: 5s {limits} }}
{issuers}
upstreams:
  ws: {{ url: "http://127.0.0.1:{upstream_port}", timeout: 5s }}
routes:
{bearer_route}
  - name: no-upgrades
    match: {{ path_prefix: /plain/ }}
    upstream: ws
    auth: none
    upgrades: []
{extra_routes}
  - name: public
    match: {{ path_prefix: / }}
    upstream: ws
    auth: none
"""


@pytest.fixture
def gw(ws_upstream, idp, gateway_factory):
    return gateway_factory(ws_config(ws_upstream.port, idp.url))


def ws_url(gw, path):
    return f"ws://127.0.0.1:{gw.port}{path}"


def access_lines(gw, msg="access"):
    out = []
    for line in gw.output().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if rec.get("msg") == msg:
            out.append(rec)
    return out


def metrics(gw):
    return requests.get(f"http://127.0.0.1:{gw.admin}/metrics", timeout=5).text


# --- raw WebSocket bytes, for what a library client would not do -------------------------

def handshake(path="/chat", extra=b""):
    key = base64.b64encode(os.urandom(16))
    return (b"GET " + path.encode() + b" HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Key: " + key + b"\r\nSec-WebSocket-Version: 13\r\n" + extra + b"\r\n")


def accept_for(request_head):
    """The Sec-WebSocket-Accept a real server answers a handshake with (RFC 6455 §4.2.2)."""
    key = next(l.split(b":", 1)[1].strip() for l in request_head.split(b"\r\n")
               if l.lower().startswith(b"sec-websocket-key:"))
    return base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())


def client_frame(payload, opcode=0x2):
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x80 | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack(">Q", n)
    return head + mask + bytes(b ^ mask[i & 3] for i, b in enumerate(payload))


def read_head(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def read_frame(sock, buf):
    """One server frame (unmasked) from `buf` + the socket: (opcode, payload, rest)."""
    def need(n):
        nonlocal buf
        while len(buf) < n:
            chunk = sock.recv(65536)
            if not chunk:
                raise EOFError
            buf += chunk
    need(2)
    opcode, n = buf[0] & 0x0F, buf[1] & 0x7F
    off = 2
    if n == 126:
        need(4)
        n = struct.unpack(">H", buf[2:4])[0]
        off = 4
    elif n == 127:
        need(10)
        n = struct.unpack(">Q", buf[2:10])[0]
        off = 10
    need(off + n)
    return opcode, buf[off:off + n], buf[off + n:]


# --- echo through each kind of route ----------------------------------------------------

def test_echo_on_a_public_route_and_a_1mb_message(gw, ws_upstream):
    with connect(ws_url(gw, "/chat"), open_timeout=5, max_size=4 << 20) as ws:
        ws.send("hello")
        assert ws.recv(timeout=5) == "hello"
        big = os.urandom(1 << 20)
        ws.send(big)
        assert ws.recv(timeout=20) == big
    assert wait_for(lambda: access_lines(gw, "tunnel"))
    line = access_lines(gw, "tunnel")[0]
    assert line["route"] == "public" and int(line["bytes_to_upstream"]) > (1 << 20) and int(line["bytes_to_client"]) > (1 << 20)
    assert "duration_ms" in line and line["reason"] in ("client_closed", "upstream_closed")
    handshake_line = [l for l in access_lines(gw) if l["path"] == "/chat"][0]
    assert handshake_line["status"] == 101
    # The upstream saw the upgrade with its WebSocket fields, and the gateway's own.
    req = ws_upstream.requests[0]
    assert req.headers["Upgrade"].lower() == "websocket" and "upgrade" in req.headers["Connection"].lower()
    assert req.headers["Sec-WebSocket-Version"] == "13" and req.headers.get("X-Request-Id")


def test_bearer_route_echoes_with_a_token_and_refuses_without_one(gw, ws_upstream, idp):
    tok = token(idp.keys[0])
    with connect(ws_url(gw, "/bearer/x"), additional_headers={"Authorization": f"Bearer {tok}"}, open_timeout=5) as ws:
        ws.send("hi")
        assert ws.recv(timeout=5) == "hi"
    seen = ws_upstream.connections
    assert seen == 1
    # No token: 401 with a bare challenge; a bad token: 401 invalid_token; a token without
    # the scope: 403. None of them reaches the upstream.
    cases = [({}, 401, None), ({"Authorization": "Bearer " + tok[:-4] + "AAAA"}, 401, "invalid_token"),
             ({"Authorization": "Bearer " + token(idp.keys[0], scope="other")}, 403, "insufficient_scope")]
    for headers, status, error in cases:
        with pytest.raises(InvalidStatus) as e:
            connect(ws_url(gw, "/bearer/x"), additional_headers=headers, open_timeout=5)
        assert e.value.response.status_code == status
        challenge = e.value.response.headers.get("WWW-Authenticate", "")
        assert challenge.startswith("Bearer")
        if error:
            assert f'error="{error}"' in challenge
    assert ws_upstream.connections == seen and len(ws_upstream.requests) == seen


def test_token_route_echoes_with_a_bearer_token(gw, ws_upstream, idp):
    with connect(ws_url(gw, "/token/x"), additional_headers={"Authorization": f"Bearer {token(idp.keys[0])}"},
                 open_timeout=5) as ws:
        ws.send("via token route")
        assert ws.recv(timeout=5) == "via token route"
    with pytest.raises(InvalidStatus) as e:
        connect(ws_url(gw, "/token/x"), open_timeout=5)
    assert e.value.response.status_code == 401
    assert ws_upstream.connections == 1


def test_dpop_route_echoes_with_a_bound_token_and_proof(gw, ws_upstream, idp):
    from support.dpop_client import DPoPKey
    from test_dpop import bound_token
    key = DPoPKey("ES256")
    tok = bound_token(idp, key)
    url = f"http://127.0.0.1:{gw.port}/dpop/live"
    headers = {"Authorization": f"DPoP {tok}", "DPoP": key.proof("GET", url, access_token=tok)}
    try:
        ws = connect(ws_url(gw, "/dpop/live"), additional_headers=headers, open_timeout=5)
    except InvalidStatus as e:
        # The route asks for a server nonce first (RFC 9449 §8): retry with it.
        nonce = e.response.headers.get("DPoP-Nonce")
        assert e.response.status_code == 401 and nonce, e.response
        headers["DPoP"] = key.proof("GET", url, access_token=tok, nonce=nonce)
        ws = connect(ws_url(gw, "/dpop/live"), additional_headers=headers, open_timeout=5)
    with ws:
        ws.send("bound")
        assert ws.recv(timeout=5) == "bound"
    seen = ws_upstream.connections
    # The same token without a proof, or as a bearer token: refused, upstream untouched.
    for h in ({"Authorization": f"DPoP {tok}"}, {"Authorization": f"Bearer {tok}"}):
        with pytest.raises(InvalidStatus) as e:
            connect(ws_url(gw, "/dpop/live"), additional_headers=h, open_timeout=5)
        assert e.value.response.status_code in (400, 401)
        assert e.value.response.headers.get("WWW-Authenticate", "").startswith("DPoP")
    assert ws_upstream.connections == seen == 1


def test_tunnel_ends_when_its_token_expires(gw, ws_upstream, idp):
    tok = token(idp.keys[0], exp=int(time.time()) + 2)
    with connect(ws_url(gw, "/expiring/x"), additional_headers={"Authorization": f"Bearer {tok}"}, open_timeout=5) as ws:
        ws.send("before")
        assert ws.recv(timeout=5) == "before"
        with pytest.raises(ConnectionClosed):
            while True:
                ws.recv(timeout=6)
        assert ws.close_code == 1008
    assert wait_for(lambda: any(l["reason"] == "token_expired" for l in access_lines(gw, "tunnel")))
    # The upstream got the gateway's Close 1008 too.
    assert wait_for(lambda: ws_upstream.closes and ws_upstream.closes[-1] and ws_upstream.closes[-1][0] == 1008)


def test_upgrades_empty_refuses_with_400_and_never_reaches_the_upstream(gw, ws_upstream):
    with pytest.raises(InvalidStatus) as e:
        connect(ws_url(gw, "/plain/x"), open_timeout=5)
    assert e.value.response.status_code == 400
    assert b"upgrades: []" in e.value.response.body
    assert ws_upstream.connections == 0 and ws_upstream.requests == []


def test_an_upgrade_must_be_a_get_without_content(gw, ws_upstream):
    with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as s:
        s.sendall(handshake().replace(b"GET ", b"POST ").replace(b"\r\n\r\n", b"\r\nContent-Length: 2\r\n\r\nhi"))
        head, _ = read_head(s)
    assert head.startswith(b"HTTP/1.1 400 ")
    with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as s:
        s.sendall(handshake(extra=b"Content-Length: 2\r\n") + b"hi")
        head, _ = read_head(s)
    assert head.startswith(b"HTTP/1.1 400 ")
    assert ws_upstream.connections == 0


def test_bytes_pipelined_after_the_handshake_reach_the_upstream(gw, ws_upstream):
    # The client does not wait for the 101: its first frame rides in the same write.
    with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as s:
        s.sendall(handshake() + client_frame(b"early bird", opcode=0x1))
        head, rest = read_head(s)
        assert head.startswith(b"HTTP/1.1 101 ")
        assert b"sec-websocket-accept" in head.lower() and b"connection: upgrade" in head.lower()
        opcode, payload, _ = read_frame(s, rest)
    assert opcode == 0x1 and payload == b"early bird"


class GreetingUpstream(RawServer):
    """Answers the handshake with 101 and a first frame in the same write, then echoes
    raw bytes: the bytes after the 101 head must reach the client."""

    def serve(self, conn):
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(4096)
            conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         b"Sec-WebSocket-Accept: " + accept_for(data) + b"\r\n\r\n" + bytes([0x81, 5]) + b"howdy")
            while chunk := conn.recv(65536):
                pass


class SwitchingUpstream(RawServer):
    """Answers every request with 101, asked or not."""

    def serve(self, conn):
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nJUNK")
            # Open until the gateway lets go of the connection (bounded, should it never).
            conn.settimeout(5)
            try:
                while conn.recv(65536):
                    pass
            except OSError:
                pass


def test_bytes_the_upstream_sent_after_its_101_head_reach_the_client(gateway_factory):
    up = GreetingUpstream()
    try:
        gw = gateway_factory(ws_config(up.port))
        with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as s:
            s.sendall(handshake())
            head, rest = read_head(s)
            assert head.startswith(b"HTTP/1.1 101 ")
            opcode, payload, _ = read_frame(s, rest)
        assert (opcode, payload) == (0x1, b"howdy")
    finally:
        up.stop()


def test_a_101_to_a_request_that_did_not_ask_is_a_502(gateway_factory):
    up = SwitchingUpstream()
    try:
        gw = gateway_factory(ws_config(up.port))
        r = requests.get(gw.url("/plain-get"), timeout=5)
        assert r.status_code == 502 and r.json()["error"] == "bad_gateway"
        assert b"JUNK" not in r.content
    finally:
        up.stop()


def test_upstream_refusing_the_upgrade_is_passed_on(gateway_factory):
    # A plain HTTP server answers the upgrade request with its own status: the client gets it.
    from support.gateway import Upstream
    up = Upstream().start()
    try:
        gw = gateway_factory(ws_config(up.port))
        with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as s:
            s.sendall(handshake(path="/echo/x"))
            head, _ = read_head(s)
        assert head.startswith(b"HTTP/1.1 200 ")
        assert b"upgrade" not in head.lower().split(b"\r\n", 1)[1].replace(b"x-request-id", b"")
    finally:
        up.stop()


# --- limits ----------------------------------------------------------------------------

def test_idle_tunnels_are_closed(ws_upstream, gateway_factory):
    gw = gateway_factory(ws_config(ws_upstream.port, limits=", tunnel_idle_timeout: 1s"))
    with connect(ws_url(gw, "/chat"), open_timeout=5) as ws:
        ws.send("a")
        assert ws.recv(timeout=5) == "a"
        started = time.time()
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=5)
        assert time.time() - started < 4
    assert wait_for(lambda: any(l["reason"] == "idle_timeout" for l in access_lines(gw, "tunnel")))
    assert 'tokengate_tunnel_closes_total{reason="idle_timeout"} 1' in metrics(gw)


def test_the_tunnel_cap_refuses_with_503_and_frees_on_close(ws_upstream, gateway_factory):
    gw = gateway_factory(ws_config(ws_upstream.port, limits=", max_tunnels: 2", workers=1))
    first = connect(ws_url(gw, "/a"), open_timeout=5)
    second = connect(ws_url(gw, "/b"), open_timeout=5)
    try:
        assert "tokengate_tunnels_open 2" in metrics(gw)
        with pytest.raises(InvalidStatus) as e:
            connect(ws_url(gw, "/c"), open_timeout=5)
        assert e.value.response.status_code == 503 and e.value.response.headers.get("Retry-After") == "5"
        assert ws_upstream.connections == 2
        # Plain requests are not counted against it.
        assert requests.get(gw.url("/anything"), timeout=5).status_code in (400, 426, 500)
    finally:
        first.close()
    assert wait_for(lambda: "tokengate_tunnels_open 1" in metrics(gw))
    with connect(ws_url(gw, "/d"), open_timeout=5) as third:
        third.send("ok")
        assert third.recv(timeout=5) == "ok"
    second.close()


def test_slow_reader_is_backpressured_with_bounded_memory(ws_upstream, gateway_factory):
    gw = gateway_factory(ws_config(ws_upstream.port, workers=1))
    total = 48 << 20
    with socket.create_connection(("127.0.0.1", gw.port), timeout=10) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 10)
        s.sendall(handshake())
        head, buf = read_head(s)
        assert head.startswith(b"HTTP/1.1 101 ")
        before = gw.rss_kb()
        for _ in range(total // (1 << 20)):
            s.sendall(client_frame(b"send:%d" % (1 << 20), opcode=0x1))
        # Nobody reads: the upstream sends until the gateway stops taking its bytes, and the
        # gateway must not buffer them.
        wait_until_still(lambda: ws_upstream.sent, what="the upstream's sends to stop")
        grown = gw.rss_kb() - before
        got = 0
        while got < total:
            opcode, payload, buf = read_frame(s, buf)
            got += len(payload)
    assert got == total
    assert grown < 16 << 10, f"gateway RSS grew {grown} KB while the client did not read"


def established(local_port, remote_port):
    """Whether the IPv4 connection between these loopback ports is ESTABLISHED (/proc/net/tcp)."""
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            local, remote, state = line.split()[1:4]
            if int(local.split(":")[1], 16) == local_port and int(remote.split(":")[1], 16) == remote_port:
                return state == "01"
    return False


@pytest.mark.parametrize("one_edge", [False, True])
def test_client_vanishing_mid_stream_closes_the_upstream_side(gw, ws_upstream, one_edge):
    s = socket.create_connection(("127.0.0.1", gw.port), timeout=5)
    s.sendall(handshake())
    head, _ = read_head(s)
    assert head.startswith(b"HTTP/1.1 101 ")
    if one_edge:
        # The gateway stopped while the bytes and the reset come: its next wait reports both
        # in one readiness event, where the reset is no event of its own (EdgeTriggered).
        gw.signal(signal.SIGSTOP)
    s.sendall(client_frame(b"x" * 100000)[:5000])  # half a frame, then gone (RST)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client_port = s.getsockname()[1]
    s.close()
    if one_edge:
        # The kernel has taken the reset once the gateway's end is no longer established.
        wait_for(lambda: not established(gw.port, client_port), 5, interval=0.01, what="the reset at the gateway")
        gw.signal(signal.SIGCONT)
    assert wait_for(lambda: any(l["reason"] in ("client_closed", "client_error") for l in access_lines(gw, "tunnel")))
    assert wait_for(lambda: len(ws_upstream.closes) == 1)
    assert wait_for(lambda: "tokengate_tunnels_open 0" in metrics(gw))


def test_upstream_vanishing_mid_stream_closes_the_client(gw, ws_upstream):
    with connect(ws_url(gw, "/chat"), open_timeout=5) as ws:
        ws.send("one")
        assert ws.recv(timeout=5) == "one"
        ws.send("vanish")
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=5)
    assert wait_for(lambda: any(l["reason"] in ("upstream_closed", "upstream_error") for l in access_lines(gw, "tunnel")))
    text = metrics(gw)
    assert "tokengate_tunnels_open 0" in text
    assert 'tokengate_tunnel_bytes_total{direction="to_upstream"}' in text


def test_shutdown_sends_going_away_and_exits_cleanly(gw, ws_upstream):
    with connect(ws_url(gw, "/chat"), open_timeout=5) as ws:
        ws.send("before")
        assert ws.recv(timeout=5) == "before"
        gw.signal(signal.SIGTERM)
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=8)
        assert ws.close_code == 1001
    assert gw.proc.wait(timeout=10) == 0
    assert wait_for(lambda: ws_upstream.closes and ws_upstream.closes[-1] and ws_upstream.closes[-1][0] == 1001)


class InterimUpstream(RawServer):
    """Answers with 100 Continue (unasked), 102 Processing, 103 Early Hints, then 200."""

    def serve(self, conn):
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n"
                         b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
                         b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")


def test_interim_responses_reach_the_client_before_the_final_one(gateway_factory):
    # RFC 9110 §15.2: 1xx other than 101 are passed on in order; the upstream's own 100
    # answers an Expect the gateway did not send on, so it is not.
    up = InterimUpstream()
    try:
        gw = gateway_factory(ws_config(up.port))
        with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as s:
            s.sendall(b"GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
            resp = b""
            while chunk := s.recv(65536):
                resp += chunk
        assert resp.startswith(b"HTTP/1.1 102 "), resp
        assert resp.index(b"HTTP/1.1 103 ") < resp.index(b"HTTP/1.1 200 ")
        assert b"HTTP/1.1 100 " not in resp and b"rel=preload" in resp and resp.endswith(b"ok")
        # An HTTP/1.0 client gets no 1xx at all (RFC 9110 §15.2).
        with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as s:
            s.sendall(b"GET /x HTTP/1.0\r\nHost: a\r\n\r\n")
            resp = b""
            while chunk := s.recv(65536):
                resp += chunk
        assert resp.startswith(b"HTTP/1.1 200 ") and b" 10" not in resp.split(b"\r\n")[0]
    finally:
        up.stop()


def test_wss_through_a_tls_listener_with_a_1mb_message_and_a_slow_reader(ws_upstream, gateway_factory, tmp_path):
    # The client side of the tunnel over TLS (the connection's ConnectionIO): echo, a 1 MB
    # message each way, then a client that stops reading while the upstream pushes 16 MB.
    import ssl
    import subprocess
    cert, key = str(tmp_path / "c.pem"), str(tmp_path / "k.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    cfg = ws_config(ws_upstream.port, workers=1).replace(
        "listen: 127.0.0.1:{PORT}", f"listen: {{ address: 127.0.0.1:{{PORT}}, tls: {{ cert_file: {cert}, key_file: {key} }} }}")
    gw = gateway_factory(cfg)
    context = ssl.create_default_context(cafile=cert)
    # max_queue=1: the library stops reading the socket once a message waits unread.
    with connect(f"wss://127.0.0.1:{gw.port}/secure", ssl=context, open_timeout=5, max_size=32 << 20, max_queue=1) as ws:
        ws.send("over tls")
        assert ws.recv(timeout=5) == "over tls"
        big = os.urandom(1 << 20)
        ws.send(big)
        assert ws.recv(timeout=20) == big
        before = gw.rss_kb()
        for _ in range(16):
            ws.send("send:%d" % (1 << 20))
        # The upstream sends until the gateway stops taking its bytes (the client reads none).
        wait_until_still(lambda: ws_upstream.sent, what="the upstream's sends to stop")
        grown = gw.rss_kb() - before
        for _ in range(16):
            assert len(ws.recv(timeout=20)) == 1 << 20
    assert grown < 16 << 10, f"gateway RSS grew {grown} KB while the TLS client did not read"
    req = ws_upstream.requests[0]
    assert req.headers["X-Forwarded-Proto"] == "https"


def test_no_tunnel_without_a_real_101_websocket_smuggling(gateway_factory, idp):
    # WebSocket smuggling: an upgrade the upstream declines (here 200) must leave the
    # connection HTTP, so a request sent next on it goes through the gateway's checks
    # (401 on a bearer route) instead of straight to the upstream.
    from support.gateway import Upstream
    up = Upstream().start()
    try:
        gw = gateway_factory(ws_config(up.port, idp.url))
        with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as s:
            s.sendall(handshake(path="/echo/x"))
            head, rest = read_head(s)
            assert head.startswith(b"HTTP/1.1 200 ")
            length = int(next(l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")).split(b":")[1])
            while len(rest) < length:
                rest += s.recv(65536)
            s.sendall(b"GET /bearer/secret HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
            second, _ = read_head(s)
        assert second.startswith(b"HTTP/1.1 401 "), second
    finally:
        up.stop()


@pytest.mark.parametrize("mode,trusted,forwarded", [
    ("auto", False, True), ("auto", True, False), ("always", True, True), ("never", False, False)])
def test_forward_early_hints_decides_who_hears_1xx(gateway_factory, mode, trusted, forwarded):
    # A front that predates 1xx support (Debian's nginx 1.22) hands its client a bare 103 and
    # loses the answer: `auto` sends interim responses only to clients not behind a trusted
    # proxy. The final answer arrives either way.
    up = InterimUpstream()
    try:
        config = ws_config(up.port).replace("routes:", f"forward_early_hints: {mode}\nroutes:", 1)
        if trusted:
            config = config.replace("routes:", "trusted_proxies: [127.0.0.1/32]\nroutes:", 1)
        gw = gateway_factory(config)
        with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as s:
            s.sendall(b"GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
            resp = b""
            while chunk := s.recv(65536):
                resp += chunk
        assert resp.endswith(b"ok") and b"HTTP/1.1 200 " in resp
        assert (b"HTTP/1.1 103 " in resp) == forwarded and (b"HTTP/1.1 102 " in resp) == forwarded
        assert resp.startswith(b"HTTP/1.1 102 " if forwarded else b"HTTP/1.1 200 ")
    finally:
        up.stop()


def test_forward_early_hints_takes_only_its_modes(tmp_path):
    from support.gateway import BIN
    import subprocess
    path = tmp_path / "c.yaml"
    path.write_text(ws_config(1).replace("{PORT}", "1").replace("{ADMIN}", "2")
                    .replace("routes:", "forward_early_hints: sometimes\nroutes:", 1))
    r = subprocess.run([BIN, "check-config", str(path)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "forward_early_hints" in r.stdout + r.stderr and "auto, always, never" in r.stdout + r.stderr


class SlowSwitchUpstream(RawServer):
    """Answers the handshake with 101 only once the test sets `answer` (or after 5 s); `asked`
    is set once a handshake has arrived."""

    def __init__(self):
        import threading
        self.asked = threading.Event()
        self.answer = threading.Event()  # set by the test: the 101 may go now
        super().__init__()

    def serve(self, conn):
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(4096)
            self.asked.set()
            self.answer.wait(5)
            conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         b"Sec-WebSocket-Accept: " + accept_for(data) + b"\r\n\r\n")
            while conn.recv(65536):
                pass


def test_handshakes_in_progress_count_against_the_cap(gateway_factory):
    up = SlowSwitchUpstream()
    try:
        gw = gateway_factory(ws_config(up.port, limits=", max_tunnels: 1", workers=1))
        first = socket.create_connection(("127.0.0.1", gw.port), timeout=5)
        first.sendall(handshake())
        assert up.asked.wait(5)  # the first handshake is at the upstream, waiting for its 101
        with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as second:
            second.sendall(handshake())
            head, _ = read_head(second)
        assert head.startswith(b"HTTP/1.1 503 "), head
        up.answer.set()
        head, _ = read_head(first)
        assert head.startswith(b"HTTP/1.1 101 ")
        first.close()
    finally:
        up.stop()
