"""Opaque access tokens on an `auth: bearer` route, resolved by RFC 7662 introspection at
the real authorization server (idpyoidc), with each client authentication method the gateway
supports; answers cached (positive and negative)."""
import http.server
import json
import socket
import os
import subprocess
import threading
import time

import pytest
import requests

from support.gateway import BIN, Gateway, free_port

GW_SECRET = "gateway-secret-0123456789abcdef0123456789"


def config(a, auth_block):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 1
clients:
  gw: {{ client_id: tokengate, {auth_block} }}
issuers:
  as1:
    issuer: "{a.issuer}"
    discovery: true
    audiences: [api]
    algorithms: [ES256]
    introspection: {{ client: gw }}
upstreams:
  app: {{ url: "http://127.0.0.1:@UPSTREAM@" }}
routes:
  - name: orders
    match: {{ path_prefix: /api/orders/ }}
    upstream: app
    auth: bearer
    issuers: [as1]
    require: {{ scopes: [orders:read] }}
    headers: {{ X-Subject: sub, X-Client-Id: client_id }}
"""


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt"])
def test_opaque_token_via_introspection(method, authserver, upstream, tmp_path):
    a = authserver
    a.add_client("opq", client_secret="opq-secret-0123456789abcdef0123456789ab", scopes=["orders:read"],
                 audience=["api"], access_token_format="opaque")
    if method == "private_key_jwt":
        key = tmp_path / "gw.jwk"
        jwks = subprocess.run([BIN, "keys", "generate", "--alg", "ES256", "--kid", "gw-1", "--out", str(key)],
                              capture_output=True, text=True, check=True).stdout
        a.add_client("tokengate", jwks=json.loads(jwks), token_endpoint_auth_method="private_key_jwt", scopes=["openid"])
        block = f'auth: private_key_jwt, key_file: "{key}", assertion_audience: endpoint'
    else:
        a.add_client("tokengate", client_secret=GW_SECRET, token_endpoint_auth_method=method, scopes=["openid"])
        block = f'auth: {method}, secret: "{GW_SECRET}"' + (", assertion_audience: endpoint" if method.endswith("_jwt") else "")
    g = Gateway(config(a, block).replace("@UPSTREAM@", str(upstream.port)))
    g.start()
    try:
        token = a.client_credentials_token("opq", scope="orders:read", secret="opq-secret-0123456789abcdef0123456789ab")["access_token"]
        assert token.count(".") != 2, "the AS must hand out an opaque token here"
        before = a.hits.get("/introspection", 0)
        for _ in range(3):
            r = requests.get(g.url("/api/orders/1"), headers={"Authorization": f"Bearer {token}"})
            assert r.status_code == 200, r.text + g.output()[-2000:]
        h = {k.lower(): v for k, v in r.json()["headers"]}
        assert h["x-subject"] == "opq" and h["x-client-id"] == "opq"
        assert a.hits.get("/introspection", 0) - before == 1, "answers are cached"
        # An unknown opaque token: active false → 401, and the negative answer is cached too.
        before = a.hits.get("/introspection", 0)
        for _ in range(3):
            r = requests.get(g.url("/api/orders/1"), headers={"Authorization": "Bearer opq_not-a-real-token"})
            assert r.status_code == 401 and 'error="invalid_token"' in r.headers["WWW-Authenticate"]
        assert a.hits.get("/introspection", 0) - before == 1
    finally:
        g.stop()


def test_introspection_with_wrong_client_secret_refuses_tokens(authserver, upstream):
    a = authserver
    a.add_client("opq", client_secret="opq-secret-0123456789abcdef0123456789ab", scopes=["orders:read"],
                 audience=["api"], access_token_format="opaque")
    a.add_client("tokengate", client_secret=GW_SECRET, token_endpoint_auth_method="client_secret_basic", scopes=["openid"])
    g = Gateway(config(a, 'auth: client_secret_basic, secret: "wrong-secret"').replace("@UPSTREAM@", str(upstream.port)))
    g.start()
    try:
        token = a.client_credentials_token("opq", scope="orders:read", secret="opq-secret-0123456789abcdef0123456789ab")["access_token"]
        # The AS refuses the gateway, not the token: the token was never judged, so the
        # client hears 503 (try again), not invalid_token (throw the token away).
        r = requests.get(g.url("/api/orders/1"), headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 503 and r.headers.get("Retry-After"), r.text
        # The AS's status stays in the log. The answer carries only the request id besides,
        # random, so it is left out of the check (it may hold any digits, "401" among them).
        told = r.text.replace(r.headers["X-Request-Id"], "")
        assert r.json()["error"] == "temporarily_unavailable" and "401" not in told and token not in told, r.text
        assert g.logged("introspection endpoint answered 401")
    finally:
        g.stop()


def test_an_unreachable_introspection_endpoint_is_503_not_invalid_token(authserver, upstream):
    """The AS down: the answer is 503 with Retry-After within the fetch's bounded time, the
    failure is not cached as "inactive", and the token works as soon as the AS answers."""
    a = authserver
    a.add_client("opq", client_secret="opq-secret-0123456789abcdef0123456789ab", scopes=["orders:read"],
                 audience=["api"], access_token_format="opaque")
    a.add_client("tokengate", client_secret=GW_SECRET, token_endpoint_auth_method="client_secret_basic", scopes=["openid"])
    dead = free_port()
    text = config(a, f'auth: client_secret_basic, secret: "{GW_SECRET}"').replace("@UPSTREAM@", str(upstream.port))
    g = Gateway(text.replace("introspection: { client: gw }", f'introspection: {{ client: gw, endpoint: "http://127.0.0.1:{dead}/introspection" }}'))
    g.start()
    try:
        token = a.client_credentials_token("opq", scope="orders:read", secret="opq-secret-0123456789abcdef0123456789ab")["access_token"]
        for _ in range(2):  # refused at once
            r = requests.get(g.url("/api/orders/1"), headers={"Authorization": f"Bearer {token}"}, timeout=15)
            assert r.status_code == 503 and r.headers.get("Retry-After") and "WWW-Authenticate" not in r.headers, r.text
        # An endpoint that takes the connection and never answers: 503 once the fetch's
        # timeout (5 s) is up, not a hang.
        silent = socket.socket()
        silent.bind(("127.0.0.1", dead))
        silent.listen(16)
        try:
            t0 = time.time()
            r = requests.get(g.url("/api/orders/1"), headers={"Authorization": f"Bearer {token}"}, timeout=15)
            assert 4 < time.time() - t0 < 8, time.time() - t0
            assert r.status_code == 503 and r.headers.get("Retry-After"), r.text
        finally:
            silent.close()
        # The endpoint comes back on the same address (a relay to the real AS): nothing
        # "inactive" was remembered, the token works at once.
        relay = Relay(dead, f"{a.url}/introspection")
        try:
            r = requests.get(g.url("/api/orders/1"), headers={"Authorization": f"Bearer {token}"}, timeout=15)
            assert r.status_code == 200, r.text
        finally:
            relay.close()
    finally:
        g.stop()


class Relay:
    """Forwards POSTs on 127.0.0.1:port to `target` (headers and body as they came)."""

    def __init__(self, port, target):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = {k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type", "accept")}
                r = requests.post(target, data=body, headers=headers, timeout=10)
                self.send_response(r.status_code)
                self.send_header("Content-Type", r.headers.get("Content-Type", "application/json"))
                self.send_header("Content-Length", str(len(r.content)))
                self.end_headers()
                self.wfile.write(r.content)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_an_issuers_introspection_answer_is_not_reused_for_another_issuer(authserver_factory, upstream):
    """Two issuers that both introspect: issuer A's positive answer for an opaque token must
    not let that token through a route that trusts only B (the cache is per issuer)."""
    a, b = authserver_factory(), authserver_factory()
    for s in (a, b):
        s.add_client("opq", client_secret="opq-secret-0123456789abcdef0123456789ab", scopes=["orders:read"],
                     audience=["api"], access_token_format="opaque")
        s.add_client("tokengate", client_secret=GW_SECRET, token_endpoint_auth_method="client_secret_basic", scopes=["openid"])
    g = Gateway(f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 1
clients:
  gw: {{ client_id: tokengate, auth: client_secret_basic, secret: "{GW_SECRET}" }}
issuers:
  as_a: {{ issuer: "{a.issuer}", discovery: true, audiences: [api], algorithms: [ES256], introspection: {{ client: gw }} }}
  as_b: {{ issuer: "{b.issuer}", discovery: true, audiences: [api], algorithms: [ES256], introspection: {{ client: gw }} }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - {{ name: a, match: {{ path_prefix: /a/ }}, upstream: app, auth: bearer, issuers: [as_a] }}
  - {{ name: b, match: {{ path_prefix: /b/ }}, upstream: app, auth: bearer, issuers: [as_b] }}
""")
    g.start()
    try:
        token = a.client_credentials_token("opq", scope="orders:read", secret="opq-secret-0123456789abcdef0123456789ab")["access_token"]
        h = {"Authorization": f"Bearer {token}"}
        assert requests.get(g.url("/a/1"), headers=h, timeout=10).status_code == 200
        r = requests.get(g.url("/b/1"), headers=h, timeout=10)
        assert r.status_code == 401 and 'error="invalid_token"' in r.headers["WWW-Authenticate"], r.text
        assert b.hits.get("/introspection", 0) == 1, "B was asked about the token, not A's cached answer reused"
    finally:
        g.stop()
