"""gRPC message sizes through tokengate (docs/proxy.md, "gRPC message size"): a gRPC or gRPC-Web
call's body is bounded per message by `limits.grpc_max_message_size` (4 MiB, gRPC's own default),
read from its length-prefixed framing as it streams, never by `max_body_size` as a whole. A real
gRPC client and server (PyPI grpcio) on either side over h2c; gRPC-Web over HTTP/1.1 to the echo
upstream for the bodies the gateway reads whole first."""
import base64
import http.client
import json
import struct

import grpc
import pytest

from support.grpc_upstream import GRPCUpstream, channel, unary

MiB = 1 << 20


def frame(message, flag=0):
    return bytes([flag]) + struct.pack(">I", len(message)) + message


def config(upstream_port, limits="", protocol="h2c", workers=2):
    return f"""
listen: {{ address: 127.0.0.1:{{PORT}}, http2: true }}
admin_listen: 127.0.0.1:{{ADMIN}}
public_url: http://127.0.0.1:{{PORT}}
workers: {workers}
limits: {{ shutdown_grace: 5s{limits} }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream_port}", protocol: {protocol}, timeout: 30s }}
routes:
  - match: {{ path_prefix: / }}
    upstream: app
    auth: none
"""


@pytest.fixture
def grpc_upstream():
    u = GRPCUpstream()
    yield u
    u.stop()


@pytest.fixture
def gw(grpc_upstream, gateway_factory):
    """Default limits: max_body_size 4MB (4 MiB), grpc_max_message_size 4MB."""
    return gateway_factory(config(grpc_upstream.port))


def exactly(size, word):
    """A request message of exactly `size` bytes whose first word steers the upstream."""
    return word + b" " + b"y" * (size - len(word) - 1)


def test_a_four_mebibyte_message_each_way_with_default_limits(gw, grpc_upstream):
    # 4 MiB is gRPC's own default maximum; on the wire it is 4 MiB + 5, past max_body_size.
    with channel(gw.port) as ch:
        reply, call = unary(ch, exactly(4 * MiB, b"big:%d" % (4 * MiB)), timeout=30)
    assert len(reply) == 4 * MiB and call.code() == grpc.StatusCode.OK
    # gRPC's default client (4 MiB to receive, no bound to send) takes it too.
    with grpc.insecure_channel(f"127.0.0.1:{gw.port}") as ch:
        reply = ch.unary_unary("/test.Echo/Unary")(exactly(4 * MiB, b"big:%d" % (4 * MiB)), timeout=30)
    assert len(reply) == 4 * MiB


def test_a_fifty_megabyte_client_stream_of_small_messages(gw, grpc_upstream):
    # 800 messages of 64 KiB: 50 MiB in all, twelve times max_body_size, none of it held whole.
    chunk = b"z" * (64 << 10)
    with channel(gw.port) as ch:
        total = ch.stream_unary("/test.Echo/ClientStream")(iter([chunk] * 800), timeout=60)
    assert total == str(800 * len(chunk)).encode()


def test_a_message_past_the_default_limit_is_resource_exhausted(gw, grpc_upstream):
    before = grpc_upstream.calls
    with channel(gw.port) as ch, pytest.raises(grpc.RpcError) as e:
        unary(ch, exactly(4 * MiB + 1, b"x"), timeout=30)
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, (e.value.code(), e.value.details())
    assert e.value.details() == "the request body is too large"
    assert grpc_upstream.calls == before, "the upstream's handler saw the refused message"


@pytest.fixture
def small(grpc_upstream, gateway_factory):
    return gateway_factory(config(grpc_upstream.port, limits=", grpc_max_message_size: 64KB, max_body_size: 1MB"))


def test_the_limit_holds_per_message_exactly(small, grpc_upstream):
    with channel(small.port) as ch:
        reply, _ = unary(ch, exactly(64 << 10, b"at-limit"))
        assert json.loads(reply)["body"].startswith("at-limit ")
        with pytest.raises(grpc.RpcError) as e:
            unary(ch, exactly((64 << 10) + 1, b"one-past"))
        assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, (e.value.code(), e.value.details())
        # The connection and the gateway go on.
        assert json.loads(unary(ch, b"after")[0])["body"] == "after"


def test_a_stream_refused_at_its_first_message_past_the_limit(small, grpc_upstream):
    # 40 messages at the limit (2.5 MiB, past max_body_size 1MB) and then one byte more.
    good = b"a" * (64 << 10)
    with channel(small.port) as ch:
        total = ch.stream_unary("/test.Echo/ClientStream")(iter([good] * 40), timeout=30)
        assert total == str(40 * len(good)).encode()
        with pytest.raises(grpc.RpcError) as e:
            ch.stream_unary("/test.Echo/ClientStream")(iter([good] * 5 + [good + b"!"] + [good] * 5), timeout=30)
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, (e.value.code(), e.value.details())


def http1_call(port, body, content_type, path="/test.Echo/Unary"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("POST", path, body=body, headers={"Content-Type": content_type, "TE": "trailers"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r, data


def test_http1_call_read_whole_first_takes_a_four_mebibyte_message(gw, grpc_upstream):
    """An HTTP/1.1 client's call is read whole before it goes upstream (request buffering):
    the bound there is the larger of max_body_size and one message at its limit."""
    r, body = http1_call(gw.port, frame(exactly(4 * MiB, b"big:16")), "application/grpc")
    assert r.status == 200 and r.getheader("grpc-status") is None, r.getheaders()
    assert body == frame(b"x" * 16)
    before = grpc_upstream.calls
    r, body = http1_call(gw.port, frame(exactly(4 * MiB + 1, b"big:16")), "application/grpc")
    assert r.status == 200 and r.getheader("grpc-status") == "8", r.getheaders()
    assert r.getheader("grpc-message") == "the request body is too large" and body == b""
    assert grpc_upstream.calls == before


@pytest.fixture
def web(upstream, gateway_factory):
    """gRPC-Web to the echo upstream (it answers with the length of what it got)."""
    return gateway_factory(config(upstream.port, protocol="http1"))


def test_grpc_web_text_is_counted_after_base64(web):
    # 4 MiB in base64 is 5.6 MB on the wire, past max_body_size; it is one message at the limit.
    at_limit = base64.b64encode(frame(b"t" * (4 * MiB)))
    r, body = http1_call(web.port, at_limit, "application/grpc-web-text")
    assert r.status == 200 and r.getheader("grpc-status") is None, r.getheaders()
    assert json.loads(body)["body_length"] == len(at_limit)
    # Two frames each encoded on their own (padding between them), the second one past.
    two = base64.b64encode(frame(b"ok")) + base64.b64encode(frame(b"t" * (4 * MiB + 1)))
    r, body = http1_call(web.port, two, "application/grpc-web-text")
    assert r.status == 200 and r.getheader("grpc-status") == "8", r.getheaders()


def test_grpc_web_binary_streams_unbounded_in_total(upstream, gateway_factory):
    """A route with request_buffering: false streams a gRPC-Web body: many messages, more than
    max_body_size in all, pass; a message past its limit is refused before the rest is read."""
    text = config(upstream.port, protocol="http1", limits=", grpc_max_message_size: 64KB, max_body_size: 256KB")
    g = gateway_factory(text.replace("    auth: none", "    auth: none\n    request_buffering: false"))
    body = frame(b"m" * (64 << 10)) * 10
    r, data = http1_call(g.port, body, "application/grpc-web+proto")
    assert r.status == 200 and json.loads(data)["body_length"] == len(body), data[:200]
    r, data = http1_call(g.port, frame(b"m" * 10) + frame(b"m" * ((64 << 10) + 1)), "application/grpc-web+proto")
    assert r.status == 200 and r.getheader("grpc-status") == "8", r.getheaders()


def test_other_bodies_keep_max_body_size(upstream, gateway_factory):
    g = gateway_factory(config(upstream.port, protocol="http1", limits=", max_body_size: 64KB"))
    r, _ = http1_call(g.port, frame(b"j" * (64 << 10)), "application/json", path="/upload")
    assert r.status == 413 and r.getheader("grpc-status") is None
