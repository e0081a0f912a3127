"""The test AS as the OIDC provider of a browser login (the gateway as the RP of a web app):
AuthServer(login="form") and friends, driven by a python-side RP (requests.Session as the
browser) and, once, by a real headless chromium. What the gateway's browser-login tests rely
on: the login form and its session (SSO, prompt=login, RP-initiated logout), PAR (RFC 9126)
with request_uri alone, signed request objects (RFC 9101) by value, by reference and pushed,
PKCE S256, client authentication at /token (private_key_jwt, client_secret_jwt, basic, post),
ID tokens, rotating refresh tokens, revocation (RFC 7009), iss in every authorization response
(RFC 9207) — and every refusal."""
import base64
import json
import secrets
import socket
import time
from urllib.parse import urlsplit

import pytest
import requests
from joserfc import jwt as jose_jwt
from joserfc.jwk import KeySet

from support.authserver.server import PASSWORDS, new_client_key, parse_form, pkce_pair, redirect_params
from support.browser import browser, local_site  # noqa: F401 — fixtures
from support.waiting import sleep_into_second

SECRET = "web-secret-0123456789abcdef0123456789abcd"
SCOPES = ["openid", "profile", "email", "offline_access", "orders:read"]
CB = "http://127.0.0.1:1/cb"  # never followed by the python-side RP
BYE = "http://127.0.0.1:1/bye"


def claims_of(token):
    def part(s):
        return json.loads(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))
    h, p, _ = token.split(".")
    return part(h), part(p)


def web_client(a, client_id="web", alg="ES256", redirect_uri=CB):
    """Registers a confidential web client (secret + public key); returns its private key."""
    key, jwks = new_client_key(alg=alg)
    a.add_client(client_id, client_secret=SECRET, scopes=SCOPES, jwks=jwks, redirect_uri=redirect_uri,
                 post_logout_redirect_uri=BYE)
    return key


def auth_params(client_id="web", redirect_uri=CB, scope="openid profile email offline_access", **over):
    """(authorization request parameters with PKCE S256, code_verifier)."""
    verifier, challenge = pkce_pair()
    params = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri, "scope": scope,
              "state": secrets.token_urlsafe(12), "nonce": secrets.token_urlsafe(12),
              "code_challenge": challenge, "code_challenge_method": "S256"}
    params.update(over)
    return params, verifier


def check_callback(a, location, params, redirect_uri=CB):
    """The success redirect: the redirect_uri with code, the request's state and iss (RFC 9207)."""
    assert location.split("?")[0] == redirect_uri, location
    q = redirect_params(location)
    assert q["code"] and q["state"] == params["state"] and q["iss"] == a.issuer, q
    assert "error" not in q
    return q["code"]


def check_id_token(a, id_token, client_id, nonce, user="alice"):
    """ID token validation as an RP does it (OIDC Core §3.1.3.7), with joserfc and the AS's
    published JWKS — not with the AS's own code."""
    jwks = requests.get(requests.get(f"{a.url}/.well-known/openid-configuration", timeout=5).json()["jwks_uri"],
                        timeout=5).json()
    tok = jose_jwt.decode(id_token, KeySet.import_key_set(jwks), algorithms=["RS256"])
    c = tok.claims
    now = time.time()
    assert tok.header["alg"] == "RS256" and tok.header["kid"] == a.keys.current_kid("RS256")
    assert c["iss"] == a.issuer and client_id in c["aud"] and c["nonce"] == nonce
    assert c["exp"] > now >= c["iat"] - 5 and c["sub"] and c["auth_time"] <= now + 1
    # Who logged in, by the claims the scope released (profile and/or email).
    assert "preferred_username" in c or "email" in c
    if "preferred_username" in c:
        assert c["preferred_username"] == user and c["name"] == {"alice": "Alice Adams", "bob": "Bob Brown"}[user]
    if "email" in c:
        assert c["email"] == f"{user}@example.com"
    return c


def assert_login_form(page):
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    form = parse_form(page.text)
    assert form and form["method"] == "post" and form["action"].endswith("/login")
    assert form["types"]["username"] == "text" and form["types"]["password"] == "password"
    assert '<button id="submit" type="submit">' in page.text
    assert "code=" not in page.text
    return form


@pytest.fixture
def login_as(authserver_factory):
    return authserver_factory(login="form", rotate_refresh_tokens=True)


# -- metadata --------------------------------------------------------------------------


def test_metadata_for_browser_login(authserver_factory):
    strict = authserver_factory(login="form", require_par=True, require_signed_request_object=True)
    m = requests.get(f"{strict.url}/.well-known/openid-configuration", timeout=5).json()
    assert m["require_pushed_authorization_requests"] is True and m["require_signed_request_object"] is True
    assert m["pushed_authorization_request_endpoint"] == f"{strict.issuer}/par"
    assert m["authorization_response_iss_parameter_supported"] is True
    assert m["end_session_endpoint"] == f"{strict.issuer}/end_session"
    assert m["revocation_endpoint"] == f"{strict.issuer}/revocation"
    assert m["code_challenge_methods_supported"] == ["S256"]
    assert m["request_parameter_supported"] is True and m["request_uri_parameter_supported"] is True
    algs = m["request_object_signing_alg_values_supported"]
    assert {"RS256", "PS256", "ES256"} <= set(algs) and "none" not in algs and not [a for a in algs if a[:2] == "HS"]
    for method in ["client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt"]:
        assert method in m["revocation_endpoint_auth_methods_supported"]
    relaxed = requests.get(f"{authserver_factory().url}/.well-known/openid-configuration", timeout=5).json()
    assert relaxed["require_pushed_authorization_requests"] is False
    assert relaxed["require_signed_request_object"] is False and "none" in relaxed["request_object_signing_alg_values_supported"]


# -- the full front channel and code exchange -------------------------------------------


@pytest.mark.parametrize("alg", ["RS256", "PS256", "ES256"])
def test_pushed_signed_request_form_login_and_private_key_jwt(login_as, alg):
    key = web_client(login_as, alg=alg)
    params, verifier = auth_params()
    ro = login_as.request_object("web", params, key=key)
    assert claims_of(ro)[0] == {"alg": alg, "typ": "oauth-authz-req+jwt", "kid": key.kid}
    pushed = login_as.push_authorization_request({"request": ro}, "web", auth="private_key_jwt", key=key)
    assert pushed.status_code == 201, pushed.text
    body = pushed.json()
    assert body["request_uri"].startswith("urn:ietf:params:oauth:request_uri:") and body["expires_in"] == 60
    # RFC 9126 §4: client_id and request_uri are all the authorization request carries.
    session = requests.Session()
    page = login_as.login_page(session, login_as.authorization_url(client_id="web", request_uri=body["request_uri"]))
    assert_login_form(page)
    r = login_as.submit_login(session, page, "alice", "alice-password")
    assert r.status_code == 302 and login_as.login_cookie_name in r.headers["Set-Cookie"]
    code = check_callback(login_as, r.headers["Location"], params)
    seen = [x for x in login_as.authorizations if x["via"] == "par"][-1]
    assert seen["signed"] is True and seen["params"]["code_challenge"] == params["code_challenge"]
    assert login_as.request_objects[-1]["via"] == "par" and login_as.request_objects[-1]["error"] is None
    tok = login_as.exchange_code(code, "web", CB, code_verifier=verifier, auth="private_key_jwt", key=key)
    assert tok.status_code == 200, tok.text
    t = tok.json()
    assert t["token_type"] == "Bearer" and t["refresh_token"] and t["expires_in"] > 0
    c = check_id_token(login_as, t["id_token"], "web", params["nonce"])
    assert claims_of(t["access_token"])[1]["sub"] == c["sub"] and claims_of(t["access_token"])[1]["client_id"] == "web"
    # The code is single-use.
    again = login_as.exchange_code(code, "web", CB, code_verifier=verifier, auth="private_key_jwt", key=key)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"


def test_request_object_by_value_overrides_the_query_and_client_secret_jwt(login_as):
    key = web_client(login_as, alg="ES256")
    params, verifier = auth_params(scope="openid email", state="inside")
    ro = login_as.request_object("web", params, key=key)
    # RFC 9101 §6.3: only the request object's parameters count.
    url = login_as.authorization_url(client_id="web", request=ro, state="outside", scope="openid profile",
                                     nonce="outside")
    loc = login_as.login_with_form(requests.Session(), url, "bob", "bob-password")
    code = check_callback(login_as, loc, params)
    assert redirect_params(loc)["state"] == "inside"
    t = login_as.exchange_code(code, "web", CB, code_verifier=verifier, auth="client_secret_jwt").json()
    c = check_id_token(login_as, t["id_token"], "web", params["nonce"], user="bob")
    assert "email" in c and claims_of(t["access_token"])[1]["scope"] == "openid email"
    assert login_as.authorizations[-2]["via"] == "request" and login_as.authorizations[-2]["signed"] is True


def test_request_object_by_reference_fetched_by_the_as(login_as, local_site):
    key = web_client(login_as, alg="RS256")
    params, verifier = auth_params()
    uri = local_site.page("/ro/1", login_as.request_object("web", params, key=key),
                          content_type="application/oauth-authz-req+jwt")
    url = login_as.authorization_url(client_id="web", request_uri=uri)
    session = requests.Session()
    page = login_as.login_page(session, url)
    assert_login_form(page)
    assert [r["method"] for r in local_site.hits("/ro/1")] == ["GET"]
    assert login_as.request_uri_fetches[-1] == {"url": uri, "status": 200, "content_type": "application/oauth-authz-req+jwt",
                                                "error": None}
    code = check_callback(login_as, login_as.submit_login(session, page, "alice", "alice-password").headers["Location"],
                          params)
    r = login_as.exchange_code(code, "web", CB, code_verifier=verifier, auth="client_secret_post")
    assert r.status_code == 200 and r.json()["id_token"], r.text
    # An unreachable or failing request_uri: refused, no code.
    local_site.page("/ro/gone", "nope", status=404)
    bad = requests.get(login_as.authorization_url(client_id="web", request_uri=local_site.url("/ro/gone")),
                       allow_redirects=False, timeout=10)
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_request_uri" and "Location" not in bad.headers


def _bad_request_objects(a, key, other_key):
    params, _ = auth_params()
    return {
        "signed by another key": a.request_object("web", params, key=other_key),
        "another key under the client's kid": _resign_with_kid(a, params, other_key, key.kid),
        "iss not the client": a.request_object("web", params, key=key, iss="app1"),
        "aud not the issuer": a.request_object("web", params, key=key, aud="https://elsewhere.example"),
        "expired": a.request_object("web", params, key=key, lifetime=-10),
        "no exp": a.request_object("web", params, key=key, drop=("exp",)),
        "client_id differs": a.request_object("web", dict(params, client_id="app1"), key=key),
        "typ at+jwt": a.request_object("web", params, key=key, typ="at+jwt"),
        "tampered payload": _tamper(a.request_object("web", params, key=key)),
        "not a JWT": "not-a-jwt",
    }


def _resign_with_kid(a, params, key, kid):
    key.kid = kid
    return a.request_object("web", params, key=key)


def _tamper(token):
    h, p, s = token.split(".")
    c = json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
    c["redirect_uri"] = "http://127.0.0.1:1/evil"
    return ".".join([h, base64.urlsafe_b64encode(json.dumps(c).encode()).rstrip(b"=").decode(), s])


@pytest.mark.parametrize("case", ["signed by another key", "another key under the client's kid", "iss not the client",
                                  "aud not the issuer", "expired", "no exp", "client_id differs", "typ at+jwt",
                                  "tampered payload", "not a JWT"])
def test_bad_request_objects_refused(login_as, case):
    key = web_client(login_as)
    other, _ = new_client_key()
    ro = _bad_request_objects(login_as, key, other)[case]
    r = requests.get(login_as.authorization_url(client_id="web", request=ro), allow_redirects=False, timeout=10)
    assert r.status_code == 400 and "Location" not in r.headers, r.text
    assert r.json()["error"] == "invalid_request_object"
    assert login_as.authorizations[-1]["outcome"] == "error_page"
    # Pushed: refused too, no request_uri.
    p = login_as.push_authorization_request({"request": ro}, "web", auth="client_secret_basic")
    assert p.status_code == 400 and p.json()["error"] == "invalid_request_object" and "request_uri" not in p.json()
    assert not login_as.par_requests


def test_hs256_request_object_refused(login_as):
    """Only the client's registered asymmetric keys sign request objects (no client_secret MAC)."""
    from cryptojwt.jwk.hmac import SYMKey
    web_client(login_as)
    params, _ = auth_params()
    mac = SYMKey(key=SECRET, kid="s1")
    mac.alg = "HS256"
    ro = login_as.request_object("web", params, key=mac)
    r = requests.get(login_as.authorization_url(client_id="web", request=ro), allow_redirects=False, timeout=10)
    assert r.status_code == 400 and "HS256" in r.json()["error_description"]


def test_require_signed_request_object(authserver_factory):
    a = authserver_factory(login="form", require_signed_request_object=True)
    key = web_client(a)
    params, verifier = auth_params()
    # A plain request: refused, redirected with the error (its redirect_uri is the registered one).
    r = requests.get(a.authorization_url(**params), allow_redirects=False, timeout=10)
    q = redirect_params(r.headers["Location"])
    assert r.status_code == 302 and q["error"] == "invalid_request" and "signed request object" in q["error_description"]
    assert q["state"] == params["state"] and q["iss"] == a.issuer and "code" not in q
    # An unsigned request object (alg none): refused, by value and pushed.
    unsigned = a.request_object("web", params, key=None)
    assert claims_of(unsigned)[0]["alg"] == "none"
    r = requests.get(a.authorization_url(client_id="web", request=unsigned), allow_redirects=False, timeout=10)
    assert r.status_code == 400 and r.json()["error"] == "invalid_request_object"
    assert a.push_authorization_request(params, "web").status_code == 400
    assert a.push_authorization_request({"request": unsigned}, "web").status_code == 400
    # Signed: fine.
    uri = a.par({"request": a.request_object("web", params, key=key)}, "web")
    code = check_callback(a, a.login_with_form(requests.Session(), a.authorization_url(client_id="web", request_uri=uri)),
                          params)
    assert a.exchange_code(code, "web", CB, code_verifier=verifier).status_code == 200


def test_unsigned_request_object_accepted_by_default(login_as):
    web_client(login_as)
    params, verifier = auth_params()
    url = login_as.authorization_url(client_id="web", request=login_as.request_object("web", params, key=None))
    code = check_callback(login_as, login_as.login_with_form(requests.Session(), url), params)
    assert login_as.authorizations[-2]["via"] == "request" and login_as.authorizations[-2]["signed"] is False
    assert login_as.exchange_code(code, "web", CB, code_verifier=verifier).status_code == 200


# -- PAR ----------------------------------------------------------------------------------


def test_require_par(authserver_factory):
    a = authserver_factory(login="form", require_par=True)
    key = web_client(a)
    params, verifier = auth_params()
    r = requests.get(a.authorization_url(**params), allow_redirects=False, timeout=10)
    q = redirect_params(r.headers["Location"])
    assert r.status_code == 302 and q["error"] == "invalid_request" and "pushed" in q["error_description"]
    assert q["iss"] == a.issuer and q["state"] == params["state"] and "code" not in q
    # A request object by value is no push either.
    r = requests.get(a.authorization_url(client_id="web", request=a.request_object("web", params, key=key)),
                     allow_redirects=False, timeout=10)
    assert "code" not in redirect_params(r.headers["Location"])
    # Pushed (plain parameters, client_secret_basic): fine.
    uri = a.par(params, "web")
    code = check_callback(a, a.login_with_form(requests.Session(), a.authorization_url(client_id="web", request_uri=uri)),
                          params)
    assert a.exchange_code(code, "web", CB, code_verifier=verifier).status_code == 200
    # The helpers know: code_flow pushes first.
    assert a.code_flow(scope="openid email")["access_token"]


def test_par_request_uri_single_use_expiry_and_owner(authserver_factory):
    a = authserver_factory(login="form", par_lifetime=1)
    web_client(a)
    web_client(a, client_id="web2")
    params, _ = auth_params()
    uri = a.par(params, "web")
    session = requests.Session()
    assert_login_form(a.login_page(session, a.authorization_url(client_id="web", request_uri=uri)))
    # Used once: gone.
    r = a.login_page(session, a.authorization_url(client_id="web", request_uri=uri))
    assert r.status_code == 400 and r.json()["error"] == "invalid_request_uri" and "Location" not in r.headers
    # Another client cannot use it (and so spends it).
    uri = a.par(params, "web")
    r = a.login_page(session, a.authorization_url(client_id="web2", request_uri=uri))
    assert r.status_code == 400 and "another client" in r.json()["error_description"]
    assert a.login_page(session, a.authorization_url(client_id="web", request_uri=uri)).status_code == 400
    # Expired after par_lifetime.
    uri = a.par(params, "web")
    # Real time must pass (par_lifetime, 1 s), and a look before then would spend it.
    time.sleep(1.2)
    r = a.login_page(session, a.authorization_url(client_id="web", request_uri=uri))
    assert r.status_code == 400 and "expired" in r.json()["error_description"]
    # Unknown.
    r = a.login_page(session, a.authorization_url(client_id="web", request_uri="urn:ietf:params:oauth:request_uri:x"))
    assert r.status_code == 400


def test_par_refusals(login_as):
    key = web_client(login_as)
    params, _ = auth_params()
    # Client authentication is required.
    r = requests.post(f"{login_as.url}/par", data=params, timeout=10)
    assert r.status_code == 401 and r.json()["error"] == "invalid_client"
    assert login_as.push_authorization_request(params, "web", secret="wrong-secret-0123456789abcdef0123").status_code == 401
    # A request_uri cannot be pushed; a foreign redirect_uri and plain PKCE are refused at push time.
    assert login_as.push_authorization_request(dict(params, request_uri="urn:x"), "web").status_code == 400
    r = login_as.push_authorization_request(dict(params, redirect_uri="http://127.0.0.1:1/evil"), "web")
    assert r.status_code == 400
    r = login_as.push_authorization_request(dict(params, code_challenge_method="plain"), "web")
    assert r.status_code == 400 and "S256" in r.json()["error_description"]
    # A request object of client web pushed by client app1: refused.
    r = login_as.push_authorization_request({"request": login_as.request_object("web", params, key=key)}, "app1")
    assert r.status_code == 400 and r.json()["error"] == "invalid_request_object" and not login_as.par_requests


# -- PKCE -----------------------------------------------------------------------------------


def _code(a, params):
    return check_callback(a, a.login_with_form(requests.Session(), a.authorization_url(**params)), params)


def test_pkce_enforced_at_the_token_endpoint(login_as):
    web_client(login_as)
    params, verifier = auth_params()
    code = _code(login_as, params)
    for bad in (None, pkce_pair()[0], verifier[:-1] + ("A" if verifier[-1] != "A" else "B"), "short"):
        r = login_as.exchange_code(code, "web", CB, code_verifier=bad)
        assert r.status_code == 400 and r.json()["error"] == "invalid_grant", (bad, r.text)
    # Refusals did not spend the code.
    assert login_as.exchange_code(code, "web", CB, code_verifier=verifier).status_code == 200
    # A code_verifier for a code that had no code_challenge (RFC 9700 §2.1.1).
    plain_params = {k: v for k, v in auth_params()[0].items() if not k.startswith("code_challenge")}
    code = _code(login_as, plain_params)
    r = login_as.exchange_code(code, "web", CB, code_verifier=verifier)
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"


def test_pkce_plain_and_missing_method_refused(login_as):
    web_client(login_as)
    for over in ({"code_challenge_method": "plain"}, {"code_challenge_method": None}):
        params, _ = auth_params()
        params.update(over)
        params = {k: v for k, v in params.items() if v is not None}
        if over["code_challenge_method"] == "plain":
            params["code_challenge"] = pkce_pair()[0]
        r = requests.get(login_as.authorization_url(**params), allow_redirects=False, timeout=10)
        q = redirect_params(r.headers["Location"])
        assert r.status_code == 302 and q["error"] == "invalid_request" and "S256" in q["error_description"]
        assert q["iss"] == login_as.issuer and q["state"] == params["state"] and "code" not in q


def test_require_pkce(authserver_factory):
    a = authserver_factory(login="form", require_pkce=True)
    web_client(a)
    params = {k: v for k, v in auth_params()[0].items() if not k.startswith("code_challenge")}
    r = requests.get(a.authorization_url(**params), allow_redirects=False, timeout=10)
    assert "code_challenge required" in redirect_params(r.headers["Location"])["error_description"]
    # code_flow adds PKCE by itself then (and logs in through the form).
    assert a.code_flow(scope="openid email")["id_token"]


# -- the login form and its session -----------------------------------------------------------


def test_wrong_password_shows_the_form_again(login_as):
    web_client(login_as)
    params, verifier = auth_params()
    session = requests.Session()
    page = login_as.login_page(session, login_as.authorization_url(**params))
    assert_login_form(page)
    for user, password in (("alice", "bob-password"), ("alice", ""), ("mallory", "alice-password"), ("ALICE", "alice-password")):
        page = login_as.submit_login(session, page, user, password)
        assert "Location" not in page.headers and "Set-Cookie" not in page.headers
        assert_login_form(page)
        assert 'id="error"' in page.text and "Wrong username or password." in page.text
    assert [x["ok"] for x in login_as.login_attempts] == [False] * 4
    assert not login_as.login_sessions
    r = login_as.submit_login(session, page, "alice", PASSWORDS["alice"])
    code = check_callback(login_as, r.headers["Location"], params)
    assert login_as.login_attempts[-1] == {"user": "alice", "ok": True}
    t = login_as.exchange_code(code, "web", CB, code_verifier=verifier).json()
    check_id_token(login_as, t["id_token"], "web", params["nonce"])
    # A submitted form cannot be submitted again.
    again = login_as.submit_login(requests.Session(), page, "alice", PASSWORDS["alice"])
    assert again.status_code == 400 and "Location" not in again.headers


def test_login_session_sso_and_prompt_login(login_as):
    web_client(login_as)
    web_client(login_as, client_id="web2")
    session = requests.Session()
    params, verifier = auth_params()
    first = login_as.login_with_form(session, login_as.authorization_url(**params), "bob", "bob-password")
    t = login_as.exchange_code(check_callback(login_as, first, params), "web", CB, code_verifier=verifier).json()
    login = check_id_token(login_as, t["id_token"], "web", params["nonce"], user="bob")
    # Same browser, another request (and another client): no form, straight back with a code;
    # the ID token tells the same user and the time of that one login.
    for client_id in ("web", "web2"):
        params, verifier = auth_params(client_id=client_id)
        r = login_as.login_page(session, login_as.authorization_url(**params))
        assert r.status_code == 302, r.text
        code = check_callback(login_as, r.headers["Location"], params)
        t = login_as.exchange_code(code, client_id, CB, code_verifier=verifier).json()
        c = check_id_token(login_as, t["id_token"], client_id, params["nonce"], user="bob")
        assert c["auth_time"] == login["auth_time"]
    assert c["sub"] == login["sub"]
    assert [x["ok"] for x in login_as.login_attempts] == [True]
    # prompt=login: the form again, although the session is alive.
    params, _ = auth_params(prompt="login")
    assert_login_form(login_as.login_page(session, login_as.authorization_url(**params)))
    # Another browser (no cookie): the form.
    params, _ = auth_params()
    assert_login_form(login_as.login_page(requests.Session(), login_as.authorization_url(**params)))


def test_prompt_none_without_session_is_an_error_with_iss(login_as):
    web_client(login_as)
    params, _ = auth_params(prompt="none")
    r = requests.get(login_as.authorization_url(**params), allow_redirects=False, timeout=10)
    q = redirect_params(r.headers["Location"])
    assert r.status_code == 302 and q["error"] == "login_required"
    assert q["state"] == params["state"] and q["iss"] == login_as.issuer and "code" not in q


# -- tokens: refresh rotation, lifetimes, revocation ---------------------------------------------


def _tokens(a, client_id="web", auth="client_secret_basic", key=None, scope="openid profile email offline_access"):
    params, verifier = auth_params(client_id=client_id, scope=scope)
    code = _code(a, params)
    r = a.exchange_code(code, client_id, CB, code_verifier=verifier, auth=auth, key=key)
    assert r.status_code == 200, r.text
    return r.json(), params


def test_refresh_tokens_rotate(login_as):
    key = web_client(login_as)
    t, params = _tokens(login_as, auth="private_key_jwt", key=key)
    assert login_as.refresh_count == 0
    new = login_as.refresh(t["refresh_token"], "web", auth="private_key_jwt", key=key)
    assert new["refresh_token"] and new["refresh_token"] != t["refresh_token"]
    assert claims_of(new["access_token"])[1]["sub"] == claims_of(t["access_token"])[1]["sub"]
    check_id_token(login_as, new["id_token"], "web", params["nonce"])
    assert (login_as.refresh_count, login_as.refresh_ok_count) == (1, 1)
    # The old one is spent.
    r = login_as.post_token({"grant_type": "refresh_token", "refresh_token": t["refresh_token"]}, "web",
                            auth="private_key_jwt", key=key)
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"
    assert (login_as.refresh_count, login_as.refresh_ok_count) == (2, 1)
    assert login_as.token_requests[-1] == {"grant_type": "refresh_token", "client_id": None, "status": 400,
                                           "error": "invalid_grant"}
    # The new one works, once.
    newer = login_as.refresh(new["refresh_token"], "web", auth="client_secret_jwt")
    assert newer["refresh_token"] not in (t["refresh_token"], new["refresh_token"])
    assert login_as.post_token({"grant_type": "refresh_token", "refresh_token": new["refresh_token"]},
                               "web").status_code == 400
    # Another client cannot use it.
    assert login_as.post_token({"grant_type": "refresh_token", "refresh_token": newer["refresh_token"]},
                               "app1").json()["error"] == "invalid_grant"


def test_refresh_tokens_do_not_rotate_by_default(authserver):
    t = authserver.code_flow(scope="openid offline_access")
    assert authserver.refresh(t["refresh_token"])["refresh_token"] != t["refresh_token"]
    assert authserver.refresh(t["refresh_token"])["access_token"]
    assert authserver.refresh_count == 2


def test_short_token_lifetimes(authserver_factory):
    a = authserver_factory(login="form", access_token_lifetime=3, id_token_lifetime=3, rotate_refresh_tokens=True)
    web_client(a)
    t, params = _tokens(a)
    at, it = claims_of(t["access_token"])[1], claims_of(t["id_token"])[1]
    assert at["exp"] - at["iat"] == 3 and it["exp"] - it["iat"] == 3 and t["expires_in"] <= 3
    check_id_token(a, t["id_token"], "web", params["nonce"])
    sleep_into_second(at["exp"], 0)
    assert a.introspect(t["access_token"]).json() == {"active": False}
    with pytest.raises(AssertionError):  # expired: an RP refuses it
        check_id_token(a, t["id_token"], "web", params["nonce"])
    # Refresh gives fresh short-lived tokens.
    new = a.refresh(t["refresh_token"], "web")
    assert claims_of(new["access_token"])[1]["exp"] - claims_of(new["access_token"])[1]["iat"] == 3
    assert a.introspect(new["access_token"]).json()["active"] is True
    check_id_token(a, new["id_token"], "web", params["nonce"])


@pytest.mark.parametrize("auth", ["client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt"])
def test_revocation(login_as, auth):
    key = web_client(login_as)
    t, _ = _tokens(login_as)
    r = login_as.revoke(t["refresh_token"], "web", auth=auth, key=key, token_type_hint="refresh_token")
    assert r.status_code == 200 and r.text == ""
    assert login_as.revocations[-1] == {"client_id": "web", "token": t["refresh_token"], "token_type_hint": "refresh_token",
                                        "status": 200, "error": None}
    r = login_as.post_token({"grant_type": "refresh_token", "refresh_token": t["refresh_token"]}, "web")
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"
    # An access token too: introspection then says inactive.
    assert login_as.introspect(t["access_token"]).json()["active"] is True
    assert login_as.revoke(t["access_token"], "web", auth=auth, key=key).status_code == 200
    assert login_as.introspect(t["access_token"]).json() == {"active": False}


def test_revocation_refusals(login_as):
    web_client(login_as)
    t, _ = _tokens(login_as)
    r = requests.post(f"{login_as.url}/revocation", data={"token": t["refresh_token"]}, timeout=10)
    assert r.status_code == 401
    assert login_as.revoke(t["refresh_token"], "web", secret="wrong-secret-0123456789abcdef012").status_code == 401
    # Another client's token: refused, and it stays usable.
    r = login_as.revoke(t["refresh_token"], "app1")
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"
    # An unknown token: 200 (RFC 7009 §2.2).
    assert login_as.revoke("no-such-token", "web").status_code == 200
    assert login_as.refresh(t["refresh_token"], "web")["access_token"]
    assert [c["status"] for c in login_as.revocations] == [401, 401, 400, 200]


# -- RP-initiated logout -----------------------------------------------------------------------


def test_end_session(login_as):
    web_client(login_as)
    session = requests.Session()
    params, verifier = auth_params()
    code = check_callback(login_as, login_as.login_with_form(session, login_as.authorization_url(**params)), params)
    t = login_as.exchange_code(code, "web", CB, code_verifier=verifier).json()
    params, _ = auth_params()
    assert login_as.login_page(session, login_as.authorization_url(**params)).status_code == 302  # SSO
    r = session.get(login_as.end_session_url(id_token_hint=t["id_token"], post_logout_redirect_uri=BYE, state="bye-1"),
                    allow_redirects=False, timeout=10)
    assert r.status_code == 302 and r.headers["Location"] == f"{BYE}?state=bye-1"
    call = login_as.end_session_calls[-1]
    assert call["client_id"] == "web" and call["user"] == "alice" and len(call["ended"]) == 1
    assert call["status"] == 302 and call["params"]["state"] == "bye-1"
    # The login session is over: the form again, even with the old cookie.
    params, _ = auth_params()
    assert_login_form(login_as.login_page(session, login_as.authorization_url(**params)))
    # Tokens are not revoked by logout.
    assert login_as.refresh(t["refresh_token"], "web")["access_token"]


def test_end_session_ends_the_users_sessions_without_the_cookie(login_as):
    """The RP calls end_session from another client (no AS cookie): the user's browser session ends."""
    web_client(login_as)
    browser_session = requests.Session()
    params, verifier = auth_params()
    code = check_callback(login_as, login_as.login_with_form(browser_session, login_as.authorization_url(**params)),
                          params)
    t = login_as.exchange_code(code, "web", CB, code_verifier=verifier).json()
    r = requests.get(login_as.end_session_url(id_token_hint=t["id_token"]), allow_redirects=False, timeout=10)
    assert r.status_code == 200 and "signed out" in r.text
    assert_login_form(login_as.login_page(browser_session, login_as.authorization_url(**auth_params()[0])))


def test_end_session_refusals(login_as, authserver_factory):
    web_client(login_as)
    t, _ = _tokens(login_as)
    cases = {
        "unregistered post_logout_redirect_uri": login_as.end_session_url(
            id_token_hint=t["id_token"], post_logout_redirect_uri="http://127.0.0.1:1/evil"),
        "client_id not the hint's audience": login_as.end_session_url(
            id_token_hint=t["id_token"], client_id="app1", post_logout_redirect_uri=BYE),
        "post_logout_redirect_uri without a client": login_as.end_session_url(post_logout_redirect_uri=BYE),
        "an access token as hint": login_as.end_session_url(id_token_hint=t["access_token"]),
        "another AS's ID token": login_as.end_session_url(
            id_token_hint=authserver_factory().code_flow(scope="openid")["id_token"]),
        "a tampered ID token": login_as.end_session_url(id_token_hint=t["id_token"][:-4] + "AAAA"),
    }
    for case, url in cases.items():
        r = requests.get(url, allow_redirects=False, timeout=10)
        assert r.status_code == 400 and "Location" not in r.headers, (case, r.text)
    assert [c["status"] for c in login_as.end_session_calls] == [400] * len(cases)
    assert all(s["active"] for s in login_as.login_sessions.values())


def test_form_login_server_is_threaded_and_stops(login_as):
    """login="form" serves a thread per connection (a browser's idle pre-connected socket must
    not stall the AS), yet stop() still takes it down, idle connections included."""
    web_client(login_as)
    assert login_as.threaded
    idle = socket.create_connection(("127.0.0.1", login_as.port), timeout=5)  # says nothing
    try:
        t0 = time.time()
        session = requests.Session()
        params, _ = auth_params()
        check_callback(login_as, login_as.login_with_form(session, login_as.authorization_url(**params)), params)
        assert time.time() - t0 < 5
        login_as.stop()
        assert idle.recv(1) == b""  # closed by stop()
        with pytest.raises(requests.ConnectionError):
            requests.get(f"{login_as.url}/jwks.json", timeout=2)
        login_as.start()
        params, _ = auth_params()
        r = login_as.login_page(session, login_as.authorization_url(**params))  # same state: still logged in
        assert r.status_code == 302 and check_callback(login_as, r.headers["Location"], params)
    finally:
        idle.close()


# -- the real browser ------------------------------------------------------------------------------


def test_browser_login_with_par_and_pkce(login_as, browser, local_site):
    """Headless chromium on the AS's real form: PAR (a signed request object) + PKCE, a wrong
    password first, then the code at the app's redirect_uri; SSO; RP-initiated logout."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    cb = local_site.page("/cb", "<!DOCTYPE html><title>callback</title><p>signed in</p>")
    bye = local_site.page("/bye", "<!DOCTYPE html><title>bye</title><p>signed out</p>")
    key, jwks = new_client_key(alg="ES256")
    login_as.add_client("spa", client_secret=SECRET, scopes=SCOPES, jwks=jwks, redirect_uri=cb,
                        post_logout_redirect_uri=bye)
    wait = WebDriverWait(browser, 15)

    def authorize_url():
        params, verifier = auth_params(client_id="spa", redirect_uri=cb)
        uri = login_as.par({"request": login_as.request_object("spa", params, key=key)}, "spa",
                           auth="private_key_jwt", key=key)
        return login_as.authorization_url(client_id="spa", request_uri=uri), params, verifier

    def landed(params):
        wait.until(lambda d: d.current_url.startswith(cb + "?"))
        assert browser.title == "callback"
        return check_callback(login_as, browser.current_url, params, redirect_uri=cb)

    url, params, verifier = authorize_url()
    browser.get(url)
    user = wait.until(EC.presence_of_element_located((By.NAME, "username")))
    password = browser.find_element(By.NAME, "password")
    assert password.get_attribute("type") == "password"
    user.send_keys("alice")
    password.send_keys("not-her-password")
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    assert "Wrong username or password." in wait.until(EC.presence_of_element_located((By.ID, "error"))).text
    assert browser.current_url.startswith(login_as.url)
    browser.find_element(By.NAME, "username").clear()
    browser.find_element(By.NAME, "username").send_keys("alice")
    browser.find_element(By.NAME, "password").send_keys("alice-password")
    browser.find_element(By.ID, "submit").click()
    code = landed(params)
    assert [h["query"]["code"] for h in local_site.hits("/cb")] == [code]
    r = login_as.exchange_code(code, "spa", cb, code_verifier=verifier, auth="private_key_jwt", key=key)
    assert r.status_code == 200, r.text
    t = r.json()
    check_id_token(login_as, t["id_token"], "spa", params["nonce"])
    # The browser holds the AS's login session: the next authorization needs no form.
    url, params, verifier = authorize_url()
    browser.get(url)
    code = landed(params)
    assert login_as.exchange_code(code, "spa", cb, code_verifier=verifier, auth="private_key_jwt",
                                  key=key).status_code == 200
    assert [x["ok"] for x in login_as.login_attempts] == [False, True]
    # RP-initiated logout in the browser, back to the app with the state; then the form again.
    browser.get(login_as.end_session_url(id_token_hint=t["id_token"], post_logout_redirect_uri=bye, state="s-bye"))
    wait.until(lambda d: d.current_url.startswith(bye))
    assert browser.current_url == f"{bye}?state=s-bye" and browser.title == "bye"
    assert login_as.end_session_calls[-1]["ended"]
    url, params, verifier = authorize_url()
    browser.get(url)
    wait.until(EC.presence_of_element_located((By.NAME, "password")))
    assert urlsplit(browser.current_url).path == "/authorization"
