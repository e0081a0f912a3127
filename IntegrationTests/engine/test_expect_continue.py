"""`Expect: 100-continue` end to end (RFC 9110 §10.1.1, §15.2.1): on a route that streams
bodies (`request_buffering: false`) the gateway forwards the expectation and lets the upstream
decide; on one that reads bodies first (the default) it says 100 itself. A raw-socket client talks to the real gateway, which
talks to a raw-socket upstream that chooses per path whether to say 100, refuse first, or stay
silent, and records every byte it received. Auth still comes first: a refused request gets its
401 with no 100 and nothing upstream."""
import json
import socket
import subprocess
import threading
import time

import pytest

from support.gateway import BIN, Gateway, RawServer
from support.waiting import wait_for

CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


class DecidingUpstream(RawServer):
    """An HTTP/1.1 upstream that reads a request head and then, by path:
    /continue  says 100 Continue when asked (Expect), reads the body, answers 200;
    /always100 says 100 Continue even unasked, reads the body, answers 200;
    /refuse417, /refuse413  answer that status at once, without a 100, then wait 1.5 s
               for body bytes (recorded: there must be none) and close;
    /silent    never says 100, reads the body whenever it comes, answers 200.
    Every request is recorded: its head's lines, the body bytes received, when, and whether
    the upstream is done with it."""

    def __init__(self):
        self.requests = []
        self.lock = threading.Lock()
        super().__init__()

    def serve(self, conn):
        conn.settimeout(10)
        with conn:
            buf = b""
            while b"\r\n\r\n" not in buf:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buf += chunk
            head, _, body = buf.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            fields = [(n.strip().lower(), v.strip()) for n, _, v in (line.partition(":") for line in lines[1:])]
            record = {"line": lines[0], "fields": fields, "body": body, "at": time.monotonic(), "done": False}
            with self.lock:
                self.requests.append(record)
            try:
                path = lines[0].split(" ")[1]
                asked = ("expect", "100-continue") in fields
                if path.startswith("/refuse"):
                    status = int(path[len("/refuse"):])
                    text = {417: b"Expectation Failed", 413: b"Content Too Large"}[status]
                    msg = json.dumps({"refused": status}).encode()
                    conn.sendall(b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                                 % (status, text, len(msg), msg))
                    conn.settimeout(1.5)
                    try:
                        while True:
                            chunk = conn.recv(65536)
                            if not chunk:
                                break
                            record["body"] += chunk
                    except socket.timeout:
                        pass
                    return
                if (path.startswith("/continue") and asked) or path.startswith("/always100"):
                    conn.sendall(CONTINUE)
                length = int(dict(fields).get("content-length", "0"))
                chunked = ("transfer-encoding", "chunked") in fields
                while len(record["body"]) < length or (chunked and not record["body"].endswith(b"0\r\n\r\n")):
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    record["body"] += chunk
                msg = json.dumps({"received": len(record["body"])}).encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                             b"Connection: close\r\n\r\n%s" % (len(msg), msg))
            finally:
                record["done"] = True

    def only(self):
        with self.lock:
            assert len(self.requests) == 1, self.requests
            return self.requests[0]

    def finished(self):
        """The one request, once this upstream has stopped reading it (the gateway closed the
        connection, or the wait for body bytes ran out): no byte of it can come later."""
        wait_for(lambda: self.requests and self.requests[-1]["done"], what="the upstream to stop reading")
        return self.only()


def config(upstream_port, limits="max_body_size: 1MB"):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 1
limits: {{ {limits} }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream_port}", timeout: 5s }}
routes:
  - name: api
    match: {{ path_prefix: /api/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    request_buffering: false
  - name: buffered
    match: {{ path_prefix: /buffered/ }}
    upstream: app
    auth: none
  - match: {{ path_prefix: / }}
    upstream: app
    auth: none
    request_buffering: false
issuers:
  one: {{ issuer: "https://idp.one", jwks_file: "/dev/null", audiences: [api] }}
"""


@pytest.fixture(scope="module")
def setup():
    up = DecidingUpstream()
    g = Gateway(config(up.port), workers=1)
    g.start_no_wait()
    yield g, up
    g.stop()
    up.stop()


@pytest.fixture
def gw(setup):
    g, up = setup
    with up.lock:
        up.requests.clear()
    return g, up


def read_head(s, timeout=5):
    """One response head (an interim one included), and what came after it."""
    s.settimeout(timeout)
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    head, sep, rest = buf.partition(b"\r\n\r\n")
    return head + sep, rest


def read_all(s, first=b"", timeout=5):
    """Bytes up to the end of the first final response (1xx heads before it included), by its
    Content-Length; then, if the gateway closes right after, nothing more."""
    s.settimeout(timeout)
    buf = first
    start = 0
    while True:
        end = buf.find(b"\r\n\r\n", start)
        if end >= 0:
            head = buf[start:end]
            if not head.startswith(b"HTTP/1.1 1"):
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                if len(buf) >= end + 4 + length:
                    return buf
            else:
                start = end + 4
                continue
        chunk = s.recv(65536)
        if not chunk:
            return buf
        buf += chunk


def closed_after(s, timeout=3):
    """Whether the gateway closes the connection (with nothing more to say)."""
    s.settimeout(timeout)
    try:
        return s.recv(65536) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def connect(g):
    return socket.create_connection(("127.0.0.1", g.port), timeout=5)


@pytest.mark.parametrize("framing", ["length", "chunked"])
def test_the_upstreams_100_is_relayed_then_the_body_streams(gw, framing):
    g, up = gw
    s = connect(g)
    if framing == "length":
        s.sendall(b"POST /continue HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        body = b"hello"
    else:
        s.sendall(b"POST /continue HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n")
        body = b"5\r\nhello\r\n0\r\n\r\n"
    head, rest = read_head(s)
    assert head == CONTINUE and rest == b""
    s.sendall(body)
    resp = read_all(s)
    s.close()
    assert resp.startswith(b"HTTP/1.1 200 "), resp
    assert b"100 Continue" not in resp, "exactly one 100 reaches the client"
    seen = up.only()
    assert ("expect", "100-continue") in seen["fields"]
    if framing == "length":
        assert seen["body"] == b"hello"
    else:
        assert seen["body"] == b"5\r\nhello\r\n0\r\n\r\n"


def test_the_100_is_the_upstreams_not_the_gateways(gw):
    """Until the upstream has said 100 the client hears nothing: the 100 comes after the
    upstream got the head (which is recorded before it answers)."""
    g, up = gw
    s = connect(g)
    s.sendall(b"POST /continue HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
    head, _ = read_head(s)
    got_100 = time.monotonic()
    assert head == CONTINUE
    assert up.only()["at"] <= got_100
    s.sendall(b"ok")
    assert read_all(s).startswith(b"HTTP/1.1 200 ")
    s.close()


@pytest.mark.parametrize("status", [417, 413])
def test_a_final_answer_before_100_is_relayed_and_the_body_never_sent(gw, status):
    g, up = gw
    s = connect(g)
    s.sendall(b"POST /refuse%d HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n" % status)
    head, rest = read_head(s)
    assert head.startswith(b"HTTP/1.1 %d " % status), head
    assert b"100 Continue" not in head
    # The client never got a 100: it may not send its body, so the connection cannot carry
    # another request and closes after the answer (RFC 9110 §10.1.1).
    assert b"\r\nConnection: close\r\n" in head
    resp = read_all(s, rest)
    assert json.loads(resp)["refused"] == status
    assert closed_after(s)
    s.close()
    seen = up.finished()
    assert ("expect", "100-continue") in seen["fields"]
    assert seen["body"] == b"", "the body must not reach the upstream"


def test_an_eager_client_body_after_a_refusal_never_reaches_the_upstream(gw):
    """A client that sends its body without waiting (allowed, RFC 9110 §10.1.1) gets the
    upstream's refusal; its body stays at the gateway."""
    g, up = gw
    s = connect(g)
    s.sendall(b"POST /refuse417 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello")
    head, rest = read_head(s)
    assert head.startswith(b"HTTP/1.1 417 "), head
    read_all(s, rest)
    assert closed_after(s)
    s.close()
    assert up.finished()["body"] == b""


def test_a_silent_upstream_gets_the_body_after_the_continue_timeout(gw):
    g, up = gw
    s = connect(g)
    sent = time.monotonic()
    s.sendall(b"POST /silent HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
    head, rest = read_head(s)
    waited = time.monotonic() - sent
    assert head == CONTINUE and rest == b""
    # The gateway waited for the upstream (1 s, fixed) before saying 100 itself.
    assert 0.8 <= waited < 4, waited
    s.sendall(b"hello")
    resp = read_all(s)
    s.close()
    assert resp.startswith(b"HTTP/1.1 200 ") and json.loads(resp.split(b"\r\n\r\n", 1)[1])["received"] == 5
    assert b"100 Continue" not in resp
    seen = up.only()
    assert ("expect", "100-continue") in seen["fields"] and seen["body"] == b"hello"


def test_an_unauthenticated_request_gets_401_without_100_and_nothing_upstream(gw):
    g, up = gw
    s = connect(g)
    s.sendall(b"POST /api/x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
    head, rest = read_head(s)
    assert head.startswith(b"HTTP/1.1 401 "), head
    assert b"WWW-Authenticate: Bearer" in head
    read_all(s, rest)
    assert closed_after(s), "a client still waiting for a 100 cannot send its next request"
    s.close()
    # A request after it, on the one worker: once it is at the upstream, the refused one
    # would be there too.
    s = connect(g)
    s.sendall(b"GET /after HTTP/1.1\r\nHost: a\r\n\r\n")
    assert read_head(s)[0].startswith(b"HTTP/1.1 200 "), "the request after it is answered"
    s.close()
    assert up.finished()["line"] == "GET /after HTTP/1.1"


def test_expect_on_http10_is_ignored(gw):
    """RFC 9110 §10.1.1: an HTTP/1.0 request's 100-continue expectation is ignored; a 1xx
    is never sent to an HTTP/1.0 client (§15.2) and the upstream is not asked either."""
    g, up = gw
    forwarded_without_expect(
        g, up, b"POST /continue HTTP/1.0\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello")


def test_an_upstream_100_nobody_asked_for_is_dropped(gw):
    g, up = gw
    forwarded_without_expect(g, up, b"POST /always100 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello")


def forwarded_without_expect(g, up, request):
    """Sends `request` (body "hello") whole: the client gets a 200 and no 100, the upstream
    the body and no Expect."""
    s = connect(g)
    s.sendall(request)
    resp = read_all(s)
    s.close()
    assert resp.startswith(b"HTTP/1.1 200 "), resp
    assert b"100 Continue" not in resp
    seen = up.only()
    assert "expect" not in dict(seen["fields"]) and seen["body"] == b"hello"


def test_an_unknown_expectation_is_refused_417_and_never_forwarded(gw):
    g, up = gw
    s = connect(g)
    s.sendall(b"POST /continue HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: nope\r\n\r\n")
    head, rest = read_head(s)
    assert head.startswith(b"HTTP/1.1 417 "), head
    read_all(s, rest)
    s.close()
    with up.lock:
        assert up.requests == []


@pytest.mark.parametrize("framing", ["length", "chunked"])
def test_a_buffering_route_says_100_itself_and_sends_the_body_whole(gw, framing):
    """Request buffering (the default): the gateway reads the body before the upstream hears
    of the request, so it says 100 itself; the upstream gets the body by length, and no
    Expect (a chunked body's framing is the gateway's to choose once it holds it all)."""
    g, up = gw
    s = connect(g)
    if framing == "length":
        s.sendall(b"POST /buffered/continue HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        body = b"hello"
    else:
        s.sendall(b"POST /buffered/continue HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                  b"Expect: 100-continue\r\n\r\n")
        body = b"2\r\nhe\r\n3\r\nllo\r\n0\r\n\r\n"
    head, rest = read_head(s)
    assert head == CONTINUE and rest == b""
    with up.lock:
        assert up.requests == [], "nothing reaches the upstream before the body is whole"
    s.sendall(body)
    resp = read_all(s)
    s.close()
    assert resp.startswith(b"HTTP/1.1 200 ") and b"100 Continue" not in resp, resp
    seen = up.only()
    fields = dict(seen["fields"])
    assert "expect" not in fields and "transfer-encoding" not in fields
    assert fields["content-length"] == "5" and seen["body"] == b"hello"



SPOOL_LIMITS = ("max_body_size: 4MB, request_buffer: 16KB, request_spool_total: 1MB, "
                "request_spool_per_client: 100%, body_min_rate: off")


@pytest.fixture
def spool_full():
    """A gateway whose 1 MB request spool a holder from 127.0.0.2 mostly fills: it announced
    900 KB, sent 800 KB, and holds on."""
    up = DecidingUpstream()
    g = Gateway(config(up.port, limits=SPOOL_LIMITS).replace(
        "listen: 127.0.0.1:{PORT}", "listen: { address: 127.0.0.1:{PORT}, http2: true }"), workers=1)
    g.start_no_wait()
    holder = socket.create_connection(("127.0.0.1", g.port), timeout=5, source_address=("127.0.0.2", 0))
    holder.sendall(b"POST /buffered/continue HTTP/1.1\r\nHost: a\r\nContent-Length: 900000\r\n\r\n" + b"h" * 800_000)
    wait_for(lambda: spool_bytes(g) >= 700_000, what="the holder's body spooled")
    yield g, up
    holder.close()
    g.stop()
    up.stop()


def spool_bytes(g):
    """tokengate_spool_bytes: what every spool holds now."""
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{g.admin}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("tokengate_spool_bytes "):
                return float(line.split()[1])
    return 0


def test_no_100_when_the_spool_cannot_hold_the_announced_body(spool_full):
    """RFC 9110 §10.1.1: a client waiting for 100 is told the final answer instead when the
    body will not be taken. 600 KB announced where the spool has about 200 KB left: 503 with
    Retry-After and the JSON error, never a 100, nothing upstream, the connection closed."""
    g, up = spool_full
    s = connect(g)
    s.sendall(b"POST /buffered/continue HTTP/1.1\r\nHost: a\r\nContent-Length: 600000\r\nExpect: 100-continue\r\n\r\n")
    resp = read_all(s)
    assert resp.startswith(b"HTTP/1.1 503 ") and b"100 Continue" not in resp, resp
    assert b"Retry-After: 1" in resp
    assert json.loads(resp.split(b"\r\n\r\n", 1)[1])["error"] == "temporarily_unavailable"
    assert closed_after(s)
    s.close()
    with up.lock:
        assert up.requests == []
    # A body that fits is still taken, its 100 said.
    s = connect(g)
    s.sendall(b"POST /buffered/continue HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
    head, _ = read_head(s)
    assert head == CONTINUE
    s.sendall(b"hello")
    assert read_all(s).startswith(b"HTTP/1.1 200 ")
    s.close()


def test_no_100_on_http2_when_the_spool_cannot_hold_the_announced_body(spool_full):
    from support.h2_client import H2Connection
    g, up = spool_full
    with H2Connection(g.port) as c:
        sid = c.send_request("POST", "/buffered/continue",
                             [("content-length", "600000"), ("expect", "100-continue")], end_stream=False)
        a = c.collect([sid], timeout=5)[sid]
    assert a.status == 503 and a.interim == [], (a.headers, a.interim)
    assert json.loads(a.body)["error"] == "temporarily_unavailable"
    with up.lock:
        assert up.requests == []


def test_continue_timeout_zero_never_asks_the_upstream():
    """`limits.continue_timeout: 0` (for upstreams that ignore Expect): the gateway says 100
    itself once authentication lets the body through, and the upstream gets no Expect."""
    up = DecidingUpstream()
    g = Gateway(config(up.port, "max_body_size: 1MB, continue_timeout: 0s"), workers=1)
    g.start_no_wait()
    try:
        s = connect(g)
        s.sendall(b"POST /silent HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        head, _ = read_head(s)
        assert head == CONTINUE
        s.sendall(b"hello")
        resp = read_all(s)
        s.close()
        assert resp.startswith(b"HTTP/1.1 200 ") and b"100 Continue" not in resp
        seen = up.only()
        assert "expect" not in dict(seen["fields"]) and seen["body"] == b"hello"
    finally:
        g.stop()
        up.stop()


def test_a_continue_timeout_past_30s_is_refused_by_check_config(tmp_path):
    cfg = tmp_path / "tg.yaml"
    cfg.write_text(config(1, "continue_timeout: 31s").replace("{PORT}", "1").replace("{ADMIN}", "2"))
    out = subprocess.run([BIN, "check-config", str(cfg)], capture_output=True, text=True, timeout=30)
    assert out.returncode != 0
    assert "limits.continue_timeout: must be at most 30s" in out.stdout + out.stderr
