"""gRPC through tokengate: a real gRPC client and server (PyPI grpcio) on either side, the
upstream spoken to in HTTP/2 (h2c with prior knowledge, or TLS with ALPN h2). Unary and
streaming calls, metadata and trailers both ways, deadlines, 4 MB messages, 200 calls at
once on one channel, bearer routes' identity as metadata; and the translations: an
HTTP/1.1 client to an HTTP/2 upstream."""
import http.client
import json
import struct
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from support.dpop_client import DPoPKey
from support.grpc_upstream import GRPCUpstream, channel, unary
from support.waiting import wait_for
from test_bearer import idp, token  # noqa: F401 — idp is a fixture
from test_http2 import cert  # noqa: F401 — a fixture


@pytest.fixture
def grpc_upstream():
    u = GRPCUpstream()
    yield u
    u.stop()


def config(upstream_url, protocol="h2c", tls="", idp=None, timeout="5s", auth="bearer"):
    issuers = ""
    bearer = ""
    if idp:
        issuers = f"""issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], algorithms: [ES256] }}"""
        bearer = f"""  - name: grpc-{auth}
    match: {{ path_prefix: /test.Echo/ }}
    upstream: app
    auth: {auth}
    issuers: [one]
    require: {{ scopes: [orders:read] }}
    headers: {{ X-User-Id: sub, X-Key: cnf.jkt }}
"""
    return f"""
listen: {{ address: 127.0.0.1:{{PORT}}, http2: true }}
admin_listen: 127.0.0.1:{{ADMIN}}
public_url: http://127.0.0.1:{{PORT}}
workers: 2
limits: {{ max_body_size: 16MB, shutdown_grace: 5s }}
{issuers}
upstreams:
  app: {{ url: "{upstream_url}", protocol: {protocol}, timeout: {timeout}{tls} }}
routes:
{bearer}  - match: {{ path_prefix: / }}
    upstream: app
    auth: none
"""


@pytest.fixture
def gw(grpc_upstream, gateway_factory):
    return gateway_factory(config(f"http://127.0.0.1:{grpc_upstream.port}"))


def test_unary_call_with_metadata_and_trailers(gw):
    with channel(gw.port) as ch:
        reply, call = unary(ch, b"hello", metadata=[("x-client", "one")])
    seen = json.loads(reply)
    assert seen["body"] == "hello"
    meta = dict(seen["metadata"])
    assert meta["x-client"] == "one"
    assert meta["x-forwarded-for"] == "127.0.0.1"
    # The upstream's trailers reached the client as trailing metadata, with OK.
    assert ("x-upstream-trailer", "done") in call.trailing_metadata()
    assert call.code() == grpc.StatusCode.OK


def test_upstream_status_and_message_pass_through(gw):
    with channel(gw.port) as ch, pytest.raises(grpc.RpcError) as e:
        unary(ch, b"fail:NOT_FOUND:no-such-order")
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
    assert e.value.details() == "no-such-order"
    assert ("x-upstream-trailer", "done") in e.value.trailing_metadata()


def test_streaming_calls(gw):
    with channel(gw.port) as ch:
        got = list(ch.unary_stream("/test.Echo/ServerStream")(b"100", timeout=10))
        assert got == [str(i).encode() for i in range(100)]
        total = ch.stream_unary("/test.Echo/ClientStream")(iter([b"a" * 1000] * 50), timeout=10)
        assert total == b"50000"
        echoed = list(ch.stream_stream("/test.Echo/Bidi")(iter([b"x%d" % i for i in range(30)]), timeout=10))
        assert echoed == [b"x%d" % i for i in range(30)]


def test_client_deadline_gives_deadline_exceeded(gw, grpc_upstream):
    with channel(gw.port) as ch, pytest.raises(grpc.RpcError) as e:
        unary(ch, b"sleep:2", timeout=0.5)
    assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    # The gateway still serves the next call at once.
    with channel(gw.port) as ch:
        assert json.loads(unary(ch, b"after")[0])["body"] == "after"


def test_four_megabyte_messages_both_ways(gw):
    # Exactly grpc_max_message_size (4 MiB, its default); test_grpc_message_size.py has more.
    with channel(gw.port) as ch:
        reply, _ = unary(ch, b"big:4194304 " + b"y" * ((4 << 20) - 12))
    assert len(reply) == 4 << 20


def test_two_hundred_calls_at_once_on_one_channel(gw, grpc_upstream):
    with channel(gw.port) as ch:
        call = ch.unary_unary("/test.Echo/Unary")
        futures = [call.future(b"n%d" % i, timeout=20) for i in range(200)]
        bodies = [json.loads(f.result())["body"] for f in futures]
    assert bodies == ["n%d" % i for i in range(200)]
    assert grpc_upstream.calls >= 200


def test_upstream_concurrency_limit_is_respected(gateway_factory):
    # An upstream that allows 2 streams per connection: 12 calls at once all succeed, and it
    # never runs more than its limit per connection (one worker; a second connection may open).
    u = GRPCUpstream(max_streams=2)
    try:
        g = gateway_factory(config(f"http://127.0.0.1:{u.port}").replace("workers: 2", "workers: 1"))
        with channel(g.port) as ch:
            call = ch.unary_unary("/test.Echo/Unary")
            futures = [call.future(b"sleep:0.2", timeout=20) for _ in range(12)]
            assert all(json.loads(f.result())["body"] == "sleep:0.2" for f in futures)
        assert u.handlers.most_running >= 2
        assert u.calls == 12
    finally:
        u.stop()


def test_bearer_route_identity_as_metadata_and_forged_copies_gone(grpc_upstream, idp, gateway_factory):
    g = gateway_factory(config(f"http://127.0.0.1:{grpc_upstream.port}", idp=idp))
    tok = token(idp.keys[0])
    with channel(g.port) as ch:
        reply, call = unary(ch, b"hi", metadata=[("authorization", f"Bearer {tok}"), ("x-user-id", "mallory")])
    meta = seen_metadata(reply)
    assert meta.get("x-user-id") == ["alice"]
    assert call.code() == grpc.StatusCode.OK


def test_dpop_route_over_grpc(grpc_upstream, idp, gateway_factory):
    g = gateway_factory(config(f"http://127.0.0.1:{grpc_upstream.port}", idp=idp, auth="dpop"))
    key = DPoPKey("ES256")
    tok = token(idp.keys[0], claims={"cnf": {"jkt": key.jkt}})
    # The proof names the call as the gateway sees it: POST and :scheme://:authority:path.
    htu = f"http://127.0.0.1:{g.port}/test.Echo/Unary"
    proof = key.proof("POST", htu, access_token=tok)
    with channel(g.port) as ch:
        reply, call = unary(ch, b"bound", metadata=[("authorization", f"DPoP {tok}"), ("dpop", proof)])
        assert seen_metadata(reply)["x-user-id"] == ["alice"]
        assert seen_metadata(reply)["x-key"] == [key.jkt]
        # The proof was for the gateway; it is claimed once (RFC 9449 §11.1).
        with pytest.raises(grpc.RpcError) as e:
            unary(ch, b"again", metadata=[("authorization", f"DPoP {tok}"), ("dpop", proof)])
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
        # A proof for another method's path is refused too.
        other = key.proof("POST", f"http://127.0.0.1:{g.port}/test.Echo/Other", access_token=tok)
        with pytest.raises(grpc.RpcError) as e:
            unary(ch, b"x", metadata=[("authorization", f"DPoP {tok}"), ("dpop", other)])
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED


def seen_metadata(reply):
    out = {}
    for k, v in json.loads(reply)["metadata"]:
        out.setdefault(k, []).append(v)
    return out


def test_h2_upstream_over_tls(cert, gateway_factory):
    u = GRPCUpstream(tls=cert)
    try:
        tls = f", tls: {{ ca_file: {cert[0]} }}"
        g = gateway_factory(config(f"https://127.0.0.1:{u.port}", protocol="h2", tls=tls))
        with channel(g.port) as ch:
            reply, call = unary(ch, b"over-tls")
        assert json.loads(reply)["body"] == "over-tls"
        assert ("x-upstream-trailer", "done") in call.trailing_metadata()
    finally:
        u.stop()


def grpc_frame(message):
    return b"\x00" + struct.pack(">I", len(message)) + message


def test_http1_client_to_h2c_upstream(gw):
    # A gRPC-shaped POST over HTTP/1.1: the gateway speaks HTTP/2 to the upstream, and the
    # answer comes back over HTTP/1.1 (its trailer section has no place there).
    c = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=10)
    c.request("POST", "/test.Echo/Unary", body=grpc_frame(b"from-h1"),
              headers={"Content-Type": "application/grpc", "TE": "trailers"})
    r = c.getresponse()
    body = r.read()
    assert r.status == 200 and r.version == 11
    assert r.getheader("content-type") == "application/grpc"
    assert body[0] == 0 and struct.unpack(">I", body[1:5])[0] == len(body) - 5
    assert json.loads(body[5:])["body"] == "from-h1"



BAD_TIMEOUTS = ["-5S", "abc", "123456789S", "5", "5s", "1.5S", ""]


@pytest.mark.parametrize("value", BAD_TIMEOUTS)
def test_a_malformed_grpc_timeout_is_internal_over_http2(gw, grpc_upstream, value):
    """What gRPC's spec does not allow (a sign, letters, no or another unit, nine digits) is
    refused as a gRPC server refuses it, INTERNAL, before the upstream hears of the call."""
    from support.h2_client import H2Connection
    before = grpc_upstream.handlers.calls
    with H2Connection(gw.port) as c:
        a = c.request("POST", "/test.Echo/Unary", body=grpc_frame(b"x"), headers=[
            ("content-type", "application/grpc"), ("te", "trailers"), ("grpc-timeout", value)])
    assert a.status == 200 and a.header("grpc-status") == "13", a.headers
    assert a.header("grpc-message") == "the grpc-timeout header is malformed"
    assert a.body == b"" and grpc_upstream.handlers.calls == before


@pytest.mark.parametrize("value", ["-5S", "999999999m"])
def test_a_malformed_grpc_timeout_is_internal_over_http1(gw, grpc_upstream, value):
    """gRPC-Web over HTTP/1.1 carries the same header: the same refusal, in its head."""
    before = grpc_upstream.handlers.calls
    c = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=10)
    c.request("POST", "/test.Echo/Unary", body=grpc_frame(b"x"),
              headers={"Content-Type": "application/grpc-web+proto", "grpc-timeout": value})
    r = c.getresponse()
    r.read()
    assert r.status == 200 and r.getheader("grpc-status") == "13", r.getheaders()
    assert grpc_upstream.handlers.calls == before


def test_two_grpc_timeouts_are_internal(gw):
    from support.h2_client import H2Connection
    with H2Connection(gw.port) as c:
        a = c.request("POST", "/test.Echo/Unary", body=grpc_frame(b"x"), headers=[
            ("content-type", "application/grpc"), ("te", "trailers"), ("grpc-timeout", "1S"), ("grpc-timeout", "9H")])
    assert a.header("grpc-status") == "13", a.headers


def test_a_grpc_timeout_is_capped_by_the_upstream_timeout(gw):
    """The route's upstream `timeout` (5s here) is the longest deadline a call goes upstream
    with, as Envoy's max_grpc_timeout: a client asking for a minute is given 5 s, and the
    upstream hears that; a shorter one goes as asked."""
    with channel(gw.port) as ch:
        long = json.loads(unary(ch, b"long", timeout=60)[0])
        short = json.loads(unary(ch, b"short", timeout=2)[0])
    assert 3 < long["time_remaining"] <= 5.1, long
    assert 1 < short["time_remaining"] <= 2.1, short


def test_upstream_down_is_unavailable(gateway_factory):
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    g = gateway_factory(config(f"http://127.0.0.1:{port}"))
    with channel(g.port) as ch, pytest.raises(grpc.RpcError) as e:
        unary(ch, b"x")
    assert e.value.code() == grpc.StatusCode.UNAVAILABLE


def test_client_cancel_resets_the_upstream_stream(gw, grpc_upstream):
    with channel(gw.port) as ch:
        f = ch.unary_unary("/test.Echo/Unary").future(b"sleep:1", timeout=10)
        wait_for(lambda: grpc_upstream.handlers.running == 1, what="the call at the upstream")
        f.cancel()
        assert f.cancelled()
        # The connection to the upstream is still good for the next call.
        assert json.loads(unary(ch, b"next")[0])["body"] == "next"

