"""The gateway's own refusals to gRPC and gRPC-Web calls (docs/proxy.md, "gRPC refusals"): trailers-only, as gRPC
and Envoy answer them, read by a real gRPC client (PyPI grpcio, a generic method without
generated stubs) over h2c with prior knowledge, by plain HTTP/1.1 (gRPC-Web) and by the `h2`
library, which also shows the frames: one HEADERS with END_STREAM, no DATA. Bearer and DPoP
routes with tokens and proofs from joserfc; a login route with the real AS (idpyoidc)."""
import http.client
import socket

import grpc
import h2.config
import h2.connection
import hpack
import pytest

from support.dpop_client import DPoPKey
from support.gateway import RawServer, free_port, Gateway
from support.h2_client import H2Connection, frames
from test_bearer import JWKSServer, ec_key, first_fetch_failed, idp, token as mint  # noqa: F401 — idp is a fixture
from test_login import SESSION_KEY, login_as  # noqa: F401 — login_as is a fixture

GRPC = {"content-type": "application/grpc", "te": "trailers"}
MESSAGE = b"\x00\x00\x00\x00\x02\x08\x01"  # a gRPC length-prefixed message: field 1 = 1


def config(upstream, idp, closed_port):
    return f"""
listen: {{ address: 127.0.0.1:{{PORT}}, http2: true }}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
public_url: http://127.0.0.1:{{PORT}}
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], algorithms: [ES256] }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
  down: {{ url: "http://127.0.0.1:{closed_port}", connect_timeout: 1s, timeout: 2s }}
routes:
  - name: orders
    match: {{ path_prefix: /pkg.Orders/ }}
    upstream: app
    auth: bearer
    issuers: [one]
  - name: admin
    match: {{ path_prefix: /pkg.Admin/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    require: {{ scopes: [admin] }}
  - name: pop
    match: {{ path_prefix: /pkg.Pop/ }}
    upstream: app
    auth: dpop
    issuers: [one]
    dpop: {{ nonce: required }}
  - name: down
    match: {{ path_prefix: /pkg.Down/ }}
    upstream: down
    auth: none
"""


@pytest.fixture
def gw(upstream, idp, gateway_factory):
    return gateway_factory(config(upstream, idp, free_port()))


def rpc(gw, method, metadata=(), timeout=10):
    """One unary call of `method` with raw bytes; the grpc.RpcError it fails with."""
    with grpc.insecure_channel(f"127.0.0.1:{gw.port}") as channel:
        call = channel.unary_unary(method, request_serializer=None, response_deserializer=None)
        with pytest.raises(grpc.RpcError) as e:
            call(MESSAGE[5:], metadata=list(metadata), timeout=timeout)
        return e.value


def metadata(err):
    """Initial and trailing metadata together: a trailers-only answer is all trailers."""
    return dict(list(err.initial_metadata() or ()) + list(err.trailing_metadata() or ()))


def test_no_token_is_unauthenticated_with_the_challenge(gw):
    err = rpc(gw, "/pkg.Orders/Get")
    assert err.code() == grpc.StatusCode.UNAUTHENTICATED, (err.code(), err.details())
    assert err.details() == "authentication is required"
    md = metadata(err)
    assert md["www-authenticate"].startswith("Bearer"), md
    assert md.get("x-request-id")


def test_bad_signature_is_unauthenticated(gw, idp):
    forged = mint(ec_key("one-1"))  # the issuer's kid, another key
    err = rpc(gw, "/pkg.Orders/Get", [("authorization", f"Bearer {forged}")])
    assert err.code() == grpc.StatusCode.UNAUTHENTICATED, err.details()
    assert 'error="invalid_token"' in metadata(err)["www-authenticate"]


def test_missing_scope_is_permission_denied(gw, idp):
    err = rpc(gw, "/pkg.Admin/Delete", [("authorization", f"Bearer {mint(idp.keys[0])}")])
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED, err.details()
    assert 'error="insufficient_scope"' in metadata(err)["www-authenticate"]


def test_unknown_route_is_unimplemented(gw):
    assert rpc(gw, "/other.Svc/Get").code() == grpc.StatusCode.UNIMPLEMENTED


def test_upstream_down_is_unavailable(gw):
    err = rpc(gw, "/pkg.Down/Get")
    assert err.code() == grpc.StatusCode.UNAVAILABLE, (err.code(), err.details())


class Silent(RawServer):
    """An upstream that takes the request and never answers."""

    def serve(self, conn):
        with conn:
            while conn.recv(65536):
                pass


def test_upstream_timeout_is_deadline_exceeded_and_a_body_too_large_resource_exhausted(
        upstream, idp, gateway_factory):
    silent = Silent()
    try:
        text = config(upstream, idp, silent.port).replace("connect_timeout: 1s, timeout: 2s", "timeout: 1s")
        g = gateway_factory(text.replace("workers: 2", "workers: 2\nlimits: { grpc_max_message_size: 16KB }"))
        err = rpc(g, "/pkg.Down/Get")
        assert err.code() == grpc.StatusCode.DEADLINE_EXCEEDED, (err.code(), err.details())
        assert err.details() == "the upstream did not answer in time"  # the gateway's, not the client's
        # A message past grpc_max_message_size (gRPC sends no content-length: the limit trips
        # as the body streams, at the message's prefix, before the upstream answers).
        with grpc.insecure_channel(f"127.0.0.1:{g.port}") as channel:
            call = channel.unary_unary("/pkg.Down/Put", request_serializer=None, response_deserializer=None)
            with pytest.raises(grpc.RpcError) as e:
                call(b"x" * 100_000, timeout=10)
        assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, (e.value.code(), e.value.details())
        assert e.value.details() == "the request body is too large"
    finally:
        silent.stop()


def test_keys_unavailable_is_unavailable_with_retry_after(upstream):
    """An issuer whose keys cannot be fetched: the gateway cannot judge the token (503), which
    a gRPC client reads as UNAVAILABLE, a code it may retry."""
    srv = JWKSServer()
    srv.down = True
    srv.keys = [ec_key("one-1")]
    g = Gateway(config(upstream, srv, free_port()))
    try:
        g.start_no_wait()
        first_fetch_failed(g)
        err = rpc(g, "/pkg.Orders/Get", [("authorization", f"Bearer {mint(srv.keys[0])}")])
        assert err.code() == grpc.StatusCode.UNAVAILABLE, (err.code(), err.details())
        assert metadata(err).get("retry-after"), metadata(err)
    finally:
        g.stop()
        srv.stop()


def test_dpop_route_no_token_and_nonce_challenge(gw, idp):
    err = rpc(gw, "/pkg.Pop/Get")
    assert err.code() == grpc.StatusCode.UNAUTHENTICATED
    assert metadata(err)["www-authenticate"].startswith("DPoP")
    # A bound token and a proof without the nonce the route requires: use_dpop_nonce, and
    # the nonce to retry with, as metadata (RFC 9449 §8).
    key = DPoPKey("ES256")
    tok = mint(idp.keys[0], claims={"cnf": {"jkt": key.jkt}})
    proof = key.proof("POST", gw.url("/pkg.Pop/Get"), access_token=tok)
    err = rpc(gw, "/pkg.Pop/Get", [("authorization", f"DPoP {tok}"), ("dpop", proof)])
    assert err.code() == grpc.StatusCode.UNAUTHENTICATED, err.details()
    md = metadata(err)
    assert 'error="use_dpop_nonce"' in md["www-authenticate"], md
    nonce = md["dpop-nonce"]
    # The retry with that nonce is admitted: the upstream (an HTTP/1.1 echo) answers, which
    # is no gRPC answer, so the call fails past the gateway, not at it.
    proof = key.proof("POST", gw.url("/pkg.Pop/Get"), access_token=tok, nonce=nonce)
    err = rpc(gw, "/pkg.Pop/Get", [("authorization", f"DPoP {tok}"), ("dpop", proof)])
    assert err.code() != grpc.StatusCode.UNAUTHENTICATED, err.details()


def test_trailers_only_on_the_wire(gw):
    """One HEADERS frame with END_STREAM: :status 200, the gRPC fields and the challenge, no
    content-length and no DATA frame (PROTOCOL-HTTP2.md, Trailers-Only)."""
    s = socket.create_connection(("127.0.0.1", gw.port), timeout=5)
    c = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    c.initiate_connection()
    c.send_headers(1, [(":method", "POST"), (":path", "/pkg.Orders/Get"), (":scheme", "http"),
                       (":authority", f"127.0.0.1:{gw.port}"), *GRPC.items()])
    c.send_data(1, MESSAGE, end_stream=True)
    s.sendall(c.data_to_send())
    got = b""
    while True:
        data = s.recv(65536)
        assert data, "connection closed before the answer"
        got += data
        seen = frames(got)
        if any(f[2] == 1 and f[1] & 0x1 for f in seen if f[0] in (0x0, 0x1)):
            break
    s.close()
    mine = [f for f in seen if f[2] == 1 and f[0] in (0x0, 0x1, 0x9)]
    assert [f[0] for f in mine] == [0x1], mine  # HEADERS only
    assert mine[0][1] & 0x1 and mine[0][1] & 0x4  # END_STREAM, END_HEADERS
    fields = hpack.Decoder().decode(mine[0][3])
    h = dict(fields)
    assert h[":status"] == "200" and h["content-type"] == "application/grpc"
    assert h["grpc-status"] == "16" and h["grpc-message"] == "authentication is required"
    assert h["www-authenticate"].startswith("Bearer")
    assert "content-length" not in h


def test_grpc_web_over_http1(gw):
    c = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=5)
    c.request("POST", "/pkg.Orders/Get", body=MESSAGE,
              headers={"Content-Type": "application/grpc-web+proto", "X-Grpc-Web": "1"})
    r = c.getresponse()
    body = r.read()
    assert r.status == 200 and body == b""
    assert r.getheader("Content-Type") == "application/grpc-web+proto"
    assert r.getheader("grpc-status") == "16"
    assert r.getheader("grpc-message") == "authentication is required"
    assert r.getheader("WWW-Authenticate").startswith("Bearer")
    assert r.getheader("Content-Length") == "0"
    # The connection goes on: the next call on it is answered too.
    c.request("POST", "/other.Svc/Get", body=MESSAGE, headers={"Content-Type": "application/grpc-web-text"})
    r = c.getresponse()
    r.read()
    assert (r.status, r.getheader("grpc-status")) == (200, "12")
    assert r.getheader("Content-Type") == "application/grpc-web-text"
    c.close()


def test_grpc_web_over_h2(gw):
    with H2Connection(gw.port) as c:
        a = c.request("POST", "/pkg.Admin/Get", [("content-type", "application/grpc-web-text")], body=b"AAAAAAA=")
    assert a.status == 200 and a.body == b"" and a.ended
    assert a.header("grpc-status") == "16" and a.header("content-type") == "application/grpc-web-text"


@pytest.mark.parametrize("content_type", ["application/grpcx", "application/grpc-webfoo", "application/json"])
def test_near_misses_keep_the_plain_refusal(gw, content_type):
    with H2Connection(gw.port) as c:
        a = c.request("POST", "/pkg.Orders/Get", [("content-type", content_type)], body=b"{}")
    assert a.status == 401 and a.header("grpc-status") is None
    assert b'"error"' in a.body


def test_grpc_web_cors_preflight_is_unaffected(upstream, idp, gateway_factory):
    """A gRPC-Web call's preflight carries no content-type of its own: it follows the route's
    cors_preflight, as any other preflight."""
    text = config(upstream, idp, free_port()).replace(
        "    require: { scopes: [admin] }", "    require: { scopes: [admin] }\n    cors_preflight: allow")
    g = gateway_factory(text)
    preflight = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type,x-grpc-web,authorization"}
    c = http.client.HTTPConnection("127.0.0.1", g.port, timeout=5)
    c.request("OPTIONS", "/pkg.Admin/Get", headers=preflight)
    r = c.getresponse()
    r.read()
    # Passed through unauthenticated to the upstream (the echo answers 200), no gRPC fields.
    assert r.status == 200 and r.getheader("grpc-status") is None
    c.request("OPTIONS", "/pkg.Orders/Get", headers=preflight)
    r = c.getresponse()
    r.read()
    # Without cors_preflight the preflight is refused like any request without a token:
    # plainly, since it is no gRPC call.
    assert r.status == 401 and r.getheader("grpc-status") is None
    c.close()


def test_engine_refusal_of_oversized_metadata(upstream, idp, gateway_factory):
    """The engine's own 431 (past limits.max_header_size) reaches a gRPC client as
    RESOURCE_EXHAUSTED, not as a broken call."""
    text = config(upstream, idp, free_port()).replace(
        "workers: 2", "workers: 2\nlimits: { max_header_size: 4KB }")
    g = gateway_factory(text)
    err = rpc(g, "/pkg.Orders/Get", [("x-big", "a" * 6000)])
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, (err.code(), err.details())


def test_login_route_never_redirects_a_grpc_call(login_as, upstream, gateway_factory):
    g = gateway_factory(f"""
listen: {{ address: 127.0.0.1:{{PORT}}, http2: true }}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 1
public_url: http://127.0.0.1:{{PORT}}
session: {{ keys: ["{SESSION_KEY}"], secure_cookie: false }}
issuers:
  as1: {{ issuer: "{login_as.issuer}", discovery: true, audiences: [api] }}
clients:
  web: {{ issuer: as1, client_id: web, auth: client_secret_post, secret: "0123456789abcdef0123456789abcdef", request_mode: plain }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - name: web
    match: {{ path_prefix: / }}
    upstream: app
    auth: login
    client: web
""")
    err = rpc(g, "/pkg.Orders/Get")
    assert err.code() == grpc.StatusCode.UNAUTHENTICATED, (err.code(), err.details())
    # Even a GET that looks like a page navigation is no navigation when it is a gRPC-Web call.
    c = http.client.HTTPConnection("127.0.0.1", g.port, timeout=5)
    c.request("GET", "/pkg.Orders/Get", headers={"Accept": "text/html", "Content-Type": "application/grpc-web"})
    r = c.getresponse()
    r.read()
    assert r.status == 200 and r.getheader("grpc-status") == "16" and r.getheader("Location") is None
    # The same GET without the gRPC-Web type is a navigation: redirected to sign in.
    c.request("GET", "/pkg.Orders/Get", headers={"Accept": "text/html"})
    r = c.getresponse()
    r.read()
    assert r.status == 302
    c.close()
