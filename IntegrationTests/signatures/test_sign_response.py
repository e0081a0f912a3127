"""Answers on a route with `sign_response` (docs/signatures.md) carry a Content-Digest and the
gateway's signature, verified here as a FAPI 2.0 client would, with PyPI
`http-message-signatures` and the key from the gateway's `/.well-known/jwks.json`: over the
status, the content and the request it answers, and bound to the client's own request
signature through `"signature";req`; a large answer is held whole and signed. (Which answers
are never held, streams among them: Tests/GatewayTests/ResponseSigningTests.)"""
import types

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from http_message_signatures import HTTPMessageSigner, HTTPMessageVerifier, MappingKeyResolver, algorithms
from joserfc.jwk import ECKey, OKPKey


@pytest.fixture
def client_key():
    return OKPKey.generate_key("Ed25519", parameters={"kid": "client-1"})


def config(upstream, jwks_path, key_path):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}", timeout: 5s }}
signatures:
  clients:
    keys: {{ jwks_file: "{jwks_path}" }}
    components: ["@method", "@target-uri", "content-digest"]
routes:
  - name: payments
    match: {{ path_prefix: /pay/ }}
    upstream: app
    auth: none
    verify_signature: clients
    sign_response: {{ key_file: "{key_path}", keyid: gw-r1, tag: fapi-2-response }}
  - name: plain
    match: {{ path_prefix: / }}
    upstream: app
    auth: none
    sign_response: {{ key_file: "{key_path}", keyid: gw-r1, tag: fapi-2-response }}
"""


def setup(tmp_path, client_key):
    jwks = tmp_path / "clients.jwks"
    jwks.write_text('{"keys": [%s]}' % __import__("json").dumps(client_key.as_dict(private=False)))
    key = ec.generate_private_key(ec.SECP256R1())
    path = tmp_path / "response-signing.pem"
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return str(jwks), str(path)


def gateway_key(gw):
    jwks = requests.get(gw.url("/.well-known/jwks.json"), timeout=5).json()
    [jwk] = [k for k in jwks["keys"] if k.get("kid") == "gw-r1"]
    assert jwk["alg"] == "ecdsa-p256-sha256" and "d" not in jwk
    return ECKey.import_key(jwk).public_key


def signed_request(url, client_key, body=b'{"amount": 5}'):
    req = requests.Request("POST", url, headers={"Content-Type": "application/json"}, data=body).prepare()
    HTTPMessageSigner(signature_algorithm=algorithms.ED25519,
                      key_resolver=MappingKeyResolver(public_keys={}, private_keys={"client-1": client_key.private_key})
                      ).sign(req, key_id="client-1", covered_component_ids=("@method", "@target-uri"), body=body)
    return req


def verify(r, req, key, require):
    message = types.SimpleNamespace(status_code=r.status_code, headers=r.headers, request=req)
    verifier = HTTPMessageVerifier(signature_algorithm=algorithms.ECDSA_P256_SHA256,
                                   key_resolver=MappingKeyResolver(public_keys={"gw-r1": key}, private_keys={}))
    [result] = verifier.verify(message, expect_tag="fapi-2-response", expect_label="tokengate",
                               require_components=require, body=r.content)
    return {k.strip('"'): v for k, v in result.covered_components.items()}


def test_the_answer_is_signed_and_bound_to_the_signed_request(gateway_factory, upstream, tmp_path, client_key):
    jwks, key_path = setup(tmp_path, client_key)
    gw = gateway_factory(config(upstream, jwks, key_path))
    req = signed_request(gw.url("/pay/1"), client_key)
    with requests.Session() as s:
        r = s.send(req, timeout=10)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Digest"].startswith("sha-256=:")
    covered = verify(r, req, gateway_key(gw), ("@status", "content-type", "content-digest", '"@method";req',
                                               '"@target-uri";req', '"signature";req;key="pyhms"'))
    assert covered["@status"] == "200"


def test_an_answer_changed_on_the_way_fails_the_clients_check(gateway_factory, upstream, tmp_path, client_key):
    jwks, key_path = setup(tmp_path, client_key)
    gw = gateway_factory(config(upstream, jwks, key_path))
    r = requests.get(gw.url("/orders/1"), timeout=5)
    assert r.status_code == 200
    key = gateway_key(gw)
    req = requests.Request("GET", gw.url("/orders/1")).prepare()
    verify(r, req, key, ("@status", "content-digest", '"@target-uri";req'))
    r._content = r.content + b" "
    with pytest.raises(Exception, match="[Dd]igest"):
        verify(r, req, key, ("@status", "content-digest"))
    # The request it answers is part of what was signed: another target does not verify.
    other = requests.Request("GET", gw.url("/orders/2")).prepare()
    r._content = r.content[:-1]
    with pytest.raises(Exception):
        verify(r, other, key, ("@status", "content-digest", '"@target-uri";req'))


def test_a_large_answer_is_held_whole_and_signed(gateway_factory, upstream, tmp_path, client_key):
    jwks, key_path = setup(tmp_path, client_key)
    gw = gateway_factory(config(upstream, jwks, key_path))
    r = requests.get(gw.url("/big?size=3000000"), timeout=10)
    assert r.status_code == 200 and len(r.content) == 3000000
    req = requests.Request("GET", gw.url("/big?size=3000000")).prepare()
    verify(r, req, gateway_key(gw), ("@status", "content-digest"))


def test_a_signed_request_refused_gets_no_signed_answer(gateway_factory, upstream, tmp_path, client_key):
    jwks, key_path = setup(tmp_path, client_key)
    gw = gateway_factory(config(upstream, jwks, key_path))
    r = requests.post(gw.url("/pay/1"), data=b"{}", timeout=5)
    assert r.status_code == 401 and "Signature" not in r.headers
