"""Signature policies with `profile: fapi2` and keys from the token's client
(`keys: { client_jwks: PATH }`, docs/signatures.md), tried from the signer's side with PyPI
`http-message-signatures`: a client signs with its own registered key and is let through; with
another client's key, with no registered key, with a key outside FAPI 2.0's algorithms, with
content its signature does not digest, without `authorization`, or under another tag, it is
refused with 401 and the upstream never hears of it. The profile's answers carry the
`fapi-2-response` tag and verify with the gateway's published key. Refusals are counted per
policy and reason, and check-config refuses what asks for less than the profile."""
import json
import subprocess

import pytest
import requests
from http_message_signatures import algorithms
from joserfc.jwk import ECKey, OKPKey, RSAKey

from support.gateway import BIN
from test_bearer import JWKSServer, ec_key, token as mint
from test_signatures import refused, saw, send, signed
from test_sign_response import gateway_key, setup as response_setup, verify

FAPI_GET = ("@method", "@target-uri", "authorization")
FAPI_POST = FAPI_GET + ("content-digest",)


class Registry:
    """The AS's clients and their keys: app1 holds three (one of each kind the profile must
    weigh), app2 one; the file maps each client id to its public JWK Set."""

    def __init__(self):
        self.keys = {
            "app1-ed": OKPKey.generate_key("Ed25519", parameters={"kid": "app1-ed"}),
            "app1-v15": RSAKey.generate_key(2048, parameters={"kid": "app1-v15", "alg": "rsa-v1_5-sha256"}),
            "app1-p384": ECKey.generate_key("P-384", parameters={"kid": "app1-p384"}),
            "app2-ed": OKPKey.generate_key("Ed25519", parameters={"kid": "app2-ed"}),
        }

    def write(self, path):
        def jwks(prefix):
            return {"keys": [k.as_dict(private=False) for kid, k in self.keys.items() if kid.startswith(prefix)]}
        path.write_text(json.dumps({"app1": jwks("app1-"), "app2": jwks("app2-")}))
        return str(path)

    def sign(self, url, kid, token, *, method="POST", body=b'{"amount": 10}', components=FAPI_POST,
             tag="fapi-2-request", algorithm=algorithms.ED25519):
        return signed(url, None, None, method=method, body=body, components=components, tag=tag, kid=kid,
                      key=self.keys[kid].private_key, algorithm=algorithm,
                      headers={"Authorization": f"Bearer {token}"})


@pytest.fixture(scope="module")
def registry():
    return Registry()


@pytest.fixture
def idp():
    s = JWKSServer()
    s.keys = [ec_key("one-1")]
    yield s
    s.stop()


def config(upstream, idp, registry_path, response_key, issuer_profile=""):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], algorithms: [ES256]{issuer_profile} }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}", timeout: 5s }}
signatures:
  fapi:
    keys: {{ client_jwks: "{registry_path}" }}
    profile: fapi2
    headers: {{ keyid: X-Signature-Key }}
routes:
  - name: accounts
    match: {{ path_prefix: /accounts/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    verify_signature: fapi
    sign_response: {{ key_file: "{response_key}", keyid: gw-r1 }}
"""


@pytest.fixture
def gw(gateway_factory, upstream, idp, registry, tmp_path):
    _, key = response_setup(tmp_path, OKPKey.generate_key("Ed25519"))
    return gateway_factory(config(upstream, idp, registry.write(tmp_path / "client-keys.json"), key))


def token(idp, client):
    return mint(idp.keys[0], client_id=client)


def test_a_client_signing_with_its_own_registered_key_is_let_through(gw, upstream, idp, registry):
    r = send(registry.sign(gw.url("/accounts/1"), "app1-ed", token(idp, "app1")))
    assert r.status_code == 200, r.text
    # Without content, no digest is needed.
    r = send(registry.sign(gw.url("/accounts/2"), "app1-ed", token(idp, "app1"), method="GET", body=None,
                           components=FAPI_GET))
    assert r.status_code == 200, r.text
    assert {k.lower(): v for k, v in r.json()["headers"]}["x-signature-key"] == "app1-ed"
    assert saw(upstream, "/accounts/") == 2


def test_a_key_registered_to_another_client_is_refused(gw, upstream, idp, registry):
    r = send(registry.sign(gw.url("/accounts/1"), "app2-ed", token(idp, "app1")))
    refused(r, upstream, "/accounts/", "no key has keyid app2-ed")
    # The same signature with app2's own token passes: the key is app2's, not forged.
    r = send(registry.sign(gw.url("/accounts/1"), "app2-ed", token(idp, "app2")))
    assert r.status_code == 200, r.text


def test_a_client_with_no_registered_keys_is_refused(gw, upstream, idp, registry):
    r = send(registry.sign(gw.url("/accounts/1"), "app1-ed", token(idp, "app3")))
    refused(r, upstream, "/accounts/", "the token's client has no registered keys")


@pytest.mark.parametrize("kid,algorithm", [("app1-v15", algorithms.RSA_V1_5_SHA256),
                                           ("app1-p384", algorithms.ECDSA_P384_SHA384)])
def test_a_key_outside_the_profiles_algorithms_is_refused(gw, upstream, idp, registry, kid, algorithm):
    r = send(registry.sign(gw.url("/accounts/1"), kid, token(idp, "app1"), algorithm=algorithm))
    refused(r, upstream, "/accounts/", "is not accepted here")


def test_content_its_signature_does_not_digest_is_refused(gw, upstream, idp, registry):
    r = send(registry.sign(gw.url("/accounts/1"), "app1-ed", token(idp, "app1"), components=FAPI_GET))
    refused(r, upstream, "/accounts/", "the request has content: the signature does not cover content-digest")


def test_the_profile_fills_in_the_components_and_the_tag(gw, upstream, idp, registry):
    r = send(registry.sign(gw.url("/accounts/1"), "app1-ed", token(idp, "app1"), method="GET", body=None,
                           components=("@method", "@target-uri")))
    refused(r, upstream, "/accounts/", 'does not cover "authorization"')
    assert r.headers["Accept-Signature"] == \
        'sig1=("@method" "@target-uri" "authorization");created;tag="fapi-2-request"'
    r = send(registry.sign(gw.url("/accounts/1"), "app1-ed", token(idp, "app1"), tag="partner"))
    refused(r, upstream, "/accounts/", "no signature has the tag fapi-2-request")


def test_answers_carry_the_response_tag_and_are_bound_to_the_request(gw, upstream, idp, registry):
    req = registry.sign(gw.url("/accounts/1"), "app1-ed", token(idp, "app1"))
    r = send(req)
    assert r.status_code == 200, r.text
    assert 'tag="fapi-2-response"' in r.headers["Signature-Input"]
    covered = verify(r, req, gateway_key(gw), require=("@status", "content-type", "content-digest"))
    assert {"@status", "content-type", "content-digest"} <= set(covered), covered
    assert '"@method";req "@target-uri";req "signature";req;key="pyhms"' in r.headers["Signature-Input"]


def test_refusals_are_counted_by_policy_and_reason(gw, upstream, idp, registry):
    send(registry.sign(gw.url("/accounts/1"), "app2-ed", token(idp, "app1")))
    send(registry.sign(gw.url("/accounts/1"), "app1-ed", token(idp, "app1"), tag="partner"))
    send(registry.sign(gw.url("/accounts/1"), "app1-ed", token(idp, "app1"), tag="partner"))
    text = requests.get(f"http://127.0.0.1:{gw.admin}/metrics", timeout=5).text
    assert 'tokengate_signature_refusals_total{policy="fapi",reason="unknownKey"} 1' in text, text
    assert 'tokengate_signature_refusals_total{policy="fapi",reason="wrongTag"} 2' in text, text


def rsa_v15_key(tmp_path):
    path = tmp_path / "v15.jwk"
    key = RSAKey.generate_key(2048, parameters={"kid": "v15", "alg": "rsa-v1_5-sha256"})
    path.write_text(json.dumps(key.as_dict(private=True)))
    return str(path)


@pytest.mark.parametrize("mutate,message", [
    (lambda t, p: t.replace("    profile: fapi2\n", '    profile: fapi2\n    components: ["@method", "@target-uri"]\n'),
     'must cover "authorization" with profile: fapi2'),
    (lambda t, p: t.replace("    profile: fapi2\n", "    profile: fapi2\n    tag: partner\n"),
     "must be fapi-2-request with profile: fapi2"),
    (lambda t, p: t.replace("    profile: fapi2\n", "    profile: fapi2\n    rsa_algorithm: rsa-v1_5-sha256\n"),
     "must be rsa-pss-sha512 with profile: fapi2"),
    (lambda t, p: t.replace("    profile: fapi2\n", "    profile: fapi1\n"), "must be fapi2 (or leave it out)"),
    (lambda t, p: t.replace("    profile: fapi2\n", "").replace("algorithms: [ES256]", "algorithms: [ES256], profile: fapi2"),
     "give signatures.fapi profile: fapi2"),
    (lambda t, p: t.replace("auth: bearer\n    issuers: [one]\n", "auth: none\n"),
     "the route must take access tokens"),
    (lambda t, p: t.replace("keyid: gw-r1 }", "keyid: gw-r1, tag: mine }"), "must be fapi-2-response with profile: fapi2"),
    (lambda t, p: t.replace("keyid: gw-r1 }", 'keyid: gw-r1, components: ["@status"] }'),
     'must cover "content-type", "content-digest" with profile: fapi2'),
    (lambda t, p: t.replace(str(p / "response-signing.pem"), rsa_v15_key(p)),
     "signs with rsa-v1_5-sha256: with profile: fapi2 the key must be ES256, Ed25519 or RSA-PSS"),
])
def test_check_config_refuses_what_asks_for_less_than_the_profile(upstream, idp, registry, tmp_path, mutate, message):
    _, key = response_setup(tmp_path, OKPKey.generate_key("Ed25519"))
    text = mutate(config(upstream, idp, registry.write(tmp_path / "client-keys.json"), key), tmp_path)
    path = tmp_path / "tokengate.yaml"
    path.write_text(text.replace("{PORT}", "1").replace("{ADMIN}", "2"))
    r = subprocess.run([BIN, "check-config", str(path)], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0, r.stdout
    assert message in r.stdout + r.stderr, r.stdout + r.stderr


def test_a_client_registry_that_is_not_one_is_refused_at_load(upstream, idp, registry, tmp_path):
    _, key = response_setup(tmp_path, OKPKey.generate_key("Ed25519"))
    bad = tmp_path / "client-keys.json"
    bad.write_text(json.dumps({"app1": [1, 2]}))
    path = tmp_path / "tokengate.yaml"
    path.write_text(config(upstream, idp, str(bad), key).replace("{PORT}", "1").replace("{ADMIN}", "2"))
    r = subprocess.run([BIN, "check-config", str(path)], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    assert "is not a JSON object of JWK Sets by client id" in r.stdout + r.stderr, r.stdout + r.stderr
