"""HTTP/2 upstreams that misbehave, from a scripted h2c server (python-hyper's `h2`,
IntegrationTests/support/h2_upstream.py): resets before and after the head, REFUSED_STREAM and
GOAWAY (tried again up to three times), a silent upstream (504, and its stream reset), and
clients that leave: every stream they abandon is reset upstream at once, so the upstream does no
work nobody waits for (the "MadeYouReset" class, CVE-2025-8671). Trailers pass both ways."""
import http.client
import signal
import socket
import time

import pytest
import requests

from support.h2_client import H2Connection
from support.h2_upstream import H2Upstream
from support.waiting import wait_for

CANCEL = 8


@pytest.fixture
def h2up():
    u = H2Upstream()
    yield u
    u.stop()


def config(port, timeout="2s"):
    return f"""
listen: {{ address: 127.0.0.1:{{PORT}}, http2: true }}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 1
limits: {{ shutdown_grace: 5s }}
upstreams:
  app: {{ url: "http://127.0.0.1:{port}", protocol: h2c, timeout: {timeout}, connect_timeout: 1s }}
routes:
  - match: {{ path_prefix: / }}
    upstream: app
    auth: none
"""


@pytest.fixture
def gw(h2up, gateway_factory):
    return gateway_factory(config(h2up.port))


def test_http1_client_gets_the_h2_answer(gw):
    r = requests.get(gw.url("/ok"), timeout=5)
    assert r.status_code == 200 and r.text == "ok" and r.raw.version == 11


def test_reset_before_the_head_is_502(gw, h2up):
    r = requests.get(gw.url("/reset-before-head"), timeout=5)
    assert r.status_code == 502
    assert r.json()["error"] == "bad_gateway"


def test_reset_after_the_head_cuts_the_answer(gw):
    # HTTP/1.1: the connection is cut (with the head and the 5 bytes, or before they went
    # out, when the reset came in the same read): never an answer that looks whole.
    c = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=5)
    c.request("GET", "/reset-after-head")
    with pytest.raises((http.client.IncompleteRead, http.client.RemoteDisconnected)):
        r = c.getresponse()
        assert r.status == 200
        r.read()
    # HTTP/2: the client's stream is reset; the connection serves the next stream.
    with H2Connection(gw.port) as h:
        a = h.request("GET", "/reset-after-head")
        assert a.status == 200 and a.reset is not None and not a.ended
        assert h.request("GET", "/ok").body == b"ok"


def test_refused_stream_goes_again_three_times_then_502(gw, h2up):
    # REFUSED_STREAM: nothing was processed (RFC 9113 §8.7). The gateway tries again after
    # 5, 10 and 20 ms (a server at its stream limit may still count a stream that just
    # closed), then answers 502.
    started = time.monotonic()
    r = requests.get(gw.url("/refuse"), timeout=5)
    assert r.status_code == 502
    assert h2up.paths.count("/refuse") == 4
    assert time.monotonic() - started >= 0.035


def test_refused_stream_with_a_body_goes_again_whole(gw, h2up):
    # A server at its stream limit refuses with REFUSED_STREAM: nothing was processed, so
    # the gateway sends the request again, body and all (kept while it is small).
    body = b"x" * 5000
    r = requests.post(gw.url("/refuse-once"), data=body, timeout=5)
    assert r.status_code == 200 and r.text == "5000"
    assert h2up.paths.count("/refuse-once") == 2
    # A body past what is kept for a replay is not sent again: 502.
    h2up.paths.clear()
    r = requests.post(gw.url("/refuse"), data=b"y" * (100 << 10), timeout=5)
    assert r.status_code == 502 and h2up.paths.count("/refuse") == 1


@pytest.mark.parametrize("buffering", ["true", "false"])
def test_a_large_body_goes_whole_to_an_upstream_that_sends_no_window_update(gateway_factory, buffering):
    # The upstream's window holds the whole body, so nothing it sends would wake the
    # gateway: framing must go on by itself each time the socket took what waited.
    up = H2Upstream(window=(1 << 31) - 1)
    try:
        g = gateway_factory(config(up.port, timeout="3s").replace("auth: none", f"auth: none\n    request_buffering: {buffering}")
                            .replace("shutdown_grace: 5s", "shutdown_grace: 5s, max_body_size: 16MB"))
        for _ in range(3):
            r = requests.post(g.url("/length"), data=b"z" * (6 << 20), timeout=10)
            assert r.status_code == 200 and r.text == str(6 << 20)
    finally:
        up.stop()


def test_goaway_streams_go_again_on_a_new_connection(gw, h2up):
    # A stream past GOAWAY's last stream id was not processed: nghttp2 closes it with
    # REFUSED_STREAM, and it goes again like one (on a new connection: this one is going).
    r = requests.get(gw.url("/goaway"), timeout=5)
    assert r.status_code == 502
    assert h2up.paths.count("/goaway") == 4
    assert h2up.connections >= 2
    # The pool is not left with a dead connection.
    assert requests.get(gw.url("/ok"), timeout=5).text == "ok"


def test_silent_upstream_is_504_and_its_stream_reset(h2up, gateway_factory):
    g = gateway_factory(config(h2up.port, timeout="500ms"))
    start = time.monotonic()
    r = requests.get(g.url("/slow"), timeout=10)
    assert r.status_code == 504
    assert time.monotonic() - start < 3
    wait_for(lambda: any(code == CANCEL for _, code in h2up.resets), timeout=2, what="a CANCEL upstream")


def test_a_client_that_leaves_resets_the_upstream_stream(gw, h2up):
    s = socket.create_connection(("127.0.0.1", gw.port))
    s.sendall(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
    wait_for(lambda: "/slow" in h2up.paths, timeout=3, what="the request upstream")
    s.close()
    wait_for(lambda: len(h2up.resets) == 1, timeout=1, what="the reset upstream")
    assert h2up.resets[0][1] == CANCEL


def test_every_stream_a_client_resets_is_reset_upstream(gw, h2up):
    # MadeYouReset's shape from the client: open streams and reset them. Each one the gateway
    # passed on is reset upstream within a second; none is left running there.
    with H2Connection(gw.port) as h:
        ids = [h.send_request("GET", "/slow") for _ in range(50)]
        h.flush()
        wait_for(lambda: h2up.paths.count("/slow") == 50, timeout=5, what="50 requests upstream")
        for sid in ids:
            h.conn.reset_stream(sid, CANCEL)
        h.flush()
        wait_for(lambda: len(h2up.resets) == 50, timeout=1, what="50 resets upstream")
        assert {code for _, code in h2up.resets} == {CANCEL}
        assert h.request("GET", "/ok").body == b"ok"


def test_trailers_reach_an_h2_client(gw):
    with H2Connection(gw.port) as h:
        a = h.request("GET", "/trailers")
    assert a.status == 200 and a.body == b"data" and a.ended
    assert ("x-checksum", "1234") in [(k.decode() if isinstance(k, bytes) else k,
                                       v.decode() if isinstance(v, bytes) else v) for k, v in a.trailers]


def test_request_trailers_reach_an_h2_upstream(gw):
    # After the last DATA frame, as a HEADERS frame that ends the stream; the gateway's
    # rules drop a forged identity header and a credential.
    with H2Connection(gw.port) as h:
        a = h.request("POST", "/echo-trailers", body=b"y" * 100_000,
                      trailers=[("x-checksum", "42"), ("x-forwarded-user", "mallory"), ("authorization", "Bearer x")])
    assert a.status == 200 and a.body == b"x-checksum: 42\n"


def test_http1_chunked_trailers_reach_an_h2_upstream(gw):
    from support.gateway import raw_request
    status, resp = raw_request(gw.port, (
        b"POST /echo-trailers HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3\r\nabc\r\n0\r\nX-Checksum: 7\r\nX-Forwarded-User: mallory\r\n\r\n"))
    # The answer is chunked (no length from the h2 upstream): one chunk, then the last.
    assert status == 200 and resp.endswith(b"\r\n\r\ne\r\nx-checksum: 7\n\r\n0\r\n\r\n")


def test_grpc_timeout_bounds_the_upstream_call(h2up, gateway_factory):
    # The upstream's own timeout is long; the call's grpc-timeout (300 ms) ends it, and the
    # upstream's stream is reset rather than left running.
    g = gateway_factory(config(h2up.port, timeout="10s"))
    with H2Connection(g.port) as h:
        start = time.monotonic()
        a = h.request("POST", "/slow", headers=[("content-type", "application/grpc"), ("te", "trailers"),
                                                 ("grpc-timeout", "300m")], body=b"\0\0\0\0\0")
        elapsed = time.monotonic() - start
    assert 0.25 < elapsed < 2
    # The gateway's 504, as gRPC's DEADLINE_EXCEEDED in a trailers-only answer.
    assert a.status == 200 and a.header("grpc-status") == "4" and a.ended
    wait_for(lambda: any(code == CANCEL for _, code in h2up.resets), timeout=1, what="a CANCEL upstream")


def test_reload_lets_the_old_pools_connections_go(gw, h2up):
    # A reload with another upstream setting gets new pools (a new connection upstream); the
    # old pool goes with its idle HTTP/2 connection, and the gateway serves on.
    assert requests.get(gw.url("/ok"), timeout=5).text == "ok"
    assert h2up.connections == 1
    gw.write_config(config(h2up.port, timeout="3s"))
    gw.signal(signal.SIGHUP)
    wait_for(lambda: gw.logged("config reloaded"), timeout=5, what="the reload")
    for _ in range(20):
        assert requests.get(gw.url("/ok"), timeout=5).text == "ok"
    assert gw.proc.poll() is None
    assert h2up.connections == 2
