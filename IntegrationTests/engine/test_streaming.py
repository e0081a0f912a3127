"""Responses stream through: a large or slow body is never buffered whole."""
import socket
import threading
import time

import requests

from support.pacing import paced
from support.waiting import wait_for


def test_large_response_streams_with_bounded_memory(gateway):
    size = 512 * 1024 * 1024
    base = gateway.rss_kb()
    peak = [base]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], gateway.rss_kb())
            stop.wait(0.02)  # a sample each 20 ms, until told to stop

    t = threading.Thread(target=sample)
    t.start()
    got = 0
    with requests.get(gateway.url(f"/big?size={size}"), stream=True, timeout=120) as r:
        assert r.status_code == 200
        assert r.headers["Content-Length"] == str(size)
        for chunk in r.iter_content(1 << 20):
            got += len(chunk)
    stop.set()
    t.join()
    assert got == size
    # Half a gigabyte went through; the gateway grew by far less than that.
    assert peak[0] - base < 64 * 1024, (base, peak[0])


def test_slow_client_applies_backpressure(gateway):
    """A client that reads slowly must not make the gateway buffer the upstream's body."""
    size = 256 * 1024 * 1024
    base = gateway.rss_kb()
    s = socket.create_connection(("127.0.0.1", gateway.port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    s.sendall(f"GET /big?size={size} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
    got = 0
    for _ in paced(range(20), 0.1):
        got += len(s.recv(64 * 1024))
    grown = gateway.rss_kb() - base
    s.close()
    assert got > 0
    assert grown < 32 * 1024, grown


def test_chunked_upstream_response_is_rechunked(gateway):
    size = 3 * 1024 * 1024 + 17
    r = requests.get(gateway.url(f"/chunked?size={size}"))
    assert r.status_code == 200
    assert len(r.content) == size
    assert r.headers.get("Transfer-Encoding") == "chunked"


def test_client_disconnect_mid_stream_is_harmless(gateway):
    for _ in range(5):
        s = socket.create_connection(("127.0.0.1", gateway.port))
        s.sendall(b"GET /big?size=100000000 HTTP/1.1\r\nHost: t\r\n\r\n")
        s.recv(65536)
        s.close()
    assert requests.get(gateway.url("/echo")).status_code == 200
    assert gateway.proc.poll() is None
    # Nothing is left counted as in flight or open (drain would otherwise wait for them).
    # The gateway notices each close asynchronously: poll, bounded. Each client had the head
    # (200) when it left: counted with that status, not 499 (which is for a client gone before).
    def settled():
        m = requests.get(f"http://127.0.0.1:{gateway.admin}/metrics").text
        return ("tokengate_inflight_requests 0" in m and "tokengate_client_connections 0" in m
                and 'status="200"} 6' in m and m)
    m = wait_for(settled, 10, interval=0.1, what="no request in flight, no connection open, six 200s")
    assert 'status="499"' not in m, m
