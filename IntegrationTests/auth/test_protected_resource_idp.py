"""A route's `resource` (RFC 8707) with the real authorization server (idpyoidc): JWT access
tokens checked with its published keys, and opaque ones whose introspection answer (RFC 7662)
carries the `aud` the resource rule is applied to."""
import re

import requests

from support.gateway import Gateway

SECRET = "gateway-secret-0123456789abcdef0123456789"
CLIENT_SECRET = "client-secret-0123456789abcdef0123456789ab"


def config(a):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 1
clients:
  gw: {{ client_id: tokengate, auth: client_secret_basic, secret: "{SECRET}" }}
issuers:
  as1:
    issuer: "{a.issuer}"
    discovery: true
    audiences: [api, "http://127.0.0.1:{{PORT}}/mcp"]
    algorithms: [ES256]
    introspection: {{ client: gw }}
upstreams:
  app: {{ url: "http://127.0.0.1:@UPSTREAM@" }}
routes:
  - name: mcp
    match: {{ path: /mcp }}
    upstream: app
    auth: bearer
    issuers: [as1]
    require: {{ scopes: [orders:read] }}
    resource: http://127.0.0.1:{{PORT}}/mcp
"""


def attrs(r):
    return dict(re.findall(r'([a-z_]+)="((?:[^"\\]|\\.)*)"', r.headers.get("WWW-Authenticate", "")))


def test_resource_rule_on_jwt_and_introspected_tokens(authserver, upstream):
    a = authserver
    a.add_client("tokengate", client_secret=SECRET, token_endpoint_auth_method="client_secret_basic",
                 scopes=["openid"])
    g = Gateway(config(a).replace("@UPSTREAM@", str(upstream.port)), workers=1)
    resource = f"http://127.0.0.1:{g.port}/mcp"
    for fmt in ("jwt", "opaque"):
        a.add_client(f"for-{fmt}", client_secret=CLIENT_SECRET, scopes=["orders:read"], audience=[resource],
                     access_token_format=fmt)
        a.add_client(f"api-{fmt}", client_secret=CLIENT_SECRET, scopes=["orders:read"], audience=["api"],
                     access_token_format=fmt)
    g.start()
    try:
        doc = requests.get(g.url("/.well-known/oauth-protected-resource/mcp"), timeout=10).json()
        assert doc["resource"] == resource and doc["authorization_servers"] == [a.issuer]
        for fmt in ("jwt", "opaque"):
            good = a.client_credentials_token(f"for-{fmt}", scope="orders:read", secret=CLIENT_SECRET)["access_token"]
            other = a.client_credentials_token(f"api-{fmt}", scope="orders:read", secret=CLIENT_SECRET)["access_token"]
            assert (good.count(".") == 2) == (fmt == "jwt")
            r = requests.get(g.url("/mcp"), headers={"Authorization": f"Bearer {good}"}, timeout=10)
            assert r.status_code == 200, (fmt, r.text, g.output()[-2000:])
            r = requests.get(g.url("/mcp"), headers={"Authorization": f"Bearer {other}"}, timeout=10)
            assert r.status_code == 401, (fmt, r.text)
            c = attrs(r)
            assert c["error"] == "invalid_token", c
            assert c["error_description"] == f"the token's audience (aud) does not include this resource, {resource}"
            assert c["resource_metadata"] == f"http://127.0.0.1:{g.port}/.well-known/oauth-protected-resource/mcp"
    finally:
        g.stop()
