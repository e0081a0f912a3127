"""Proxy semantics end to end: keep-alive, forwarded headers, hop-by-hop stripping."""
import http.client
import json

import requests

from support.gateway import basic_config
from support.waiting import wait_for


def echo(resp):
    body = resp.json()
    body["h"] = {k.lower(): v for k, v in body["headers"]}
    return body


def test_forwards_method_path_query_and_body(gateway):
    r = requests.post(gateway.url("/api/items?x=1&y=%2F"), data=b"a" * 1000, headers={"Content-Type": "text/plain"})
    assert r.status_code == 200
    e = echo(r)
    assert e["method"] == "POST"
    assert e["path"] == "/api/items?x=1&y=%2F"
    assert e["body_length"] == 1000
    assert e["h"]["content-type"] == "text/plain"


def test_client_keepalive_and_upstream_connection_reuse(gateway, upstream):
    conn = http.client.HTTPConnection("127.0.0.1", gateway.port)
    ports = set()
    for i in range(20):
        conn.request("GET", f"/echo/{i}")
        r = conn.getresponse()
        assert r.status == 200
        ports.add(json.loads(r.read())["client_port"])
    conn.close()
    # One client connection lives on one worker, which reuses one warm upstream connection.
    assert len(ports) == 1, ports


def test_hop_by_hop_request_headers_are_removed(gateway):
    r = requests.get(gateway.url("/echo"), headers={
        "Connection": "keep-alive, X-Secret-Hop", "X-Secret-Hop": "1", "Keep-Alive": "timeout=5",
        "TE": "trailers", "Trailer": "X-T", "Upgrade": "websocket", "Proxy-Authorization": "Basic Zm9v",
        "Proxy-Foo": "1", "X-End-To-End": "kept", "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    })
    h = echo(r)["h"]
    for gone in ["x-secret-hop", "keep-alive", "te", "trailer", "upgrade", "proxy-authorization", "proxy-foo"]:
        assert gone not in h, gone
    assert h["x-end-to-end"] == "kept"
    assert h["traceparent"] == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    assert h.get("connection", "keep-alive").lower() != "x-secret-hop"


def test_hop_by_hop_response_headers_are_removed(gateway):
    r = requests.get(gateway.url("/hop"))
    assert r.status_code == 200
    assert "X-Hop-Secret" not in r.headers
    assert "Keep-Alive" not in r.headers
    assert r.headers["X-End-To-End"] == "kept"


def test_forwarded_headers_from_untrusted_client_are_replaced(gateway):
    r = requests.get(gateway.url("/echo"), headers={
        "X-Forwarded-For": "6.6.6.6", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "evil.example",
        "X-Request-Id": "client-chosen", "Forwarded": "for=6.6.6.6",
    })
    h = echo(r)["h"]
    assert h["x-forwarded-for"] == "127.0.0.1"
    assert h["x-forwarded-proto"] == "http"
    assert h["x-forwarded-host"] == f"127.0.0.1:{gateway.port}"
    assert "forwarded" not in h
    assert h["x-request-id"] != "client-chosen"
    # The same id goes both ways.
    assert r.headers["X-Request-Id"] == h["x-request-id"]


def test_forwarded_headers_from_trusted_proxy_are_kept(upstream, gateway_factory):
    g = gateway_factory(basic_config(upstream.port, extra="trusted_proxies: [127.0.0.0/8]"))
    r = requests.get(g.url("/echo"), headers={
        "X-Forwarded-For": "203.0.113.7", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "public.example",
        "X-Request-Id": "edge-42"})
    h = echo(r)["h"]
    assert h["x-forwarded-for"] == "203.0.113.7, 127.0.0.1"
    assert h["x-forwarded-proto"] == "https"
    assert h["x-forwarded-host"] == "public.example"
    assert h["x-request-id"] == "edge-42"
    assert r.headers["X-Request-Id"] == "edge-42"


def test_host_rewritten_or_preserved(upstream, gateway_factory):
    g = gateway_factory(basic_config(upstream.port))
    assert echo(requests.get(g.url("/echo"), headers={"Host": "app.example"}))["h"]["host"] == f"127.0.0.1:{upstream.port}"
    cfg = basic_config(upstream.port).replace("connect_timeout: 1s }", "connect_timeout: 1s, host_header: preserve }")
    g2 = gateway_factory(cfg)
    assert echo(requests.get(g2.url("/echo"), headers={"Host": "app.example"}))["h"]["host"] == "app.example"


def test_routing_by_host_path_and_method(upstream, gateway_factory):
    cfg = f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 1
upstreams:
  a: {{ url: "http://127.0.0.1:{upstream.port}/a" }}
  b: {{ url: "http://127.0.0.1:{upstream.port}/b" }}
routes:
  - match: {{ path_prefix: /api/, methods: [GET] }}
    upstream: a
    auth: none
  - match: {{ host: "*.example.com", path_prefix: /api/ }}
    upstream: b
    auth: none
  - match: {{ path: /exact }}
    upstream: b
    auth: none
"""
    g = gateway_factory(cfg)
    assert echo(requests.get(g.url("/api/x")))["path"] == "/a/api/x"
    assert echo(requests.get(g.url("/api/x"), headers={"Host": "t.example.com"}))["path"] == "/b/api/x"
    assert echo(requests.get(g.url("/exact")))["path"] == "/b/exact"
    r = requests.post(g.url("/api/x"))
    assert r.status_code == 404
    assert r.json()["error"] == "not_found"
    assert requests.get(g.url("/exact/more")).status_code == 404
    assert requests.get(g.url("/apiary")).status_code == 404


def test_admin_endpoints_and_metrics(gateway):
    requests.get(gateway.url("/echo"))
    requests.get(gateway.url("/a%2fb"))
    base = f"http://127.0.0.1:{gateway.admin}"
    assert requests.get(base + "/healthz").status_code == 200
    assert requests.get(base + "/readyz").status_code == 200
    m = requests.get(base + "/metrics").text
    assert 'tokengate_requests_total{route="routes[0]",status="200"}' in m
    assert 'tokengate_requests_total{route="-",status="400"} 1' in m
    assert "tokengate_request_duration_seconds_bucket" in m
    assert "tokengate_upstream_connections" in m
    assert "tokengate_client_connections" in m
    # The admin endpoints are not served on the public port.
    assert "tokengate_requests_total" not in requests.get(gateway.url("/metrics")).text


def test_access_log_lines_are_json(gateway):
    session = requests.Session()
    rid = session.get(gateway.url("/echo?q=1")).headers["X-Request-Id"]
    # A second request on the same connection, so on the same worker, whose lines leave in
    # order: once its line is in, every line of the first is too.
    after = session.get(gateway.url("/echo")).headers["X-Request-Id"]

    def up_to_the_second():
        lines = [json.loads(l) for l in gateway.output(settle=0).splitlines() if l.startswith("{")]
        return lines if any(l.get("request_id") == after for l in lines) else None
    lines = wait_for(up_to_the_second, what="the second request's access line")
    access = [l for l in lines if l.get("msg") == "access" and l.get("request_id") == rid]
    assert len(access) == 1
    a = access[0]
    assert a["method"] == "GET" and a["path"] == "/echo" and a["status"] == 200 and a["route"] == "routes[0]"
    assert a["bytes"] > 0 and a["duration_ms"] >= a["upstream_ms"] >= 0
