"""Regression tests for the independent security review of the request path: each sends
what the reviewer sent and checks the attack no longer works."""
import json
import socket

import pytest
import requests

from conftest import basic_config, raw_request


@pytest.fixture
def one_worker(upstream, gateway_factory):
    return gateway_factory(basic_config(upstream.port, workers=1))


def echo_headers(resp):
    body = json.loads(resp.split(b"\r\n\r\n", 1)[1])
    return {k.lower(): v for k, v in body["headers"]}


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


@pytest.mark.parametrize("line", [b"X-Forwarded-User : admin", b"Host\t: evil", b"Transfer-Encoding : chunked"])
def test_header_names_with_whitespace_are_refused(one_worker, line):
    s, _ = raw_request(one_worker.port, b"GET /echo HTTP/1.1\r\nHost: a\r\n" + line + b"\r\nConnection: close\r\n\r\n")
    assert s == 400


def test_underscore_lookalikes_and_routing_headers_do_not_pass(one_worker):
    s, resp = raw_request(one_worker.port, b"GET /echo HTTP/1.1\r\nHost: a\r\nX_Forwarded_User: admin\r\n"
                          b"X_Forwarded_Groups: admins\r\nX-Original-URL: /admin\r\nX-HTTP-Method-Override: DELETE\r\n"
                          b"X-Real-IP: 1.2.3.4\r\nConnection: close\r\n\r\n")
    assert s == 200
    h = echo_headers(resp)
    for name in ["x_forwarded_user", "x_forwarded_groups", "x-original-url", "x-http-method-override", "x-real-ip"]:
        assert name not in h, name


def test_differing_content_lengths_are_refused(one_worker):
    s, resp = raw_request(one_worker.port, b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nContent-Length: 44\r\n\r\n"
                          b"GET /admin/x HTTP/1.1\r\nHost: a\r\nX: y\r\n\r\n")
    assert s == 400
    assert resp.count(b"HTTP/1.1 ") == 1, "the smuggled second request must not be answered"


def test_expect_is_not_forwarded(one_worker):
    s, resp = raw_request(one_worker.port, b"POST /echo HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n"
                          b"Connection: close\r\n\r\nhello", timeout=5)
    final = resp[resp.rfind(b"HTTP/1.1 "):]
    assert final.startswith(b"HTTP/1.1 200")
    assert "expect" not in echo_headers(final)
    assert resp.count(b"X-Request-Id") <= 2  # at most once in a 100 Continue and once in the 200


def test_upstream_reason_phrase_with_cr_is_replaced(one_worker):
    s, resp = raw_request(one_worker.port, b"GET /reason HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    status_line = resp.split(b"\n", 1)[0]
    assert b"\rSet-Cookie" not in status_line and b"attacker" not in resp.split(b"\r\n\r\n", 1)[0]


def test_every_forwarded_for_line_from_a_trusted_proxy_is_kept(upstream, gateway_factory):
    g = gateway_factory(basic_config(upstream.port, extra="trusted_proxies: [127.0.0.1/32]", workers=1))
    s, resp = raw_request(g.port, b"GET /echo HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 6.6.6.6\r\n"
                          b"X-Forwarded-For: 203.0.113.7\r\nConnection: close\r\n\r\n")
    assert echo_headers(resp)["x-forwarded-for"] == "6.6.6.6, 203.0.113.7, 127.0.0.1"


def test_every_connection_header_is_honoured(one_worker):
    s, resp = raw_request(one_worker.port, b"GET /echo HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n"
                          b"Connection: X-Secret, close\r\nX-Secret: 1\r\n\r\n")
    assert "x-secret" not in echo_headers(resp)
