"""What Shared Signals events do beyond a JWT route (docs/shared-signals.md): an introspected
opaque token whose answer was kept from before a `token-claims-change` is asked about again,
and refused when it was issued before the change, while a token issued after passes; the
decision endpoints (forwardAuth, and Envoy's ext_authz in its HTTP and gRPC forms) refuse a
revoked caller as a route does; and a refusal names its event in the access log and the span."""
import time

import pytest
import requests

from support.gateway import Gateway
from support.ssf_transmitter import CAEP, Transmitter
from support.waiting import sleep_into_second, wait_for
from test_bearer import idp, token  # noqa: F401 — idp is a fixture
from test_shared_signals import SESSION_KEY, config, iss_sub

OPQ_SECRET = "opq-secret-0123456789abcdef0123456789ab"
GW_SECRET = "gateway-secret-0123456789abcdef0123456789"


@pytest.fixture
def transmitter():
    t = Transmitter()
    yield t
    t.stop()


def test_a_claims_change_asks_about_an_introspected_token_again(authserver, transmitter, upstream, tmp_path):
    a = authserver
    a.add_client("opq", client_secret=OPQ_SECRET, scopes=["orders:read"], audience=["api"],
                 access_token_format="opaque")
    a.add_client("tokengate", client_secret=GW_SECRET, token_endpoint_auth_method="client_secret_basic",
                 scopes=["openid"])
    token_file = tmp_path / "ssf-token"
    token_file.write_text(transmitter.management_token)
    g = Gateway(f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 1
session: {{ keys: ["{SESSION_KEY}"] }}
clients:
  gw: {{ client_id: tokengate, auth: client_secret_basic, secret: "{GW_SECRET}" }}
issuers:
  as1: {{ issuer: "{a.issuer}", discovery: true, audiences: [api], algorithms: [ES256], introspection: {{ client: gw }} }}
shared_signals:
  corp:
    issuer: "{transmitter.issuer}"
    issuers: [as1]
    endpoint_url: "http://127.0.0.1:{{PORT}}/.ssf/events"
    auth: {{ bearer_file: "{token_file}" }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - {{ name: orders, match: {{ path_prefix: /api/ }}, upstream: app, auth: bearer, issuers: [as1] }}
""")
    g.start()
    try:
        wait_for(lambda: transmitter.verifications == [202], timeout=10, what="the stream's verification")

        def get(tok):
            return requests.get(g.url("/api/orders"), headers={"Authorization": f"Bearer {tok}"}, timeout=5)
        old = a.client_credentials_token("opq", scope="orders:read", secret=OPQ_SECRET)["access_token"]
        assert get(old).status_code == 200 and get(old).status_code == 200
        asked = a.hits.get("/introspection", 0)
        assert get(old).status_code == 200 and a.hits.get("/introspection", 0) == asked  # the kept answer
        sleep_into_second(time.time(), 1)  # the change comes in a later second than the kept answer
        r = transmitter.push(CAEP + "token-claims-change", {"format": "opaque", "id": "opq"})
        assert r.status_code == 202, r.text
        pushed = time.time()
        # The kept answer predates the change: the AS is asked again, once, and the token,
        # issued before the change, is refused.
        r = get(old)
        assert r.status_code == 401 and "claims changed" in r.json()["error_description"]
        assert a.hits.get("/introspection", 0) == asked + 1
        assert get(old).status_code == 401 and a.hits.get("/introspection", 0) == asked + 1
        sleep_into_second(pushed, 1)  # the new token is issued in a later second than the change
        new = a.client_credentials_token("opq", scope="orders:read", secret=OPQ_SECRET)["access_token"]
        assert get(new).status_code == 200
    finally:
        g.stop()


@pytest.fixture
def decision_gateway(idp, transmitter, upstream, gateway_factory, tmp_path):  # noqa: F811
    token_file = tmp_path / "ssf-token"
    token_file.write_text(transmitter.management_token)
    text = config(idp, transmitter, token_file).replace("{UPSTREAM}", str(upstream.port))
    g = gateway_factory("trusted_proxies: [127.0.0.1/32]\ndecision: { forward_auth_path: /_fa }\n" + text)
    wait_for(lambda: transmitter.verifications == [202], timeout=10, what="the stream's verification")
    return g


def test_the_decision_endpoints_refuse_a_revoked_caller(decision_gateway, transmitter, idp):  # noqa: F811
    g = decision_gateway
    now = int(time.time())
    alice, bob = token(idp.keys[0], sub="alice", iat=now - 10), token(idp.keys[0], sub="bob", iat=now - 10)

    def forward_auth(tok):
        return requests.get(g.url("/_fa"), timeout=5, headers={
            "Authorization": f"Bearer {tok}", "X-Forwarded-Method": "GET", "X-Forwarded-Proto": "http",
            "X-Forwarded-Host": "app.example", "X-Forwarded-Uri": "/api/orders"})

    def ext_authz(tok):
        return requests.get(g.url("/_tokengate/ext_authz/api/orders"), timeout=5,
                            headers={"Authorization": f"Bearer {tok}", "Host": "app.example"})
    for ask in (forward_auth, ext_authz):
        assert ask(alice).status_code == 200, ask.__name__
    assert transmitter.push(CAEP + "session-revoked", iss_sub("alice"), payload={"event_timestamp": now - 5}) \
        .status_code == 202
    for ask in (forward_auth, ext_authz):
        r = ask(alice)
        assert r.status_code == 401, (ask.__name__, r.status_code, r.text)
        assert 'error="invalid_token"' in r.headers["WWW-Authenticate"], ask.__name__
        assert ask(bob).status_code == 200, ask.__name__


def test_a_refusal_names_its_event_in_the_access_log_and_the_server_span(idp, transmitter, upstream, gateway_factory,
                                                                        tmp_path):  # noqa: F811
    from support.otlp_receiver import Receiver, attributes
    receiver = Receiver().start()
    try:
        token_file = tmp_path / "ssf-token"
        token_file.write_text(transmitter.management_token)
        text = config(idp, transmitter, token_file).replace("{UPSTREAM}", str(upstream.port))
        g = gateway_factory(f'tracing: {{ otlp_endpoint: "{receiver.url}" }}\n' + text)
        wait_for(lambda: transmitter.verifications == [202], timeout=10, what="the stream's verification")
        now = int(time.time())
        ivan = token(idp.keys[0], sub="ivan", iat=now - 10)
        claims = transmitter.claims(CAEP + "session-revoked", iss_sub("ivan"), payload={"event_timestamp": now - 5})
        assert transmitter.push_claims(claims).status_code == 202
        r = requests.get(g.url("/api/orders"), headers={"Authorization": f"Bearer {ivan}"}, timeout=5)
        assert r.status_code == 401
        g.logged('"reason":"ssf_revoked"')
        [line] = [x for x in g.output().splitlines() if '"reason":"ssf_revoked"' in x]
        assert '"rejection":"invalid_token"' in line and '"path":"/api/orders"' in line

        def refused_span():
            for _, s in receiver.spans():
                a = attributes(s)
                if a.get("http.response.status_code") == 401 and a.get("tokengate.ssf.jti"):
                    return a
            return None
        a = wait_for(refused_span, timeout=5, what="the refused request's server span")
        assert a["tokengate.ssf.jti"] == claims["jti"] and a["tokengate.refusal.reason"] == "ssf_revoked"
    finally:
        receiver.stop()


def test_envoys_grpc_check_refuses_a_revoked_caller(idp, transmitter, upstream, gateway_factory, tmp_path):  # noqa: F811
    import grpc
    from envoy.service.auth.v3 import external_auth_pb2 as ext
    token_file = tmp_path / "ssf-token"
    token_file.write_text(transmitter.management_token)
    (tmp_path / "decision.secret").write_text("decision-secret-0123456789abcdef\n")
    text = config(idp, transmitter, token_file).replace("{UPSTREAM}", str(upstream.port)).replace(
        "listen: 127.0.0.1:{PORT}", "listen: { address: 127.0.0.1:{PORT}, http2: true }")
    g = gateway_factory("trusted_proxies: [127.0.0.1/32]\n"
                        f'decision: {{ ext_authz_grpc: true, secret_file: "{tmp_path / "decision.secret"}" }}\n' + text)
    wait_for(lambda: transmitter.verifications == [202], timeout=10, what="the stream's verification")
    channel = grpc.insecure_channel(f"127.0.0.1:{g.port}")
    stub = channel.unary_unary("/envoy.service.auth.v3.Authorization/Check",
                               request_serializer=ext.CheckRequest.SerializeToString,
                               response_deserializer=ext.CheckResponse.FromString)

    def check(tok):
        req = ext.CheckRequest()
        http = req.attributes.request.http
        http.method, http.scheme, http.host, http.path = "GET", "https", "api.example", "/api/orders"
        http.headers.update({":authority": "api.example", ":method": "GET", ":path": "/api/orders", ":scheme": "https",
                             "authorization": f"Bearer {tok}"})
        return stub(req, metadata=[("x-tokengate-decision-secret", "decision-secret-0123456789abcdef")], timeout=10)
    try:
        now = int(time.time())
        judy, kim = token(idp.keys[0], sub="judy", iat=now - 10), token(idp.keys[0], sub="kim", iat=now - 10)
        assert check(judy).HasField("ok_response")
        assert transmitter.push(CAEP + "session-revoked", iss_sub("judy"),
                                payload={"event_timestamp": now - 5}).status_code == 202
        denied = check(judy)
        assert denied.HasField("denied_response") and denied.denied_response.status.code == 401, denied
        headers = {h.header.key.lower(): h.header.value for h in denied.denied_response.headers}
        assert 'error="invalid_token"' in headers["www-authenticate"]
        assert check(kim).HasField("ok_response")
    finally:
        channel.close()
