"""DPoP end to end against the real authorization server (idpyoidc with its DPoP add-on,
IntegrationTests/support/authserver/): the AS verifies the client's proof at its token endpoint
and binds the access token to the key (cnf.jkt); the client — proofs made with joserfc — then
calls the API through tokengate with fresh proofs. The gateway does the server nonces here, the
AS does none."""
import pytest
import requests

from support.dpop_client import DPoPKey
from support.gateway import Gateway, sent_headers as sent

SECRET = "opq-secret-0123456789abcdef0123456789ab"
GW_SECRET = "gateway-secret-0123456789abcdef0123456789"


def config(a, upstream, nonce="off", introspection=""):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
public_url: http://127.0.0.1:{{PORT}}
clients:
  gw: {{ client_id: tokengate, auth: client_secret_basic, secret: "{GW_SECRET}" }}
issuers:
  as1:
    issuer: "{a.issuer}"
    discovery: true
    audiences: [api]
    algorithms: [ES256]
    access_token_type: at+jwt
    {introspection}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - name: orders
    match: {{ path_prefix: /api/orders/ }}
    upstream: app
    auth: dpop
    issuers: [as1]
    require: {{ scopes: [orders:read] }}
    dpop: {{ nonce: {nonce} }}
  - name: either
    match: {{ path_prefix: /api/any/ }}
    upstream: app
    auth: token
    issuers: [as1]
"""


@pytest.fixture
def dpop_as(authserver_factory):
    return authserver_factory(dpop=True)


def api_call(g, tok, key, path="/api/orders/1", nonce=None):
    url = g.url(path)
    return requests.get(url, headers={"Authorization": f"DPoP {tok}", "DPoP": key.proof("GET", url, access_token=tok, nonce=nonce)},
                        timeout=10)


def test_bound_token_from_the_as_passes_with_fresh_proofs(dpop_as, upstream, gateway_factory):
    key = DPoPKey("ES256")
    resp = dpop_as.client_credentials_token("app1", scope="orders:read", dpop_key=key)
    assert resp["token_type"] == "DPoP"
    tok = resp["access_token"]
    g = gateway_factory(config(dpop_as, upstream))
    for _ in range(3):
        r = api_call(g, tok, key)
        assert r.status_code == 200, r.text + g.output()[-2000:]
    h = sent(r)
    assert h["x-forwarded-user"] == "app1" and h["x-forwarded-jkt"] == key.jkt
    # The same token without its key's proof, or as a Bearer token, is worth nothing.
    thief = DPoPKey("ES256")
    r = api_call(g, tok, thief)
    assert r.status_code == 401 and 'error="invalid_token"' in r.headers["WWW-Authenticate"]
    r = requests.get(g.url("/api/any/1"), headers={"Authorization": f"Bearer {tok}"}, timeout=10)
    assert r.status_code == 401 and "DPoP-bound" in r.json()["error_description"]
    assert api_call(g, tok, key, path="/api/any/1").status_code == 200


def test_code_flow_token_with_gateway_nonces(dpop_as, upstream, gateway_factory):
    key = DPoPKey("PS256")
    tok = dpop_as.code_flow("app1", scope="openid email orders:read", dpop_key=key)["access_token"]
    g = gateway_factory(config(dpop_as, upstream, nonce="required"))
    r = api_call(g, tok, key)
    assert r.status_code == 401 and 'error="use_dpop_nonce"' in r.headers["WWW-Authenticate"]
    r = api_call(g, tok, key, nonce=r.headers["DPoP-Nonce"])
    assert r.status_code == 200, r.text
    # idpyoidc hands out a hashed subject; the user shows by email.
    assert sent(r)["x-forwarded-email"] == "alice@example.com"
    assert sent(r)["x-forwarded-jkt"] == key.jkt


def test_refreshed_token_is_bound_to_the_new_key(dpop_as, upstream, gateway_factory):
    first, second = DPoPKey("ES256"), DPoPKey("EdDSA")
    resp = dpop_as.code_flow("app1", scope="openid offline_access orders:read", dpop_key=first)
    g = gateway_factory(config(dpop_as, upstream))
    assert api_call(g, resp["access_token"], first).status_code == 200
    tok2 = dpop_as.refresh(resp["refresh_token"], dpop_key=second)["access_token"]
    assert api_call(g, tok2, second).status_code == 200
    assert api_call(g, tok2, first).status_code == 401


def test_opaque_bound_token_via_introspection(dpop_as, upstream, gateway_factory):
    dpop_as.add_client("opq", client_secret=SECRET, scopes=["orders:read"], audience=["api"], access_token_format="opaque")
    dpop_as.add_client("tokengate", client_secret=GW_SECRET, token_endpoint_auth_method="client_secret_basic", scopes=["openid"])
    key = DPoPKey("ES256")
    tok = dpop_as.client_credentials_token("opq", scope="orders:read", secret=SECRET, dpop_key=key)["access_token"]
    assert tok.count(".") != 2
    g = gateway_factory(config(dpop_as, upstream, introspection="introspection: { client: gw }"))
    r = api_call(g, tok, key)
    assert r.status_code == 200, r.text + g.output()[-2000:]
    assert sent(r)["x-forwarded-jkt"] == key.jkt
    # cnf.jkt from the introspection response binds it as well (RFC 9449 §6.2).
    r = api_call(g, tok, DPoPKey("ES256"))
    assert r.status_code == 401 and "another key" in r.json()["error_description"]
