"""What the gateway passes on from an upstream's answer: interim responses in order, nothing
after a response's end, no header injection through the reason phrase. Each test sends what
an outside security review sent (RFC 9110 §15.2, RFC 9112 §4) and checks the attack fails."""
import json
import socket

import requests

from support.gateway import raw_request


def test_interim_1xx_is_passed_on_and_never_poisons_the_next_client(one_worker):
    # The upstream answers 103 Early Hints, then 200: the client gets both, in order (RFC
    # 9110 §15.2), and the next clients get their own answers, not a leftover.
    with socket.create_connection(("127.0.0.1", one_worker.port), timeout=5) as c:
        c.sendall(b"GET /early HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        resp = b""
        while chunk := c.recv(65536):
            resp += chunk
    assert resp.count(b"HTTP/1.1 103 ") == 1 and resp.count(b"HTTP/1.1 200 ") == 1, resp
    assert resp.index(b"HTTP/1.1 103 ") < resp.index(b"HTTP/1.1 200 ")
    assert b"rel=preload" in resp.split(b"HTTP/1.1 200 ")[0]
    for i in range(3):
        s, resp = raw_request(one_worker.port, f"GET /echo/{i} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".encode())
        assert s == 200 and json.loads(resp.split(b"\r\n\r\n", 1)[1])["path"] == f"/echo/{i}"


def test_stray_bytes_after_a_response_are_not_served_to_anyone(one_worker):
    r = requests.get(one_worker.url("/poison"))
    assert r.status_code == 200 and r.text == "ok"
    for i in range(3):
        r = requests.get(one_worker.url(f"/echo/{i}"))
        assert r.status_code == 200 and "POISON" not in r.text and r.json()["path"] == f"/echo/{i}"


def test_upstream_reason_phrase_with_cr_is_replaced(one_worker):
    s, resp = raw_request(one_worker.port, b"GET /reason HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    status_line = resp.split(b"\n", 1)[0]
    assert b"\rSet-Cookie" not in status_line and b"attacker" not in resp.split(b"\r\n\r\n", 1)[0]
