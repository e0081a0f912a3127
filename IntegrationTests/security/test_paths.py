"""The request line as an attacker writes it (raw bytes; no client-side normalization).

Routes: /public/ → upstream (public), /admin → upstream under /admin-backend (so a hit is
visible), everything else → 404. An attack passes only if a request that looks like /public
reaches the admin backend, or a malformed path reaches any backend."""
import json

import pytest

from support.gateway import raw_request


@pytest.fixture
def gw(upstream, gateway_factory):
    cfg = f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 1
upstreams:
  public: {{ url: "http://127.0.0.1:{upstream.port}/pub" }}
  admin: {{ url: "http://127.0.0.1:{upstream.port}/admin-backend" }}
routes:
  - match: {{ path_prefix: /public/ }}
    upstream: public
    auth: none
  - match: {{ path_prefix: /admin }}
    upstream: admin
    auth: none
"""
    return gateway_factory(cfg)


def get(gw, target, headers="Host: t\r\n"):
    return raw_request(gw.port, f"GET {target} HTTP/1.1\r\n{headers}Connection: close\r\n\r\n".encode("latin-1"))


@pytest.mark.parametrize("target", [
    "/public/../admin", "/public/%2e%2e/admin", "/public/%2E%2E/admin", "/public/.%2e/admin",
    "/public/..%2fadmin", "/public/%2e%2e%2fadmin", "/public/..\\admin", "/public/..%5cadmin",
    "/public/..;/admin", "/public/%2e%2e;/admin", "/..", "/../public/x", "/public/../../x",
    "/public/%00", "/public/a%2Fb", "/public/a\\b", "/public/%zz", "/public/%", "/public/a#frag",
    "http://t/public/x", "public/x", "/public/x?a=%00",
])
def test_refused_with_400(gw, target):
    status, resp = get(gw, target)
    assert status == 400, resp
    body = json.loads(resp.split(b"\r\n\r\n", 1)[1])
    assert body["error"] == "invalid_request"


@pytest.mark.parametrize("target,forwarded", [
    ("/public/x", "/pub/public/x"),
    ("//public//x", "/pub/public/x"),
    ("/public/./x", "/pub/public/x"),
    ("/public/a/../x", "/pub/public/x"),
    ("/public/%7Euser/%41", "/pub/public/~user/A"),
    ("/public/x%20y?q=%2F..%2F", "/pub/public/x%20y?q=%2F..%2F"),
    ("/public/a|b", "/pub/public/a%7Cb"),
    ("/admin", "/admin-backend/admin"),
])
def test_forwarded_path_is_the_normalized_path(gw, target, forwarded):
    status, resp = get(gw, target)
    assert status == 200, resp
    assert json.loads(resp.split(b"\r\n\r\n", 1)[1])["path"] == forwarded


@pytest.mark.parametrize("target", ["/", "/adminx", "/publicx", "/Public/x", "/%61dmin-not"])
def test_unrouted_paths_are_404(gw, target):
    status, _ = get(gw, target)
    assert status == 404


def test_host_header_rules(gw):
    assert get(gw, "/public/x", headers="Host: a\r\nHost: b\r\n")[0] == 400
    assert get(gw, "/public/x", headers="")[0] == 400
    assert get(gw, "/public/x", headers="Host: bad host\r\n")[0] == 400
    assert get(gw, "/public/x", headers="Host: ok.example:8080\r\n")[0] == 200
    # HTTP/1.0 without Host is allowed (RFC 9112 §3.2 requires Host from 1.1 on).
    assert raw_request(gw.port, b"GET /public/x HTTP/1.0\r\n\r\n")[0] == 200


def test_request_smuggling_framing_is_not_forwarded(gw, upstream):
    # Both Content-Length and Transfer-Encoding: the gateway must not forward either as sent.
    data = (b"POST /public/x HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: close\r\n\r\n0\r\n\r\n")
    status, resp = raw_request(gw.port, data)
    assert status in (200, 400)
    if status == 200:
        sent = dict((k.lower(), v) for k, v in json.loads(resp.split(b"\r\n\r\n", 1)[1])["headers"])
        assert "transfer-encoding" not in sent


@pytest.fixture
def template_gw(upstream, gateway_factory):
    cfg = f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 1
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - name: orders
    match: {{ path_template: "/orders/{{id}}" }}
    upstream: app
    auth: none
  - name: public
    match: {{ path_prefix: / }}
    upstream: app
    auth: none
"""
    return gateway_factory(cfg)


@pytest.mark.parametrize("target", ["/orders/%2e%2e", "/orders/..", "/orders/%2E%2e/", "/orders/.%2e"])
def test_a_dot_dot_in_a_template_variable_that_leaves_its_route_is_400(template_gw, upstream, target):
    """`/orders/..` is the template route's path as written (`id` = `..`); normalized it is
    `/`, the public route's. A `..` that moves a request out of the route it was in is 400
    (docs/security.md), whether it sits in a variable or not."""
    status, resp = get(template_gw, target)
    assert status == 400, resp
    assert json.loads(resp.split(b"\r\n\r\n", 1)[1])["error"] == "invalid_request"
    assert upstream.requests == []
    # A `..` that stays in the route goes on; the plain paths are routed as ever.
    assert get(template_gw, "/orders/1/../2")[0] == 200
    assert get(template_gw, "/other/../x")[0] == 200
