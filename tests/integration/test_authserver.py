"""The test authorization server itself (tests/integration/authserver/): what later tests rely
on — discovery metadata, RFC 9068 access tokens, the four client authentication methods at
/token and /introspection, opaque tokens resolved by introspection, refresh, rotation."""
import base64
import json

import pytest
import requests

from authserver.server import new_client_key


def claims_of(token):
    def part(s):
        return json.loads(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))
    h, p, _ = token.split(".")
    return part(h), part(p)


def test_discovery_metadata(authserver):
    m = requests.get(f"{authserver.url}/.well-known/openid-configuration", timeout=5).json()
    assert m["issuer"] == authserver.issuer and authserver.issuer.startswith("http://127.0.0.1:")
    assert m["jwks_uri"] == f"{authserver.issuer}/jwks.json"
    assert m["introspection_endpoint"] == f"{authserver.issuer}/introspection"
    assert m["pushed_authorization_request_endpoint"] == f"{authserver.issuer}/par"
    for method in ["client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt"]:
        assert method in m["token_endpoint_auth_methods_supported"]
        assert method in m["introspection_endpoint_auth_methods"]
    assert "client_credentials" in m["grant_types_supported"]
    jwks = requests.get(m["jwks_uri"], timeout=5).json()
    assert {k["alg"] for k in jwks["keys"]} == {"ES256", "RS256"}
    assert all("d" not in k for k in jwks["keys"])


def test_access_token_profile(authserver):
    header, c = claims_of(authserver.client_credentials_token("app1", scope="orders:read")["access_token"])
    assert header == {"typ": "at+jwt", "alg": "ES256", "kid": authserver.keys.current_kid("ES256")}
    assert c["iss"] == authserver.issuer and c["aud"] == ["api"] and c["sub"] == c["client_id"] == "app1"
    assert c["scope"] == "orders:read" and c["exp"] > c["iat"] and c["jti"]
    # A second token for the same client (idpyoidc 5.0.0's own helper fails here).
    assert authserver.client_credentials_token("app1")["access_token"]


@pytest.mark.parametrize("auth", ["client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt"])
def test_client_authentication_methods(authserver, auth):
    key, jwks = new_client_key()
    authserver.add_client("rs", client_secret="rs-secret-0123456789abcdef0123456789", scopes=["orders:read"],
                          jwks=jwks)
    tok = authserver.client_credentials_token("rs", auth=auth, key=key)["access_token"]
    r = authserver.introspect(tok, client_id="rs", auth=auth, key=key)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["active"] is True and body["aud"] == ["api"] and body["sub"] == "rs" and body["scope"] == "orders:read"
    # Wrong credentials are refused.
    r = authserver.introspect(tok, client_id="rs", auth="client_secret_basic", client_secret="wrong")
    assert r.status_code == 401


def test_opaque_tokens_resolve_by_introspection(authserver):
    authserver.add_client("opq", client_secret="opq-secret-0123456789abcdef0123456789",
                          scopes=["openid", "email", "orders:read"], access_token_format="opaque")
    tok = authserver.code_flow("opq", scope="openid email orders:read")["access_token"]
    assert tok.startswith("opq_") and "." not in tok
    body = authserver.introspect(tok).json()
    assert body["active"] is True and body["client_id"] == "opq" and body["aud"] == ["api"]
    assert body["iss"] == authserver.issuer and body["sub"] and body["scope"] == "openid email orders:read"
    assert authserver.introspect("opq_unknown").json() == {"active": False}


def test_refresh_and_rotation(authserver):
    resp = authserver.code_flow(scope="openid orders:read offline_access")
    again = authserver.refresh(resp["refresh_token"])
    assert claims_of(again["access_token"])[1]["sub"] == claims_of(resp["access_token"])[1]["sub"]
    old = authserver.keys.current_kid("ES256")
    new = authserver.rotate_key("ES256", keep_old=True)
    kids = [k["kid"] for k in authserver.jwks()["keys"]]
    assert new in kids and old in kids
    assert claims_of(authserver.client_credentials_token()["access_token"])[0]["kid"] == new
    authserver.keys.remove(old)
    assert old not in [k["kid"] for k in authserver.jwks()["keys"]]


def test_stop_and_start_keep_state(authserver):
    tok = authserver.client_credentials_token()["access_token"]
    authserver.stop()
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{authserver.url}/jwks.json", timeout=2)
    authserver.start()
    assert authserver.introspect(tok).json()["active"] is True
