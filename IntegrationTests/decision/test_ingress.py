"""Decision mode behind real ingresses: Debian's nginx (auth_request) and Debian's Caddy 2.6
(forward_auth) in front of a real upstream, tokengate judging with the real authorization
server's tokens (IntegrationTests/support/authserver). Bearer, DPoP and login routes; identity
headers at the upstream; 401/403 at the client; spoofed identity headers never reaching the
upstream; the decision endpoint refusing an untrusted caller, a caller without the shared secret
and a client going through the ingress; each endpoint reading only its own ingress's headers (a
client's spoofed copies of the other style's change nothing); what the upstream behind the
recipes no longer sees; path-confusion probes judged on the path the ingress routes; Envoy's
ext_authz HTTP form."""
import socket

import pytest
import requests

from support.dpop_client import DPoPKey
from support.gateway import Gateway, sent_headers as sent
from support.ingress import Caddy, Nginx
from test_login import HTML, SESSION_KEY, gateway_key, parse_qs_form

# Caddy 2.6.2 (Debian bookworm) sets a copy_headers header the verdict does not have to its
# unexpanded placeholder instead of leaving it out: never the client's value, but not absent.
def absent(h, name):
    return name not in h or h[name] == "{http.reverse_proxy.header.%s}" % "-".join(p.capitalize() for p in name.split("-"))


SECRET = "decision-secret-0123456789abcdef"
# What the ingress adds to every decision request with the recipes' decision.secret.
WITH_SECRET = [f"X-Tokengate-Decision-Secret: {SECRET}"]

SPOOF = {"X-Forwarded-User": "admin", "X-Forwarded-Email": "root@evil.example", "X-Forwarded-Jkt": "spoofed",
         "X-Auth-Request-User": "admin"}


class Env:
    """AS + upstream + tokengate (decision mode) + nginx + caddy."""

    def __init__(self, a, d, upstream, tmp_path):
        """a: the AS of bearer tokens and logins; d: an AS that binds tokens to DPoP keys."""
        self.a, self.d, self.upstream = a, d, upstream
        self.gw = Gateway("")
        self.nginx = Nginx(self.gw.port, upstream.port, secret=SECRET)
        self.caddy = Caddy(self.gw.port, upstream.port, secret=SECRET)
        (tmp_path / "decision.secret").write_text(SECRET + "\n")
        origins = [f"http://127.0.0.1:{self.nginx.port}", f"http://127.0.0.1:{self.caddy.port}"]
        key_path, jwks = gateway_key(tmp_path)
        a.add_client("web", jwks=jwks, scopes=["openid", "profile", "email", "orders:read"],
                     redirect_uri=[o + "/oauth2/callback" for o in origins], token_endpoint_auth_method="private_key_jwt",
                     post_logout_redirect_uri=[o + "/" for o in origins])
        self.gw.write_config(f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
trusted_proxies: [127.0.0.1/32]
public_url: [{", ".join(origins)}]
decision: {{ secret_file: "{tmp_path / 'decision.secret'}" }}
session: {{ keys: ["{SESSION_KEY}"], secure_cookie: false }}
login: {{ allowed_redirect_hosts: [localhost] }}
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
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - name: api
    match: {{ path_prefix: /api/ }}
    upstream: app
    auth: bearer
    issuers: [as1]
    require: {{ scopes: [orders:read] }}
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
  - name: app
    match: {{ path_prefix: /app/ }}
    upstream: app
    auth: login
    client: web
    headers: {{ X-Forwarded-User: sub, X-Forwarded-Email: email }}
  - name: ro-public
    match: {{ path_prefix: /ro/, methods: [GET] }}
    upstream: app
    auth: none
  - name: ro-write
    match: {{ path_prefix: /ro/ }}
    upstream: app
    auth: bearer
    issuers: [as1]
  - name: tok
    match: {{ path_prefix: /tok/ }}
    upstream: app
    auth: login
    client: web
    pass_access_token: X-Access-Token
    pass_id_token: X-Id-Token
  - name: public
    match: {{ path_prefix: / }}
    upstream: app
    auth: none
""")
        try:
            self.gw.start()
            self.nginx.start()
            self.caddy.start()
        except Exception:
            self.stop()
            raise

    def stop(self):
        for p in (self.nginx, self.caddy, self.gw):
            p.stop()

    def upstream_paths(self):
        return [r["path"] for r in self.upstream.requests]


@pytest.fixture
def env(authserver_factory, upstream, tmp_path):
    e = Env(authserver_factory(login="form"), authserver_factory(dpop=True), upstream, tmp_path)
    yield e
    e.stop()


def raw(port, request, source="127.0.0.1"):
    """Sends bytes as they are (no client-side normalization) from `source`; status and text."""
    with socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0)) as s:
        s.sendall(request)
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    return int(data.split(b" ", 2)[1]), data.decode(errors="replace")


def get(port, target, headers=(), source="127.0.0.1"):
    lines = [f"GET {target} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close", *headers]
    return raw(port, ("\r\n".join(lines) + "\r\n\r\n").encode(), source)


@pytest.mark.parametrize("ingress", ["nginx", "caddy"])
def test_bearer_through_the_ingress(env, ingress):
    ing = getattr(env, ingress)
    tok = env.a.client_credentials_token("app1", scope="orders:read")["access_token"]
    # Allowed: the upstream gets the verdict's identity headers, never the client's copies.
    r = requests.get(ing.url("/api/orders/1"), headers={"Authorization": f"Bearer {tok}", **SPOOF}, timeout=10)
    assert r.status_code == 200, (r.status_code, r.text, env.gw.output()[-2000:], ing.log()[-2000:])
    h = sent(r)
    assert h["x-forwarded-user"] == "app1"
    assert absent(h, "x-forwarded-email") and absent(h, "x-forwarded-jkt"), h
    values = [v for k, v in r.json()["headers"] if k.lower() == "x-forwarded-user"]
    assert values == ["app1"], values
    # No credentials: the bare challenge reaches the client (RFC 6750 §3.1).
    r = requests.get(ing.url("/api/orders/1"), timeout=10)
    assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Bearer"), (r.status_code, r.headers)
    # A bad token: invalid_token.
    r = requests.get(ing.url("/api/orders/1"), headers={"Authorization": "Bearer not.a.token"}, timeout=10)
    assert r.status_code == 401 and 'error="invalid_token"' in r.headers["WWW-Authenticate"], r.headers
    # A token without the route's scope: 403 (nginx answers its own 403 page; Caddy passes tokengate's).
    r = requests.get(ing.url("/admin/x"), headers={"Authorization": f"Bearer {tok}"}, timeout=10)
    assert r.status_code == 403, r.text
    if ingress == "caddy":
        assert 'error="insufficient_scope"' in r.headers["WWW-Authenticate"] and r.json()["error"] == "insufficient_scope"
    # Refused requests never reached the upstream.
    assert not [p for p in env.upstream_paths() if p.startswith("/admin")]
    assert env.upstream_paths().count("/api/orders/1") == 1


@pytest.mark.parametrize("ingress", ["nginx", "caddy"])
def test_spoofed_identity_never_reaches_the_upstream(env, ingress):
    ing = getattr(env, ingress)
    r = requests.get(ing.url("/public/page"), headers=SPOOF, timeout=10)
    assert r.status_code == 200, r.text
    h = sent(r)
    for name in ("x-forwarded-user", "x-forwarded-email", "x-forwarded-jkt"):
        assert absent(h, name), (name, h)


@pytest.mark.parametrize("ingress", ["nginx", "caddy"])
def test_dpop_through_the_ingress_claims_the_proof_once(env, ingress):
    ing = getattr(env, ingress)
    key = DPoPKey("ES256")
    tok = env.d.client_credentials_token("app1", scope="orders:read", dpop_key=key)["access_token"]
    url = ing.url("/dpop/orders/1")
    proof = key.proof("GET", url, access_token=tok)
    r = requests.get(url, headers={"Authorization": f"DPoP {tok}", "DPoP": proof, **SPOOF}, timeout=10)
    assert r.status_code == 200, (r.text, env.gw.output()[-2000:])
    assert sent(r)["x-forwarded-jkt"] == key.jkt and sent(r)["x-forwarded-user"] == "app1"
    # The same proof again: a replay, refused at the client.
    r = requests.get(url, headers={"Authorization": f"DPoP {tok}", "DPoP": proof}, timeout=10)
    assert r.status_code == 401 and 'error="invalid_dpop_proof"' in r.headers["WWW-Authenticate"], r.headers
    # The htu is the original URL: a proof made for tokengate's own address is refused.
    wrong = key.proof("GET", env.gw.url("/dpop/orders/1"), access_token=tok)
    r = requests.get(url, headers={"Authorization": f"DPoP {tok}", "DPoP": wrong}, timeout=10)
    assert r.status_code == 401 and 'error="invalid_dpop_proof"' in r.headers["WWW-Authenticate"]
    # The token as a Bearer token is worth nothing.
    r = requests.get(url, headers={"Authorization": f"Bearer {tok}"}, timeout=10)
    assert r.status_code == 401
    # One decision per request: the log has exactly one allowed decision for the dpop route.
    allowed = [line for line in env.gw.output().splitlines() if '"route":"dpop"' in line.replace(" ", "") and "decision: allowed" in line]
    assert len(allowed) == 1, allowed


@pytest.mark.parametrize("ingress", ["nginx", "caddy"])
def test_dpop_nonce_reaches_the_client(env, ingress):
    """RFC 9449 §8: the verdict's use_dpop_nonce challenge and its DPoP-Nonce reach the
    client through the ingress; a proof with that nonce then passes."""
    ing = getattr(env, ingress)
    key = DPoPKey("ES256")
    tok = env.d.client_credentials_token("app1", scope="orders:read", dpop_key=key)["access_token"]
    url = ing.url("/nonce/orders/1")
    r = requests.get(url, headers={"Authorization": f"DPoP {tok}", "DPoP": key.proof("GET", url, access_token=tok)}, timeout=10)
    assert r.status_code == 401 and 'error="use_dpop_nonce"' in r.headers["WWW-Authenticate"], r.headers
    nonce = r.headers["DPoP-Nonce"]
    r = requests.get(url, headers={"Authorization": f"DPoP {tok}", "DPoP": key.proof("GET", url, access_token=tok, nonce=nonce)},
                     timeout=10)
    assert r.status_code == 200 and sent(r)["x-forwarded-jkt"] == key.jkt, r.text


def test_login_redirects_nginx_401_and_caddy_302(env):
    # nginx: the verdict is 401 with the login URL; error_page sends the browser there.
    r = requests.get(env.nginx.url("/app/orders?x=1"), headers=HTML, allow_redirects=False, timeout=10)
    assert r.status_code == 302, (r.status_code, r.text, env.nginx.log()[-2000:])
    assert r.headers["Location"] == env.nginx.url("/oauth2/start?rd=") + requests.utils.quote(env.nginx.url("/app/orders?x=1"), safe="")
    # Caddy hands the verdict to the client: the 302 itself.
    r = requests.get(env.caddy.url("/app/orders"), headers=HTML, allow_redirects=False, timeout=10)
    assert r.status_code == 302 and r.headers["Location"].startswith(env.caddy.url("/oauth2/start?rd=")), (r.status_code, r.headers)
    # An XHR without a session: 401, no redirect it could not follow.
    r = requests.get(env.caddy.url("/app/orders"), headers={"Accept": "application/json"}, allow_redirects=False, timeout=10)
    assert r.status_code == 401 and r.json()["error"] == "login_required"
    # The whole round trip through Caddy with a python browser: start → AS form → callback → page.
    s = requests.Session()
    r = s.get(env.caddy.url("/app/orders"), headers=HTML, allow_redirects=False, timeout=10)
    r = s.get(r.headers["Location"], allow_redirects=False, timeout=10)  # /oauth2/start, which Caddy routes to tokengate
    assert r.status_code == 302, (r.status_code, r.text)
    callback = env.a.login_with_form(s, r.headers["Location"])
    assert callback.startswith(env.caddy.url("/oauth2/callback"))
    r = s.get(callback, allow_redirects=False, timeout=10)
    assert r.status_code == 302, env.gw.output()[-3000:]
    assert r.status_code == 302 and r.headers["Location"] == "/app/orders", (r.status_code, r.headers, r.text)
    r = s.get(env.caddy.url("/app/orders"), headers=HTML, allow_redirects=False, timeout=10)
    assert r.status_code == 200 and sent(r)["x-forwarded-email"] == "alice@example.com"
    # The verdict itself, asked directly with the browser's cookie: the route's headers and
    # oauth2-proxy's X-Auth-Request-*.
    cookie = "; ".join(f"{c.name}={c.value}" for c in s.cookies if c.name.startswith("tokengate_"))
    status, text = get(env.gw.port, "/_tokengate/auth", [f"Cookie: {cookie}", "X-Original-URL: " + env.caddy.url("/app/orders"),
                                                         "X-Original-Method: GET", "Accept: text/html", *WITH_SECRET])
    assert status == 200 and "X-Auth-Request-Email: alice@example.com" in text and "X-Forwarded-Email: alice@example.com" in text, text
    # The route forwards no token: neither the session's access token nor its ID token is in
    # the verdict; the browser had only the gateway's cookies, so X-Tokengate-Cookie is empty.
    assert "X-Auth-Request-User: " in text and "X-Auth-Request-Access-Token" not in text and "Bearer" not in text, text
    assert "X-Tokengate-Cookie: \r\n" in text, text
    status, text = get(env.gw.port, "/_tokengate/auth", [f"Cookie: theme=dark; {cookie}", "X-Original-URL: " + env.caddy.url("/app/orders"),
                                                         "X-Original-Method: GET", "Accept: text/html", *WITH_SECRET])
    assert status == 200 and "X-Tokengate-Cookie: theme=dark\r\n" in text, text
    # Through Caddy, with another cookie: the upstream gets that one, never the sealed session.
    r = s.get(env.caddy.url("/app/orders"), headers={**HTML, "Cookie": f"theme=dark; {cookie}"}, allow_redirects=False, timeout=10)
    assert r.status_code == 200 and "tokengate_session" not in sent(r).get("cookie", "") and "theme=dark" in sent(r)["cookie"], sent(r)
    # Tokens only where the route says so: /tok/ sets pass_access_token and pass_id_token.
    status, text = get(env.gw.port, "/_tokengate/auth", [f"Cookie: {cookie}", "X-Original-URL: " + env.caddy.url("/tok/x"),
                                                         "X-Original-Method: GET", "Accept: text/html", *WITH_SECRET])
    assert status == 200 and "X-Access-Token: " in text and "X-Id-Token: ey" in text, text
    assert "X-Auth-Request-Access-Token" not in text, text
    # Logout through the ingress: the confirmation form, its POST, the session cookie cleared;
    # the page asks for a login again.
    page = s.get(env.caddy.url("/oauth2/logout"), allow_redirects=False, timeout=10)
    assert page.status_code == 200 and 'method="post"' in page.text
    r = s.post(env.caddy.url("/oauth2/logout"), data={"token": parse_qs_form(page.text)["token"]}, allow_redirects=False, timeout=10)
    assert r.status_code == 302 and "tokengate_session=;" in r.headers["Set-Cookie"], (r.status_code, r.headers)
    r = s.get(env.caddy.url("/app/orders"), headers=HTML, allow_redirects=False, timeout=10)
    assert r.status_code == 302 and r.headers["Location"].startswith(env.caddy.url("/oauth2/start?rd=")), r.status_code


@pytest.mark.parametrize("rd,back", [
    ("{nginx}/app/x?y=1", "/app/x?y=1"),              # the original URL on the login's origin: its path
    ("http://localhost:{caddy_port}/app/x", "http://localhost:{caddy_port}/app/x"),  # login.allowed_redirect_hosts
    ("http://evil.example/app/x", "/"),                # any other host: not followed
])
def test_rd_after_login_behind_the_ingress(env, rd, back):
    fill = {"nginx": env.nginx.url(""), "caddy_port": env.caddy.port}
    rd, back = rd.format(**fill), back.format(**fill)
    s = requests.Session()
    r = s.get(env.nginx.url("/oauth2/start"), params={"rd": rd}, allow_redirects=False, timeout=10)
    assert r.status_code == 302, (r.status_code, r.text)
    callback = env.a.login_with_form(s, r.headers["Location"])
    r = s.get(callback, allow_redirects=False, timeout=10)
    assert r.status_code == 302 and r.headers["Location"] == back, (r.status_code, r.headers)


FORWARD_AUTH = ["X-Forwarded-Uri: /public/x", "X-Forwarded-Host: 127.0.0.1", "X-Forwarded-Method: GET", "X-Forwarded-Proto: http"]


def test_untrusted_peer_is_refused_and_logged(env):
    # 127.0.0.5 is not in trusted_proxies: its X-Forwarded-Uri is not read at all.
    status, text = get(env.gw.port, "/_tokengate/forward-auth", FORWARD_AUTH + WITH_SECRET, source="127.0.0.5")
    assert status == 400 and "invalid_request" in text, text
    assert env.gw.logged("untrusted peer 127.0.0.5")
    status, text = get(env.gw.port, "/_tokengate/ext_authz/public/x", WITH_SECRET, source="127.0.0.5")
    assert status == 400
    # From the trusted ingress address the same request is judged.
    status, _ = get(env.gw.port, "/_tokengate/forward-auth", FORWARD_AUTH + WITH_SECRET)
    assert status == 200
    # Without a description of the request: 400, naming the header missing.
    status, text = get(env.gw.port, "/_tokengate/forward-auth", WITH_SECRET)
    assert status == 400 and "did not send X-Forwarded-Method" in text, text


@pytest.mark.parametrize("path,headers", [
    ("/_tokengate/forward-auth", FORWARD_AUTH),
    ("/_tokengate/auth", ["X-Original-URL: http://127.0.0.1/public/x", "X-Original-Method: GET"]),
    ("/_tokengate/ext_authz/public/x", []),
])
def test_decision_secret_is_required(env, path, headers):
    """decision.secret_file: a trusted peer without the ingress's secret, or with a wrong one or
    a prefix of it, gets 400 and a log line; with it, the verdict."""
    for bad in ([], ["X-Tokengate-Decision-Secret: wrong-wrong-wrong-wrong-wrong-12"], [f"X-Tokengate-Decision-Secret: {SECRET[:-1]}"]):
        status, text = get(env.gw.port, path, headers + bad)
        assert status == 400 and "decision.secret" in text and "invalid_request" in text, (bad, text)
    assert env.gw.logged("without X-Tokengate-Decision-Secret") and env.gw.logged("with a wrong X-Tokengate-Decision-Secret")
    status, _ = get(env.gw.port, path, headers + WITH_SECRET)
    assert status == 200


@pytest.mark.parametrize("ingress", ["nginx", "caddy"])
@pytest.mark.parametrize("path", ["/_tokengate/auth", "/_tokengate/forward-auth", "/_tokengate/ext_authz/public/x"])
def test_clients_cannot_reach_the_decision_endpoints_through_the_ingress(env, ingress, path):
    """Review finding 3: the recipes keep the endpoints internal (nginx `internal;`, Caddy
    `respond /_tokengate/* 404`), so a client never gets a verdict and its identity headers."""
    ing = getattr(env, ingress)
    status, text = get(ing.port, path, ["X-Forwarded-Uri: /public/x", "X-Forwarded-Method: GET",
                                        "X-Original-URL: http://127.0.0.1/public/x", "X-Original-Method: GET"])
    assert status == 404 and "X-Auth-Request" not in text, text
    assert not env.upstream.requests


@pytest.mark.parametrize("spoof", [
    # Caddy / Traefik style (the finding): nginx's headers naming a public path.
    {"X-Original-URL": "http://127.0.0.1/public/x", "X-Original-Method": "GET"},
    # nginx style: Traefik's and Caddy's headers naming a public path.
    {"X-Forwarded-Uri": "/public/x", "X-Forwarded-Method": "GET", "X-Forwarded-Host": "127.0.0.1", "X-Forwarded-Proto": "http"},
])
@pytest.mark.parametrize("ingress", ["nginx", "caddy"])
def test_the_other_styles_spoofed_headers_change_nothing(env, ingress, spoof):
    """Review finding 1: a client describing a public path in the other ingress style's headers
    is still judged on the protected path it asks for: 401, and the upstream hears nothing."""
    ing = getattr(env, ingress)
    spoof = {k: v.replace("127.0.0.1", f"127.0.0.1:{ing.port}") for k, v in spoof.items()}
    r = requests.get(ing.url("/admin/secret"), headers=spoof, timeout=10)
    assert r.status_code == 401, (r.status_code, r.text)
    r = requests.delete(ing.url("/api/orders/1"), headers=spoof, timeout=10)
    assert r.status_code == 401, (r.status_code, r.text)
    assert not env.upstream.requests, env.upstream.requests


@pytest.mark.parametrize("ingress", ["nginx", "caddy"])
def test_a_client_cannot_pick_the_judged_method(env, ingress):
    """Review finding 4: GET on /ro/ is public, anything else needs a token. A DELETE that
    claims to be a GET in any method header is judged as the DELETE it is."""
    ing = getattr(env, ingress)
    assert requests.get(ing.url("/ro/orders/1"), timeout=10).status_code == 200
    spoof = {"X-Original-Method": "GET", "X-Forwarded-Method": "GET", "X-HTTP-Method-Override": "GET"}
    r = requests.delete(ing.url("/ro/orders/1"), headers=spoof, timeout=10)
    assert r.status_code == 401, (r.status_code, r.text)
    # Only the GET reached the upstream.
    assert env.upstream_paths() == ["/ro/orders/1"], env.upstream.requests


@pytest.mark.parametrize("ingress", ["nginx", "caddy"])
def test_the_upstream_does_not_see_what_proxy_mode_strips(env, ingress):
    """Review finding 5: with the recipes, the upstream gets no client-sent override headers,
    no Authorization or DPoP on routes that do not forward them, and not the gateway's
    cookies (the others pass)."""
    ing = getattr(env, ingress)
    tok = env.a.client_credentials_token("app1", scope="orders:read")["access_token"]
    extra = {"X-Original-URL": f"http://127.0.0.1:{ing.port}/public/x", "X-Rewrite-URL": "/admin/secret", "X-Original-Method": "GET",
             "Cookie": "theme=dark; tokengate_session=sealed-session-value; tokengate_login=state", "DPoP": "a.b.c"}
    for path, auth in (("/public/x", "Bearer forged"), ("/api/orders/1", f"Bearer {tok}")):
        r = requests.get(ing.url(path), headers={"Authorization": auth, **extra}, timeout=10)
        assert r.status_code == 200, (path, r.status_code, r.text)
        h = sent(r)
        # The ingress's decision secret stays on the decision request.
        for name in ("x-original-url", "x-rewrite-url", "x-original-method", "authorization", "dpop", "x-tokengate-decision-secret"):
            assert not h.get(name), (path, name, h)
        assert "tokengate_" not in h.get("cookie", "") and "theme=dark" in h["cookie"], (path, h)


@pytest.mark.parametrize("path,headers,why", [
    # Review finding 4: nginx style needs both headers the recipe sets, absolute URL; no fallbacks.
    ("/_tokengate/auth", ["X-Original-URL: http://127.0.0.1/api/orders/1"], "did not send X-Original-Method"),
    ("/_tokengate/auth", ["X-Original-URL: http://127.0.0.1/api/orders/1", "X-Forwarded-Method: GET"], "did not send X-Original-Method"),
    ("/_tokengate/auth", ["X-Original-URL: /public/x", "X-Forwarded-Host: 127.0.0.1", "X-Original-Method: GET"], "absolute http(s) URL"),
    ("/_tokengate/auth", ["X-Forwarded-Uri: /public/x", "X-Forwarded-Host: 127.0.0.1", "X-Forwarded-Method: GET",
                          "X-Forwarded-Proto: http"], "did not send X-Original-URL"),
    ("/_tokengate/forward-auth", ["X-Original-URL: http://127.0.0.1/public/x", "X-Original-Method: GET"], "did not send X-Forwarded-Method"),
    ("/_tokengate/forward-auth", FORWARD_AUTH[:3], "did not send X-Forwarded-Proto"),
    ("/_tokengate/forward-auth", FORWARD_AUTH[:3] + ["X-Forwarded-Proto: gopher"], "must be http or https"),
    ("/_tokengate/forward-auth", FORWARD_AUTH + ["X-Forwarded-Uri: /admin/x"], "more than one X-Forwarded-Uri"),
    ("/_tokengate/auth", ["X-Original-URL: http://127.0.0.1/public/x", "X-Original-Method: GET", "X-Original-Method: DELETE"],
     "more than one X-Original-Method"),
    # Review finding 8: a login endpoint only under its own raw path.
    ("/_tokengate/auth", ["X-Original-URL: http://127.0.0.1/admin/%2e%2e/oauth2/start", "X-Original-Method: GET"], "login endpoint"),
    ("/_tokengate/forward-auth", ["X-Forwarded-Uri: /admin/../oauth2/start?rd=/", "X-Forwarded-Host: 127.0.0.1",
                                  "X-Forwarded-Method: GET", "X-Forwarded-Proto: http"], "login endpoint"),
])
def test_bad_descriptions_are_refused_with_400(env, path, headers, why):
    status, text = get(env.gw.port, path, headers + WITH_SECRET)
    assert status == 400 and why in text and "invalid_request" in text, text
    assert env.gw.logged("decision refused")



@pytest.mark.parametrize("path,headers", [
    ("/_tokengate/forward-auth", FORWARD_AUTH),
    ("/_tokengate/auth", ["X-Original-URL: http://127.0.0.1/public/x", "X-Original-Method: GET"]),
    ("/_tokengate/ext_authz/public/x", []),
])
def test_a_decision_request_with_both_framings_is_refused(env, path, headers):
    """RFC 9112 §6.3: Transfer-Encoding with Content-Length is the smuggling shape; every
    decision endpoint refuses it as the proxy does (400), before a verdict, and closes."""
    lines = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{env.gw.port}", *headers, *WITH_SECRET,
             "Transfer-Encoding: chunked", "Content-Length: 5"]
    status, text = raw(env.gw.port, ("\r\n".join(lines) + "\r\n\r\n0\r\n\r\n").encode(), "127.0.0.1")
    assert status == 400 and text.count("HTTP/1.1 ") == 1 and "invalid_request" in text, text


def test_a_login_endpoint_is_allowed_under_its_own_path(env):
    status, _ = get(env.gw.port, "/_tokengate/auth", ["X-Original-URL: http://127.0.0.1/oauth2/start?rd=/", "X-Original-Method: GET",
                                                      *WITH_SECRET])
    assert status == 200


@pytest.mark.parametrize("ingress", ["nginx", "caddy"])
@pytest.mark.parametrize("probe", ["/public/../api/orders/1", "/public/%2e%2e/api/orders/1", "/public/..%2Fapi/orders/1",
                                   "/public;/../api/orders/1", "/api/orders/1;x", "/public/%2Fapi/orders/1", "//api/orders/1"])
def test_path_confusion_is_judged_on_the_routed_path(env, ingress, probe):
    """Each probe reaches the bearer route once the ingress has normalized it, or an odd
    path tokengate refuses: without a token, never a 200, and the upstream hears nothing."""
    ing = getattr(env, ingress)
    before = len(env.upstream.requests)
    status, text = get(ing.port, probe)
    assert status in (400, 401, 404, 500), (status, text)
    assert len(env.upstream.requests) == before, env.upstream.requests[before:]
    # With a token the normalized path is the route's: allowed, and the upstream gets it.
    tok = env.a.client_credentials_token("app1", scope="orders:read")["access_token"]
    status, text = get(ing.port, "/api/./orders/1", [f"Authorization: Bearer {tok}"])
    assert status == 200, text


def metric(env, prefix):
    text = requests.get(f"http://127.0.0.1:{env.gw.admin}/metrics", timeout=5).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix))


def test_decisions_cost_no_upstream_call_and_hit_the_token_cache(env):
    tok = env.a.client_credentials_token("app1", scope="orders:read")["access_token"]
    hits = metric(env, 'tokengate_token_cache_total{result="hit"}')
    for _ in range(6):
        status, _ = get(env.gw.port, "/_tokengate/auth", [f"Authorization: Bearer {tok}", "X-Original-URL: http://app/api/orders/1",
                                                          "X-Original-Method: GET", *WITH_SECRET])
        assert status == 200
    # Two workers: each validates the token once at most, then its cache answers.
    assert metric(env, 'tokengate_token_cache_total{result="hit"}') >= hits + 4
    assert not env.upstream.requests


def test_a_second_decision_on_the_same_proof_is_a_replay(env):
    """An ingress that asks twice about one request burns the proof on the first decision:
    the second is refused as a replay (docs/decision-mode.md says how nginx and Traefik ask once)."""
    key = DPoPKey("ES256")
    tok = env.d.client_credentials_token("app1", scope="orders:read", dpop_key=key)["access_token"]
    url = env.nginx.url("/dpop/orders/1")
    proof = key.proof("GET", url, access_token=tok)
    ask = [f"Authorization: DPoP {tok}", f"DPoP: {proof}", f"X-Original-URL: {url}", "X-Original-Method: GET",
           "X-Request-Id: same-request", *WITH_SECRET]
    status, text = get(env.gw.port, "/_tokengate/auth", ask)
    assert status == 200 and f"X-Forwarded-Jkt: {key.jkt}" in text, text
    status, text = get(env.gw.port, "/_tokengate/auth", ask)
    assert status == 401 and "used before" in text, text


def test_envoy_ext_authz_http_form(env):
    tok = env.a.client_credentials_token("app1", scope="orders:read")["access_token"]
    ext = "/_tokengate/ext_authz"
    status, text = get(env.gw.port, ext + "/api/orders/1", [f"Authorization: Bearer {tok}", *WITH_SECRET])
    assert status == 200 and "X-Forwarded-User: app1" in text and "X-Auth-Request-User: app1" in text, text
    status, text = get(env.gw.port, ext + "/api/orders/1", WITH_SECRET)
    assert status == 401 and "WWW-Authenticate: Bearer" in text
    status, text = get(env.gw.port, ext + "/admin/x", [f"Authorization: Bearer {tok}", *WITH_SECRET])
    assert status == 403 and 'error="insufficient_scope"' in text
    # A route that forwards the token: the verdict carries it for the ingress to pass on; one
    # that does not: no token in the verdict.
    status, text = get(env.gw.port, ext + "/fwd/x", [f"Authorization: Bearer {tok}", *WITH_SECRET])
    assert status == 200 and f"X-Auth-Request-Access-Token: {tok}" in text, text
    status, text = get(env.gw.port, ext + "/api/orders/1", [f"Authorization: Bearer {tok}", *WITH_SECRET])
    assert status == 200 and "X-Auth-Request-Access-Token" not in text and tok not in text, text
    # Envoy's form reads only the request line and Host: other styles' headers change nothing.
    status, text = get(env.gw.port, ext + "/admin/x", ["X-Original-URL: http://127.0.0.1/public/x", "X-Original-Method: GET",
                                                       "X-Forwarded-Uri: /public/x", *WITH_SECRET])
    assert status == 401, text
    # Nothing went upstream for any decision.
    assert not env.upstream.requests


def test_login_round_trip_in_chromium_through_nginx(env):
    """Chromium (selenium): a page behind nginx → tokengate's 401 verdict → nginx's error_page
    redirect to /oauth2/start → the AS's login form → /oauth2/callback (through nginx) → the
    page, whose upstream echo shows the identity headers the verdict returned."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    from support.browser import new_browser
    from test_browser import echoed

    driver = new_browser()
    try:
        wait = WebDriverWait(driver, 15)
        driver.get(env.nginx.url("/app/orders?tab=1"))
        wait.until(EC.presence_of_element_located((By.NAME, "username")))
        assert driver.current_url.startswith(env.a.url)
        driver.find_element(By.NAME, "username").send_keys("alice")
        driver.find_element(By.NAME, "password").send_keys("alice-password")
        driver.find_element(By.CSS_SELECTOR, "[type=submit]").click()
        wait.until(lambda d: d.current_url == env.nginx.url("/app/orders?tab=1"))
        data, headers = echoed(driver)
        assert data["path"] == "/app/orders?tab=1"
        assert headers["x-forwarded-email"] == "alice@example.com" and headers["x-forwarded-user"]
        cookie = driver.get_cookie("tokengate_session")
        assert cookie and cookie["httpOnly"] and cookie["path"] == "/"
        # Another page: the session serves the verdict, no trip to the AS.
        before = len(env.a.authorizations)
        driver.get(env.nginx.url("/app/other"))
        assert echoed(driver)[1]["x-forwarded-email"] == "alice@example.com"
        assert len(env.a.authorizations) == before
    finally:
        driver.quit()


def test_shipped_decision_config_is_valid(tmp_path):
    """config/decision.yaml passes check-config (its key files made here, in place of /etc/tokengate)."""
    import base64
    import os
    import subprocess

    from support.gateway import BIN, ROOT
    (tmp_path / "session.keys").write_text(base64.b64encode(os.urandom(32)).decode() + "\n")
    (tmp_path / "decision.secret").write_text(os.urandom(32).hex() + "\n")
    subprocess.run([BIN, "keys", "generate", "--alg", "ES256", "--out", str(tmp_path / "web.jwk")], check=True, capture_output=True)
    text = open(os.path.join(ROOT, "config", "decision.yaml")).read().replace("/etc/tokengate/", f"{tmp_path}/")
    (tmp_path / "decision.yaml").write_text(text)
    r = subprocess.run([BIN, "check-config", str(tmp_path / "decision.yaml")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
