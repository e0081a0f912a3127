"""Envoy's gRPC ext_authz service (decision.ext_authz_grpc), called as Envoy calls it: grpcio
with Envoy's own generated v3 messages (PyPI xds-protos) on a real tokengate over h2c, judging
the real authorization server's tokens (IntegrationTests/support/authserver). Bearer, DPoP and
login-or-token routes; the OK response's header changes; 16 and 7 with the HTTP answer a proxied
request gets; path tricks judged on the normalized path or refused; an untrusted peer, a missing
secret and malformed messages refused as calls."""
import json
import socket
import struct
import time
import subprocess

import grpc
import pytest
import requests
from envoy.config.core.v3 import base_pb2
from envoy.service.auth.v3 import external_auth_pb2 as ext

from support.dpop_client import DPoPKey
from support.gateway import BIN, Gateway, free_port
from support.h2_client import H2Connection
from support.waiting import sleep_into_second
from test_login import HTML, SESSION_KEY, gateway_key

SECRET = "grpc-decision-secret-0123456789ab"
CHECK = "/envoy.service.auth.v3.Authorization/Check"
# The original request's origin, as Envoy received it (the DPoP htu names it).
ORIGIN = "https://api.example"
OVERWRITE = base_pb2.HeaderValueOption.OVERWRITE_IF_EXISTS_OR_ADD


class Env:
    def __init__(self, a, d, tmp_path, extra_top="", ready="/readyz", extra_route=""):
        self.a, self.d = a, d
        self.gw = Gateway("")
        (tmp_path / "decision.secret").write_text(SECRET + "\n")
        key_path, jwks = gateway_key(tmp_path)
        origin = f"http://127.0.0.1:{self.gw.port}"
        a.add_client("web", jwks=jwks, scopes=["openid", "profile", "email", "orders:read"],
                     redirect_uri=[origin + "/oauth2/callback"], token_endpoint_auth_method="private_key_jwt")
        self.gw.write_config(f"""
listen: {{ address: 127.0.0.1:{{PORT}}, http2: true }}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
trusted_proxies: [127.0.0.1/32]
public_url: [{origin}, {ORIGIN}]
decision: {{ ext_authz_grpc: true, secret_file: "{tmp_path / 'decision.secret'}" }}
session: {{ keys: ["{SESSION_KEY}"], secure_cookie: false }}
dpop: {{ nonce_lifetime: 10s }}
{extra_top}
issuers:
  as1: {{ issuer: "{a.issuer}", discovery: true, audiences: [api], algorithms: [ES256, RS256] }}
  as2: {{ issuer: "{d.issuer}", discovery: true, audiences: [api], algorithms: [ES256] }}
clients:
  web:
    issuer: as1
    client_id: web
    auth: private_key_jwt
    key_file: "{key_path}"
    assertion_audience: endpoint
    request_mode: par
    scopes: [openid, profile, email]
upstreams:
  app: {{ url: "http://127.0.0.1:9" }}
routes:
  - name: api
    match: {{ path_prefix: /api/ }}
    upstream: app
    auth: bearer
    issuers: [as1]
    require: {{ scopes: [orders:read] }}
    headers: {{ X-Forwarded-User: sub, X-Forwarded-Email: email }}
  - name: fwd
    match: {{ path_prefix: /fwd/ }}
    upstream: app
    auth: bearer
    issuers: [as1]
    forward_token: true
  - name: admin
    match: {{ path_prefix: /admin/ }}
    upstream: app
    auth: bearer
    issuers: [as1]
    require: {{ scopes: [admin] }}
  - name: dpop
    match: {{ path_prefix: /dpop/ }}
    upstream: app
    auth: dpop
    issuers: [as2]
  - name: nonce
    match: {{ path_prefix: /nonce/ }}
    upstream: app
    auth: dpop
    issuers: [as2]
    dpop: {{ nonce: required }}
  - name: mixed
    match: {{ path_prefix: /mixed/ }}
    upstream: app
    auth: login_or_token
    client: web
    issuers: [as1]
    headers: {{ X-Forwarded-User: sub, X-Forwarded-Email: email }}
  - name: app
    match: {{ path_prefix: /app/ }}
    upstream: app
    auth: login
    client: web
  - name: public
    match: {{ path_prefix: / }}
    upstream: app
    auth: none
{extra_route}""")
        self.gw.start(ready)
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.gw.port}")
        self.stub = self.channel.unary_unary(CHECK, request_serializer=ext.CheckRequest.SerializeToString,
                                             response_deserializer=ext.CheckResponse.FromString)

    def check(self, path, headers=None, method="GET", secret=SECRET, source="203.0.113.7", request_id="envoy-req-1"):
        """A Check as Envoy sends it: the pseudo-headers among the lower-cased headers."""
        req = ext.CheckRequest()
        http = req.attributes.request.http
        http.method, http.scheme, http.host, http.path, http.id = method, "https", "api.example", path, request_id
        http.headers.update({":authority": "api.example", ":method": method, ":path": path, ":scheme": "https",
                             "user-agent": "curl/8", **(headers or {})})
        req.attributes.source.address.socket_address.address = source
        metadata = [("x-tokengate-decision-secret", secret)] if secret else []
        return self.stub(req, metadata=metadata, timeout=10)

    def stop(self):
        self.channel.close()
        self.gw.stop()


@pytest.fixture
def env(authserver_factory, tmp_path):
    e = Env(authserver_factory(login="form"), authserver_factory(dpop=True), tmp_path)
    yield e
    e.stop()


def ok_headers(resp):
    return {h.header.key: (h.header.value, h.append_action) for h in resp.ok_response.headers}


def denied_headers(resp):
    return {h.header.key.lower(): h.header.value for h in resp.denied_response.headers}


def test_a_valid_bearer_token_is_allowed_with_identity_headers_and_removals(env):
    tok = env.a.client_credentials_token("app1", scope="orders:read")["access_token"]
    resp = env.check("/api/orders/1", {"authorization": f"Bearer {tok}", "x-forwarded-user": "admin",
                                       "x-forwarded-email": "root@evil.example", "x_forwarded_user": "admin",
                                       "x-forwarded-for": "203.0.113.7", "x-request-id": "envoy-req-1"})
    assert resp.status.code == 0 and resp.HasField("ok_response"), resp
    set_ = ok_headers(resp)
    # The identity header replaces the client's copy; a claim the token lacks (email) sets
    # nothing, and the client's copy of it is removed.
    assert set_ == {"x-forwarded-user": ("app1", OVERWRITE)}, set_
    removed = set(resp.ok_response.headers_to_remove)
    assert {"x-forwarded-email", "x_forwarded_user", "authorization"} <= removed, removed
    # What Envoy sets itself, and the client's other fields, are left alone.
    assert not removed & {"x-forwarded-for", "x-request-id", "user-agent", "host", ":authority"}, removed
    assert "x-forwarded-user" not in removed


def test_a_route_that_forwards_the_token_keeps_authorization(env):
    tok = env.a.client_credentials_token("app1", scope="orders:read")["access_token"]
    resp = env.check("/fwd/x", {"authorization": f"Bearer {tok}"})
    assert resp.status.code == 0 and "authorization" not in resp.ok_response.headers_to_remove, resp


def test_no_token_or_a_bad_one_is_unauthenticated_with_the_challenge(env):
    resp = env.check("/api/orders/1")
    assert resp.status.code == 16 and resp.HasField("denied_response"), resp
    assert resp.denied_response.status.code == 401
    h = denied_headers(resp)
    assert h["www-authenticate"].startswith("Bearer") and h["x-request-id"] == "envoy-req-1", h
    # A bad signature: the token's last character changed.
    tok = env.a.client_credentials_token("app1", scope="orders:read")["access_token"]
    forged = tok[:-2] + ("A" if tok[-2] != "A" else "B") + tok[-1]
    resp = env.check("/api/orders/1", {"authorization": f"Bearer {forged}"})
    assert resp.status.code == 16 and resp.denied_response.status.code == 401, resp
    assert 'error="invalid_token"' in denied_headers(resp)["www-authenticate"]
    assert json.loads(resp.denied_response.body)["error"] == "invalid_token"


def test_a_missing_scope_is_permission_denied_with_403(env):
    tok = env.a.client_credentials_token("app1", scope="orders:read")["access_token"]
    resp = env.check("/admin/x", {"authorization": f"Bearer {tok}"})
    assert resp.status.code == 7 and resp.denied_response.status.code == 403, resp
    assert 'error="insufficient_scope"' in denied_headers(resp)["www-authenticate"]
    assert json.loads(resp.denied_response.body)["error"] == "insufficient_scope"


@pytest.mark.parametrize("path,code,status", [
    ("/admin/./x", 16, 401),              # judged on /admin/x, which needs a token
    ("/%61dmin/x", 16, 401),              # an encoded letter: the same path, the same verdict
    ("/public/../admin/x", 7, 400),       # out of the public route it starts in: refused
    ("/public/%2e%2e/admin/x", 7, 400),   # the encoded form: the same
    ("/api/..%2fadmin/x", 7, 400),        # an encoded slash: refused
    ("/api/orders/../../../etc", 7, 400), # above the root: refused
    ("/public/x;/../admin", 7, 400),      # a path parameter: refused
])
def test_path_tricks_are_judged_on_the_normalized_path_or_refused(env, path, code, status):
    resp = env.check(path)
    assert resp.status.code == code and resp.denied_response.status.code == status, (path, resp)


def test_dpop_is_checked_against_the_original_url_and_a_replay_is_refused(env):
    key = DPoPKey("ES256")
    tok = env.d.client_credentials_token("app1", scope="orders:read", dpop_key=key)["access_token"]
    proof = key.proof("GET", ORIGIN + "/dpop/orders/1", access_token=tok)
    creds = {"authorization": f"DPoP {tok}", "dpop": proof}
    resp = env.check("/dpop/orders/1", creds)
    assert resp.status.code == 0, (resp, env.gw.output()[-2000:])
    assert {"authorization", "dpop"} <= set(resp.ok_response.headers_to_remove)
    # The same proof again: a replay.
    resp = env.check("/dpop/orders/1", creds)
    assert resp.status.code == 16 and 'error="invalid_dpop_proof"' in denied_headers(resp)["www-authenticate"], resp
    # A proof for the gateway's own address is for another URL.
    wrong = key.proof("GET", env.gw.url("/dpop/orders/1"), access_token=tok)
    resp = env.check("/dpop/orders/1", {"authorization": f"DPoP {tok}", "dpop": wrong})
    assert resp.status.code == 16, resp


def test_a_dpop_nonce_reaches_the_client_both_ways(env):
    """RFC 9449 §8: the use_dpop_nonce challenge carries the nonce in the denied answer; a
    proof with it is allowed, and a fresh nonce the gateway hands out goes in
    response_headers_to_add, for the client's answer."""
    key = DPoPKey("ES256")
    tok = env.d.client_credentials_token("app1", scope="orders:read", dpop_key=key)["access_token"]
    url = ORIGIN + "/nonce/orders/1"
    # Both answers below must come in the slot the nonce was made in: a try that straddles a
    # slot's edge is made again.
    for _ in range(3):
        slot = time.time() // 5
        resp = env.check(
            "/nonce/orders/1", {"authorization": f"DPoP {tok}", "dpop": key.proof("GET", url, access_token=tok)})
        h = denied_headers(resp)
        assert resp.status.code == 16 and 'error="use_dpop_nonce"' in h["www-authenticate"], resp
        nonce = h["dpop-nonce"]
        proof = key.proof("GET", url, access_token=tok, nonce=nonce)
        resp = env.check("/nonce/orders/1", {"authorization": f"DPoP {tok}", "dpop": proof})
        if time.time() // 5 == slot:
            break
    assert resp.status.code == 0 and not resp.ok_response.response_headers_to_add, resp
    # nonce_lifetime 10s: slots of 5 s; in the next slot the nonce is still accepted but stale,
    # and the allowed answer hands the client a fresh one.
    sleep_into_second(slot * 5, 5)
    proof = key.proof("GET", url, access_token=tok, nonce=nonce)
    resp = env.check("/nonce/orders/1", {"authorization": f"DPoP {tok}", "dpop": proof})
    assert resp.status.code == 0, resp
    added = [(o.header.key.lower(), o.header.value) for o in resp.ok_response.response_headers_to_add]
    assert [k for k, _ in added] == ["dpop-nonce"] and added[0][1] != nonce, added


def test_login_and_login_or_token_routes(env):
    tok = env.a.client_credentials_token("app1", scope="orders:read")["access_token"]
    resp = env.check("/mixed/x", {"authorization": f"Bearer {tok}"})
    assert resp.status.code == 0 and ok_headers(resp)["x-forwarded-user"][0] == "app1", resp
    # No credential at all: the token route's challenge.
    resp = env.check("/mixed/x", {"accept": HTML["Accept"]})
    assert resp.status.code == 16 and resp.denied_response.status.code == 401, resp
    # On a login route, a browser without a session: the 302 to the login, on the original origin.
    resp = env.check("/app/x?y=1", {"accept": HTML["Accept"]})
    assert resp.status.code == 16 and resp.denied_response.status.code == 302, resp
    assert denied_headers(resp)["location"].startswith(ORIGIN + "/oauth2/start?rd="), resp
    # A gRPC call is never sent to a login page.
    resp = env.check("/app/x", {"content-type": "application/grpc", "accept": HTML["Accept"]}, method="POST")
    assert resp.status.code == 16 and resp.denied_response.status.code == 401, resp
    # With a session (logged in at the gateway): the session's identity; the gateway's own
    # cookie is taken out of the client's, the others stay.
    s = requests.Session()
    r = s.get(env.gw.url("/oauth2/start"), params={"rd": "/mixed/x"}, allow_redirects=False, timeout=10)
    assert r.status_code == 302, (r.status_code, r.text)
    r = s.get(env.a.login_with_form(s, r.headers["Location"]), allow_redirects=False, timeout=10)
    assert r.status_code == 302, (r.status_code, r.text, env.gw.output()[-2000:])
    cookie = "; ".join(f"{c.name}={c.value}" for c in s.cookies if c.name.startswith("tokengate_"))
    resp = env.check("/mixed/x", {"cookie": f"theme=dark; {cookie}", "accept": HTML["Accept"]})
    assert resp.status.code == 0, resp
    assert ok_headers(resp)["x-forwarded-email"][0] == "alice@example.com"
    assert ok_headers(resp)["cookie"][0] == "theme=dark", ok_headers(resp)
    resp = env.check("/mixed/x", {"cookie": cookie, "accept": HTML["Accept"]})
    assert resp.status.code == 0 and "cookie" in resp.ok_response.headers_to_remove, resp


def test_a_missing_or_wrong_secret_refuses_the_call(env):
    for secret in (None, "not-the-secret-0123456789abcdef"):
        with pytest.raises(grpc.RpcError) as e:
            env.check("/public/x", secret=secret)
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED, e.value
    assert env.gw.logged("ext_authz call refused")


def raw_call(port, body, source="127.0.0.1", content_type="application/grpc", secret=SECRET):
    """The Check call over a raw h2c connection from `source`: the answer (headers, trailers)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    with H2Connection(port, sock=sock) as c:
        headers = [("content-type", content_type), ("te", "trailers"), ("x-tokengate-decision-secret", secret)]
        return c.request("POST", CHECK, headers, body=body)


def grpc_status(answer):
    fields = dict(answer.headers + answer.trailers)
    return fields.get("grpc-status"), fields.get("grpc-message", "")


def test_an_untrusted_peer_is_refused(env):
    req = ext.CheckRequest()
    req.attributes.request.http.method, req.attributes.request.http.host = "GET", "api.example"
    req.attributes.request.http.path, req.attributes.request.http.scheme = "/public/x", "https"
    body = req.SerializeToString()
    framed = struct.pack(">BI", 0, len(body)) + body
    # 127.0.0.5 is not in trusted_proxies.
    answer = raw_call(env.gw.port, framed, source="127.0.0.5")
    assert answer.status == 200 and grpc_status(answer)[0] == "7", (answer.headers, answer.trailers)
    assert env.gw.logged("untrusted peer 127.0.0.5")
    # From the trusted address, the same call is judged: allowed.
    answer = raw_call(env.gw.port, framed)
    assert grpc_status(answer)[0] == "0", (answer.headers, answer.trailers)
    resp = ext.CheckResponse.FromString(answer.body[5:])
    assert resp.status.code == 0 and resp.HasField("ok_response")


@pytest.mark.parametrize("body,status", [
    (None, "3"),                                     # no body at all (END_STREAM on the headers)
    (b"\x00\x00\x00\x00\x09abc", "3"),               # cut short
    (b"\x00\x00\x00\x00\x01\xff", "3"),              # not a CheckRequest
    (b"\x00\x00\x00\x00\x00", "3"),                  # an empty message: no HTTP attributes
    (b"\x01\x00\x00\x00\x01\x00", "12"),             # compressed: no encoding was offered
    (b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", "3"),  # two messages on a unary call
])
def test_malformed_messages_are_invalid_argument(env, body, status):
    answer = raw_call(env.gw.port, body)
    assert answer.status == 200 and grpc_status(answer)[0] == status, (answer.headers, answer.trailers)


@pytest.mark.parametrize("headers,status", [
    ({"Authorization": "Bearer x"}, 400),                  # not lower-case
    ({"x-bad": "a\r\nx-forwarded-user: admin"}, 400),      # a field split by CR LF
    ({"host": "evil.example"}, 400),                       # another host than the request's
    ({f"x-{i}": "v" for i in range(120)}, 431),            # more fields than a request may have
    ({"transfer-encoding": "chunked", "content-length": "5"}, 400),  # both framings (RFC 9112 §6.3)
])
def test_requests_no_proxy_could_have_received_are_denied_verdicts(env, headers, status):
    """A client picks its own request's fields: a bad one is a verdict (denied), never the
    service failing, which Envoy's failure_mode_allow would let through."""
    resp = env.check("/public/x", headers)
    assert resp.status.code == 7 and resp.WhichOneof("http_response") == "denied_response", resp
    assert resp.denied_response.status.code == status



def test_both_framings_are_denied_with_the_json_error(env):
    """The smuggling shape is a denied verdict with the body a proxied request gets, on a
    public route too, whatever the credentials."""
    tok = env.a.client_credentials_token("app1", scope="orders:read")["access_token"]
    for path, extra in [("/public/x", {}), ("/api/orders/1", {"authorization": f"Bearer {tok}"})]:
        resp = env.check(path, {"transfer-encoding": "chunked", "content-length": "5", **extra}, method="POST")
        assert resp.status.code == 7 and resp.denied_response.status.code == 400, resp
        body = json.loads(resp.denied_response.body)
        assert body["error"] == "invalid_request"
        assert body["error_description"] == "the request has both Transfer-Encoding and Content-Length"


def test_a_clients_dpop_header_is_removed_where_the_route_does_not_forward_it(env):
    """A proof the gateway never checked (a bearer or public route) is not Envoy's to pass on:
    it is in headers_to_remove, as a proxied request drops it."""
    tok = env.a.client_credentials_token("app1", scope="orders:read")["access_token"]
    proof = DPoPKey("ES256").proof("GET", ORIGIN + "/api/orders/1")
    for path, extra in [("/api/orders/1", {"authorization": f"Bearer {tok}"}), ("/public/x", {})]:
        resp = env.check(path, {"dpop": proof, **extra})
        assert resp.status.code == 0 and resp.HasField("ok_response"), resp
        assert "dpop" in resp.ok_response.headers_to_remove, resp.ok_response


def test_forged_proxy_headers_are_removed_and_login_endpoints_keep_cookies(env):
    forged = {"x-original-url": "/admin/x", "x-http-method-override": "DELETE", "x-real-ip": "10.0.0.1",
              "forwarded": "host=evil.example", "x-forwarded-host": "evil.example", "x-forwarded-user": "admin"}
    resp = env.check("/public/x", forged)
    assert resp.status.code == 0 and set(resp.ok_response.headers_to_remove) == set(forged), resp
    # The gateway's own login endpoint, which Envoy sends on to it: the forged fields still go,
    # the login state cookie stays (the callback needs it).
    resp = env.check("/oauth2/callback?code=x&state=y", {**forged, "cookie": "tokengate_login=abc"})
    assert resp.status.code == 0 and set(resp.ok_response.headers_to_remove) == set(forged), resp
    assert not resp.ok_response.headers


def test_a_non_grpc_call_to_the_service_path_is_415(env):
    answer = raw_call(env.gw.port, b"{}", content_type="application/json")
    assert answer.status == 415, answer.headers


def test_config_needs_an_http2_listener(tmp_path):
    cfg = tmp_path / "tokengate.yaml"
    base = """
trusted_proxies: [127.0.0.1/32]
decision: { ext_authz_grpc: true }
upstreams: { app: { url: "http://127.0.0.1:9" } }
routes: [ { name: all, match: { path_prefix: / }, upstream: app, auth: none } ]
"""
    cfg.write_text("listen: 127.0.0.1:8080" + base)
    out = subprocess.run([BIN, "check-config", str(cfg)], capture_output=True, text=True, timeout=30)
    assert out.returncode != 0 and "decision.ext_authz_grpc" in out.stdout + out.stderr, out
    cfg.write_text("listen: { address: 127.0.0.1:8080, http2: true }" + base)
    out = subprocess.run([BIN, "check-config", str(cfg)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out


def test_a_store_outage_is_an_error_response_not_a_verdict(authserver_factory, tmp_path):
    """The DPoP replay store cannot be reached: the proof cannot be claimed, so no verdict; the
    503 goes in error_response (UNAVAILABLE), where Envoy's failure_mode_allow and
    status_on_error decide."""
    e = Env(authserver_factory(login="form"), authserver_factory(dpop=True), tmp_path,
            extra_top=f'store: {{ url: "redis://127.0.0.1:{free_port()}/3" }}', ready="/healthz")
    try:
        key = DPoPKey("ES256")
        tok = e.d.client_credentials_token("app1", scope="orders:read", dpop_key=key)["access_token"]
        proof = key.proof("GET", ORIGIN + "/dpop/orders/1", access_token=tok)
        resp = e.check("/dpop/orders/1", {"authorization": f"DPoP {tok}", "dpop": proof})
        assert resp.status.code == 14 and resp.WhichOneof("http_response") == "error_response", resp
        assert resp.error_response.status.code == 503
        assert "redis" not in resp.error_response.body.lower()
        # Routes that need no store are judged as ever.
        assert e.check("/public/x").status.code == 0
    finally:
        e.stop()


def test_a_check_over_a_rate_limit_is_a_429_denial_with_retry_after(authserver_factory, tmp_path):
    limited = """  - name: limited
    match: { path_prefix: /limited/ }
    upstream: app
    auth: none
    rate_limit: per-client
"""
    e = Env(authserver_factory(login="form"), authserver_factory(dpop=True), tmp_path,
            extra_top="rate_limits:\n  per-client: { key: ip, rate: 1/m, burst: 1 }", extra_route=limited)
    try:
        assert e.check("/limited/x").status.code == 0
        resp = e.check("/limited/x")
        assert resp.status.code == 7 and resp.denied_response.status.code == 429, resp  # a denial, not an error
        headers = denied_headers(resp)
        assert int(headers["retry-after"]) >= 1 and headers["ratelimit"].startswith('"per-client";r=0')
        assert json.loads(resp.denied_response.body)["error"] == "rate_limited"
        # Another client (by the source Envoy reports) has its own budget.
        assert e.check("/limited/x", source="203.0.113.8").status.code == 0
    finally:
        e.stop()
