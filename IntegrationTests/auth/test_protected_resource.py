"""Per-route resources (RFC 8707) and the Protected Resource Metadata the gateway serves for
them (RFC 9728), end to end: a real tokengate, a real upstream, a real JWKS server, tokens and
DPoP proofs made with joserfc. The resources are http://127.0.0.1:PORT/… (plain http is
allowed for loopback hosts only), so the metadata URL a 401 names is the gateway itself."""
import os
import re
import socket
import subprocess

import pytest
import requests

from support.dpop_client import DPoPKey
from support.gateway import BIN, ROOT, sent_headers as sent
from test_bearer import idp, token as mint  # noqa: F401 — idp is a fixture

WELL_KNOWN = "/.well-known/oauth-protected-resource"


def config(upstream, idp):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
public_url: http://127.0.0.1:{{PORT}}
issuers:
  one:
    issuer: "https://idp.one"
    jwks_uri: "{idp.url}"
    algorithms: [ES256]
    audiences: [api, "http://127.0.0.1:{{PORT}}/mcp", "http://127.0.0.1:{{PORT}}/dpop", "http://127.0.0.1:{{PORT}}"]
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - name: mcp
    match: {{ path: /mcp }}
    upstream: app
    auth: bearer
    issuers: [one]
    require: {{ scopes: [mcp:tools, mcp:read] }}
    resource: http://127.0.0.1:{{PORT}}/mcp
    resource_name: Test MCP server
    resource_documentation: https://docs.example.com/mcp
  - name: dpop
    match: {{ path_prefix: /dpop/ }}
    upstream: app
    auth: dpop
    issuers: [one]
    dpop: {{ algorithms: [ES256, EdDSA] }}
    resource: http://127.0.0.1:{{PORT}}/dpop
  - name: either
    match: {{ path_prefix: /either/ }}
    upstream: app
    auth: token
    issuers: [one]
    resource: http://127.0.0.1:{{PORT}}
  - name: api
    match: {{ path_prefix: /api/ }}
    upstream: app
    auth: bearer
    issuers: [one]
  - name: public
    match: {{ path_prefix: / }}
    upstream: app
    auth: none
"""


@pytest.fixture
def gw(upstream, idp, gateway_factory):
    return gateway_factory(config(upstream, idp))


def origin(gw):
    return f"http://127.0.0.1:{gw.port}"


def tok(idp, aud, scope="mcp:tools mcp:read", **claims):
    return mint(idp.keys[0], aud=aud, scope=scope, claims=claims or None)


def get(gw, path, token=None, headers=None, method="GET"):
    h = dict(headers or {})
    if token is not None:
        h["Authorization"] = f"Bearer {token}"
    return requests.request(method, gw.url(path), headers=h, timeout=10, allow_redirects=False)


def challenges(r):
    return r.raw.headers.get_all("WWW-Authenticate") or []


def attrs(challenge):
    """The auth-params of one challenge (all quoted-strings here), as a dict."""
    return dict(re.findall(r'([a-z_]+)="((?:[^"\\]|\\.)*)"', challenge))


# --- the metadata document ------------------------------------------------------------------


def test_metadata_is_served_at_the_derived_path_without_a_token(gw):
    r = get(gw, WELL_KNOWN + "/mcp")
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "application/json"
    assert r.headers["Access-Control-Allow-Origin"] == "*"
    assert r.headers["Cache-Control"] == "max-age=300, s-maxage=300"
    doc = r.json()
    assert doc == {
        "resource": origin(gw) + "/mcp",
        "authorization_servers": ["https://idp.one"],
        "scopes_supported": ["mcp:tools", "mcp:read"],
        "bearer_methods_supported": ["header"],
        "resource_name": "Test MCP server",
        "resource_documentation": "https://docs.example.com/mcp",
    }
    # RFC 9728 §3.3: the resource in the document is the one the URL was derived from.
    assert WELL_KNOWN + "/mcp" == WELL_KNOWN + doc["resource"][len(origin(gw)):]


def test_metadata_ignores_credentials_and_the_upstream_never_sees_the_request(gw, upstream):
    before = len(upstream.requests)
    r = get(gw, WELL_KNOWN + "/mcp", token="not-a-token")
    assert r.status_code == 200 and r.json()["resource"].endswith("/mcp")
    r = get(gw, WELL_KNOWN + "/mcp", headers={"Authorization": "DPoP x", "DPoP": "y"})
    assert r.status_code == 200
    assert len(upstream.requests) == before


def test_head_and_preflight_and_other_methods(gw):
    h = get(gw, WELL_KNOWN + "/mcp", method="HEAD")
    assert h.status_code == 200 and h.content == b""
    assert h.headers["Content-Type"] == "application/json"
    pre = get(gw, WELL_KNOWN + "/mcp", method="OPTIONS",
              headers={"Origin": "https://app.example", "Access-Control-Request-Method": "GET",
                       "Access-Control-Request-Headers": "mcp-protocol-version"})
    assert pre.status_code == 204
    assert pre.headers["Access-Control-Allow-Origin"] == "*"
    assert "GET" in pre.headers["Access-Control-Allow-Methods"]
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        r = get(gw, WELL_KNOWN + "/mcp", method=method)
        assert r.status_code == 405, (method, r.status_code)
        assert r.headers["Allow"] == "GET, HEAD, OPTIONS"


def test_dpop_route_metadata(gw):
    doc = get(gw, WELL_KNOWN + "/dpop").json()
    assert doc["resource"] == origin(gw) + "/dpop"
    assert doc["dpop_signing_alg_values_supported"] == ["ES256", "EdDSA"]
    assert doc["dpop_bound_access_tokens_required"] is True
    assert doc["bearer_methods_supported"] == ["header"]
    assert "scopes_supported" not in doc, "no scope is required, none is advertised"


def test_a_resource_without_a_path_is_at_the_bare_well_known_path(gw):
    doc = get(gw, WELL_KNOWN).json()
    assert doc["resource"] == origin(gw)
    assert doc["dpop_bound_access_tokens_required"] is False
    assert "dpop_signing_alg_values_supported" in doc


def test_routes_without_a_resource_have_no_metadata(gw):
    # /api has no resource: the path falls through to the public route like any other.
    r = get(gw, WELL_KNOWN + "/api")
    assert r.status_code == 200 and "path" in r.json() and "resource" not in r.json()


# --- 401 and 403 name the metadata ----------------------------------------------------------


def test_401_without_a_token_names_metadata_and_scope(gw):
    r = get(gw, "/mcp")
    assert r.status_code == 401
    [c] = challenges(r)
    assert c.startswith("Bearer ")
    a = attrs(c)
    assert "error" not in a, "RFC 6750 §3.1: no error code without credentials"
    assert a["resource_metadata"] == origin(gw) + WELL_KNOWN + "/mcp"
    assert a["scope"] == "mcp:tools mcp:read"
    # The URL it names serves the document.
    assert requests.get(a["resource_metadata"], timeout=10).json()["resource"] == origin(gw) + "/mcp"


def test_a_token_for_this_resource_passes(gw, idp):
    r = get(gw, "/mcp", token=tok(idp, [origin(gw) + "/mcp"]))
    assert r.status_code == 200, r.text
    assert sent(r)["x-forwarded-user"] == "alice"
    # aud may name more than the resource.
    r = get(gw, "/mcp", token=tok(idp, ["api", origin(gw) + "/mcp"]))
    assert r.status_code == 200, r.text


def test_a_token_whose_aud_lacks_the_resource_is_invalid_token(gw, idp, upstream):
    for aud in ("api", ["api"], origin(gw) + "/dpop", origin(gw), origin(gw) + "/mcp/", origin(gw) + "/MCP"):
        r = get(gw, "/mcp", token=tok(idp, aud))
        assert r.status_code == 401, (aud, r.status_code, r.text)
        [c] = challenges(r)
        a = attrs(c)
        assert a["error"] == "invalid_token", c
        # An aud the issuer accepts is refused for lacking the resource, which the description
        # names; one the issuer does not accept fails the issuer's audience rule first.
        assert "audience" in a["error_description"], c
        if aud in ("api", ["api"], origin(gw) + "/dpop", origin(gw)):
            assert a["error_description"] == (
                f"the token's audience (aud) does not include this resource, {origin(gw)}/mcp"), c
        assert a["resource_metadata"] == origin(gw) + WELL_KNOWN + "/mcp"
        assert a["scope"] == "mcp:tools mcp:read"
        assert r.json()["error"] == "invalid_token"


def test_a_token_for_this_resource_is_still_held_to_the_issuers_audiences(gw, idp):
    # A resource this issuer does not list among its audiences is never enough on its own.
    r = get(gw, "/mcp", token=tok(idp, ["https://elsewhere.example/mcp"]))
    assert r.status_code == 401 and attrs(challenges(r)[0])["error"] == "invalid_token"


def test_a_cached_token_for_another_route_is_not_let_in(gw, idp):
    # Accepted (and cached) on /api with aud "api"; the cache must not carry it onto /mcp.
    t = tok(idp, "api")
    assert get(gw, "/api/x", token=t).status_code == 200
    s = requests.Session()
    s.headers["Authorization"] = f"Bearer {t}"
    assert s.get(gw.url("/api/x"), timeout=10).status_code == 200
    r = s.get(gw.url("/mcp"), timeout=10)
    assert r.status_code == 401 and attrs(challenges(r)[0])["error"] == "invalid_token"


def test_403_insufficient_scope_names_metadata(gw, idp):
    r = get(gw, "/mcp", token=tok(idp, [origin(gw) + "/mcp"], scope="mcp:read"))
    assert r.status_code == 403
    a = attrs(challenges(r)[0])
    assert a["error"] == "insufficient_scope"
    assert a["scope"] == "mcp:tools mcp:read"
    assert a["resource_metadata"] == origin(gw) + WELL_KNOWN + "/mcp"


def test_routes_without_a_resource_keep_their_challenges(gw, idp):
    r = get(gw, "/api/x")
    assert challenges(r) == ['Bearer realm="tokengate"']


# --- DPoP ------------------------------------------------------------------------------------


def dpop_get(gw, idp, key, aud, path="/dpop/x"):
    t = mint(idp.keys[0], aud=aud, claims={"cnf": {"jkt": key.jkt}})
    proof = key.proof("GET", origin(gw) + path, access_token=t)
    return requests.get(gw.url(path), headers={"Authorization": f"DPoP {t}", "DPoP": proof}, timeout=10)


def test_dpop_route_binds_the_resource_too(gw, idp):
    key = DPoPKey("ES256")
    r = dpop_get(gw, idp, key, [origin(gw) + "/dpop"])
    assert r.status_code == 200, r.text
    r = dpop_get(gw, idp, key, "api")
    assert r.status_code == 401
    [c] = challenges(r)
    assert c.startswith("DPoP ")
    a = attrs(c)
    assert a["error"] == "invalid_token" and "aud" in a["error_description"]
    assert a["resource_metadata"] == origin(gw) + WELL_KNOWN + "/dpop"
    assert a["algs"] == "ES256 EdDSA"


def test_token_route_challenges_carry_metadata_on_both_schemes(gw, idp):
    r = get(gw, "/either/x")
    assert r.status_code == 401
    cs = challenges(r)
    assert [c.split(" ")[0] for c in cs] == ["Bearer", "DPoP"]
    for c in cs:
        assert attrs(c)["resource_metadata"] == origin(gw) + WELL_KNOWN
    assert get(gw, "/either/x", token=tok(idp, origin(gw))).status_code == 200
    assert get(gw, "/either/x", token=tok(idp, "api")).status_code == 401


# --- path tricks on the well-known path -------------------------------------------------------


def raw_get(gw, target):
    with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as s:
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), head.decode(errors="replace"), body


def is_metadata(body):
    return b'"resource"' in body and b"authorization_servers" in body


@pytest.mark.parametrize("target", [
    WELL_KNOWN + "/mcp/../x",          # normalizes to …/x: no such document
    WELL_KNOWN + "/mcp/",              # a trailing slash is another resource
    WELL_KNOWN + "/MCP",
    WELL_KNOWN + "/mcpx",
    WELL_KNOWN + "/mcp/extra",
    "/.well-known/oauth-protected-resourcemcp",
    "/.well-known/oauth-protected-resource.json",
])
def test_near_misses_are_not_the_document(gw, target):
    status, head, body = raw_get(gw, target)
    assert not is_metadata(body), (target, status, body[:200])


@pytest.mark.parametrize("target", [
    "/.well-known/oauth-protected-resource%2Fmcp",
    "/.well-known%2Foauth-protected-resource/mcp",
    "/.well-known/oauth-protected-resource/mcp%00",
    "/.well-known/oauth-protected-resource/..%2Fmcp",
    "/.well-known/oauth-protected-resource\\mcp",
])
def test_encoded_and_odd_paths_are_refused(gw, target):
    status, head, body = raw_get(gw, target)
    assert status == 400, (target, status, body[:200])
    assert not is_metadata(body)


def test_dot_segments_that_land_on_the_document_serve_only_the_document(gw):
    # The same normalization as every request: the document, never the route behind it.
    status, head, body = raw_get(gw, WELL_KNOWN + "/x/../mcp")
    assert status == 200 and is_metadata(body)
    status, head, body = raw_get(gw, "/mcp/.." + WELL_KNOWN + "/mcp")
    assert status == 200 and is_metadata(body)


def test_dot_segments_never_reach_the_protected_route_unauthenticated(gw, upstream):
    for target in (WELL_KNOWN + "/../../mcp", WELL_KNOWN + "/mcp/../../../mcp", "/.well-known/../mcp"):
        status, head, body = raw_get(gw, target)
        assert status in (400, 401), (target, status, body[:200])


# --- check-config -------------------------------------------------------------------------------


def check(tmp_path, routes, issuers_extra=""):
    text = f"""
listen: 127.0.0.1:8080
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "https://idp.one/jwks", audiences: [api] }}
  two: {{ issuer: "https://idp.two", jwks_uri: "https://idp.two/jwks", audiences: [api] }}
upstreams:
  app: {{ url: "http://127.0.0.1:3000" }}
routes:
{routes}
"""
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return subprocess.run([BIN, "check-config", str(path)], capture_output=True, text=True)


def route(name, resource, issuers="[one]", auth="bearer", extra=""):
    return f"""  - name: {name}
    match: {{ path_prefix: /{name}/ }}
    upstream: app
    auth: {auth}
    issuers: {issuers}
    resource: "{resource}"
{extra}"""


@pytest.mark.parametrize("resource, says", [
    ("http://gw.example.com/mcp", "loopback"),
    ("https://gw.example.com/mcp#frag", "fragment"),
    ("/mcp", "absolute"),
    ("gw.example.com/mcp", "absolute"),
    ("ftp://gw.example.com/mcp", "https"),
    ("https://gw.example.com/mcp?x=1", "query"),
    ("https://user@gw.example.com/mcp", "userinfo"),
    ("https://gw.example.com/a/../mcp", "path"),
    ("https://gw.example.com/a%2Fb", "path"),
])
def test_check_config_refuses_bad_resources(tmp_path, resource, says):
    r = check(tmp_path, route("mcp", resource))
    assert r.returncode != 0, r.stdout
    assert "routes[0].resource" in r.stdout + r.stderr and says in r.stdout + r.stderr, r.stdout + r.stderr


def test_check_config_refuses_two_routes_with_one_metadata_path_and_different_contents(tmp_path):
    r = check(tmp_path, route("a", "https://gw.example.com/mcp") + route("b", "https://gw.example.com/mcp", "[two]"))
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "routes[1].resource: b and a both serve metadata at /.well-known/oauth-protected-resource/mcp" in out, out
    # Another host, same path: the same metadata path, different contents.
    r = check(tmp_path, route("a", "https://one.example.com/mcp") + route("b", "https://two.example.com/mcp"))
    assert r.returncode != 0 and "/.well-known/oauth-protected-resource/mcp" in r.stdout + r.stderr
    # The same document twice (two routes of one resource) is fine.
    r = check(tmp_path, route("a", "https://gw.example.com/mcp") + route("b", "https://gw.example.com/mcp"))
    assert r.returncode == 0, r.stdout + r.stderr


def test_check_config_loopback_http_is_allowed_without_listing_it_in_the_audiences(tmp_path):
    # A resource is an audience of its own route: listed among the issuer's audiences it would
    # open the issuer's other routes too, so nothing advises listing it.
    for host in ("127.0.0.1:8080", "[::1]:8080", "localhost"):
        r = check(tmp_path, route("mcp", f"http://{host}/mcp"))
        assert r.returncode == 0, r.stdout + r.stderr
        assert "audiences" not in r.stdout + r.stderr, r.stdout + r.stderr


def test_check_config_resource_only_on_token_routes(tmp_path):
    r = check(tmp_path, """  - name: pub
    match: { path_prefix: / }
    upstream: app
    auth: none
    resource: https://gw.example.com/
""")
    assert r.returncode != 0 and "routes[0].resource" in r.stdout + r.stderr


def test_shipped_example_is_valid():
    r = subprocess.run([BIN, "check-config", os.path.join(ROOT, "config", "protected-resource.yaml")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
