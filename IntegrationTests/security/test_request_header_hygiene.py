"""What the gateway refuses or removes in a client's request head before it goes upstream:
malformed field names, lookalike and routing headers, conflicting lengths, Expect, headers named
by Connection, and forwarding chains. Each test sends what an outside security review sent
(RFC 9110 §7.6.1, RFC 9112 §5-6) and checks the attack fails."""
import json

import pytest

from support.gateway import basic_config, echo_headers, raw_request


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


def test_expect_never_passes_as_sent(one_worker):
    """The client's Expect field never passes as sent. Reading the body first (request
    buffering, the default) the gateway says 100 itself and the upstream gets no Expect; a
    route that streams bodies writes its own `Expect: 100-continue` and relays the upstream's
    100 (test_expect_continue.py)."""
    s, resp = raw_request(one_worker.port, b"POST /echo HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 5\r\n"
                          b"Connection: close\r\n\r\nhello", timeout=5)
    final = resp[resp.rfind(b"HTTP/1.1 "):]
    assert final.startswith(b"HTTP/1.1 200")
    sent = json.loads(final.split(b"\r\n\r\n", 1)[1])["headers"]
    assert [v for k, v in sent if k.lower() == "expect"] == []
    assert resp.count(b"100 Continue") == 1
    # Without a body there is nothing to wait for: no Expect upstream.
    s, resp = raw_request(one_worker.port, b"POST /echo HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 0\r\n"
                          b"Connection: close\r\n\r\n", timeout=5)
    assert resp.startswith(b"HTTP/1.1 200") and "expect" not in echo_headers(resp)


def test_every_forwarded_for_line_from_a_trusted_proxy_is_kept(upstream, gateway_factory):
    g = gateway_factory(basic_config(upstream.port, extra="trusted_proxies: [127.0.0.1/32]", workers=1))
    s, resp = raw_request(g.port, b"GET /echo HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 6.6.6.6\r\n"
                          b"X-Forwarded-For: 203.0.113.7\r\nConnection: close\r\n\r\n")
    assert echo_headers(resp)["x-forwarded-for"] == "6.6.6.6, 203.0.113.7, 127.0.0.1"


def test_every_connection_header_is_honoured(one_worker):
    s, resp = raw_request(one_worker.port, b"GET /echo HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n"
                          b"Connection: X-Secret, close\r\nX-Secret: 1\r\n\r\n")
    assert "x-secret" not in echo_headers(resp)
