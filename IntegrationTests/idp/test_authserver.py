"""The test authorization server itself (IntegrationTests/support/authserver/): what later tests
rely on — discovery metadata, RFC 9068 access tokens, the four client authentication methods at
/token and /introspection, opaque tokens resolved by introspection, refresh, rotation; and DPoP
(RFC 9449): AuthServer(dpop=True) binds access tokens to the key of the proof that
support/dpop_client.py (joserfc) makes, and refuses token requests without a good proof."""
import base64
import http.client
import json
import time

import pytest
import requests
from cryptojwt.jwk.jwk import key_from_jwk_dict

from support.authserver.server import new_client_key, redirect_params
from support.dpop_client import DPoPKey, ath, decode, hs256_proof


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


def test_rfc8707_resource_becomes_the_access_tokens_aud(authserver):
    a = authserver
    data = a.authorize(resource="https://gw.example/mcp")
    _, c = claims_of(a.post_token(data).json()["access_token"])
    assert c["aud"] == ["https://gw.example/mcp"]
    # Without one, the client's configured audience.
    assert claims_of(a.code_flow()["access_token"])[1]["aud"] == ["api"]


def test_token_exchange_issues_for_the_target_only(authserver):
    from support.authserver.server import ACCESS_TOKEN_TYPE, EXCHANGE_TARGETS, TOKEN_EXCHANGE
    a = authserver
    a.add_client("gw", client_secret="gw-secret-0123456789abcdef0123456789", scopes=["openid", "orders:read"])
    subject = a.code_flow()["access_token"]

    def exchange(**target):
        return a.post_token(dict({"grant_type": TOKEN_EXCHANGE, "subject_token": subject,
                                  "subject_token_type": ACCESS_TOKEN_TYPE}, **target),
                            client_id="gw", secret="gw-secret-0123456789abcdef0123456789")
    for target in EXCHANGE_TARGETS:
        r = exchange(audience=target)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["issued_token_type"] == ACCESS_TOKEN_TYPE and body["token_type"] == "Bearer"
        _, c = claims_of(body["access_token"])
        assert c["aud"] == [target] and c["sub"] == claims_of(subject)[1]["sub"] and c["client_id"] == "gw"
    r = exchange(resource="https://elsewhere.example/")
    assert r.status_code == 400 and r.json()["error"] == "invalid_target"
    r = exchange(audience="orders-backend", subject_token="not-a-token-of-this-as")
    assert r.status_code == 400 and r.json()["error"] == "invalid_request"


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


def test_default_as_browser_login_additions(authserver):
    """Without options: AutoLogin as before; metadata and endpoints of the browser-login work
    (iss, end_session, revocation), PAR usable with request_uri alone, iss in every redirect."""
    m = requests.get(f"{authserver.url}/.well-known/openid-configuration", timeout=5).json()
    assert m["authorization_response_iss_parameter_supported"] is True
    assert m["end_session_endpoint"] == f"{authserver.issuer}/end_session"
    assert m["revocation_endpoint"] == f"{authserver.issuer}/revocation"
    assert m["require_pushed_authorization_requests"] is False and m["require_signed_request_object"] is False
    assert not authserver.threaded
    redirect_uri = authserver.redirect_uri("app1")
    uri = authserver.par({"response_type": "code", "client_id": "app1", "redirect_uri": redirect_uri,
                          "scope": "openid email", "state": "s-1", "nonce": "n-1"})
    r = requests.get(authserver.authorization_url(client_id="app1", request_uri=uri), allow_redirects=False, timeout=10)
    assert r.status_code == 302, r.text
    q = redirect_params(r.headers["Location"])
    assert q["state"] == "s-1" and q["iss"] == authserver.issuer and q["code"]
    tok = authserver.post_token({"grant_type": "authorization_code", "code": q["code"], "redirect_uri": redirect_uri})
    assert tok.status_code == 200 and claims_of(tok.json()["id_token"])[1]["nonce"] == "n-1"
    # Error redirects carry iss too.
    r = requests.get(authserver.authorization_url(response_type="code", client_id="app1", redirect_uri=redirect_uri,
                                                  scope="openid", state="s-2", code_challenge="x" * 43,
                                                  code_challenge_method="plain"), allow_redirects=False, timeout=10)
    q = redirect_params(r.headers["Location"])
    assert q["error"] == "invalid_request" and q["state"] == "s-2" and q["iss"] == authserver.issuer
    # Revocation.
    t = authserver.code_flow(scope="openid offline_access")
    assert authserver.revoke(t["refresh_token"]).status_code == 200
    assert authserver.post_token({"grant_type": "refresh_token", "refresh_token": t["refresh_token"]}).json()["error"] == \
        "invalid_grant"
    assert authserver.revocations[-1]["status"] == 200 and authserver.refresh_count == 1


def test_stop_and_start_keep_state(authserver):
    tok = authserver.client_credentials_token()["access_token"]
    authserver.stop()
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{authserver.url}/jwks.json", timeout=2)
    authserver.start()
    assert authserver.introspect(tok).json()["active"] is True


# -- DPoP (RFC 9449) ---------------------------------------------------------------------


@pytest.fixture
def dpop_as(authserver_factory):
    return authserver_factory(dpop=True)


def dpop_refused(resp):
    """RFC 9449 §5: a token request with a missing or bad proof → 400 invalid_dpop_proof."""
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"] == "invalid_dpop_proof", resp.text
    return resp.json()["error_description"]


CC = {"grant_type": "client_credentials", "scope": "orders:read"}


def test_dpop_client_proof_shape():
    key = DPoPKey()
    token = "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"
    # RFC 9449 §7.1's example: ath = base64url(SHA-256(access token)).
    assert ath(token) == "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
    before = int(time.time())
    header, claims = decode(key.proof("GET", "https://rs.example/orders", access_token=token, nonce="n-1"))
    assert header == {"typ": "dpop+jwt", "alg": "ES256", "jwk": key.public_jwk}
    assert set(key.public_jwk) == {"kty", "crv", "x", "y"}
    assert claims["htm"] == "GET" and claims["htu"] == "https://rs.example/orders"
    assert claims["ath"] == ath(token) and claims["nonce"] == "n-1"
    assert before <= claims["iat"] <= int(time.time())
    assert len(base64.urlsafe_b64decode(claims["jti"] + "==")) >= 16
    # Fresh jti per proof; no ath/nonce unless asked for.
    again = decode(key.proof("GET", "https://rs.example/orders"))[1]
    assert again["jti"] != claims["jti"] and "ath" not in again and "nonce" not in again
    # Overrides and drops change exactly what they name.
    h, c = decode(key.proof("POST", "https://x/", drop_header=("typ",), claim_overrides={"htu": "https://y/"},
                            drop_claims=("jti",), header_overrides={"jwk": key.private_jwk}))
    assert "typ" not in h and h["jwk"]["d"] and c["htu"] == "https://y/" and "jti" not in c


@pytest.mark.parametrize("alg", ["ES256", "ES384", "PS256", "RS256", "EdDSA"])
def test_dpop_client_credentials_token_is_bound(dpop_as, alg):
    key = DPoPKey(alg)
    # The thumbprint by another library (cryptojwt, which idpyoidc uses) is joserfc's.
    assert key_from_jwk_dict(key.public_jwk).thumbprint("SHA-256").decode() == key.jkt
    resp = dpop_as.client_credentials_token("app1", scope="orders:read", dpop_key=key)
    assert resp["token_type"] == "DPoP"
    header, c = claims_of(resp["access_token"])
    assert header["typ"] == "at+jwt" and c["cnf"] == {"jkt": key.jkt}
    assert c["sub"] == c["client_id"] == "app1" and c["aud"] == ["api"] and c["scope"] == "orders:read"
    body = dpop_as.introspect(resp["access_token"]).json()
    assert body["active"] is True and body["cnf"] == {"jkt": key.jkt} and body["token_type"] == "DPoP"
    # Each token is bound to the key of its own request's proof.
    other = DPoPKey("ES256")
    assert claims_of(dpop_as.client_credentials_token("app1", dpop_key=other)["access_token"])[1]["cnf"] == {
        "jkt": other.jkt}


def test_dpop_metadata(dpop_as, authserver):
    m = requests.get(f"{dpop_as.url}/.well-known/openid-configuration", timeout=5).json()
    algs = m["dpop_signing_alg_values_supported"]
    assert {"ES256", "ES384", "PS256", "RS256", "EdDSA"} <= set(algs)
    assert not [a for a in algs if a.startswith("HS") or a == "none"]
    assert m["token_endpoint"] == dpop_as.token_endpoint
    # A plain AS neither advertises DPoP nor binds tokens (nor minds a DPoP header).
    plain = requests.get(f"{authserver.url}/.well-known/openid-configuration", timeout=5).json()
    assert "dpop_signing_alg_values_supported" not in plain
    resp = authserver.client_credentials_token(dpop_key=DPoPKey())
    assert resp["token_type"] == "Bearer" and "cnf" not in claims_of(resp["access_token"])[1]


def test_dpop_code_flow_and_refresh(dpop_as):
    key = DPoPKey("ES256")
    resp = dpop_as.code_flow(scope="openid email orders:read offline_access", dpop_key=key)
    assert resp["token_type"] == "DPoP" and resp["refresh_token"]
    c = claims_of(resp["access_token"])[1]
    assert c["cnf"] == {"jkt": key.jkt} and c["email"] == "alice@example.com" and c["client_id"] == "app1"
    # Refresh (a confidential client: the refresh token is not bound, RFC 9449 §5) needs a
    # proof too; the new access token is bound to that proof's key.
    dpop_refused(dpop_as.post_token({"grant_type": "refresh_token", "refresh_token": resp["refresh_token"]}))
    new_key = DPoPKey("EdDSA")
    again = dpop_as.refresh(resp["refresh_token"], dpop_key=new_key)
    assert again["token_type"] == "DPoP"
    c2 = claims_of(again["access_token"])[1]
    assert c2["cnf"] == {"jkt": new_key.jkt} and c2["sub"] == c["sub"]


def test_dpop_opaque_token_introspection_shows_binding(dpop_as):
    dpop_as.add_client("opq", client_secret="opq-secret-0123456789abcdef0123456789",
                       scopes=["openid", "email", "orders:read"], access_token_format="opaque")
    for get in (lambda k: dpop_as.code_flow("opq", scope="openid email orders:read", dpop_key=k),
                lambda k: dpop_as.client_credentials_token("opq", scope="orders:read", dpop_key=k)):
        key = DPoPKey()
        resp = get(key)
        tok = resp["access_token"]
        assert resp["token_type"] == "DPoP" and tok.startswith("opq_") and "." not in tok
        body = dpop_as.introspect(tok).json()
        assert body["active"] is True and body["client_id"] == "opq" and body["token_type"] == "DPoP"
        assert body["cnf"] == {"jkt": key.jkt}


def test_dpop_token_request_without_proof_refused(dpop_as):
    assert "missing DPoP header" in dpop_refused(dpop_as.post_token(CC))
    assert "missing DPoP header" in dpop_refused(dpop_as.post_token(CC, dpop_proof=""))
    # Code flow: refused without a proof, before the code is spent — the same code then
    # works with one.
    form = dpop_as.authorize(scope="openid orders:read")
    dpop_refused(dpop_as.post_token(form))
    key = DPoPKey()
    r = dpop_as.post_token(form, dpop_key=key)
    assert r.status_code == 200, r.text
    assert claims_of(r.json()["access_token"])[1]["cnf"] == {"jkt": key.jkt}


@pytest.mark.parametrize("htu", [
    "http://localhost:{port}/token",  # another host (the same server)
    "http://127.0.0.1:{port}/introspection",  # another endpoint
    "https://127.0.0.1:{port}/token",  # another scheme
    "http://127.0.0.1:{port}/token?x=1",  # with a query
    "http://127.0.0.1:{port}/token/",
])
def test_dpop_proof_with_wrong_htu_refused(dpop_as, htu):
    key = DPoPKey()
    url = htu.format(port=dpop_as.port)
    assert url != dpop_as.token_endpoint
    assert "htu" in dpop_refused(dpop_as.post_token(CC, dpop_proof=key.proof("POST", url)))
    # The same key with the right htu is fine.
    assert dpop_as.post_token(CC, dpop_proof=key.proof("POST", dpop_as.token_endpoint)).status_code == 200


def test_dpop_proof_with_wrong_htm_refused(dpop_as):
    key = DPoPKey()
    assert "htm" in dpop_refused(dpop_as.post_token(CC, dpop_proof=key.proof("GET", dpop_as.token_endpoint)))


def test_dpop_proof_signed_by_another_key_refused(dpop_as):
    signer, victim = DPoPKey("ES256"), DPoPKey("ES256")
    url = dpop_as.token_endpoint
    # The header names the victim's public key, the signature is the signer's.
    lying = signer.proof("POST", url, header_overrides={"jwk": victim.public_jwk})
    assert decode(lying)[0]["jwk"] == victim.public_jwk
    dpop_refused(dpop_as.post_token(CC, dpop_proof=lying))
    # A valid proof with its signature bytes altered.
    h, p, sig = signer.proof("POST", url).split(".")
    raw = bytearray(base64.urlsafe_b64decode(sig + "=="))
    raw[0] ^= 1
    bad = ".".join([h, p, base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()])
    dpop_refused(dpop_as.post_token(CC, dpop_proof=bad))
    # An RSA key's signature under an EC jwk.
    dpop_refused(dpop_as.post_token(CC, dpop_proof=DPoPKey("RS256").proof(
        "POST", url, header_overrides={"jwk": victim.public_jwk, "alg": "ES256"})))
    assert dpop_as.post_token(CC, dpop_proof=signer.proof("POST", url)).status_code == 200


def _attacker_proofs(url):
    key = DPoPKey()
    now = int(time.time())
    return {
        "typ missing": key.proof("POST", url, drop_header=("typ",)),
        "typ jwt": key.proof("POST", url, header_overrides={"typ": "JWT"}),
        "jwk missing": key.proof("POST", url, drop_header=("jwk",)),
        "jwk with private d": key.proof("POST", url, header_overrides={"jwk": key.private_jwk}),
        "alg none header": key.proof("POST", url, header_overrides={"alg": "none"}),
        "HS256 with oct jwk": hs256_proof("attacker-secret-0123456789abcdef0123", "POST", url),
        "jti missing": key.proof("POST", url, drop_claims=("jti",)),
        "iat missing": key.proof("POST", url, drop_claims=("iat",)),
        "iat an hour old": key.proof("POST", url, iat=now - 3600),
        "iat an hour ahead": key.proof("POST", url, iat=now + 3600),
        "not a JWS": "not-a-jws",
    }


@pytest.mark.parametrize("case", list(_attacker_proofs("http://x/")))
def test_dpop_attacker_proofs_refused(dpop_as, case):
    proof = _attacker_proofs(dpop_as.token_endpoint)[case]
    dpop_refused(dpop_as.post_token(CC, dpop_proof=proof))


def test_dpop_proof_replay_refused(dpop_as):
    proof = DPoPKey().proof("POST", dpop_as.token_endpoint)
    assert dpop_as.post_token(CC, dpop_proof=proof).status_code == 200
    assert "replayed" in dpop_refused(dpop_as.post_token(CC, dpop_proof=proof))


def test_dpop_two_proof_headers_refused(dpop_as):
    """RFC 9449 §4.3: exactly one DPoP header (two real header lines, each a valid proof)."""
    key = DPoPKey()
    secret = dpop_as.server.context.cdb["app1"]["client_secret"]
    body = b"grant_type=client_credentials"
    conn = http.client.HTTPConnection("127.0.0.1", dpop_as.port, timeout=10)
    try:
        conn.putrequest("POST", "/token")
        conn.putheader("Content-Type", "application/x-www-form-urlencoded")
        conn.putheader("Content-Length", str(len(body)))
        conn.putheader("Authorization", "Basic " + base64.b64encode(f"app1:{secret}".encode()).decode())
        conn.putheader("DPoP", key.proof("POST", dpop_as.token_endpoint))
        conn.putheader("DPoP", key.proof("POST", dpop_as.token_endpoint))
        conn.endheaders(body)
        resp = conn.getresponse()
        status, answer = resp.status, json.loads(resp.read())
    finally:
        conn.close()
    assert status == 400 and answer["error"] == "invalid_dpop_proof", answer
