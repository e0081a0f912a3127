"""Credentials toward upstreams (`upstreams.NAME.credentials`, docs/api-keys.md): the upstream
gets its own static secret, read from a file and again as it rotates, or a token the gateway
gets for itself from the real authorization server with the client credentials grant, over
HTTP/1.1, h2c and gRPC; never the client's copy of the field. One token request serves the
whole process until shortly before the token expires; an AS that is down or refuses the
gateway gets the caller a 503, and the upstream never sees a request without its credential."""
import base64
import json
import os
import time

import pytest
import requests

from support.gateway import raw_request
from support.grpc_upstream import GRPCUpstream, channel, unary
from support.h2_upstream import H2Upstream
from support.waiting import wait_for

SECRET = "billing-key-0123456789"
CLIENT_SECRET = "billing-caller-secret-0123456789abcdef"


def write(path, text):
    """Writes as a secret mount rotates: a new file renamed over the old one."""
    tmp = f"{path}.new"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def values(r, name):
    """Every value of `name` the echo upstream received (names compared case-insensitively)."""
    return [v for k, v in r.json()["headers"] if k.lower() == name]


def refusals(gw, upstream="billing"):
    """How many times the gateway has read the upstream's secret file and refused it."""
    text = requests.get(f"http://127.0.0.1:{gw.admin}/metrics", timeout=5).text
    sample = f'tokengate_upstream_secret_refusals_total{{upstream="{upstream}"}} '
    return next((int(line[len(sample):]) for line in text.splitlines() if line.startswith(sample)), 0)


def header_config(echo_port, secret_file, h2_port=None, grpc_port=None):
    h2 = ""
    if h2_port:
        h2 = f"""
  h2app:
    url: "http://127.0.0.1:{h2_port}"
    protocol: h2c
    credentials: {{ header: {{ name: X-Billing-Key, value_file: "{secret_file}" }} }}
  grpcapp:
    url: "http://127.0.0.1:{grpc_port}"
    protocol: h2c
    credentials: {{ header: {{ name: X-Billing-Key, value_file: "{secret_file}" }} }}"""
    routes = ""
    if h2_port:
        routes = """
  - { name: h2, match: { path_prefix: /h2/ }, strip_prefix: true, upstream: h2app, auth: none }
  - { name: grpc, match: { path_prefix: /test.Echo/ }, upstream: grpcapp, auth: none }"""
    return f"""
listen: {{ address: 127.0.0.1:{{PORT}}, http2: true }}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
limits: {{ shutdown_grace: 5s }}
upstreams:
  billing:
    url: "http://127.0.0.1:{echo_port}"
    credentials: {{ header: {{ name: X-Billing-Key, value_file: "{secret_file}" }} }}
  other: {{ url: "http://127.0.0.1:{echo_port}" }}{h2}
routes:
  - {{ name: billing, match: {{ path_prefix: /billing/ }}, upstream: billing, auth: none }}
  - {{ name: other, match: {{ path_prefix: /other/ }}, upstream: other, auth: none }}{routes}
"""


@pytest.fixture
def secret_file(tmp_path):
    path = str(tmp_path / "billing-key")
    write(path, SECRET + "\n")
    return path


def test_the_upstream_gets_its_secret_and_never_the_clients_copy(upstream, gateway_factory, secret_file):
    gw = gateway_factory(header_config(upstream.port, secret_file))
    # Two copies, in two spellings: neither goes.
    status, raw = raw_request(gw.port, b"GET /billing/1 HTTP/1.1\r\nHost: x\r\nX-Billing-Key: forged\r\n"
                                       b"x-billing-key: forged-again\r\nConnection: close\r\n\r\n")
    assert status == 200
    seen = json.loads(raw.split(b"\r\n\r\n", 1)[1])["headers"]
    assert [v for k, v in seen if k.lower() == "x-billing-key"] == [SECRET]
    # Nor as a trailer after a chunked body (a server may merge trailers into the head).
    status, raw = raw_request(gw.port, b"POST /billing/1 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                                       b"Connection: close\r\n\r\n2\r\nhi\r\n0\r\nX-Billing-Key: smuggled\r\n"
                                       b"X-Other: kept\r\n\r\n")
    assert status == 200
    echoed = json.loads(raw.split(b"\r\n\r\n", 1)[1])
    assert [v for k, v in echoed["headers"] if k.lower() == "x-billing-key"] == [SECRET]
    assert [k.lower() for k, _ in echoed["trailers"]] == ["x-other"], echoed["trailers"]
    # Only a route toward that upstream owns the field: another upstream gets the client's
    # fields as they are.
    r = requests.get(gw.url("/other/1"), headers={"X-Billing-Key": "the client's own"}, timeout=5)
    assert values(r, "x-billing-key") == ["the client's own"]
    # The secret is nowhere in the gateway's log.
    assert SECRET not in gw.output()


def test_a_rotated_secret_goes_within_a_second_and_a_broken_file_keeps_the_last(
        upstream, gateway_factory, secret_file):
    gw = gateway_factory(header_config(upstream.port, secret_file))

    def sent():
        return values(requests.get(gw.url("/billing/1"), timeout=5), "x-billing-key")

    assert sent() == [SECRET]
    write(secret_file, "rotated-key-2\n")
    started = time.monotonic()
    wait_for(lambda: sent() == ["rotated-key-2"], timeout=3, interval=0.05, what="the rotated secret upstream")
    assert time.monotonic() - started < 1.5
    # A value a header cannot carry (a line break inside it) is refused: the last good one
    # stays, and the log names the problem without quoting the value.
    write(secret_file, "evil\r\nX-Injected: 1\n")
    assert gw.logged("upstream secret file refused")
    assert refusals(gw) == 1
    r = requests.get(gw.url("/billing/1"), timeout=5)
    assert values(r, "x-billing-key") == ["rotated-key-2"] and values(r, "x-injected") == []
    assert "evil" not in gw.output()
    # A file that is gone keeps the last value too (the upstream decides what it accepts):
    # asked once the gateway has found it gone (its second refusal).
    os.remove(secret_file)
    wait_for(lambda: refusals(gw) == 2, timeout=3, interval=0.05, what="the gateway to find the file gone")
    assert sent() == ["rotated-key-2"]
    write(secret_file, "back-3\n")
    wait_for(lambda: sent() == ["back-3"], timeout=3, interval=0.05, what="the secret after the file came back")


@pytest.fixture
def h2up():
    u = H2Upstream()
    yield u
    u.stop()


@pytest.fixture
def grpc_upstream():
    u = GRPCUpstream()
    yield u
    u.stop()


def test_h2c_and_grpc_upstreams_get_the_secret_too(upstream, h2up, grpc_upstream, gateway_factory, secret_file):
    gw = gateway_factory(header_config(upstream.port, secret_file, h2_port=h2up.port, grpc_port=grpc_upstream.port))
    r = requests.get(gw.url("/h2/ok"), headers={"X-Billing-Key": "forged"}, timeout=5)
    assert r.status_code == 200 and r.text == "ok"
    [head] = h2up.heads
    assert [v for k, v in head if k == "x-billing-key"] == [SECRET]
    reply, _ = unary(channel(gw.port), metadata=[("x-billing-key", "forged")])
    metadata = json.loads(reply)["metadata"]
    assert [v for k, v in metadata if k == "x-billing-key"] == [SECRET]


def claims(token):
    return json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))


def grant_config(a, echo_port, secret=CLIENT_SECRET):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
issuers:
  as1: {{ issuer: "{a.issuer}", discovery: true, audiences: [api], algorithms: [ES256] }}
clients:
  billing-caller: {{ issuer: as1, client_id: billing-caller, auth: client_secret_basic, secret: "{secret}" }}
upstreams:
  billing:
    url: "http://127.0.0.1:{echo_port}"
    timeout: 5s
    credentials: {{ client_credentials: {{ client: billing-caller, scope: "billing:write" }} }}
routes:
  - {{ name: billing, match: {{ path_prefix: /billing/ }}, upstream: billing, auth: none }}
"""


def grants(a):
    return [t for t in a.token_requests if t["grant_type"] == "client_credentials"]


@pytest.fixture
def short_lived_as(authserver_factory):
    a = authserver_factory(access_token_lifetime=4)
    a.add_client("billing-caller", client_secret=CLIENT_SECRET, token_endpoint_auth_method="client_secret_basic",
                 scopes=["billing:write"])
    return a


def bearer_sent(r):
    [value] = values(r, "authorization")
    assert value.startswith("Bearer ")
    return value[len("Bearer "):]


def test_a_client_credentials_token_is_fetched_once_for_the_process_and_refreshed(
        short_lived_as, upstream, gateway_factory):
    a = short_lived_as
    gw = gateway_factory(grant_config(a, upstream.port))
    tokens = set()
    for i in range(100):
        # A new connection each time: both workers serve some.
        r = requests.get(gw.url(f"/billing/{i}"), headers={"Authorization": "Bearer the-clients-own"}, timeout=5)
        assert r.status_code == 200, r.text
        tokens.add(bearer_sent(r))
    assert len(tokens) == 1 and len(grants(a)) == 1 and grants(a)[0]["status"] == 200
    [token] = tokens
    c = claims(token)
    assert c["client_id"] == "billing-caller" and c["scope"].split() == ["billing:write"]
    # A 4 s token is used for half its life, then a new one is asked for before it expires.
    def replaced():
        r = requests.get(gw.url("/billing/after"), timeout=5)
        assert r.status_code == 200, r.text
        return r if bearer_sent(r) != token else None
    r = wait_for(replaced, timeout=5, interval=0.05, what="a new token upstream")
    assert len(grants(a)) == 2
    assert claims(bearer_sent(r))["iat"] < c["exp"] < claims(bearer_sent(r))["exp"]


def test_an_authorization_server_that_is_down_gets_a_503_and_nothing_goes_upstream(
        short_lived_as, upstream, gateway_factory):
    a = short_lived_as
    gw = gateway_factory(grant_config(a, upstream.port))
    assert requests.get(gw.url("/billing/1"), timeout=5).status_code == 200
    a.stop()
    # The held token serves until it is past its use (half its life); the first request after
    # that needs a new one.
    def refused():
        refused.before = len(upstream.requests)
        refused.r = requests.get(gw.url("/billing/2"), headers={"Authorization": "Bearer the-clients-own"}, timeout=10)
        return refused.r.status_code != 200
    wait_for(refused, timeout=5, interval=0.05, what="the held token to be past its use")
    r = refused.r
    assert r.status_code == 503
    assert r.json()["error"] == "temporarily_unavailable" and r.headers["Retry-After"] == "5"
    assert len(upstream.requests) == refused.before
    assert gw.logged("upstream_credential_unavailable")
    # Back up: the next request gets a new token.
    a.start()
    r = requests.get(gw.url("/billing/3"), timeout=5)
    assert r.status_code == 200 and bearer_sent(r)


def test_an_authorization_server_that_refuses_the_gateway_gets_a_503(short_lived_as, upstream, gateway_factory):
    a = short_lived_as
    gw = gateway_factory(grant_config(a, upstream.port, secret="not-the-registered-secret-0123456789"))
    before = len(upstream.requests)
    r = requests.get(gw.url("/billing/1"), timeout=10)
    assert r.status_code == 503 and r.json()["error"] == "temporarily_unavailable"
    assert len(upstream.requests) == before
    assert [g["status"] for g in grants(a)] == [401]
    # Refused once: not asked again on every request (the refusal backs off).
    for _ in range(5):
        assert requests.get(gw.url("/billing/2"), timeout=10).status_code == 503
    assert len(grants(a)) <= 2


class RefusingUpstream:
    """An upstream that answers 401 `invalid_token` (RFC 6750 §3.1) to the tokens in `refused`
    (as if revoked), and 200 with the Authorization it got otherwise."""

    def __init__(self):
        import http.server
        import threading
        self.refused = set()
        self.seen = []
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                value = self.headers.get("Authorization", "")
                outer.seen.append(value)
                token = value[len("Bearer "):]
                if token in outer.refused or "*" in outer.refused:
                    body = b'{"error":"invalid_token"}'
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Bearer error="invalid_token"')
                else:
                    body = json.dumps({"authorization": value}).encode()
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()


@pytest.fixture
def refusing():
    u = RefusingUpstream()
    yield u
    u.stop()


def test_a_token_the_upstream_calls_invalid_is_replaced_at_most_once_in_5_s(authserver_factory, refusing,
                                                                             gateway_factory):
    # Tokens that live long enough that only a refusal replaces one here.
    a = authserver_factory(access_token_lifetime=300)
    a.add_client("billing-caller", client_secret=CLIENT_SECRET, token_endpoint_auth_method="client_secret_basic",
                 scopes=["billing:write"])
    gw = gateway_factory(grant_config(a, refusing.port))
    first = requests.get(gw.url("/billing/1"), timeout=5)
    assert first.status_code == 200
    token = first.json()["authorization"][len("Bearer "):]
    refusing.refused.add(token)  # revoked at the upstream
    assert requests.get(gw.url("/billing/2"), timeout=5).status_code == 401  # the client hears it
    # The next request carries a new token (on whichever worker: the process holds one).
    wait_for(lambda: requests.get(gw.url("/billing/3"), timeout=5).status_code == 200, timeout=5,
             what="a replaced token")
    assert len(grants(a)) == 2
    # An upstream that refuses every token costs the AS at most one request per worker in 5 s.
    refusing.refused.add("*")
    for i in range(20):
        assert requests.get(gw.url(f"/billing/{i}"), timeout=5).status_code == 401
    assert len(grants(a)) <= 4
