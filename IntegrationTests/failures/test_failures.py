"""Upstream failures and limits: 413, 502, 504 — with a JSON body and the request id, never a hang."""
import select
import socket
import time

import requests

from support.gateway import basic_config, free_port
from support.waiting import wait_for


def assert_gateway_error(r, status, code):
    assert r.status_code == status
    body = r.json()
    assert body["error"] == code
    assert body["request_id"] == r.headers["X-Request-Id"]
    assert "error_description" in body


def test_413_when_body_exceeds_limit(upstream, gateway_factory):
    g = gateway_factory(basic_config(upstream.port, body="1KB"))
    assert requests.post(g.url("/echo"), data=b"a" * 1024).status_code == 200
    r = requests.post(g.url("/echo"), data=b"a" * 1025)
    assert r.status_code == 413
    # Chunked request bodies are counted too.
    r = requests.post(g.url("/echo"), data=iter([b"a" * 800, b"b" * 800]))
    assert r.status_code == 413


def test_502_when_upstream_refuses_connections(gateway_factory):
    g = gateway_factory(basic_config(free_port()))
    t = time.time()
    r = requests.get(g.url("/x"), timeout=10)
    assert_gateway_error(r, 502, "bad_gateway")
    assert time.time() - t < 3


def test_502_when_upstream_resets(gateway):
    r = requests.get(gateway.url("/close"), timeout=10)
    assert_gateway_error(r, 502, "bad_gateway")


def test_504_when_upstream_is_too_slow(upstream, gateway_factory):
    g = gateway_factory(basic_config(upstream.port, timeout="500ms"))
    t = time.time()
    r = requests.get(g.url("/slow?delay=3"), timeout=10)
    assert_gateway_error(r, 504, "gateway_timeout")
    assert 0.4 < time.time() - t < 2.5
    # The gateway still serves afterwards.
    assert requests.get(g.url("/echo")).status_code == 200


def test_504_on_connect_timeout(gateway_factory):
    # A listener whose accept queue is full: the kernel drops further SYNs, so connect hangs.
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(0)
    port = lsock.getsockname()[1]
    fillers = []
    for _ in range(4):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(s)
    # The queue (of one) is full once a filler's handshake has completed: it is writable.
    wait_for(lambda: select.select([], fillers, [], 0)[1], 5, interval=0.01, what="a filler connected")
    try:
        g = gateway_factory(basic_config(port, timeout="10s", connect_timeout="300ms"))
        t = time.time()
        r = requests.get(g.url("/x"), timeout=15)
        elapsed = time.time() - t
        assert_gateway_error(r, 504, "gateway_timeout")
        assert elapsed < 5, elapsed
    finally:
        for s in fillers:
            s.close()
        lsock.close()


def test_metrics_count_upstream_errors(gateway_factory):
    g = gateway_factory(basic_config(free_port()))
    requests.get(g.url("/x"))
    m = requests.get(f"http://127.0.0.1:{g.admin}/metrics").text
    assert 'tokengate_upstream_errors_total{kind="connectionFailed"} 1' in m
    assert 'status="502"} 1' in m
