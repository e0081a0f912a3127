"""The known HTTP/2 attack classes, sent as raw frames (hyperframe, hpack) at a real gateway:
each is cut off by a bound, and the gateway keeps serving everyone else meanwhile. The first
tests check how each is cut off; test_attack_stays_within_bounds runs the attack table of
h2_attacks.py (the one bench/h2_attacks.py runs against nginx too) and holds each attack to
its resource bounds."""
import json
import socket
import time

import hpack
import pytest
from hyperframe.frame import ContinuationFrame, HeadersFrame, PingFrame, RstStreamFrame, SettingsFrame

from support import h2_attacks
from support.gateway import basic_config
from support.h2_client import H2Connection, frames

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
INTERNAL_ERROR = 0x2
ENHANCE_YOUR_CALM = 0xB
REFUSED_STREAM = 0x7


@pytest.fixture
def g(upstream, gateway_factory):
    config = basic_config(upstream.port).replace(
        "listen: 127.0.0.1:{PORT}", "listen: { address: 127.0.0.1:{PORT}, http2: true }").replace(
        "shutdown_grace: 5s", "shutdown_grace: 5s, header_timeout: 1s, body_timeout: 1s, client_idle_timeout: 2s")
    return gateway_factory(config)


def raw(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(PREFACE + SettingsFrame(0).serialize())
    return s


def request_block(path="/echo", extra=()):
    return hpack.Encoder().encode([(":method", "GET"), (":path", path), (":scheme", "http"),
                                   (":authority", "127.0.0.1")] + list(extra))


def read_until_closed(s, timeout):
    """Everything the server sends until it closes (or `timeout` passes): bytes, closed?"""
    s.settimeout(0.2)
    deadline = time.time() + timeout
    got = b""
    while time.time() < deadline:
        try:
            data = s.recv(65536)
        except socket.timeout:
            continue
        except ConnectionError:
            return got, True
        if not data:
            return got, True
        got += data
    return got, False


def goaway_code(data):
    """The error code of the first GOAWAY frame in `data`, or None."""
    i = 0
    while i + 9 <= len(data):
        length = int.from_bytes(data[i:i + 3], "big")
        if data[i + 3] == 0x7 and i + 9 + 8 <= len(data):
            return int.from_bytes(data[i + 13:i + 17], "big")
        i += 9 + length
    return None


def still_serving(port):
    with H2Connection(port) as c:
        return c.request("GET", "/echo").status == 200


def test_rapid_reset_is_cut_off(g):
    """CVE-2023-44487: streams opened and reset at once, faster than any answer."""
    s = raw(g.port)
    frames = b"".join(HeadersFrame(sid, request_block(), flags=["END_HEADERS", "END_STREAM"]).serialize()
                      + RstStreamFrame(sid, error_code=0x8).serialize() for sid in range(1, 2 * 1500, 2))
    try:
        s.sendall(frames)
    except ConnectionError:
        pass
    got, closed = read_until_closed(s, 10)
    # nghttp2's reset rate limit (1000 at once, then 33/s) ends the connection.
    assert closed and goaway_code(got) in (INTERNAL_ERROR, ENHANCE_YOUR_CALM)
    assert still_serving(g.port)


def test_continuation_flood_is_cut_off(g):
    """CVE-2024-27316 class: a header block that never ends, one CONTINUATION at a time."""
    s = raw(g.port)
    s.sendall(HeadersFrame(1, request_block()).serialize())
    try:
        for _ in range(100):
            s.sendall(ContinuationFrame(1, b"\x40\x01a\x01b").serialize())
    except ConnectionError:
        pass
    got, closed = read_until_closed(s, 5)
    assert closed and goaway_code(got) is not None
    assert still_serving(g.port)


def test_header_block_that_stops_is_timed_out(g):
    """Half a header block, then silence: no other frame may come, so the connection goes
    after header_timeout (1 s here)."""
    s = raw(g.port)
    s.sendall(HeadersFrame(1, request_block()).serialize())
    started = time.time()
    _, closed = read_until_closed(s, 5)
    assert closed and time.time() - started < 3


def test_hpack_bomb_is_bounded(g):
    """A small header block that decodes to a huge list (one big entry, indexed over and
    over): refused at the header size bound with 431 and its JSON body, the stream ended with
    RST_STREAM(NO_ERROR) at most (never INTERNAL_ERROR), the connection goes on."""
    with H2Connection(g.port) as c:
        bomb = [("x-bomb", "b" * 4000)] * 200
        a = c.request("GET", "/echo", headers=bomb)
        assert a.status == 431, (a.headers, a.reset)
        assert json.loads(a.body)["error"] == "invalid_request"
        assert a.reset in (None, 0), a.reset
        assert c.request("GET", "/echo").status == 200


def test_hpack_bomb_on_a_grpc_call_is_resource_exhausted(g):
    """The same bomb on a call that said it is gRPC before it: trailers-only, 8
    RESOURCE_EXHAUSTED, as docs/proxy.md promises for metadata past the limits."""
    with H2Connection(g.port) as c:
        bomb = [("content-type", "application/grpc"), ("te", "trailers")] + [("x-bomb", "b" * 4000)] * 200
        a = c.request("POST", "/pkg.Svc/Call", headers=bomb)
        assert a.status == 200 and a.header("grpc-status") == "8", (a.headers, a.reset)
        assert a.reset in (None, 0), a.reset
        assert c.request("GET", "/echo").status == 200


def test_raw_hpack_bomb_streams_each_get_431(g):
    """The attack's bytes (h2_attacks.hpack_bomb's block: one 4,000-byte entry, then 16,000
    one-byte references to it, 64 MB decoded from 20 KB): each stream gets its 431 and
    RST_STREAM(NO_ERROR), and the next stream on the connection is served."""
    s = raw(g.port)
    seed = b"\x40\x06x-bomb\x7f" + bytes([(3873 & 0x7F) | 0x80, 3873 >> 7]) + b"b" * 4000
    refs = b"\xbe" * 16000
    got = b""
    for sid in (1, 3):
        # The seed each time: the request's own literals are newer table entries otherwise.
        block = request_block("/echo/bomb") + seed + refs
        chunks = [block[i:i + 16384] for i in range(0, len(block), 16384)]
        data = HeadersFrame(sid, chunks[0], flags=["END_STREAM"] + (["END_HEADERS"] if len(chunks) == 1 else [])).serialize()
        for j, chunk in enumerate(chunks[1:], 1):
            data += ContinuationFrame(sid, chunk, flags=["END_HEADERS"] if j == len(chunks) - 1 else []).serialize()
        s.sendall(data)
    # A plain request on stream 5, with a fresh encoder's block (no dynamic-table references).
    s.sendall(HeadersFrame(5, hpack.Encoder().encode([(":method", "GET"), (":path", "/echo"), (":scheme", "http"),
                                                     (":authority", "127.0.0.1")]),
                           flags=["END_STREAM", "END_HEADERS"]).serialize())
    deadline = time.time() + 10
    s.settimeout(1)
    while time.time() < deadline and sum(1 for f in frames(got) if f[0] == 0x1 and f[2] == 5) == 0:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            continue
        if not chunk:
            break
        got += chunk
    decoder = hpack.Decoder()
    statuses, resets = {}, {}
    for kind, _, stream, payload in frames(got):
        if kind == 0x1:
            statuses.setdefault(stream, dict(decoder.decode(payload)).get(":status"))
        elif kind == 0x3:
            resets[stream] = int.from_bytes(payload, "big")
    assert statuses.get(1) == "431" and statuses.get(3) == "431", (statuses, resets, [(f[0], f[2], f[3][:40]) for f in frames(got) if f[0] != 0x1])
    assert statuses.get(5) == "200", statuses
    assert all(code == 0 for code in resets.values()), resets


def test_ping_flood_without_reading_is_cut_off(g):
    """PINGs that must be acknowledged, from a client that never reads the acks."""
    s = raw(g.port)
    s.settimeout(5)
    ping = PingFrame(0, opaque_data=b"12345678").serialize()
    sent = 0
    try:
        for _ in range(200):
            s.sendall(ping * 500)
            sent += 500
    except (ConnectionError, socket.timeout):
        pass
    got, closed = read_until_closed(s, 10)
    assert closed
    assert still_serving(g.port)


def test_oversized_settings_frame_is_cut_off(g):
    """A SETTINGS frame of 64 entries (each one work for the server): past 32, a connection
    error."""
    s = raw(g.port)
    entries = b"".join((0x3).to_bytes(2, "big") + (100).to_bytes(4, "big") for _ in range(64))
    try:
        s.sendall(len(entries).to_bytes(3, "big") + b"\x04\x00" + (0).to_bytes(4, "big") + entries)
    except ConnectionError:
        pass
    got, closed = read_until_closed(s, 5)
    assert closed and goaway_code(got) == ENHANCE_YOUR_CALM
    assert still_serving(g.port)


def test_streams_past_the_concurrency_limit_are_refused(gateway_factory):
    """140 streams in one write to an upstream that never answers: 128 stay open (waiting),
    the rest are refused (REFUSED_STREAM, RFC 9113 §5.1.2), and nothing else happens. (Sent
    in one write, they come in one read: at 128 open exchanges the gateway stops reading the
    connection, so streams sent later wait unread instead.)"""
    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(512)  # never accepted: connections wait in the backlog
    try:
        config = basic_config(hole.getsockname()[1], timeout="10s", connect_timeout="10s").replace(
            "listen: 127.0.0.1:{PORT}", "listen: { address: 127.0.0.1:{PORT}, http2: true }")
        g = gateway_factory(config)
        with H2Connection(g.port) as c:
            ids = [c.send_request("GET", f"/wait/{i}", flush=False) for i in range(140)]
            c.flush()
            deadline = time.time() + 2
            while time.time() < deadline:
                c.pump(0.2)
            refused = [i for i in ids if c.answers[i].reset == REFUSED_STREAM]
            assert len(refused) == 140 - 128
            assert not any(c.answers[i].ended for i in ids)
    finally:
        hole.close()


def test_body_that_stops_is_timed_out(g):
    """Ten bytes of an announced hundred, then silence: past body_timeout (1 s) the stream
    ends (an answer or a reset), and the connection serves on."""
    with H2Connection(g.port) as c:
        sid = c.send_request("POST", "/echo", headers=[("content-length", "100")], body=None, end_stream=False)
        c.conn.send_data(sid, b"x" * 10)
        c.flush()
        started = time.time()
        a = c.collect([sid], timeout=5)[sid]
        assert time.time() - started < 3
        assert a.status in (408, 502) or a.reset is not None
        assert c.request("GET", "/echo").status == 200


def test_idle_connection_goes_with_goaway(g):
    s = raw(g.port)
    started = time.time()
    got, closed = read_until_closed(s, 6)
    assert closed and goaway_code(got) == 0 and 1.5 < time.time() - started < 5


@pytest.mark.parametrize("rest", [b"\r\nXX\r\n\r\n", b"foo\r\n\r\n", b"\r\nSM\r\nxx"])
def test_a_connection_that_starts_like_the_preface_but_is_not_one_gets_goaway(g, rest):
    """RFC 9113 §3.4: on a plain port that speaks both, the preface's first line is HTTP/2; a
    wrong rest is a connection error PROTOCOL_ERROR, said with a GOAWAY (as nginx does), never
    a silent close or an HTTP/1.1 answer."""
    s = socket.create_connection(("127.0.0.1", g.port), timeout=5)
    s.sendall(b"PRI * HTTP/2.0\r\n" + rest)
    got, closed = read_until_closed(s, 5)
    assert closed and goaway_code(got) == 0x1 and not got.startswith(b"HTTP/1.1")
    assert still_serving(g.port)


def test_garbage_after_the_preface_is_a_connection_error(g):
    s = socket.create_connection(("127.0.0.1", g.port), timeout=5)
    s.sendall(PREFACE + b"\x00\x00\x04\x09\x00\x00\x00\x00\x01" + b"junk")
    got, closed = read_until_closed(s, 5)
    assert closed and goaway_code(got) == 0x1
    assert still_serving(g.port)


def test_client_that_grants_no_window_is_timed_out(g):
    """SETTINGS_INITIAL_WINDOW_SIZE 0 and a large answer: nothing can go out, and the
    stream is given up (RST_STREAM CANCEL) after client_idle_timeout (2 s here), as an
    HTTP/1.1 client that does not read is."""
    s = socket.create_connection(("127.0.0.1", g.port), timeout=10)
    s.sendall(PREFACE + SettingsFrame(0, settings={0x4: 0}).serialize()
              + HeadersFrame(1, request_block("/big?size=1000000"), flags=["END_HEADERS", "END_STREAM"]).serialize())
    started = time.time()
    s.settimeout(0.2)
    got = b""
    while time.time() - started < 6 and not any(f[0] == 0x3 and f[2] == 1 for f in frames(got)):
        try:
            got += s.recv(65536)
        except socket.timeout:
            pass
    resets = [f for f in frames(got) if f[0] == 0x3 and f[2] == 1]
    assert resets and int.from_bytes(resets[0][3], "big") == 0x8
    assert 1.5 < time.time() - started < 5
    assert still_serving(g.port)


def test_reset_uploads_give_their_window_back(upstream, gateway_factory):
    """Uploads the gateway has not read yet (their upstream does not answer), reset by the
    client: their bytes are credited back to the connection's window, so after 25 of them
    (5 MB, more than the 4 MiB window) the connection still takes an upload."""
    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(64)
    try:
        config = basic_config(upstream.port, timeout="10s").replace(
            "listen: 127.0.0.1:{PORT}", "listen: { address: 127.0.0.1:{PORT}, http2: true }").replace(
            "upstreams:\n", f"upstreams:\n  hole: {{ url: \"http://127.0.0.1:{hole.getsockname()[1]}\", timeout: 10s }}\n").replace(
            "routes:\n", "routes:\n  - match: { path_prefix: /hole/ }\n    upstream: hole\n    auth: none\n")
        g = gateway_factory(config)
        with H2Connection(g.port) as c:
            for _ in range(25):
                sid = c.send_request("POST", "/hole/x", body=b"z" * 200_000)
                deadline = time.time() + 5
                while sid in c.pending and time.time() < deadline:
                    c.pump(0.1)
                assert sid not in c.pending, "the upload did not get its window"
                c.conn.reset_stream(sid)
                c.flush()
            ok = c.request("POST", "/echo", body=b"y" * 300_000, timeout=10)
            assert ok.status == 200 and json.loads(ok.body)["body_length"] == 300_000
    finally:
        hole.close()


def test_body_pace_holds_on_streams(upstream, gateway_factory):
    """body_deadline bounds an HTTP/2 upload as it bounds an HTTP/1.1 one: a body that keeps
    coming, too slowly to finish in time, is cut at the deadline."""
    config = basic_config(upstream.port).replace(
        "listen: 127.0.0.1:{PORT}", "listen: { address: 127.0.0.1:{PORT}, http2: true }").replace(
        "shutdown_grace: 5s", "shutdown_grace: 5s, body_deadline: 2s")
    g = gateway_factory(config)
    with H2Connection(g.port) as c:
        sid = c.send_request("POST", "/echo", headers=[("content-length", "100")], end_stream=False)
        started = time.time()
        while time.time() - started < 5 and not c.answers[sid].done:
            c.conn.send_data(sid, b"x")
            c.flush()
            c.pump(0.4)
        a = c.answers[sid]
        assert a.done and (a.status == 408 or a.reset is not None)
        assert 1.8 < time.time() - started < 4


@pytest.mark.parametrize("name", list(h2_attacks.ATTACKS))
def test_attack_stays_within_bounds(name, upstream, g):
    """While the attack runs (a few seconds at most): the gateway's RSS grows by less than
    32 MB, a second client's request on a new connection, sent every 50 ms, is answered in
    under 1 s each time, and rapid reset's 20,000 requests get fewer than 2,000 to the
    upstream."""
    r = h2_attacks.run(name, g.port, g.proc.pid, lambda: h2_attacks.attack_requests(upstream))
    print(r)
    if name == "rapid_reset":
        assert r["upstream_requests"] < h2_attacks.RAPID_RESET_UPSTREAM_BOUND, r
        assert r["cut"] and r["goaway"] in (INTERNAL_ERROR, ENHANCE_YOUR_CALM), r
    if name in ("made_you_reset", "empty_frames", "window_update_flood"):
        # The glitch budget: a burst of 1000, then 33 a second; past it, GOAWAY.
        assert r["cut"] and r["goaway"] == ENHANCE_YOUR_CALM, r
    if name == "many_streams":
        # 128 held by the upstream (a second each), the other 872 refused at once; the
        # connection lives on until it is idle.
        assert (r["answered"], r["refused"]) == (128, 872), r
    assert r["probes"] >= 10 and r["probes_failed"] == 0, r
    assert r["rss_growth_mb"] < h2_attacks.RSS_BOUND_MB, r
    assert r["probe_max_s"] < h2_attacks.PROBE_BOUND_S, r
