"""OpenTelemetry tracing seen from outside: a real tokengate exporting spans over OTLP/HTTP to
a real receiver that decodes them with the OpenTelemetry project's own messages (PyPI
`opentelemetry-proto`), a real upstream that echoes the headers it got, a real JWKS server.
Covers the SERVER/CLIENT structure, joining or restarting an incoming `traceparent`, the
upstream seeing the gateway's span, the attributes, a refusal traced without an upstream span,
no secret in any attribute, sampling, the OTEL_* variables, and a collector that is down,
failing or hung costing requests nothing, with its drops counted."""
import time

import pytest
import requests

from support.gateway import Gateway, echo_headers, raw_request, sent_headers
from support.otlp_receiver import Receiver, attributes
from support.waiting import wait_for
from test_access_log import metric
from test_bearer import idp, token  # noqa: F401
from test_introspection_idp import GW_SECRET, config as introspection_config
from test_introspection_shared import OPQ_SECRET

SERVER, CLIENT = 2, 3
INCOMING = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.fixture
def receiver():
    r = Receiver().start()
    yield r
    r.stop()


def config(upstream, idp, tracing, extra=""):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
access_log: false
{extra}
tracing: {tracing}
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], algorithms: [ES256] }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - name: orders
    match: {{ path_prefix: /api/ }}
    upstream: app
    auth: bearer
    issuers: [one]
  - name: public
    match: {{ path_prefix: /pub/ }}
    upstream: app
    auth: none
"""


def request_spans(receiver):
    """The spans of requests: every span but the main loop's key fetches (CLIENT roots)."""
    return [s for _, s in receiver.spans() if not (s.kind == CLIENT and s.parent_span_id == b"")]


def spans_of(receiver, trace_id=None, count=1, timeout=5):
    """The request spans received (of one trace, if given) once there are at least `count`."""
    def got():
        spans = [s for s in request_spans(receiver) if trace_id is None or s.trace_id.hex() == trace_id]
        return spans if len(spans) >= count else None
    return wait_for(got, timeout=timeout, what=f"{count} spans")


def test_a_request_is_a_server_span_with_the_upstream_call_as_its_child(upstream, idp, receiver, gateway_factory):
    g = gateway_factory(config(upstream, idp, f'{{ otlp_endpoint: "{receiver.url}", service_name: orders-gw }}'))
    r = requests.get(g.url("/api/orders/7?limit=3"), headers={"Authorization": "Bearer " + token(idp.keys[0])},
                     timeout=5)
    assert r.status_code == 200
    seen = sent_headers(r)["traceparent"]
    version, trace_id, parent, flags = seen.split("-")
    assert (version, flags) == ("00", "01")
    spans = spans_of(receiver, trace_id, count=2)
    server = next(s for s in spans if s.kind == SERVER)
    client = next(s for s in spans if s.kind == CLIENT)
    # The upstream's traceparent names the gateway's CLIENT span, whose parent is the SERVER span.
    assert client.span_id.hex() == parent
    assert client.parent_span_id == server.span_id
    assert server.parent_span_id == b""
    assert server.start_time_unix_nano <= client.start_time_unix_nano <= client.end_time_unix_nano
    assert client.end_time_unix_nano <= server.end_time_unix_nano
    assert abs(server.start_time_unix_nano / 1e9 - time.time()) < 30
    assert server.name == "GET orders" and client.name == "GET"
    a = attributes(server)
    assert a["http.request.method"] == "GET"
    assert a["url.path"] == "/api/orders/7"
    assert a["url.scheme"] == "http"
    assert a["http.route"] == "orders"
    assert a["http.response.status_code"] == 200
    assert a["network.peer.address"] == "127.0.0.1"
    assert a["tokengate.auth.outcome"] == "allowed"
    assert a["tokengate.request_id"] == r.headers["X-Request-Id"]
    c = attributes(client)
    assert c["url.full"] == f"http://127.0.0.1:{upstream.port}/api/orders/7"  # never the query
    assert c["server.address"] == f"127.0.0.1:{upstream.port}"
    assert c["http.response.status_code"] == 200
    resource = next(res for res, s in receiver.spans() if s.span_id == server.span_id)
    assert resource["service.name"] == "orders-gw"
    headers, _ = receiver.requests[0]
    assert headers["Content-Type"] == "application/x-protobuf"


def test_a_refusal_is_traced_without_an_upstream_span_and_no_secret_leaks(upstream, idp, receiver,
                                                                            gateway_factory):
    g = gateway_factory(config(upstream, idp, f'{{ otlp_endpoint: "{receiver.url}" }}'))
    bad = token(idp.keys[0], aud="someone-else")
    # One connection, so one worker, whose spans leave in order: once the later requests'
    # spans are in, any span of the refused one is too.
    session = requests.Session()
    r = session.get(g.url("/api/orders/1?page=query-secret-123"),
                    headers={"Authorization": "Bearer " + bad, "Cookie": "session=cookie-secret-456",
                             "DPoP": "proof-secret-789"}, timeout=5)
    assert r.status_code == 401
    server, = spans_of(receiver)
    assert server.kind == SERVER
    a = attributes(server)
    assert a["http.response.status_code"] == 401
    assert a["tokengate.auth.outcome"] == "invalid_token"
    assert "server.address" not in a  # the client's own Host is no trusted origin
    # Refused before routing (no route): the target as sent, whose query stays out too.
    assert session.get(g.url("/nowhere?access_token=query-secret-404"), timeout=5).status_code == 404
    r = session.request("BREW", g.url("/nowhere"), headers={"Host": "attacker.example"}, timeout=5)
    spans_of(receiver, count=3)
    assert [s.kind for s in request_spans(receiver)] == [SERVER] * 3  # no upstream span for the refusal
    names = sorted(s.name for s in request_spans(receiver))
    assert names == ["GET", "GET orders", "_OTHER"], names
    everything = b"".join(request.SerializeToString() for _, request in receiver.requests)
    for secret in [bad.encode(), b"query-secret-123", b"cookie-secret-456", b"proof-secret-789", b"page=",
                   b"query-secret-404", b"BREW", b"attacker.example"]:
        assert secret not in everything


def test_a_trusted_proxys_trace_is_joined_and_its_tracestate_passed_on(upstream, idp, receiver, gateway_factory):
    g = gateway_factory(config(upstream, idp, f'{{ otlp_endpoint: "{receiver.url}" }}',
                               extra="trusted_proxies: [127.0.0.1/32]"))
    r = requests.get(g.url("/pub/x"), headers={"traceparent": INCOMING, "tracestate": "vendor=abc"}, timeout=5)
    seen = sent_headers(r)
    trace_id = INCOMING.split("-")[1]
    assert seen["traceparent"].split("-")[1] == trace_id
    assert seen["traceparent"] != INCOMING
    assert seen["tracestate"] == "vendor=abc"
    spans = spans_of(receiver, trace_id, count=2)
    server = next(s for s in spans if s.kind == SERVER)
    assert server.parent_span_id.hex() == "00f067aa0ba902b7"
    assert server.trace_state == "vendor=abc"
    assert server.flags & 0x300 == 0x300  # the parent is remote
    assert attributes(server)["tokengate.auth.outcome"] == "allowed"
    assert "http.route" in attributes(server)


def test_two_traceparents_are_no_context_and_tracestates_are_one_list(upstream, idp, receiver, gateway_factory):
    g = gateway_factory(config(upstream, idp, f'{{ otlp_endpoint: "{receiver.url}" }}',
                               extra="trusted_proxies: [127.0.0.1/32]"))
    other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    status, resp = raw_request(g.port, (
        f"GET /pub/x HTTP/1.1\r\nHost: gw\r\ntraceparent: {INCOMING}\r\ntraceparent: {other}\r\n"
        "Connection: close\r\n\r\n").encode())
    assert status == 200
    trace_id = echo_headers(resp)["traceparent"].split("-")[1]
    assert trace_id not in (INCOMING.split("-")[1], other.split("-")[1])  # a trace of its own
    status, resp = raw_request(g.port, (
        f"GET /pub/x HTTP/1.1\r\nHost: gw\r\ntraceparent: {INCOMING}\r\ntracestate: a=1\r\n"
        "tracestate: b=2\r\nConnection: close\r\n\r\n").encode())
    seen = echo_headers(resp)
    assert seen["traceparent"].split("-")[1] == INCOMING.split("-")[1]
    assert seen["tracestate"] == "a=1,b=2"


def test_an_unsampled_trusted_parent_is_followed_and_passed_on_as_sent(upstream, idp, receiver, gateway_factory):
    g = gateway_factory(config(upstream, idp, f'{{ otlp_endpoint: "{receiver.url}" }}',
                               extra="trusted_proxies: [127.0.0.1/32]"))
    unsampled = INCOMING[:-2] + "00"
    session = requests.Session()
    r = session.get(g.url("/pub/x"), headers={"traceparent": unsampled, "tracestate": "vendor=abc"}, timeout=5)
    assert sent_headers(r)["traceparent"] == unsampled
    assert sent_headers(r)["tracestate"] == "vendor=abc"
    # A sampled request after it on the same connection, so on the same worker, whose spans
    # leave in order: once its spans are in, any span of the unsampled one is too.
    trace_id = sent_headers(session.get(g.url("/pub/after"), timeout=5))["traceparent"].split("-")[1]
    spans_of(receiver, trace_id, count=2)
    assert {s.trace_id.hex() for s in request_spans(receiver)} == {trace_id}


def test_a_clients_trace_is_restarted_unless_the_config_joins_it(upstream, idp, receiver, gateway_factory):
    g = gateway_factory(config(upstream, idp, f'{{ otlp_endpoint: "{receiver.url}" }}'))
    r = requests.get(g.url("/pub/x"), headers={"traceparent": INCOMING, "tracestate": "vendor=abc"}, timeout=5)
    seen = sent_headers(r)
    trace_id = seen["traceparent"].split("-")[1]
    assert trace_id != INCOMING.split("-")[1]
    assert "tracestate" not in seen
    server = next(s for s in spans_of(receiver, trace_id, count=2) if s.kind == SERVER)
    assert server.parent_span_id == b""
    # A malformed traceparent from anyone starts a new trace too.
    r = requests.get(g.url("/pub/x"), headers={"traceparent": INCOMING.upper()}, timeout=5)
    assert sent_headers(r)["traceparent"].split("-")[1] not in (trace_id, INCOMING.split("-")[1].upper())

    joined = gateway_factory(config(upstream, idp, f'{{ otlp_endpoint: "{receiver.url}", incoming: join }}'))
    r = requests.get(joined.url("/pub/x"), headers={"traceparent": INCOMING}, timeout=5)
    assert sent_headers(r)["traceparent"].split("-")[1] == INCOMING.split("-")[1]


def test_sample_ratio_zero_traces_nothing_and_forwards_no_client_context(upstream, idp, receiver, gateway_factory):
    g = gateway_factory(config(upstream, idp, f'{{ otlp_endpoint: "{receiver.url}", sample_ratio: 0 }}'))
    for _ in range(20):
        r = requests.get(g.url("/pub/x"), headers={"traceparent": INCOMING}, timeout=5)
        assert r.status_code == 200
        assert "traceparent" not in sent_headers(r)
    # The sentinel is the process's exit: on SIGTERM its exporter sends whatever is queued
    # before it stops, so once it has exited any span of those requests has reached the receiver.
    g.stop()
    assert g.proc.returncode is not None
    assert receiver.spans() == []


def test_the_otel_variables_configure_tracing(upstream, idp, receiver, gateway_factory):
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.port}",
           "OTEL_SERVICE_NAME": "from-env", "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test",
           "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=k%20v"}
    text = config(upstream, idp, "{}").replace("tracing: {}\n", "")
    g = gateway_factory(text, env=env)
    r = requests.get(g.url("/pub/x"), timeout=5)
    trace_id = sent_headers(r)["traceparent"].split("-")[1]
    spans_of(receiver, trace_id, count=2)
    resource = receiver.spans()[0][0]
    assert resource["service.name"] == "from-env"
    assert resource["deployment.environment"] == "test"
    headers, _ = receiver.requests[0]
    assert headers["x-api-key"] == "k v"


def test_the_exporter_follows_no_redirect_with_the_collectors_key(upstream, idp, receiver, gateway_factory):
    """A collector (or whoever answers at its address) that redirects gets no second POST:
    the API key in `tracing.headers` goes to the configured endpoint alone."""
    import http.server
    import threading

    class Redirect(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(307)
            self.send_header("Location", receiver.url)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        g = gateway_factory(config(
            upstream, idp,
            f'{{ otlp_endpoint: "http://127.0.0.1:{srv.server_address[1]}/v1/traces", headers: {{ x-api-key: k1 }} }}'))
        assert requests.get(g.url("/pub/x"), timeout=5).status_code == 200
        m = wait_for(lambda: (lambda m: m if m.get("tokengate_trace_export_failures_total", 0) >= 1 else None)(
            metric(g, "tokengate_trace")), timeout=5, what="the redirect counted as a failed export")
        assert m["tokengate_trace_spans_exported_total"] == 0
        assert receiver.posts == 0
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.mark.parametrize("mode", ["down", "error", "hang"])
def test_a_collector_that_fails_costs_requests_nothing(upstream, idp, gateway_factory, mode):
    r = Receiver(mode="hang" if mode == "hang" else "error").start()
    url = r.url
    if mode == "down":
        r.stop()
    try:
        g = gateway_factory(config(upstream, idp, f'{{ otlp_endpoint: "{url}", timeout: 5s }}'))
        s = requests.Session()
        slowest = 0.0
        # 1,500 requests: 3,000 spans, past the 2,048 the queue holds while the export waits.
        for i in range(1500):
            t = time.monotonic()
            assert s.get(g.url(f"/pub/{i}"), timeout=5).status_code == 200
            slowest = max(slowest, time.monotonic() - t)
        assert slowest < 0.5, slowest
        m = wait_for(lambda: (lambda m: m if m.get("tokengate_trace_export_failures_total", 0) >= 1 or mode == "hang"
                              else None)(metric(g, "tokengate_trace")), timeout=8, what="an export failure")
        if mode == "hang":
            assert r.posts >= 1
            assert m['tokengate_trace_spans_dropped_total{reason="queue_full"}'] > 0
        else:
            assert m['tokengate_trace_spans_dropped_total{reason="export_failed"}'] > 0
        assert m["tokengate_trace_spans_exported_total"] == 0
    finally:
        if mode != "down":
            r.stop()


def test_calls_to_the_authorization_server_and_redis_are_client_spans(authserver, upstream, redis, receiver):
    a = authserver
    a.add_client("opq", client_secret=OPQ_SECRET, scopes=["orders:read"], audience=["api"],
                 access_token_format="opaque")
    a.add_client("tokengate", client_secret=GW_SECRET, token_endpoint_auth_method="client_secret_basic",
                 scopes=["openid"])
    text = (f'store: {{ url: "redis://127.0.0.1:{redis.port}/0", prefix: "tg:" }}\n'
            f'tracing: {{ otlp_endpoint: "{receiver.url}" }}\n'
            + introspection_config(a, f'auth: client_secret_basic, secret: "{GW_SECRET}"')
            .replace("@UPSTREAM@", str(upstream.port)))
    g = Gateway(text)
    g.start()
    try:
        # The main loop's discovery and key fetches are traces of their own.
        root = wait_for(lambda: [s for _, s in receiver.spans() if s.kind == CLIENT and s.parent_span_id == b""],
                        timeout=5, what="the discovery fetch's span")
        urls = [attributes(s)["url.full"] for s in root]
        assert f"{a.issuer}/.well-known/openid-configuration" in urls
        token = a.client_credentials_token("opq", scope="orders:read", secret=OPQ_SECRET)["access_token"]
        r = requests.get(g.url("/api/orders/1?x=1"), headers={"Authorization": f"Bearer {token}"}, timeout=5)
        assert r.status_code == 200, r.text
        trace_id = sent_headers(r)["traceparent"].split("-")[1]
        # SERVER, the upstream call, the introspection call, Redis GET (a miss) and SET.
        spans = spans_of(receiver, trace_id, count=5)
        server = next(s for s in spans if s.kind == SERVER)
        children = [s for s in spans if s.kind == CLIENT]
        assert all(s.parent_span_id == server.span_id for s in children)
        introspection = [s for s in children if attributes(s).get("url.full", "").endswith("/introspection")]
        assert len(introspection) == 1
        i = attributes(introspection[0])
        assert i["http.request.method"] == "POST" and i["http.response.status_code"] == 200
        assert a.last_headers("/introspection").get("traceparent", "").split("-")[2] == introspection[0].span_id.hex()
        redis_ops = sorted(attributes(s)["db.operation.name"] for s in children
                           if attributes(s).get("db.system.name") == "redis")
        assert redis_ops[:1] == ["GET"] and "SET" in redis_ops
        everything = b"".join(request.SerializeToString() for _, request in receiver.requests)
        assert token.encode() not in everything and GW_SECRET.encode() not in everything
        assert b"tg:introspection" not in everything  # never a Redis key
    finally:
        g.stop()


def test_a_rate_limit_refusal_names_its_policy_in_the_server_span(upstream, idp, receiver, gateway_factory):
    extra = "rate_limits:\n  one-only: { key: ip, rate: 1/m, burst: 1 }"
    text = config(upstream, idp, f'{{ otlp_endpoint: "{receiver.url}" }}', extra=extra).replace(
        "    auth: none\n", "    auth: none\n    rate_limit: one-only\n")
    g = gateway_factory(text)
    session = requests.Session()
    assert [session.get(g.url("/pub/x"), timeout=5).status_code for _ in range(2)] == [200, 429]
    spans = spans_of(receiver, count=3)
    refused = [attributes(s) for s in spans if s.kind == SERVER and attributes(s)["http.response.status_code"] == 429]
    assert len(refused) == 1, spans
    assert refused[0]["tokengate.refusal.reason"] == "rate_limited"
    assert refused[0]["tokengate.rate_limit.policy"] == "one-only"
