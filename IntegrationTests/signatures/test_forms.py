"""A refused request signature in the forms other than a plain HTTP 401 (docs/signatures.md):
a gRPC call gets UNAUTHENTICATED with the rule in its message and the `Signature` challenge
and `Accept-Signature` in its metadata; Envoy's gRPC ext_authz gets a denied CheckResponse
carrying the same 401 for its client, and a signed request judged there is allowed, its
signature checked over the original request's URL. A signature that covers a body the
ingress never sends cannot be checked there, and is refused rather than trusted."""
import base64
import hashlib
import json

import grpc
import pytest
from http_message_signatures import HTTPMessageSigner, MappingKeyResolver, algorithms
from joserfc.jwk import OKPKey
import requests

from test_ext_authz_grpc import ORIGIN, Env, denied_headers
from test_grpc_refusals import metadata, rpc

KEY = OKPKey.generate_key("Ed25519", parameters={"kid": "partner-1"})


def write_jwks(tmp_path):
    path = tmp_path / "partners.jwks"
    path.write_text(json.dumps({"keys": [KEY.as_dict(private=False)]}))
    return str(path)


def policy(jwks):
    return f"""
signatures:
  partners:
    keys: {{ jwks_file: "{jwks}" }}
    components: ["@method", "@target-uri"]
    tag: partner
"""


def signature_fields(method, url, components=("@method", "@target-uri"), body=None):
    """Signature-Input and Signature for `method url`, made by the library."""
    req = requests.Request(method, url, data=body).prepare()
    HTTPMessageSigner(signature_algorithm=algorithms.ED25519,
                      key_resolver=MappingKeyResolver(public_keys={}, private_keys={"partner-1": KEY.private_key})
                      ).sign(req, key_id="partner-1", tag="partner", covered_component_ids=components, body=body)
    return {"signature-input": req.headers["Signature-Input"], "signature": req.headers["Signature"]}


def test_a_grpc_call_without_a_signature_is_unauthenticated(gateway_factory, upstream, tmp_path):
    gw = gateway_factory(f"""
listen: {{ address: 127.0.0.1:{{PORT}}, http2: true }}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
{policy(write_jwks(tmp_path))}
routes:
  - name: orders
    match: {{ path_prefix: /pkg.Orders/ }}
    upstream: app
    auth: none
    verify_signature: partners
""")
    err = rpc(gw, "/pkg.Orders/Get")
    assert err.code() == grpc.StatusCode.UNAUTHENTICATED, (err.code(), err.details())
    assert err.details() == "the request has no Signature-Input and Signature", err.details()
    md = metadata(err)
    assert md["www-authenticate"] == 'Signature error="invalid_signature"', md
    assert md["accept-signature"] == 'sig1=("@method" "@target-uri");created;tag="partner"', md
    # Signed for another path: the same code, and the rule that failed.
    err = rpc(gw, "/pkg.Orders/Get", signature_fields("POST", gw.url("/pkg.Orders/Delete")).items())
    assert err.code() == grpc.StatusCode.UNAUTHENTICATED and err.details() == "the signature does not verify"
    assert not [r for r in upstream.requests if r["path"].startswith("/pkg.Orders/")]


@pytest.fixture
def env(authserver_factory, tmp_path):
    route = """  - name: signed
    match: { path_prefix: /signed/ }
    upstream: app
    auth: none
    verify_signature: partners
"""
    e = Env(authserver_factory(), authserver_factory(), tmp_path, extra_top=policy(write_jwks(tmp_path)),
            extra_route=route)
    yield e
    e.stop()


def test_ext_authz_denies_an_unsigned_request_with_the_401_for_its_client(env):
    resp = env.check("/signed/x")
    assert resp.status.code == 16 and resp.HasField("denied_response"), resp
    assert resp.denied_response.status.code == 401
    h = denied_headers(resp)
    assert h["www-authenticate"] == 'Signature error="invalid_signature"', h
    assert h["accept-signature"] == 'sig1=("@method" "@target-uri");created;tag="partner"', h
    body = json.loads(resp.denied_response.body)
    assert body["error"] == "invalid_signature" and body["request_id"] == "envoy-req-1", body


def test_ext_authz_checks_a_signature_over_the_original_url(env):
    resp = env.check("/signed/x", signature_fields("GET", ORIGIN + "/signed/x"))
    assert resp.status.code == 0, (resp, env.gw.output()[-2000:])
    # Made for the gateway's own address: another target URI.
    resp = env.check("/signed/x", signature_fields("GET", env.gw.url("/signed/x")))
    assert resp.status.code == 16 and resp.denied_response.status.code == 401, resp
    assert json.loads(resp.denied_response.body)["error_description"] == "the signature does not verify"


def test_ext_authz_refuses_a_digest_it_cannot_see(env):
    body = b'{"amount": 1}'
    fields = signature_fields("POST", ORIGIN + "/signed/x", ("@method", "@target-uri", "content-digest"), body)
    content_digest = "sha-256=:" + base64.b64encode(hashlib.sha256(body).digest()).decode() + ":"
    resp = env.check("/signed/x", {**fields, "content-digest": content_digest, "content-length": str(len(body)),
                                   "content-type": "application/json"}, method="POST")
    assert resp.status.code == 16 and resp.denied_response.status.code == 401, resp
    assert json.loads(resp.denied_response.body)["error_description"] == \
        "the content digest cannot be checked here"
