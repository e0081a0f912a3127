"""`auth: bearer` end to end against a real authorization server: idpyoidc
(IntegrationTests/support/authserver/) on 127.0.0.1, issuing RFC 9068 JWT access tokens and OIDC
ID tokens over HTTP, with discovery, a live JWKS, key rotation and outages; a real tokengate and
a real upstream. Everything on 127.0.0.1 with free ports (idpyoidc compares URLs as exact
strings)."""
import base64
import json
import time

import pytest
import requests

from support.gateway import Gateway, bearer_get as call, sent_headers as sent
from support.waiting import wait_for


def claims_of(token):
    def part(s):
        return json.loads(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))
    h, p, _ = token.split(".")
    return part(h), part(p)


def issuer_block(name, a, extra=""):
    return (f'  {name}: {{ issuer: "{a.issuer}", discovery: true, audiences: [api], access_token_type: at+jwt, '
            f'algorithms: [ES256]{extra} }}\n')


def config(upstream, issuers, routes=""):
    """issuers: the `issuers:` body; routes: extra routes (before the catch-all public one)."""
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
issuers:
{issuers}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
{routes}
  - name: public
    match: {{ path_prefix: / }}
    upstream: app
    auth: none
"""


def orders_route(issuers="[as1]"):
    return f"""
  - name: orders
    match: {{ path_prefix: /api/orders/ }}
    upstream: app
    auth: bearer
    issuers: {issuers}
    require: {{ scopes: [orders:read] }}
"""


def one_issuer_config(upstream, a):
    return config(upstream, issuer_block("as1", a), orders_route() + """
  - name: svc
    match: { path_prefix: /api/svc/ }
    upstream: app
    auth: bearer
    issuers: [as1]
    headers: { X-Subject: sub, X-Client-Id: client_id, X-Scope: scope }
""")


@pytest.fixture
def gateways():
    started = []

    def make(config_text, ready=True):
        g = Gateway(config_text)
        started.append(g)
        return g.start() if ready else g.start_no_wait()

    yield make
    for g in started:
        g.stop()


def readyz(gw):
    return requests.get(f"http://127.0.0.1:{gw.admin}/readyz", timeout=5)


def assert_invalid_token(r):
    assert r.status_code == 401, r.text
    assert 'error="invalid_token"' in r.headers.get("WWW-Authenticate", "")
    assert r.json()["error"] == "invalid_token"


def cc_token(a, client_id="app1", **kw):
    return a.client_credentials_token(client_id, **kw)["access_token"]


# -- discovery and key load ------------------------------------------------------------


def test_discovery_and_key_load_gate_readiness(authserver, upstream, gateways):
    tok = authserver.code_flow()["access_token"]
    # Hold the JWKS answer: the gateway has found jwks_uri by discovery but has no keys yet.
    authserver.jwks_gate.clear()
    try:
        gw = gateways(one_issuer_config(upstream, authserver), ready=False)
        wait_for(lambda: authserver.hits.get("/jwks.json"), what="the gateway's JWKS request")
        assert authserver.hits.get("/.well-known/openid-configuration") == 1
        r = readyz(gw)
        assert r.status_code == 503 and "as1" in r.text
        r = call(gw, tok)
        assert r.status_code == 503 and r.json()["error"] == "temporarily_unavailable"
    finally:
        authserver.jwks_gate.set()
    wait_for(lambda: readyz(gw).status_code == 200, what="readiness after the keys load")
    assert call(gw, tok).status_code == 200
    # One discovery and one JWKS fetch served both workers.
    assert authserver.hits.get("/.well-known/openid-configuration") == 1
    assert authserver.hits.get("/jwks.json") == 1


# -- real tokens -----------------------------------------------------------------------


def test_code_flow_access_token_reaches_upstream_with_identity(authserver, upstream, gateways):
    gw = gateways(one_issuer_config(upstream, authserver))
    resp = authserver.code_flow(user="alice", scope="openid profile email orders:read")
    tok = resp["access_token"]
    header, claims = claims_of(tok)
    # What the AS issued (RFC 9068): the gateway is judged on a real token, not a hand-made one.
    assert header["typ"] == "at+jwt" and header["alg"] == "ES256"
    assert header["kid"] in [k["kid"] for k in authserver.jwks()["keys"]]
    assert claims["iss"] == authserver.issuer and claims["aud"] == ["api"] and claims["client_id"] == "app1"
    assert claims["sub"] == claims_of(resp["id_token"])[1]["sub"]

    r = call(gw, tok, headers={"X-Forwarded-User": "mallory", "X-Forwarded-Email": "m@evil",
                               "X-Forwarded-Groups": "admin"})
    assert r.status_code == 200, r.text
    h = sent(r)
    assert h["x-forwarded-user"] == claims["sub"]
    assert h["x-forwarded-email"] == "alice@example.com"
    assert h["x-forwarded-groups"] == "staff,dev"
    assert h["x-forwarded-preferred-username"] == "alice"
    assert "authorization" not in h

    # Another user, same client: the headers follow the token.
    bob = authserver.code_flow(user="bob")["access_token"]
    h = sent(call(gw, bob))
    assert h["x-forwarded-user"] == claims_of(bob)[1]["sub"] != claims["sub"]
    assert h["x-forwarded-email"] == "bob@example.com" and h["x-forwarded-groups"] == "dev"

    # A real token without the route's scope: 403 with the scope named.
    narrow = authserver.code_flow(scope="openid email")["access_token"]
    r = call(gw, narrow)
    assert r.status_code == 403
    assert 'error="insufficient_scope"' in r.headers["WWW-Authenticate"]
    assert 'scope="orders:read"' in r.headers["WWW-Authenticate"]


def test_client_credentials_token_with_custom_headers(authserver, upstream, gateways):
    gw = gateways(one_issuer_config(upstream, authserver))
    tok = cc_token(authserver, scope="orders:read")
    r = call(gw, tok, path="/api/svc/x", headers={"X-Subject": "mallory"})
    assert r.status_code == 200, r.text
    h = sent(r)
    assert h["x-subject"] == "app1"  # RFC 9068 §2.2: sub is the client for client_credentials
    assert h["x-client-id"] == "app1"
    assert h["x-scope"] == "orders:read"
    assert "x-forwarded-user" not in h  # a custom mapping replaces the defaults
    # The same token on the orders route.
    assert call(gw, tok).status_code == 200


def test_token_for_another_audience_is_refused(authserver, upstream, gateways):
    gw = gateways(one_issuer_config(upstream, authserver))
    tok = cc_token(authserver, "other", scope="orders:read")
    _, claims = claims_of(tok)
    # Same AS, same keys, same scope: only the audience differs.
    assert claims["aud"] == ["other-api"] and claims["iss"] == authserver.issuer
    assert_invalid_token(call(gw, tok))
    assert call(gw, cc_token(authserver, "app1", scope="orders:read")).status_code == 200


def test_id_token_is_not_an_access_token(authserver, upstream, gateways):
    # A second route whose issuer entry accepts the audience an ID token carries (the
    # client_id), so there only the missing typ at+jwt can refuse it.
    issuers = issuer_block("as1", authserver) + (
        f'  as1_app1: {{ issuer: "{authserver.issuer}", discovery: true, audiences: [app1], '
        f'access_token_type: at+jwt }}\n')
    routes = orders_route() + """
  - name: app1
    match: { path_prefix: /api/app1/ }
    upstream: app
    auth: bearer
    issuers: [as1_app1]
"""
    gw = gateways(config(upstream, issuers, routes))
    resp = authserver.code_flow(scope="openid profile email orders:read")
    id_token = resp["id_token"]
    header, claims = claims_of(id_token)
    assert claims["iss"] == authserver.issuer and claims["aud"] == ["app1"] and "nonce" in claims
    assert header.get("typ") != "at+jwt"
    assert_invalid_token(call(gw, id_token))
    assert_invalid_token(call(gw, id_token, path="/api/app1/x"))
    # Positive controls: the access token of the same flow passes; an at+jwt token with
    # audience app1 passes the second route.
    assert call(gw, resp["access_token"]).status_code == 200
    authserver.add_client("aud-app1", client_secret="aud-app1-secret-0123456789abcdef", scopes=["orders:read"],
                          audience=["app1"])
    assert call(gw, cc_token(authserver, "aud-app1"), path="/api/app1/x").status_code == 200


# -- key rotation ----------------------------------------------------------------------


def test_key_rotation_at_the_as_while_the_gateway_runs(authserver, upstream, gateways):
    gw = gateways(one_issuer_config(upstream, authserver))
    old_kid = authserver.keys.current_kid("ES256")
    used_old = cc_token(authserver)
    unused_old = cc_token(authserver)
    assert call(gw, used_old).status_code == 200
    jwks_hits = authserver.hits["/jwks.json"]

    new_kid = authserver.rotate_key("ES256")  # the old key leaves the JWKS at once
    assert new_kid != old_kid
    assert [k["kid"] for k in authserver.jwks()["keys"] if k["alg"] == "ES256"] == [new_kid]
    new = cc_token(authserver)
    assert claims_of(new)[0]["kid"] == new_kid

    # Unknown kid → one refetch → accepted, no restart.
    r = call(gw, new)
    assert r.status_code == 200, r.text
    assert authserver.hits["/jwks.json"] == jwks_hits + 1
    assert authserver.hits["/.well-known/openid-configuration"] == 1  # jwks_uri is remembered

    # The removed key is refused now: a token never seen, and one the gateway had accepted.
    assert_invalid_token(call(gw, unused_old))
    assert_invalid_token(call(gw, used_old))
    # More tokens with the new key: no more fetches.
    assert call(gw, authserver.code_flow()["access_token"]).status_code == 200
    assert authserver.hits["/jwks.json"] == jwks_hits + 1


# -- outages ---------------------------------------------------------------------------


def test_as_down_at_start_then_up(authserver, upstream, gateways):
    tok = cc_token(authserver)
    authserver.stop()  # connections to its port are refused now
    gw = gateways(one_issuer_config(upstream, authserver), ready=False)
    wait_for(lambda: "issuer keys fetch failed" in gw.output(), what="the gateway's failed key fetch")
    r = readyz(gw)
    assert r.status_code == 503 and "as1" in r.text
    r = call(gw, tok)
    assert r.status_code == 503 and r.json()["error"] == "temporarily_unavailable"
    assert requests.get(gw.url("/public"), timeout=5).status_code == 200  # other routes serve

    authserver.start()  # same port, same keys
    # The gateway retries on its own (every 10 s after a failed fetch).
    wait_for(lambda: readyz(gw).status_code == 200, timeout=20, interval=0.2, what="readiness after the AS is up")
    assert call(gw, tok).status_code == 200


def test_as_down_mid_run_stale_keys_keep_serving(authserver, upstream, gateways):
    gw = gateways(one_issuer_config(upstream, authserver))
    seen, fresh = cc_token(authserver), authserver.code_flow()["access_token"]
    assert call(gw, seen).status_code == 200
    authserver.stop()

    # A token the gateway has not seen is verified with the keys it holds.
    r = call(gw, fresh)
    assert r.status_code == 200, r.text
    assert sent(r)["x-forwarded-email"] == "alice@example.com"

    # A new kid makes the gateway try the (down) AS: the fetch fails, the token is refused
    # cleanly, and the last good keys keep serving.
    authserver.rotate_key("ES256", keep_old=True)
    _, claims = claims_of(fresh)
    rotated = authserver.sign(dict(claims, jti="rotated-1"))
    t0 = time.time()
    assert_invalid_token(call(gw, rotated))
    assert time.time() - t0 < 5
    wait_for(lambda: "last good keys keep serving" in gw.output(), what="the stale-if-error log line")
    assert call(gw, seen).status_code == 200
    assert call(gw, fresh).status_code == 200
    assert readyz(gw).status_code == 200  # keys were loaded once: still ready


# -- several issuers -------------------------------------------------------------------


def test_two_issuers_each_token_only_with_its_own_keys(authserver_factory, upstream, gateways):
    as1, as2 = authserver_factory(), authserver_factory()
    issuers = issuer_block("as1", as1) + issuer_block("as2", as2)
    routes = orders_route("[as1, as2]") + """
  - name: only-as1
    match: { path_prefix: /api/only-as1/ }
    upstream: app
    auth: bearer
    issuers: [as1]
"""
    gw = gateways(config(upstream, issuers, routes))
    t1 = as1.code_flow(user="alice")["access_token"]
    t2 = as2.code_flow(user="bob")["access_token"]
    c1, c2 = claims_of(t1)[1], claims_of(t2)[1]
    assert c1["iss"] == as1.issuer and c2["iss"] == as2.issuer

    r1, r2 = call(gw, t1), call(gw, t2)
    assert r1.status_code == 200 and r2.status_code == 200, (r1.text, r2.text)
    assert sent(r1)["x-forwarded-user"] == c1["sub"] and sent(r1)["x-forwarded-email"] == "alice@example.com"
    assert sent(r2)["x-forwarded-user"] == c2["sub"] and sent(r2)["x-forwarded-email"] == "bob@example.com"

    # Each issuer's claims signed by the other AS's current key: the iss picks the keys, and
    # the other issuer's keys never verify it.
    assert_invalid_token(call(gw, as2.sign(dict(c1, jti="x1"))))
    assert_invalid_token(call(gw, as1.sign(dict(c2, jti="x2"))))
    # A route that trusts only as1.
    assert call(gw, t1, path="/api/only-as1/x").status_code == 200
    assert_invalid_token(call(gw, t2, path="/api/only-as1/x"))
    # Each AS was asked for its metadata once (two workers, one fetch per issuer).
    assert as1.hits["/.well-known/openid-configuration"] == 1
    assert as2.hits["/.well-known/openid-configuration"] == 1
