"""The findings of the outside security test, each sent as the tester sent it:
override headers from an untrusted peer, control bytes in claims, RFC 9068 tokens without
`sub`, `scp` widening `scope`, a tossed second session cookie, `rd` that becomes `//host`
after dot segments or carries a port no host has. A real gateway, a real echo upstream, a
real JWKS server and (for the login items) the real AS."""
import json

import pytest
import requests

from support.gateway import basic_config, bearer_get as call, raw_request, sent_headers as sent
from test_bearer import JWKSServer, ec_key, token
from test_login import LoginEnv

# --- 1. override headers -------------------------------------------------------------------------

# Every header docs/security.md lists under "Override headers" (one name per family member), plus
# the one this test's config adds with trusted_proxy_headers.
OVERRIDE_HEADERS = [
    # URL and path (Symfony/IIS, nginx auth_request, Traefik/Caddy forward auth, Envoy)
    "X-Original-URL", "X-Rewrite-URL", "X-Original-URI", "X-Forwarded-Uri", "X-Forwarded-Path",
    "X-Forwarded-Prefix", "X-Replaced-Path", "X-Auth-Request-Redirect", "X-Envoy-Original-Path",
    # method
    "X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override", "X-Original-Method", "X-Forwarded-Method",
    # host, scheme, port
    "X-Host", "X-Original-Host", "X-Forwarded-Server", "X-HTTP-Host-Override", "X-Forwarded-Port",
    "X-Forwarded-Scheme", "X-Forwarded-Ssl", "X-Forwarded-Protocol", "X-Url-Scheme", "X-Scheme", "Front-End-Https",
    # client address (PHP's HTTP_CLIENT_IP helpers read several of these)
    "X-Real-IP", "True-Client-IP", "X-Client-IP", "Client-IP", "X-Originating-IP", "X-Remote-IP", "X-Remote-Addr",
    "X-Cluster-Client-IP", "X-Original-Forwarded-For", "X-Forwarded", "Forwarded-For", "CF-Connecting-IP",
    "CF-Connecting-IPv6", "Fastly-Client-IP", "X-Azure-ClientIP", "X-Azure-SocketIP", "X-AppEngine-User-IP",
    "WL-Proxy-Client-IP", "X-ProxyUser-Ip",
    # families
    "X-Envoy-External-Address", "X-Envoy-Internal", "X-Auth-Request-User", "X-Auth-Request-Email",
    # added by config
    "X-My-Original-Path",
]


def request_with(port, headers):
    lines = b"".join(f"{name}: 1.2.3.4\r\n".encode() for name in headers)
    status, resp = raw_request(port, b"GET /echo HTTP/1.1\r\nHost: a\r\n" + lines + b"Connection: close\r\n\r\n")
    assert status == 200, resp
    body = json.loads(resp.split(b"\r\n\r\n", 1)[1])
    return {k.lower(): v for k, v in body["headers"]}


def test_override_headers_from_an_untrusted_peer_never_reach_the_upstream(upstream, gateway_factory):
    g = gateway_factory(basic_config(upstream.port, extra="trusted_proxy_headers: [X-My-Original-Path]", workers=1))
    got = request_with(g.port, OVERRIDE_HEADERS + ["X-Harmless"])
    leaked = [h for h in OVERRIDE_HEADERS if h.lower() in got]
    assert leaked == []
    assert got["x-harmless"] == "1.2.3.4"  # control: ordinary headers still pass


def test_a_trusted_proxy_may_send_them(upstream, gateway_factory):
    g = gateway_factory(basic_config(upstream.port, workers=1,
                                     extra="trusted_proxies: [127.0.0.1/32]\ntrusted_proxy_headers: [X-My-Original-Path]"))
    got = request_with(g.port, OVERRIDE_HEADERS)
    assert [h for h in OVERRIDE_HEADERS if h.lower() not in got] == []


def test_trusted_proxy_headers_must_be_header_names(upstream, gateway_factory):
    from support.gateway import BIN, Gateway
    import subprocess
    g = Gateway(basic_config(upstream.port, extra='trusted_proxy_headers: ["X Bad", ""]'))
    r = subprocess.run([BIN, "check-config", g.config_path], capture_output=True, text=True)
    assert r.returncode == 1
    assert "trusted_proxy_headers[0]" in r.stdout + r.stderr and "trusted_proxy_headers[1]" in r.stdout + r.stderr


# --- 2-4. token claims -----------------------------------------------------------------------------

@pytest.fixture
def idp():
    s = JWKSServer()
    s.keys = [ec_key("one-1")]
    yield s
    s.stop()


def claims_config(upstream, idp):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 1
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], access_token_type: at+jwt }}
  okta: {{ issuer: "https://idp.scp", jwks_uri: "{idp.url}", audiences: [api], scope_claim: scp }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - name: admin
    match: {{ path_prefix: /api/admin/ }}
    upstream: app
    auth: bearer
    issuers: [one, okta]
    require: {{ scopes: [admin] }}
  - name: orders
    match: {{ path_prefix: /api/orders/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    headers: {{ X-User: sub, X-Email: email, X-Name: name }}
"""


@pytest.fixture
def claims_gw(upstream, idp, gateway_factory):
    return gateway_factory(claims_config(upstream, idp))


@pytest.mark.parametrize("byte", ["\x7f", "\x01", "\x1b", "\x0b", "\x0c", "\x00", "\r", "\n"])
def test_a_control_byte_in_a_claim_never_reaches_the_upstream(claims_gw, idp, byte):
    t = token(idp.keys[0], email=f"alice{byte}@example.com", name=f"Alice{byte}Admin")
    r = call(claims_gw, tok=t)
    assert r.status_code == 200, r.text
    h = sent(r)
    assert "x-email" not in h and "x-name" not in h
    assert h["x-user"] == "alice"  # the clean claims still go
    assert not any(byte in v for v in h.values())
    log = claims_gw.output()
    assert "identity header omitted" in log and "X-Email" in log and "RFC 9110" in log
    assert f"alice{byte}" not in log  # the value itself is not logged


def test_tab_and_non_ascii_claims_pass(claims_gw, idp):
    r = call(claims_gw, tok=token(idp.keys[0], name="Zoë\tvan Dijk"))
    assert r.status_code == 200 and sent(r)["x-name"].encode("latin-1").decode("utf-8") == "Zoë\tvan Dijk"


@pytest.mark.parametrize("over", [{"sub": None}, {"sub": ""}, {"sub": 7}, {"client_id": None}, {"client_id": ""},
                                  {"iat": None}, {"iat": "yesterday"}, {"jti": None}, {"jti": ""}])
def test_rfc9068_tokens_need_every_required_claim(claims_gw, idp, over):
    r = call(claims_gw, tok=token(idp.keys[0], **over))
    assert r.status_code == 401, r.text
    assert 'error="invalid_token"' in r.headers["WWW-Authenticate"]
    assert r.json()["error"] == "invalid_token"


def test_rfc9068_token_with_every_claim_passes(claims_gw, idp):
    r = call(claims_gw, tok=token(idp.keys[0]))
    assert r.status_code == 200 and sent(r)["x-user"] == "alice"


def admin(gw, t):
    return call(gw, tok=t, path="/api/admin/x")


def test_scp_never_widens_scope(claims_gw, idp):
    k = idp.keys[0]
    r = admin(claims_gw, token(k, scope="read", scp=["admin"]))
    assert r.status_code == 403 and 'error="insufficient_scope"' in r.headers["WWW-Authenticate"]
    assert admin(claims_gw, token(k, scope=None, scp="admin")).status_code == 403
    assert admin(claims_gw, token(k, scope="read admin")).status_code == 200  # control


def test_an_issuer_that_opts_in_reads_scp_and_only_scp(claims_gw, idp):
    k = idp.keys[0]
    scp = {"iss": "https://idp.scp", "typ": None}
    assert admin(claims_gw, token(k, scope=None, scp=["read", "admin"], **scp)).status_code == 200
    assert admin(claims_gw, token(k, scope=None, scp="read admin", **scp)).status_code == 200
    r = admin(claims_gw, token(k, scope="admin", scp=["read"], **scp))
    assert r.status_code == 403 and 'scope="admin"' in r.headers["WWW-Authenticate"]
    assert admin(claims_gw, token(k, scope="admin", **scp)).status_code == 403


def test_scope_claim_must_be_scope_or_scp(upstream, idp):
    from support.gateway import BIN, Gateway
    import subprocess
    g = Gateway(claims_config(upstream, idp).replace("scope_claim: scp", "scope_claim: roles"))
    r = subprocess.run([BIN, "check-config", g.config_path], capture_output=True, text=True)
    assert r.returncode == 1 and "issuers.okta.scope_claim" in r.stdout + r.stderr


# --- 5. the login flow --------------------------------------------------------------------------

@pytest.fixture
def login_as(authserver_factory):
    return authserver_factory(login="form")


def test_a_second_session_cookie_value_gives_no_session(login_as, upstream, tmp_path):
    e = LoginEnv(login_as, upstream, tmp_path, extra_top="login: { allowed_redirect_hosts: [app.allowed.test] }")
    try:
        assert e.login().status_code == 200
        good = e.session_cookie()
        api = {"Accept": "application/json"}
        same = requests.get(e.url("/x"), headers={**api, "Cookie": f"tokengate_session={good}; tokengate_session={good}"}, timeout=10)
        assert same.status_code == 200  # control: the same value twice is one cookie
        for pair in [f"{good}; tokengate_session=tossed", f"tossed; tokengate_session={good}"]:
            r = requests.get(e.url("/x"), headers={**api, "Cookie": f"tokengate_session={pair}"}, timeout=10)
            assert r.status_code == 401 and r.json()["error"] == "login_required"
            cleared = [c for c in r.raw.headers.getlist("Set-Cookie") if c.startswith("tokengate_session=;")]
            assert cleared and "Max-Age=0" in cleared[0]
        # Split over two Cookie headers, and for a navigation: a fresh login, not the session.
        s, resp = raw_request(e.gw.port, b"GET /x HTTP/1.1\r\nHost: a\r\nAccept: text/html\r\nCookie: tokengate_session=" + good.encode()
                              + b"\r\nCookie: tokengate_session=tossed\r\nConnection: close\r\n\r\n")
        assert s == 302 and b"tokengate_session=;" in resp
        assert e.gw.logged("two different session cookie values")
        assert requests.get(e.url("/x"), headers={**api, "Cookie": f"tokengate_session={good}"}, timeout=10).status_code == 200
    finally:
        e.stop()


# 6. `rd`: the dot-segment and port cases are in test_login.py's open-redirect and return-target tests.
