"""Route options on login routes, against the real authorization server: the session's tokens
upstream (pass_access_token, pass_id_token; an expired access token is never sent), the
signed identity assertion (verified with docs/identity.md's helper), client-sent copies of all of
them stripped on every route, and require.email_domains / any_of on sessions (both sides)."""
import base64
import json
import os
import subprocess
import sys
import time

import pytest
import requests
from joserfc import jwt
from joserfc.errors import BadSignatureError, InvalidClaimError

from support.gateway import BIN, ROOT, sent_headers as sent
from support.waiting import sleep_into_second
from test_bearer import ec_key
from test_login import HTML, LoginEnv

# API-style requests keep the JSON error body; a browser's (HTML) gets the page instead.
API = {"Accept": "application/json"}

sys.path.insert(0, os.path.join(ROOT, "examples"))
from verify_assertion import verify_assertion  # noqa: E402 — docs/identity.md's helper


def assertion_key(tmp_path, kid):
    path = tmp_path / f"{kid}.jwk"
    subprocess.run([BIN, "keys", "generate", "--kid", kid, "--out", str(path)], capture_output=True, check=True)
    return str(path)


def payload(jws):
    part = jws.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


ROUTES = """  - name: tokens
    match: { path_prefix: /tokens/ }
    upstream: app
    auth: login
    client: web
    pass_access_token: X-Access-Token
    pass_id_token: X-Id-Token
    identity_assertion: { lifetime: 60s }
    headers: { X-Forwarded-User: sub, X-Nick: preferred_username }
  - name: other-audience
    match: { path_prefix: /other/ }
    upstream: app
    auth: login
    client: web
    identity_assertion: { header: X-Other-Assertion, audience: "https://other.example.test" }
  - name: cors
    match: { path_prefix: /cors/ }
    upstream: app
    auth: login
    client: web
    cors_preflight: allow
    strip_prefix: true
  - name: corp
    match: { path_prefix: /corp/ }
    upstream: app
    auth: login
    client: web
    require: { email_domains: [example.com] }
  - name: org
    match: { path_prefix: /org/ }
    upstream: app
    auth: login
    client: web
    require: { email_domains: [example.org] }
  - name: either
    match: { path_prefix: /either/ }
    upstream: app
    auth: login
    client: web
    require:
      any_of:
        - { claims: { groups: { contains: admin } } }
        - { email_domains: [example.com], claims: { preferred_username: alice } }"""

FORGED = {"X-Access-Token": "forged", "X-Id-Token": "forged", "X-Tokengate-Assertion": "forged",
          "X-Other-Assertion": "forged"}


@pytest.fixture
def login_as(authserver_factory):
    return authserver_factory(login="form", rotate_refresh_tokens=True)


def make_env(a, upstream, tmp_path, **kw):
    keys = [assertion_key(tmp_path, "assert-new"), assertion_key(tmp_path, "assert-old")]
    return LoginEnv(a, upstream, tmp_path, extra_route=ROUTES,
                    extra_top=f'identity_assertion_keys: ["{keys[0]}", "{keys[1]}"]', **kw)


def test_tokens_and_assertion_upstream(login_as, upstream, tmp_path):
    e = make_env(login_as, upstream, tmp_path)
    try:
        e.login()
        r = e.get("/tokens/a", headers={**HTML, **FORGED})
        assert r.status_code == 200, r.text
        h = sent(r)
        # The session's tokens, not the client's copies.
        access, id_token = h["x-access-token"], h["x-id-token"]
        assert payload(access)["iss"] == login_as.issuer and "authorization" not in h
        ident = payload(id_token)
        assert ident["aud"] in ("web", ["web"]) and ident["sub"] == h["x-forwarded-user"]
        # The assertion: verified by docs/identity.md's helper against the gateway's JWKS.
        jwks = requests.get(e.url("/.well-known/jwks.json"), timeout=5).json()
        kids = [k["kid"] for k in jwks["keys"]]
        assert "assert-new" in kids and "assert-old" in kids and all("d" not in k for k in jwks["keys"])
        value = h["x-tokengate-assertion"]
        audience = f"http://127.0.0.1:{upstream.port}"
        claims = verify_assertion(value, jwks, e.url("").rstrip("/"), audience)
        assert claims["sub"] == ident["sub"] and claims["email"] == "alice@example.com"
        assert claims["groups"] == ["staff", "dev"] and claims["preferred_username"] == "alice"
        assert claims["exp"] - claims["iat"] == 60 and len(claims["jti"]) >= 16
        # Who vouched (finding 6): the session's IdP and its login client.
        assert claims["idp"] == login_as.issuer and claims["client"] == "web"
        assert verify_assertion(value, jwks, e.url("").rstrip("/"), audience, idps=[login_as.issuer])["sub"] == ident["sub"]
        with pytest.raises(ValueError, match="another IdP"):
            verify_assertion(value, jwks, e.url("").rstrip("/"), audience, idps=["https://partner-idp.example"])
        # The first listed key signs (the second is published for rotation).
        header = json.loads(base64.urlsafe_b64decode(value.split(".")[0] + "=="))
        assert header["kid"] == "assert-new" and header["alg"] == "ES256"
        # Cached per session per route: the same assertion on the next requests (the browser
        # keeps its connection, so one worker — each worker signs its own).
        again = [sent(e.get(f"/tokens/{i}"))["x-tokengate-assertion"] for i in range(4)]
        assert len(set(again)) == 1
        # Another route, another audience: its own header; the upstream's audience refuses it.
        other = sent(e.get("/other/x", headers={**HTML, **FORGED}))
        assert "x-tokengate-assertion" not in other and "x-access-token" not in other and "x-id-token" not in other
        with pytest.raises(InvalidClaimError):
            verify_assertion(other["x-other-assertion"], jwks, e.url("").rstrip("/"), audience)
        assert verify_assertion(other["x-other-assertion"], jwks, e.url("").rstrip("/"), "https://other.example.test")["sub"] == ident["sub"]
        # A forgery under the gateway's kid, signed by a key not in the JWKS: refused.
        forged = jwt.encode({"alg": "ES256", "kid": "assert-new", "typ": "tokengate-assertion+jwt"}, claims, ec_key("assert-new"))
        with pytest.raises(BadSignatureError):
            verify_assertion(forged, jwks, e.url("").rstrip("/"), audience)
        # Client-sent copies are stripped on every route: a login route without the options,
        # and a public one.
        for path in ("/plain", "/bye"):
            got = sent(e.get(path, headers={**HTML, **FORGED}))
            assert not set(k.lower() for k in FORGED) & set(got), (path, got)
    finally:
        e.stop()


def test_expired_access_token_is_never_sent(authserver_factory, upstream, tmp_path):
    a = authserver_factory(login="form", rotate_refresh_tokens=True, access_token_lifetime=3)
    e = make_env(a, upstream, tmp_path, session=", refresh_margin: 1s")
    try:
        e.login()
        logged_in = time.time()
        assert "x-access-token" in sent(e.get("/tokens/1"))
        a.stop()  # the refresh cannot happen
        sleep_into_second(logged_in, 3)  # the access token (3 s) has expired
        seen = len(upstream.requests)
        r = e.get("/tokens/2", headers=API)  # a browser would get the HTML page (test_pages.py)
        assert r.status_code == 503 and r.json()["error"] == "temporarily_unavailable", r.text
        assert r.headers["Retry-After"] == "5"
        assert len(upstream.requests) == seen
        # A route that does not pass the token goes on with the session meanwhile.
        assert e.get("/other/1").status_code == 200
    finally:
        e.stop()


def test_session_rules_both_sides(login_as, upstream, tmp_path):
    e = make_env(login_as, upstream, tmp_path)
    try:
        e.login()  # alice: alice@example.com, verified, groups staff and dev
        assert e.get("/corp/1").status_code == 200
        assert e.get("/either/1").status_code == 200  # second alternative
        r = e.get("/org/1", headers=API)
        assert r.status_code == 403 and r.json()["error"] == "insufficient_scope" and "example" not in r.text
        assert e.gw.logged("email_domains: example.com is not among example.org")
        # mallory: ceo@example.com, never verified — the domain fits, the rule refuses.
        e.browser = requests.Session()
        e.login(user="mallory")
        assert e.get("/corp/1").status_code == 403
        r = e.get("/either/1", headers=API)
        assert r.status_code == 403 and "any_of" not in r.text
        log = e.gw.output()
        assert "any_of: no alternative met" in log and "email_domains: the email is not verified" in log
    finally:
        e.stop()


def test_cors_preflight_on_a_login_route(login_as, upstream, tmp_path):
    e = make_env(login_as, upstream, tmp_path)
    try:
        pre = {"Origin": "https://spa.example.test", "Access-Control-Request-Method": "PUT", **FORGED}
        r = requests.options(e.url("/cors/items"), headers=pre, timeout=5)
        assert r.status_code == 200 and r.json()["method"] == "OPTIONS", r.text
        assert r.json()["path"] == "/items"  # strip_prefix on a login route
        assert not set(k.lower() for k in FORGED) & set(sent(r))
        # The upstream's answer to a preflight cannot set the gateway's cookies either.
        r = requests.options(e.url("/cors/set-cookie/tokengate_session"), headers=pre, timeout=5)
        assert r.status_code == 200 and r.headers["Set-Cookie"] == "app=1; Path=/", r.headers
        # Not a preflight: a login is required, as for everything else on the route.
        seen = len(upstream.requests)
        for headers in ({"Origin": "https://spa.example.test"}, {"Access-Control-Request-Method": "PUT"}, {}):
            r = requests.options(e.url("/cors/items"), headers=headers, timeout=5)
            assert r.status_code == 401 and r.json()["error"] == "login_required", (headers, r.text)
        assert requests.put(e.url("/cors/items"), headers=pre, timeout=5).status_code == 401
        assert len(upstream.requests) == seen
        # The other login routes refuse preflights.
        assert requests.options(e.url("/corp/items"), headers=pre, timeout=5).status_code == 401
    finally:
        e.stop()
