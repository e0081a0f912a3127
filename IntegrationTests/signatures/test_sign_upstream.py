"""Requests to an upstream with `sign` (docs/signatures.md) carry the gateway's HTTP Message
Signature, checked here by an upstream that verifies it with PyPI `http-message-signatures`
and the public key from the gateway's own `/.well-known/jwks.json`: after identity headers
are added and `strip_prefix` rewrites the path, over the body sent (its Content-Digest), and
with the client's own copy of the identity header gone."""
import http.server
import json
import threading
import types

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from http_message_signatures import HTTPMessageVerifier, MappingKeyResolver, algorithms
from joserfc.jwk import OKPKey

from test_bearer import JWKSServer, ec_key, token as mint


class VerifyingUpstream:
    """An upstream that verifies every request's `tokengate` signature and keeps the result."""

    def __init__(self):
        self.public_keys = {}
        self.results = []
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def _handle(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                combined = {}
                for k, v in self.headers.items():
                    combined[k] = combined[k] + ", " + v if k in combined else v
                message = types.SimpleNamespace(
                    method=self.command, url=f"http://{self.headers['Host']}{self.path}",
                    headers=requests.structures.CaseInsensitiveDict(combined))
                try:
                    verifier = HTTPMessageVerifier(
                        signature_algorithm=algorithms.ED25519,
                        key_resolver=MappingKeyResolver(public_keys=outer.public_keys, private_keys={}))
                    [result] = verifier.verify(
                        message, expect_tag="tokengate-upstream", expect_label="tokengate",
                        require_components=("@method", "@target-uri", "x-user", "content-digest"), body=body)
                    outer.results.append({"ok": True, "covered": dict(result.covered_components),
                                          "body": body, "path": self.path})
                except Exception as e:  # noqa: BLE001 — every failure is the result under test
                    outer.results.append({"ok": False, "error": f"{type(e).__name__}: {e}", "path": self.path})
                data = b"{}"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _handle

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()


@pytest.fixture
def verifying():
    u = VerifyingUpstream()
    yield u
    u.stop()


@pytest.fixture
def idp():
    s = JWKSServer()
    s.keys = [ec_key("one-1")]
    yield s
    s.stop()


def config(upstream_port, idp, key_path):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], algorithms: [ES256] }}
upstreams:
  app:
    url: "http://127.0.0.1:{upstream_port}"
    sign:
      key_file: "{key_path}"
      keyid: gw-1
      components: ["@method", "@target-uri", "x-user", "content-digest"]
      tag: tokengate-upstream
routes:
  - name: api
    match: {{ path_prefix: /api/ }}
    strip_prefix: true
    upstream: app
    auth: bearer
    issuers: [one]
    headers: {{ X-User: sub }}
"""


def gateway_key(tmp_path):
    key = ed25519.Ed25519PrivateKey.generate()
    path = tmp_path / "upstream-signing.pem"
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return str(path)


def published_key(gw):
    """The gateway's signing key, as its JWKS publishes it."""
    jwks = requests.get(gw.url("/.well-known/jwks.json"), timeout=5).json()
    [jwk] = [k for k in jwks["keys"] if k.get("kid") == "gw-1"]
    assert jwk["kty"] == "OKP" and jwk["crv"] == "Ed25519" and "d" not in jwk
    return OKPKey.import_key(jwk).public_key


def test_the_upstream_verifies_the_gateways_signature_with_its_published_key(
        gateway_factory, verifying, idp, tmp_path):
    gw = gateway_factory(config(verifying.port, idp, gateway_key(tmp_path)))
    verifying.public_keys = {"gw-1": published_key(gw)}
    body = b'{"amount": 10}'
    r = requests.post(gw.url("/api/pay?x=1"), data=body, timeout=5, headers={
        "Authorization": "Bearer " + mint(idp.keys[0], sub="alice"), "X-User": "mallory",
        "Content-Type": "application/json"})
    assert r.status_code == 200
    [seen] = verifying.results
    assert seen["ok"], seen
    assert seen["body"] == body
    # After strip_prefix and header injection: what the upstream got is what was signed.
    assert seen["path"] == "/pay?x=1"
    covered = {k.strip('"'): v for k, v in seen["covered"].items()}
    assert covered["x-user"] == "alice"
    assert covered["@target-uri"] == f"http://127.0.0.1:{verifying.port}/pay?x=1"


def test_a_request_without_a_body_is_signed_with_the_empty_contents_digest(
        gateway_factory, verifying, idp, tmp_path):
    gw = gateway_factory(config(verifying.port, idp, gateway_key(tmp_path)))
    verifying.public_keys = {"gw-1": published_key(gw)}
    r = requests.get(gw.url("/api/orders"), timeout=5,
                     headers={"Authorization": "Bearer " + mint(idp.keys[0], sub="bob")})
    assert r.status_code == 200
    [seen] = verifying.results
    assert seen["ok"], seen
    assert {k.strip('"'): v for k, v in seen["covered"].items()}["x-user"] == "bob"


def test_a_key_the_upstream_does_not_trust_is_caught_there(gateway_factory, verifying, idp, tmp_path):
    gw = gateway_factory(config(verifying.port, idp, gateway_key(tmp_path)))
    # The upstream holds another key under the gateway's keyid: verification fails there.
    verifying.public_keys = {"gw-1": ed25519.Ed25519PrivateKey.generate().public_key()}
    r = requests.get(gw.url("/api/orders"), timeout=5,
                     headers={"Authorization": "Bearer " + mint(idp.keys[0], sub="bob")})
    assert r.status_code == 200
    [seen] = verifying.results
    assert not seen["ok"] and "InvalidSignature" in seen["error"]


def test_the_default_components_cover_the_routes_identity_headers(gateway_factory, verifying, idp, tmp_path):
    """Without `components`, the gateway's signature covers what the upstream trusts: the
    identity headers the route sets (X-User here), beside @method, @target-uri and the digest."""
    text = config(verifying.port, idp, gateway_key(tmp_path)).replace(
        '      components: ["@method", "@target-uri", "x-user", "content-digest"]\n', "")
    gw = gateway_factory(text)
    verifying.public_keys = {"gw-1": published_key(gw)}
    r = requests.post(gw.url("/api/pay"), data=b"{}", timeout=5, headers={
        "Authorization": "Bearer " + mint(idp.keys[0], sub="carol"), "X-User": "mallory"})
    assert r.status_code == 200
    [seen] = verifying.results
    assert seen["ok"], seen
    covered = {k.strip('"'): v for k, v in seen["covered"].items()}
    assert covered["x-user"] == "carol"
    assert {"@method", "@target-uri", "content-digest"} <= set(covered)


def test_the_signature_covers_the_upstreams_injected_credential(gateway_factory, verifying, idp, tmp_path):
    """An upstream with `credentials` and `sign`: the credential is added before the request is
    signed, so a `components` list that names its field covers the value the gateway sent, never
    the client's copy."""
    secret = tmp_path / "billing-key"
    secret.write_text("billing-key-0123456789\n")
    text = config(verifying.port, idp, gateway_key(tmp_path)).replace(
        '"content-digest"]\n', '"content-digest", "x-billing-key"]\n').replace(
        "      tag: tokengate-upstream\n",
        f'      tag: tokengate-upstream\n    credentials: {{ header: {{ name: X-Billing-Key, value_file: "{secret}" }} }}\n')
    gw = gateway_factory(text)
    verifying.public_keys = {"gw-1": published_key(gw)}
    r = requests.get(gw.url("/api/bill"), timeout=5, headers={
        "Authorization": "Bearer " + mint(idp.keys[0], sub="dave"), "X-Billing-Key": "forged"})
    assert r.status_code == 200
    [seen] = verifying.results
    assert seen["ok"], seen
    covered = {k.strip('"'): v for k, v in seen["covered"].items()}
    assert covered["x-billing-key"] == "billing-key-0123456789"
