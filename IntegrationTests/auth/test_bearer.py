"""`auth: bearer` end to end: a real tokengate, a real upstream, a real JWKS server (with
rotation and outages), tokens made with a third-party JOSE library (joserfc)."""
import base64
import json
import os
import signal
import socket
import time

import pytest
import requests
from joserfc import jws, jwt
from joserfc.jwk import ECKey, OctKey, RSAKey

from support.gateway import Gateway, JSONServer, bearer_get as call, sent_headers as sent
from support.waiting import wait_for


class JWKSServer(JSONServer):
    """Serves whatever key set it currently holds; counts fetches; can go down."""

    def __init__(self):
        self.keys = []
        super().__init__(lambda: {"keys": [k.as_dict(private=False) for k in self.keys]})


def first_fetch_failed(g, issuer="one"):
    """Waits until the gateway counts a failed key fetch for `issuer`: its first try is over,
    and the keys are known not to be there."""
    sample = f'tokengate_issuer_key_fetch_failures_total{{issuer="{issuer}"}} '

    def failures():
        text = requests.get(f"http://127.0.0.1:{g.admin}/metrics", timeout=5).text
        return next((float(line[len(sample):]) for line in text.splitlines() if line.startswith(sample)), 0)
    wait_for(failures, what=f"a failed key fetch for {issuer}")


def ec_key(kid):
    return ECKey.generate_key("P-256", parameters={"kid": kid, "alg": "ES256", "use": "sig"}, private=True)


def token(key, claims=None, alg="ES256", typ="at+jwt", header_extra=None, **over):
    now = int(time.time())
    c = {"iss": "https://idp.one", "aud": "api", "sub": "alice", "iat": now, "exp": now + 300, "scope": "orders:read",
         "email": "alice@example.com", "groups": ["staff", "dev"], "client_id": "app1",
         "jti": base64.urlsafe_b64encode(os.urandom(12)).decode()}
    c.update(claims or {})
    for k, v in over.items():
        if v is None:
            c.pop(k, None)
        else:
            c[k] = v
    header = {"alg": alg, "typ": typ, "kid": key.kid}
    if typ is None:
        header.pop("typ")
    header.update(header_extra or {})
    return jwt.encode(header, c, key, algorithms=[alg])


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@pytest.fixture
def idp():
    s = JWKSServer()
    s.keys = [ec_key("one-1")]
    yield s
    s.stop()


@pytest.fixture
def second_idp(tmp_path):
    key = ec_key("two-1")
    path = tmp_path / "two.jwks"
    path.write_text(json.dumps({"keys": [key.as_dict(private=False)]}))
    return key, str(path)


def bearer_config(upstream, idp, second_path, extra_route=""):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], access_token_type: at+jwt, algorithms: [ES256, RS256] }}
  two: {{ issuer: "https://idp.two", jwks_file: "{second_path}", audiences: [api] }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - name: orders
    match: {{ path_prefix: /api/orders/ }}
    upstream: app
    auth: bearer
    issuers: [one, two]
    require: {{ scopes: [orders:read], claims: {{ groups: {{ contains: staff }} }} }}
  - name: query
    match: {{ path_prefix: /api/query/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    token_in_query: true
    forward_token: true
    headers: {{ X-User-Id: sub, X-Client: client_id }}
  - name: form
    match: {{ path_prefix: /api/form/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    token_in_body: true
{extra_route}
  - name: public
    match: {{ path_prefix: / }}
    upstream: app
    auth: none
"""


@pytest.fixture
def gw(upstream, idp, second_idp, gateway_factory):
    return gateway_factory(bearer_config(upstream, idp, second_idp[1]))


def challenge(r):
    return r.headers.get("WWW-Authenticate", "")


def test_valid_token_reaches_upstream_with_identity(gw, idp):
    r = call(gw, tok=token(idp.keys[0]), headers={"X-Forwarded-User": "mallory", "X-Forwarded-Groups": "admin"})
    assert r.status_code == 200, r.text
    h = sent(r)
    assert h["x-forwarded-user"] == "alice"
    assert h["x-forwarded-email"] == "alice@example.com"
    assert h["x-forwarded-groups"] == "staff,dev"
    assert "authorization" not in h  # stripped unless the route forwards it


def test_no_credentials_gets_a_bare_challenge(gw):
    r = call(gw)
    assert r.status_code == 401
    assert challenge(r) == 'Bearer realm="tokengate"'
    assert r.json()["error"] == "unauthorized"


@pytest.mark.parametrize("auth", ["Basic YTpi", "Bearer a b", "Bearer", "Bearer a\"b"])
def test_malformed_credentials_are_400(gw, auth):
    r = requests.get(gw.url("/api/orders/1"), headers={"Authorization": auth})
    assert r.status_code == 400
    assert 'error="invalid_request"' in challenge(r)
    assert r.json()["error"] == "invalid_request"


def test_two_credentials_are_400(gw, idp):
    t = token(idp.keys[0])
    r = requests.get(gw.url(f"/api/query/x?access_token={t}"), headers={"Authorization": f"Bearer {t}"})
    assert r.status_code == 400 and 'error="invalid_request"' in challenge(r)


def test_insufficient_scope_is_403_with_scope(gw, idp):
    r = call(gw, tok=token(idp.keys[0], scope="profile"))
    assert r.status_code == 403
    assert 'error="insufficient_scope"' in challenge(r) and 'scope="orders:read"' in challenge(r)
    r = call(gw, tok=token(idp.keys[0], groups=["dev"]))
    assert r.status_code == 403


def test_second_issuer_from_jwks_file(gw, second_idp):
    key, _ = second_idp
    r = call(gw, tok=token(key, iss="https://idp.two", typ=None))
    assert r.status_code == 200, r.text


def test_issuer_picks_keys_only_from_itself(gw, idp, second_idp):
    # Signed with issuer two's key but claiming issuer one.
    key, _ = second_idp
    r = call(gw, tok=token(key, iss="https://idp.one"))
    assert r.status_code == 401 and 'error="invalid_token"' in challenge(r)


def invalid(gw, tok, path="/api/orders/1"):
    r = call(gw, tok, path=path)
    assert r.status_code == 401, r.text
    assert 'error="invalid_token"' in challenge(r)
    body = r.json()
    assert body["error"] == "invalid_token"
    # Never internals: no key material, no stack, no JOSE code names.
    assert "kid" not in body["error_description"] and "JOSE" not in body["error_description"]
    return r


def test_claims_failures(gw, idp):
    k = idp.keys[0]
    now = int(time.time())
    invalid(gw, token(k, exp=now - 120))
    invalid(gw, token(k, nbf=now + 600))
    invalid(gw, token(k, iss="https://other"))
    invalid(gw, token(k, aud="other-api"))
    invalid(gw, token(k, exp=None))
    # An ID token (typ JWT, audience the client) is not an access token.
    invalid(gw, token(k, typ="JWT", aud="app1"))


def test_attacks(gw, idp):
    k = idp.keys[0]
    now = int(time.time())
    claims = {"iss": "https://idp.one", "aud": "api", "sub": "eve", "exp": now + 300, "scope": "orders:read", "groups": ["staff"]}
    enc = lambda h, c: b64(json.dumps(h).encode()) + "." + b64(json.dumps(c).encode())
    # alg none.
    invalid(gw, enc({"alg": "none", "typ": "at+jwt", "kid": k.kid}, claims) + ".")
    # HS256 with the issuer's public key as the HMAC secret (alg confusion).
    pub_pem = k.as_pem(private=False)
    forged = jws.serialize_compact({"alg": "HS256", "typ": "at+jwt", "kid": k.kid}, json.dumps(claims).encode(),
                                   OctKey.import_key(pub_pem), algorithms=["HS256"])
    invalid(gw, forged)
    # The attacker's own key offered in the header (jwk / jku / x5u).
    evil = ec_key(k.kid)
    for extra in [{"jwk": evil.as_dict(private=False)}, {"jku": "http://127.0.0.1:1/evil"}, {"x5u": "http://127.0.0.1:1/x"}]:
        invalid(gw, token(evil, header_extra=extra))
    # Bad signature.
    good = token(k)
    invalid(gw, good[:-4] + ("AAAA" if not good.endswith("AAAA") else "BBBB"))
    # Duplicate claims (a second "sub" after the signed one).
    # Properly signed, so only the duplicate member can make it fail.
    dup = ('{"iss":"https://idp.one","aud":"api","sub":"alice","exp":%d,"scope":"orders:read","groups":["staff"],"sub":"admin"}' % (now + 300)).encode()
    invalid(gw, jws.serialize_compact({"alg": "ES256", "typ": "at+jwt", "kid": k.kid}, dup, k))
    # DPoP-bound token presented as Bearer.
    invalid(gw, token(k, cnf={"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}))
    # A header that says the payload is a nested JWT (RFC 7519 §5.2), over a claims set.
    for cty in ["JWT", "application/jwt"]:
        invalid(gw, token(k, header_extra={"cty": cty}))
    # Oversized token (> 16 KB).
    invalid(gw, token(k, pad="x" * 17000))


def test_oversized_header_is_refused(gw):
    r = requests.get(gw.url("/api/orders/1"), headers={"Authorization": "Bearer " + "a" * 70000})
    assert r.status_code in (400, 413, 431)


def test_token_in_query_only_where_allowed(gw, idp):
    t = token(idp.keys[0])
    r = requests.get(gw.url(f"/api/orders/1?access_token={t}"))
    assert r.status_code == 400 and 'error="invalid_request"' in challenge(r)
    r = requests.get(gw.url(f"/api/query/x?access_token={t}"))
    assert r.status_code == 200, r.text
    h = sent(r)
    assert h["x-user-id"] == "alice" and h["x-client"] == "app1"
    # Custom mapping replaces the defaults, and the defaults are still stripped.
    r = call(gw, t, path="/api/query/x", headers={"X-Forwarded-User": "mallory"})
    h = sent(r)
    assert "x-forwarded-user" not in h
    assert h["authorization"] == f"Bearer {t}"  # forward_token: true


def test_unknown_kid_refetches_once_then_rotation_works(gw, idp):
    old = idp.keys[0]
    assert call(gw, tok=token(old)).status_code == 200
    hits = idp.hits
    # Rotation at the IdP: a token with the new kid is accepted without a restart.
    new = ec_key("one-2")
    idp.keys = [new]
    assert call(gw, tok=token(new)).status_code == 200
    assert idp.hits == hits + 1
    # The removed key is refused now (the cache was dropped with the old set).
    invalid(gw, token(old))
    # A flood of made-up kids within the refetch interval costs the IdP nothing.
    before = idp.hits
    for i in range(30):
        invalid(gw, token(ec_key(f"made-up-{i}")))
    assert idp.hits - before <= 1
    # A bad signature never triggers a refetch.
    before = idp.hits
    t = token(new)
    for _ in range(10):
        invalid(gw, t[:-4] + ("AAAA" if not t.endswith("AAAA") else "BBBB"))
    assert idp.hits == before


def test_identity_headers_stripped_on_public_routes(gw):
    r = requests.get(gw.url("/public"), headers={"X-Forwarded-User": "mallory", "X-User-Id": "1", "X-Forwarded-Email": "m@x"})
    h = sent(r)
    assert "x-forwarded-user" not in h and "x-user-id" not in h and "x-forwarded-email" not in h


def test_idp_down_at_start_then_recovers(upstream, second_idp, gateway_factory):
    srv = JWKSServer()
    srv.down = True
    key = ec_key("one-1")
    srv.keys = [key]
    try:
        g = Gateway(bearer_config(upstream, srv, second_idp[1]))
        g.start_no_wait()
        try:
            first_fetch_failed(g)
            r = requests.get(f"http://127.0.0.1:{g.admin}/readyz")
            assert r.status_code == 503 and "one" in r.text
            assert call(g, tok=token(key)).status_code == 503
            m = requests.get(f"http://127.0.0.1:{g.admin}/metrics").text
            assert 'tokengate_issuer_keys_loaded{issuer="one"} 0' in m
            assert 'tokengate_issuer_key_fetch_failures_total{issuer="one"} 0' not in m
            srv.down = False
            wait_for(lambda: requests.get(f"http://127.0.0.1:{g.admin}/readyz").status_code == 200, 20, interval=0.2,
                     what="readiness")
            assert call(g, tok=token(key)).status_code == 200
            assert 'tokengate_issuer_keys_loaded{issuer="one"} 1' in requests.get(f"http://127.0.0.1:{g.admin}/metrics").text
            # Down again mid-run: the last good keys keep serving, and readiness says so.
            srv.down = True
            assert call(g, tok=token(key, sub="bob")).status_code == 200
            assert call(g, tok=token(ec_key("rotated-1"))).status_code == 401  # unknown kid: one failed refetch
            r = requests.get(f"http://127.0.0.1:{g.admin}/readyz")
            assert r.status_code == 200 and "last good keys" in r.text
        finally:
            g.stop()
    finally:
        srv.stop()


def test_token_in_form_body_only_where_allowed(gw, idp):
    t = token(idp.keys[0])
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    r = requests.post(gw.url("/api/form/x"), data=f"a=1&access_token={t}", headers=form)
    assert r.status_code == 200, r.text
    # The token was taken out of the body before it went upstream ("a=1" is left).
    assert r.json()["body_length"] == 3
    assert sent(r)["x-forwarded-user"] == "alice"
    # A route without token_in_body decides on the head alone (the body is never read
    # before authentication): a token only in the body is no credential there.
    r = requests.post(gw.url("/api/orders/1"), data=f"access_token={t}", headers=form)
    assert r.status_code == 401 and challenge(r) == 'Bearer realm="tokengate"'
    # Too large a form on a route that reads it: 413, not buffered.
    r = requests.post(gw.url("/api/form/x"), data="a=" + "x" * (70 << 10) + f"&access_token={t}", headers=form)
    assert r.status_code == 413


def reload_config(upstream, idp, second_path, probe_first):
    """One worker; the `form` route reads its token from the body and requires a scope the
    test token lacks. With `probe_first`, another route takes index 0 ahead of it: laxer
    (no scope required), and trusting another issuer."""
    probe = """
  - name: probe
    match: { path_prefix: /probe/ }
    upstream: app
    auth: bearer
    issuers: [two]
""" if probe_first else ""
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 1
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], access_token_type: at+jwt, algorithms: [ES256] }}
  two: {{ issuer: "https://idp.two", jwks_file: "{second_path}", audiences: [api] }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:{probe}
  - name: form
    match: {{ path_prefix: /api/form/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    token_in_body: true
    require: {{ scopes: [admin] }}
  - name: public
    match: {{ path_prefix: / }}
    upstream: app
    auth: none
"""


def test_reload_while_a_form_body_arrives_keeps_the_routes_rules(upstream, idp, second_idp, gateway_factory):
    # A request keeps the route it was routed by, with all of that route's rules, when a
    # reload lands while its form body is still arriving: a reload that puts another route
    # at the same position must lend the request neither that route's requirement nor its
    # issuers (the request would be refused as from an unknown issuer, 401, or let through).
    g = gateway_factory(reload_config(upstream, idp, second_idp[1], probe_first=False))
    t = token(idp.keys[0])
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    r = requests.post(g.url("/api/form/x"), data=f"a=1&access_token={t}", headers=form)
    assert r.status_code == 403 and 'error="insufficient_scope"' in r.headers["WWW-Authenticate"]
    assert requests.get(g.url("/probe/x")).status_code == 200  # the public route, for now
    body = f"a=1&access_token={t}".encode()
    head = ("POST /api/form/x HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Content-Type: application/x-www-form-urlencoded\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", g.port), timeout=10) as s:
        s.sendall(head + body[:20])
        g.write_config(reload_config(upstream, idp, second_idp[1], probe_first=True))
        g.signal(signal.SIGHUP)
        # Reloaded: probe is index 0.
        wait_for(lambda: requests.get(g.url("/probe/x")).status_code == 401, 5, interval=0.05, what="the reload")
        s.sendall(body[20:])
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    status = answer.split(b"\r\n", 1)[0]
    assert status == b"HTTP/1.1 403 Forbidden", answer[:300]
    assert b'error="insufficient_scope"' in answer
