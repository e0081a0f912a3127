"""Request smuggling from the attacker's side: raw bytes to a real gateway in front of a real
upstream that records every request it parses (with llhttp, through httptools). For each
case the client gets the refusal the gateway's engine gives (RFC 9112), the connection
closes after it, and the upstream never sees more requests than the client meant to send.
"""
import socket
import threading
import time

import httptools
import pytest

from support.gateway import Gateway, RawServer
from support.pacing import paced

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


class RecordingUpstream(RawServer):
    """A keep-alive HTTP/1.1 server on 127.0.0.1 that answers 200 to each request it
    parses and records (method, target, headers, body) for each."""

    def __init__(self):
        self.requests = []
        self.lock = threading.Lock()
        super().__init__()

    def serve(self, conn):
        upstream = self

        class Proto:
            def __init__(self):
                self.headers, self.body, self.url = [], b"", b""

            def on_url(self, url):
                self.url += url

            def on_header(self, name, value):
                self.headers.append((name.decode("latin-1").lower(), value.decode("latin-1")))

            def on_body(self, body):
                self.body += body

            def on_message_complete(self):
                with upstream.lock:
                    upstream.requests.append((parser.get_method().decode(), self.url.decode("latin-1"), self.headers, self.body))
                self.headers, self.body, self.url = [], b"", b""
                conn.sendall(OK)

        proto = Proto()
        parser = httptools.HttpRequestParser(proto)
        conn.settimeout(10)
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                parser.feed_data(data)
        except (OSError, httptools.HttpParserError):
            return
        finally:
            conn.close()

    def count(self):
        with self.lock:
            return len(self.requests)


@pytest.fixture(scope="module")
def recorder():
    r = RecordingUpstream()
    yield r
    r.stop()


@pytest.fixture(scope="module")
def gw(recorder):
    g = Gateway(f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 1
limits: {{ max_body_size: 1MB, header_timeout: 3s }}
upstreams:
  app: {{ url: "http://127.0.0.1:{recorder.port}" }}
routes:
  - match: {{ path_prefix: / }}
    upstream: app
    auth: none
""")
    g.start()
    yield g
    g.stop()


def exchange(port, data, timeout=3, split=None):
    """Sends `data` raw, reads until the gateway closes (or `timeout`): every status code it
    answered, and whether it closed the connection. `split`: `data[:split]` goes alone in a
    first TCP segment, the rest in a second one a moment later, so the gateway reads them
    apart."""
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(timeout)
    if split is not None:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for first in paced([data[:split]], 0.2):
            s.send(first)
        data = data[split:]
    s.sendall(data)
    buf, closed = b"", False
    deadline = time.time() + timeout
    try:
        while time.time() < deadline:
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            buf += chunk
    except socket.timeout:
        pass
    finally:
        s.close()
    return responses(buf), closed, buf


def reached_upstream(gw, recorder, before):
    """The requests the upstream recorded since `before`, once a sentinel request sent now
    has been answered: on the gateway's one worker, anything forwarded before it is recorded
    by then. The sentinel itself is not in the list."""
    statuses, _, _ = exchange(gw.port, b"GET /sentinel HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n")
    assert statuses == [200]
    seen = recorder.requests[before:]
    assert seen and seen[-1][1] == "/sentinel", seen
    return seen[:-1]


def responses(buf):
    """The status of each whole response in `buf`, parsed by llhttp (not by splitting lines:
    a body without a final CRLF runs into the next status line)."""
    statuses = []

    class Proto:
        def on_message_complete(self):
            statuses.append(parser.get_status_code())

    parser = httptools.HttpResponseParser(Proto())
    try:
        parser.feed_data(buf)
    except httptools.HttpParserError:
        pass
    return statuses


H = b"Host: a\r\n"

# (name, bytes, expected status). Every case is refused with the connection closed, and the
# upstream sees nothing of it.
REFUSED = [
    # CL.TE and TE.CL: both framings at once (RFC 9112 §6.1: a server MAY reject; we do)
    ("cl-te", b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nG", 400),
    ("te-cl", b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n5c\r\nGPOST / HTTP/1.1\r\n\r\n0\r\n\r\n", 400),
    ("cl-te-case", b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 4\r\ntransfer-ENCODING: chunked\r\n\r\n0\r\n\r\n", 400),
    # TE.TE obfuscations: anything but exactly `chunked`
    ("te-xchunked", b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", 501),
    ("te-identity", b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: identity\r\n\r\nhello", 501),
    ("te-chunked-identity", b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n", 501),
    ("te-two-fields", b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n", 501),
    ("te-chunked-twice", b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", 501),
    ("te-quoted", b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: \"chunked\"\r\n\r\n0\r\n\r\n", 400),
    ("te-vtab", b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\x0b\r\n\r\n0\r\n\r\n", 400),
    ("te-space-before-colon", b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n", 400),
    ("te-leading-space-line", b"POST / HTTP/1.1\r\n Transfer-Encoding: chunked\r\n" + H + b"\r\n0\r\n\r\n", 400),
    ("te-http10", b"POST / HTTP/1.0\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    ("te-empty", b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: \r\n\r\n", 400),
    # Content-Length: one field of digits, nothing else
    ("cl-differing", b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 0\r\nContent-Length: 44\r\n\r\n", 400),
    ("cl-repeated-same", b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc", 400),
    ("cl-list", b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 3, 3\r\n\r\nabc", 400),
    ("cl-plus", b"POST / HTTP/1.1\r\n" + H + b"Content-Length: +3\r\n\r\nabc", 400),
    ("cl-minus", b"POST / HTTP/1.1\r\n" + H + b"Content-Length: -1\r\n\r\n", 400),
    ("cl-inner-space", b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 1 2\r\n\r\n", 400),
    ("cl-hex", b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 0x3\r\n\r\nabc", 400),
    ("cl-overflow", b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 99999999999999999999999\r\n\r\n", 400),
    ("cl-empty", b"POST / HTTP/1.1\r\n" + H + b"Content-Length: \r\n\r\n", 400),
    # the head's own syntax
    ("obs-fold", b"GET / HTTP/1.1\r\n" + H + b"X-A: a\r\n b\r\n\r\n", 400),
    ("bare-cr", b"GET / HTTP/1.1\r\n" + H + b"X-A: a\rb\r\n\r\n", 400),
    ("bare-lf", b"GET / HTTP/1.1\n" + H + b"\r\n", 400),
    ("bare-lf-header", b"GET / HTTP/1.1\r\nHost: a\nX: y\r\n\r\n", 400),
    ("nul-value", b"GET / HTTP/1.1\r\n" + H + b"X-A: a\x00b\r\n\r\n", 400),
    ("nul-target", b"GET /a\x00b HTTP/1.1\r\n" + H + b"\r\n", 400),
    ("space-before-colon", b"GET / HTTP/1.1\r\n" + H + b"X-Forwarded-User : admin\r\n\r\n", 400),
    ("bad-name-char", b"GET / HTTP/1.1\r\n" + H + b"X(A): 1\r\n\r\n", 400),
    ("empty-name", b"GET / HTTP/1.1\r\n" + H + b": 1\r\n\r\n", 400),
    ("double-space-line", b"GET  / HTTP/1.1\r\n" + H + b"\r\n", 400),
    ("absolute-form", b"GET http://evil.example/admin HTTP/1.1\r\n" + H + b"\r\n", 400),
    ("http09", b"GET /\r\n\r\n", 400),
    ("h2-preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
    ("version-17", b"GET / HTTP/1.7\r\n" + H + b"\r\n", 505),
    ("version-lower", b"GET / http/1.1\r\n" + H + b"\r\n", 400),
    ("no-host", b"GET / HTTP/1.1\r\n\r\n", 400),
    ("two-hosts", b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
    # chunked bodies
    ("chunk-size-huge", b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\nx\r\n0\r\n\r\n", 400),
    ("chunk-size-junk", b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n5x\r\nhello\r\n0\r\n\r\n", 400),
    ("chunk-no-crlf", b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n", 400),
    ("chunk-ext-bad", b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n3;a=\"b\x01\"\r\nabc\r\n0\r\n\r\n", 400),
    ("chunk-ext-huge", b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n3;" + b"a" * 9000 + b"\r\nabc\r\n0\r\n\r\n", 400),
    ("trailer-space-colon", b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n0\r\nX : y\r\n\r\n", 400),
    ("trailer-obs-fold", b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n0\r\nX: y\r\n z\r\n\r\n", 400),
    # limits
    ("header-too-long", b"GET / HTTP/1.1\r\n" + H + b"X-A: " + b"a" * 40000 + b"\r\n\r\n", 431),
    ("too-many-headers", b"GET / HTTP/1.1\r\n" + H + b"".join(b"X-%d: 1\r\n" % i for i in range(200)) + b"\r\n", 431),
    ("target-too-long", b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n" + H + b"\r\n", 414),
]


@pytest.mark.parametrize("name,data,status", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused_and_closed_and_nothing_reaches_the_upstream(gw, recorder, name, data, status):
    before = recorder.count()
    statuses, closed, raw = exchange(gw.port, data)
    assert statuses == [status], (name, raw[:300])
    assert closed, "the connection closes after a refusal"
    # Whatever was smuggled behind it stays unparsed: the upstream saw nothing at all.
    assert reached_upstream(gw, recorder, before) == []


# A CR not followed by LF before a request line: (name, bytes up to and with the CR, the rest,
# requests answered before the refusal). The verdict must not depend on where the bytes are
# cut, here right after the CR, so that it arrives alone.
LONE_CR = [
    ("before-the-first-request", b"\r", b"GET / HTTP/1.1\r\n" + H + b"\r\n", 0),
    ("before-a-pipelined-request", b"GET /one HTTP/1.1\r\n" + H + b"\r\n\r", b"GET /two HTTP/1.1\r\n" + H + b"\r\n", 1),
]


@pytest.mark.parametrize("name,first,rest,answered", LONE_CR, ids=[c[0] for c in LONE_CR])
def test_a_lone_cr_is_refused_in_one_segment_or_two(gw, recorder, name, first, rest, answered):
    for split in [None, len(first)]:
        before = recorder.count()
        statuses, closed, raw = exchange(gw.port, first + rest, split=split)
        assert statuses == [200] * answered + [400], (split, raw[:300])
        assert closed, "the connection closes after a refusal"
        seen = reached_upstream(gw, recorder, before)
        assert len(seen) == answered, seen


def test_a_valid_request_pipelined_after_a_bad_one_is_never_answered(gw, recorder):
    before = recorder.count()
    statuses, closed, _ = exchange(gw.port, b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 1\r\nContent-Length: 2\r\n\r\nx"
                                   b"GET /admin HTTP/1.1\r\n" + H + b"\r\n")
    assert statuses == [400] and closed
    assert reached_upstream(gw, recorder, before) == []


def test_pipelined_valid_requests_are_answered_in_order(gw, recorder):
    before = recorder.count()
    data = (b"GET /one HTTP/1.1\r\n" + H + b"\r\n"
            b"POST /two HTTP/1.1\r\n" + H + b"Content-Length: 5\r\n\r\nhello"
            b"POST /three HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n0\r\nX-T: 1\r\n\r\n"
            b"GET /four HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n")
    statuses, closed, _ = exchange(gw.port, data)
    assert statuses == [200, 200, 200, 200] and closed
    seen = recorder.requests[before:]
    assert [(m, u) for m, u, _, _ in seen] == [("GET", "/one"), ("POST", "/two"), ("POST", "/three"), ("GET", "/four")]
    assert seen[1][3] == b"hello" and seen[2][3] == b"abc"


def test_the_answer_names_the_gateways_version_not_the_clients(gw):
    _, _, raw = exchange(gw.port, b"GET / HTTP/1.0\r\n" + H + b"\r\n")
    assert raw.startswith(b"HTTP/1.1 200 ")


def test_obfuscated_but_valid_framings_pass_once(gw, recorder):
    # Case and OWS are not obfuscation: `CHUNKED` and `\tchunked` are the chunked coding.
    for te in [b"CHUNKED", b"\tchunked", b"chunked "]:
        before = recorder.count()
        statuses, _, _ = exchange(gw.port, b"POST /te HTTP/1.1\r\n" + H + b"Transfer-Encoding: " + te
                                  + b"\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
        assert statuses == [200], te
        assert recorder.count() == before + 1 and recorder.requests[-1][3] == b"abc"
