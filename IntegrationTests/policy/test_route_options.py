"""Route options on token routes and plain routes: strip_prefix, cors_preflight,
require.email_domains / require.any_of (both sides of each rule, with the rule named in the
log only), and an identity assertion per token. A real tokengate, a real upstream, a real
JWKS server, tokens made with joserfc (test_bearer's helpers)."""
import json
import os
import subprocess
import sys

import pytest
import requests
from joserfc.errors import BadSignatureError, InvalidClaimError

from support.gateway import BIN, ROOT, sent_headers as sent
from support.waiting import wait_for
from test_bearer import JWKSServer, ec_key, token

sys.path.insert(0, os.path.join(ROOT, "examples"))
from verify_assertion import verify_assertion  # noqa: E402 — docs/identity.md's helper, as upstream apps use it


def assertion_key(tmp_path, kid):
    path = tmp_path / f"{kid}.jwk"
    subprocess.run([BIN, "keys", "generate", "--kid", kid, "--out", str(path)], capture_output=True, check=True)
    return str(path)


@pytest.fixture
def idp():
    s = JWKSServer()
    s.keys = [ec_key("one-1")]
    yield s
    s.stop()


@pytest.fixture
def idp2():
    s = JWKSServer()
    s.keys = [ec_key("two-1")]
    yield s
    s.stop()


@pytest.fixture
def gw(upstream, idp, idp2, tmp_path, gateway_factory):
    key = assertion_key(tmp_path, "gw-1")
    return gateway_factory(f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
public_url: https://gw.example.test
identity_assertion_keys: ["{key}"]
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], algorithms: [ES256] }}
  two: {{ issuer: "https://idp.two", jwks_uri: "{idp2.url}", audiences: [api], algorithms: [ES256] }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
  based: {{ url: "http://127.0.0.1:{upstream.port}/base" }}
routes:
  - name: stripped
    match: {{ path_prefix: /svc }}
    upstream: based
    auth: none
    strip_prefix: true
  - name: stripped-slash
    match: {{ path_prefix: /v2/ }}
    upstream: app
    auth: none
    strip_prefix: true
  - name: corp
    match: {{ path_prefix: /corp/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    require: {{ email_domains: [Example.COM] }}
    cors_preflight: allow
    identity_assertion: {{}}
  - name: either
    match: {{ path_prefix: /either/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    require:
      any_of:
        - {{ claims: {{ groups: {{ contains: admin }} }} }}
        - {{ email_domains: [example.org], claims: {{ team: ops }} }}
  - name: mixed
    match: {{ path_prefix: /mixed/ }}
    upstream: app
    auth: bearer
    issuers: [one, two]
    identity_assertion: {{}}
    require:
      any_of:
        - {{ issuers: [one], claims: {{ groups: {{ contains: admin }} }} }}
        - {{ issuers: [two], scopes: [partner] }}
  - name: forwarding
    match: {{ path_prefix: /fwd/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    forward_token: true
    cors_preflight: allow
  - name: public
    match: {{ path_prefix: / }}
    upstream: app
    auth: none
""")


def get(gw, path, tok=None, method="GET", headers=None):
    h = dict(headers or {})
    if tok:
        h["Authorization"] = f"Bearer {tok}"
    return requests.request(method, gw.url(path), headers=h, timeout=10)


def test_strip_prefix_edges(gw):
    # /svc is removed; the upstream URL's own path (/base) is still prepended.
    assert get(gw, "/svc/a/b?q=1").json()["path"] == "/base/a/b?q=1"
    assert get(gw, "/svc").json()["path"] == "/base/"
    assert get(gw, "/svc/").json()["path"] == "/base/"
    # The normalized path is what is stripped.
    assert get(gw, "/svc/./x/../y").json()["path"] == "/base/y"
    # /svcfoo is not under /svc: another route, nothing stripped.
    assert get(gw, "/svcfoo").json()["path"] == "/svcfoo"
    # A prefix written with its slash strips the same segment.
    assert get(gw, "/v2/users").json()["path"] == "/users"
    assert get(gw, "/v2/").json()["path"] == "/"
    assert get(gw, "/v2").json()["path"] == "/v2"  # not matched by /v2/: the public route


def test_cors_preflight_passes_but_nothing_else(gw, upstream):
    pre = {"Origin": "https://app.example.test", "Access-Control-Request-Method": "POST",
           "X-Forwarded-User": "forged", "X-Tokengate-Assertion": "forged"}
    r = get(gw, "/corp/x", method="OPTIONS", headers=pre)
    assert r.status_code == 200, r.text
    h = sent(r)
    assert r.json()["method"] == "OPTIONS" and h["origin"] == "https://app.example.test"
    # Unauthenticated: no identity, and the client's copies are stripped.
    assert "x-forwarded-user" not in h and "x-tokengate-assertion" not in h
    # An OPTIONS that is not a preflight is checked like any request.
    seen = len(upstream.requests)
    for headers in ({"Origin": "https://app.example.test"}, {"Access-Control-Request-Method": "POST"}, {}):
        r = get(gw, "/corp/x", method="OPTIONS", headers=headers)
        assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Bearer")
    # So is every other method, with the preflight headers or not.
    assert get(gw, "/corp/x", headers=pre).status_code == 401
    assert get(gw, "/corp/x", method="POST", headers=pre).status_code == 401
    assert len(upstream.requests) == seen
    # A route without the option refuses preflights too.
    assert get(gw, "/either/x", method="OPTIONS", headers=pre).status_code == 401


def test_cors_preflight_with_body_is_checked(gw, upstream):
    """Finding 2: a preflight has no body; an OPTIONS with Origin and ACRM and a body is an
    ordinary request, checked like every other (401), and never reaches the upstream."""
    pre = {"Origin": "https://app.example.test", "Access-Control-Request-Method": "DELETE",
           "Content-Type": "application/json"}
    seen = len(upstream.requests)
    for route in ("/corp/x", "/fwd/x"):
        r = requests.request("OPTIONS", gw.url(route), headers=pre, data=b'{"drop": "table"}', timeout=10)
        assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Bearer"), r.text
        r = requests.request("OPTIONS", gw.url(route), headers={**pre, "Authorization": "Bearer forged"},
                             data=b'{"drop": "table"}', timeout=10)
        assert r.status_code == 401 and 'error="invalid_token"' in r.headers["WWW-Authenticate"], r.text
        # Chunked (Transfer-Encoding) is a body too, even an empty one.
        r = requests.request("OPTIONS", gw.url(route), headers=pre, data=iter([b"x"]), timeout=10)
        assert r.status_code == 401, r.text
    assert len(upstream.requests) == seen
    # Content-Length: 0 is no body: still a preflight.
    r = requests.request("OPTIONS", gw.url("/fwd/x"), headers={**pre, "Content-Length": "0"}, timeout=10)
    assert r.status_code == 200 and r.json()["method"] == "OPTIONS"


def test_cors_preflight_never_forwards_credentials(gw, idp):
    """Finding 2: a forged Authorization on a forward_token route, a DPoP proof, a
    Proxy-Authorization or any cookie on a preflight never reach the upstream."""
    pre = {"Origin": "https://app.example.test", "Access-Control-Request-Method": "DELETE",
           "Authorization": "Bearer forged", "Proxy-Authorization": "Basic Zm9vOmJhcg==",
           "DPoP": "forged.proof.value", "Cookie": "app_session=stolen; other=1"}
    for route in ("/fwd/x", "/corp/x"):
        r = get(gw, route, method="OPTIONS", headers=pre)
        assert r.status_code == 200, r.text
        h = sent(r)
        assert h["origin"] == "https://app.example.test" and h["access-control-request-method"] == "DELETE"
        for name in ("authorization", "proxy-authorization", "dpop", "cookie"):
            assert name not in h, (route, name)
    # The same route still forwards a real caller's verified token on other requests.
    t = token(idp.keys[0])
    assert sent(get(gw, "/fwd/x", t))["authorization"] == f"Bearer {t}"


def test_email_domains_both_sides(gw, idp):
    key = idp.keys[0]
    ok = [dict(email="a@example.com"), dict(email="A@EXAMPLE.COM"), dict(email="a@eu.example.com")]
    for claims in ok:
        r = get(gw, "/corp/x", token(key, email_verified=True, **claims))
        assert r.status_code == 200, (claims, r.text)
    refused = [dict(email="a@evil-example.com", email_verified=True),      # not a subdomain
               dict(email="a@example.com.evil.net", email_verified=True),  # suffix of the wrong kind
               dict(email="a@example.com", email_verified=False),          # not verified
               dict(email="a@example.com", email_verified=None),           # verification not stated
               dict(email="a@example.com", email_verified="true"),         # a string is not true
               dict(email=None, email_verified=True)]                      # no email
    for claims in refused:
        r = get(gw, "/corp/x", token(key, **claims))
        assert r.status_code == 403, (claims, r.text)
        assert 'error="insufficient_scope"' in r.headers["WWW-Authenticate"]
        # The wire does not say which rule failed ...
        assert "email" not in r.text and "email" not in r.headers["WWW-Authenticate"]
    # ... the log does.
    log = gw.output()
    assert "email_domains: evil-example.com is not among example.com" in log
    assert "email_domains: the email is not verified" in log


def test_any_of_both_sides(gw, idp):
    key = idp.keys[0]
    assert get(gw, "/either/1", token(key, groups=["admin"])).status_code == 200
    assert get(gw, "/either/2", token(key, email="o@example.org", email_verified=True, team="ops")).status_code == 200
    # Each alternative half met is not met.
    for claims in (dict(groups=["staff"]), dict(email="o@example.org", email_verified=True, team="dev"),
                   dict(email="o@example.com", email_verified=True, team="ops")):
        assert get(gw, "/either/3", token(key, **claims)).status_code == 403, claims
    assert gw.logged("any_of: no alternative met ([0] claim requirement not met: groups; [1]")


def test_assertion_per_token(gw, idp, upstream):
    key = idp.keys[0]
    t = token(key, email_verified=True)
    r = get(gw, "/corp/x", t, headers={"X-Tokengate-Assertion": "forged"})
    assert r.status_code == 200
    value = sent(r)["x-tokengate-assertion"]
    jwks = requests.get(gw.url("/.well-known/jwks.json"), timeout=5).json()
    assert [k["kid"] for k in jwks["keys"]] == ["gw-1"] and "d" not in jwks["keys"][0]
    claims = verify_assertion(value, jwks, "https://gw.example.test", f"http://127.0.0.1:{upstream.port}")
    assert claims["sub"] == "alice" and claims["email"] == "alice@example.com" and claims["groups"] == ["staff", "dev"]
    # The same token gets the same assertion (one signature, not one per request; each
    # worker signs its own, so a connection of its own is reused here).
    with requests.Session() as s:
        a = [sent(s.get(gw.url("/corp/y"), headers={"Authorization": f"Bearer {t}"}, timeout=5))["x-tokengate-assertion"]
             for _ in range(3)]
    assert a[0] == a[1] == a[2]
    # Another token: another assertion.
    other = sent(get(gw, "/corp/x", token(key, email_verified=True, sub="bob")))["x-tokengate-assertion"]
    assert verify_assertion(other, jwks, "https://gw.example.test", f"http://127.0.0.1:{upstream.port}")["sub"] == "bob"
    # For another audience, or from another issuer: refused by the helper.
    with pytest.raises(InvalidClaimError):
        verify_assertion(value, jwks, "https://gw.example.test", "http://127.0.0.1:1")
    with pytest.raises(InvalidClaimError):
        verify_assertion(value, jwks, "https://other-gw.example.test", f"http://127.0.0.1:{upstream.port}")
    # A forgery under the gateway's kid, signed by another key: refused.
    from joserfc import jwt
    forged = jwt.encode({"alg": "ES256", "kid": "gw-1", "typ": "tokengate-assertion+jwt"}, claims, ec_key("gw-1"))
    with pytest.raises(BadSignatureError):
        verify_assertion(forged, jwks, "https://gw.example.test", f"http://127.0.0.1:{upstream.port}")
    # Client-sent assertions never reach an upstream, on a route without the option either.
    assert "x-tokengate-assertion" not in sent(get(gw, "/anything", headers={"X-Tokengate-Assertion": value}))


def test_mixed_issuers_are_told_apart(gw, idp, idp2, upstream):
    """Finding 6: on a route with two IdPs, require.issuers scopes each rule to its IdP, and the
    assertion names the IdP (idp) that vouched, so an upstream keys users by (idp, sub)."""
    jwks = requests.get(gw.url("/.well-known/jwks.json"), timeout=5).json()
    aud = f"http://127.0.0.1:{upstream.port}"
    one, two = idp.keys[0], idp2.keys[0]
    # The attack: IdP two mints alice with corp's admin group. Refused (403), never forwarded.
    seen = len(upstream.requests)
    r = get(gw, "/mixed/x", token(two, iss="https://idp.two", groups=["admin"]))
    assert r.status_code == 403 and 'error="insufficient_scope"' in r.headers["WWW-Authenticate"], r.text
    assert len(upstream.requests) == seen
    assert gw.logged("vouched for by issuer two, not one the rule names")
    # IdP one's admin passes; the assertion says which IdP.
    r = get(gw, "/mixed/x", token(one, groups=["admin"]))
    assert r.status_code == 200, r.text
    claims = verify_assertion(sent(r)["x-tokengate-assertion"], jwks, "https://gw.example.test", aud, idps=["https://idp.one"])
    assert claims["idp"] == "https://idp.one" and claims["sub"] == "alice" and "client" not in claims
    # IdP two's partner passes its own alternative; an upstream serving IdP one's users refuses it.
    r = get(gw, "/mixed/x", token(two, iss="https://idp.two", scope="partner"))
    assert r.status_code == 200, r.text
    value = sent(r)["x-tokengate-assertion"]
    assert verify_assertion(value, jwks, "https://gw.example.test", aud)["idp"] == "https://idp.two"
    with pytest.raises(ValueError, match="another IdP"):
        verify_assertion(value, jwks, "https://gw.example.test", aud, idps=["https://idp.one"])
    # A token claim named idp never replaces the gateway's.
    r = get(gw, "/mixed/x", token(two, iss="https://idp.two", scope="partner", idp="https://idp.one"))
    assert verify_assertion(sent(r)["x-tokengate-assertion"], jwks, "https://gw.example.test", aud)["idp"] == "https://idp.two"


def test_documented_helper_is_the_tested_one():
    """docs/identity.md shows upstream apps exactly the helper these tests verify with."""
    with open(os.path.join(ROOT, "docs", "identity.md")) as f:
        page = f.read()
    with open(os.path.join(ROOT, "examples", "verify_assertion.py")) as f:
        helper = f.read()
    assert "```python\n" + helper + "```" in page


def check_config(tmp_path, text):
    path = tmp_path / "check.yaml"
    path.write_text(text)
    return subprocess.run([BIN, "check-config", str(path)], capture_output=True, text=True)


LOGIN_CONFIG = """public_url: https://app1.example.com
session: {{ keys: ["q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE="] {session} }}
issuers:
  corp: {{ issuer: "https://idp.example.com", discovery: true, audiences: [api] }}
clients:
  web: {{ issuer: corp, client_id: web, secret: s3cret-s3cret-s3cret, scopes: [openid, email] }}
upstreams: {{ a: {{ url: "http://127.0.0.1:9000" }} }}
routes:
  - match: {{ path_prefix: / }}
    upstream: a
    auth: login
    client: web
{route}
"""


def test_check_config_warns_about_cookie_domain_and_refuses_it_without_secure(tmp_path):
    """Finding 9: cookie_domain is allowed with a warning; without Secure it is refused."""
    r = check_config(tmp_path, LOGIN_CONFIG.format(session=", cookie_domain: example.com", route=""))
    assert r.returncode == 0, r.stdout
    assert "ok (1 routes" in r.stdout
    assert "warning: line 2: session.cookie_domain: every host under example.com receives the sealed session cookie" in r.stdout
    assert "leave cookie_domain out (host-only __Host- cookie)" in r.stdout
    r = check_config(tmp_path, LOGIN_CONFIG.format(session="", route=""))
    assert r.returncode == 0 and "warning" not in r.stdout, r.stdout
    r = check_config(tmp_path, LOGIN_CONFIG.format(session=", cookie_domain: example.com, secure_cookie: false", route=""))
    assert r.returncode == 1, r.stdout
    assert "session.cookie_domain: needs secure_cookie: true: a Domain cookie without Secure has no __Secure- prefix" in r.stdout


def test_check_config_refuses_an_empty_any_of_alternative(tmp_path):
    """Finding 10: any_of: [{}, ...] would let everyone in."""
    r = check_config(tmp_path, LOGIN_CONFIG.format(session="", route="    require: { any_of: [ {}, { scopes: [admin] } ] }"))
    assert r.returncode == 1, r.stdout
    assert ("routes[0].require.any_of[0]: has no rules, so it is always met and any_of lets everyone in; "
            "give it scopes, claims or email_domains, or remove it") in r.stdout
    r = check_config(tmp_path, LOGIN_CONFIG.format(session="", route="    require: { any_of: [] }"))
    assert r.returncode == 1 and "routes[0].require.any_of: needs at least two alternatives" in r.stdout, r.stdout
    r = check_config(tmp_path, LOGIN_CONFIG.format(session="", route="    require: { any_of: [ { scopes: [a] }, { scopes: [b] } ] }"))
    assert r.returncode == 0, r.stdout


@pytest.fixture
def tpl_gw(upstream, idp, gateway_factory):
    """Template routes beside an exact path, and no catch-all: what a template does not
    match goes to the next rule that does, or gets 404."""
    return gateway_factory(f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], algorithms: [ES256] }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - name: order
    match: {{ path_template: "/orders/{{order_id}}" }}
    upstream: app
    auth: bearer
    issuers: [one]
    headers: {{ X-User: sub, X-Order-Id: "{{order_id}}" }}
  - name: order-files
    match: {{ path_template: "/orders/{{order_id}}/files/{{path*}}" }}
    upstream: app
    auth: none
  - name: orders
    match: {{ path: /orders }}
    upstream: app
    auth: none
""")


def access_line(g, r):
    """The access log line (standard output) of the request `r` answered, by its request id."""
    rid = r.headers["X-Request-Id"]
    found = []

    def seen():
        for text in g.output(settle=0).splitlines():
            if rid in text and text.startswith("{"):
                line = json.loads(text)
                if line.get("msg") == "access" and line.get("request_id") == rid:
                    found.append(line)
                    return True
        return False

    wait_for(seen, 5, what=f"the access line of {rid}")
    return found[0]


def test_path_template_route(tpl_gw, idp, upstream):
    t = token(idp.keys[0])
    # A template route proxies; the upstream hears the variable in the identity header the
    # route maps, beside the claims', and never the client's own copy of it.
    r = get(tpl_gw, "/orders/42?x=1", t, headers={"X-Order-Id": "999"})
    assert r.status_code == 200, r.text
    h = sent(r)
    assert h["x-order-id"] == "42" and h["x-user"] == "alice"
    assert r.json()["path"] == "/orders/42?x=1"
    line = access_line(tpl_gw, r)
    assert line["route"] == "order" and line["path_params"] == {"order_id": "42"}
    assert list(line)[-1] == "path_params", "the last field, as documented"
    # Captured from the normalized path: escaped unreserved bytes decoded, others kept.
    assert sent(get(tpl_gw, "/orders/%34%32", t))["x-order-id"] == "42"
    assert sent(get(tpl_gw, "/orders/a%20b/", t))["x-order-id"] == "a%20b"
    # The route still needs its token.
    assert get(tpl_gw, "/orders/42").status_code == 401
    # {path*} takes the rest of the path, slashes and all, in template order.
    r = get(tpl_gw, "/orders/7/files/a/b.txt")
    assert r.status_code == 200 and r.json()["path"] == "/orders/7/files/a/b.txt"
    assert access_line(tpl_gw, r)["path_params"] == {"order_id": "7", "path": "a/b.txt"}
    # /orders/ has an empty segment where {order_id} needs one: the next rule, the exact
    # /orders (which takes a trailing slash), serves it, with no variables.
    r = get(tpl_gw, "/orders/")
    assert r.status_code == 200
    line = access_line(tpl_gw, r)
    assert line["route"] == "orders" and "path_params" not in line
    # Two segments fit no rule at all.
    seen = len(upstream.requests)
    for path in ("/orders/a/b", "/orders/7/files/", "/orders/7/files"):
        r = get(tpl_gw, path, t)
        assert r.status_code == 404 and r.json()["error"] == "not_found", path
    assert len(upstream.requests) == seen
