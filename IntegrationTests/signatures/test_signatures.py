"""Routes with `verify_signature` (docs/signatures.md), tried from the signer's side with an
independent implementation of RFC 9421, PyPI `http-message-signatures`: each algorithm the
registry lists, signed by the library, is accepted and reaches the upstream with the key's
id; each way a signature can be wrong (absent, a body or header changed after signing, too
old, a required component not covered, nothing covered, the wrong tag, an unknown key, an
`alg` that is not the key's, a nonce used twice across two replicas on one Redis) is 401 with
`Accept-Signature`, and the upstream never hears of the request. Keys come from a JWK Set
file or from an issuer's JWKS (refetched once for a key it has just rotated in)."""
import datetime
import json

import pytest
import requests
from http_message_signatures import HTTPMessageSigner, MappingKeyResolver, algorithms
from joserfc.jwk import ECKey, OctKey, OKPKey, RSAKey

from support.redis_server import RedisServer
from test_bearer import JWKSServer, ec_key, token as mint

ALGORITHMS = {
    "ed25519": (algorithms.ED25519, lambda kid: OKPKey.generate_key("Ed25519", parameters={"kid": kid})),
    "ecdsa-p256-sha256": (algorithms.ECDSA_P256_SHA256, lambda kid: ECKey.generate_key("P-256", parameters={"kid": kid})),
    "ecdsa-p384-sha384": (algorithms.ECDSA_P384_SHA384, lambda kid: ECKey.generate_key("P-384", parameters={"kid": kid})),
    # No `alg` member: an RSA key signs rsa-pss-sha512 unless the policy says otherwise.
    "rsa-pss-sha512": (algorithms.RSA_PSS_SHA512, lambda kid: RSAKey.generate_key(2048, parameters={"kid": kid})),
    # The key names its algorithm with the registry's name.
    "rsa-v1_5-sha256": (algorithms.RSA_V1_5_SHA256,
                        lambda kid: RSAKey.generate_key(2048, parameters={"kid": kid, "alg": "rsa-v1_5-sha256"})),
    "hmac-sha256": (algorithms.HMAC_SHA256, lambda kid: OctKey.generate_key(256, parameters={"kid": kid})),
}

FAPI = ("@method", "@target-uri", "authorization", "content-digest")


class Keys:
    """One key per algorithm, each under the algorithm's name as its kid."""

    def __init__(self):
        self.jwk = {name: make(name) for name, (_, make) in ALGORITHMS.items()}

    def secret(self, name):
        k = self.jwk[name]
        return k.raw_value if isinstance(k, OctKey) else k.private_key

    def write(self, path):
        """Two sets: the public keys, and beside them (`.secrets`) the shared secret; a JWK
        Set never mixes the two (an algorithm-confusion guard)."""
        public = [k.as_dict(private=False) for k in self.jwk.values() if not isinstance(k, OctKey)]
        path.write_text(json.dumps({"keys": public}))
        secrets = [k.as_dict(private=True) for k in self.jwk.values() if isinstance(k, OctKey)]
        (path.parent / (path.name + ".secrets")).write_text(json.dumps({"keys": secrets}))
        return str(path)


@pytest.fixture(scope="module")
def keys():
    return Keys()


@pytest.fixture
def idp():
    s = JWKSServer()
    s.keys = [ec_key("one-1")]
    yield s
    s.stop()


def config(upstream, idp, jwks_path, extra_top="", workers=2, buffering=True):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: {workers}
access_log: true
{extra_top}
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], algorithms: [ES256], unknown_kid_wait: 2s }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}", timeout: 5s }}
signatures:
  fapi:
    keys: {{ jwks_file: "{jwks_path}" }}
    components: ["@method", "@target-uri", "authorization", "content-digest"]
    also_cover_if_present: [dpop]
    tag: fapi-2-request
    max_age: 60s
    headers: {{ keyid: X-Signature-Key, tag: X-Signature-Tag }}
  shared:
    keys: {{ jwks_file: "{jwks_path}.secrets" }}
    components: ["@method", "@target-uri", "authorization", "content-digest"]
    tag: fapi-2-request
    headers: {{ keyid: X-Signature-Key, tag: X-Signature-Tag }}
  nonced:
    keys: {{ jwks_file: "{jwks_path}" }}
    components: ["@method", "@path"]
    nonce: required
  issued:
    keys: {{ issuer: one }}
    tag: partner
routes:
  - name: payments
    match: {{ path_prefix: /pay/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    verify_signature: fapi
    request_buffering: {"true" if buffering else "false"}
  - name: shared
    match: {{ path_prefix: /shared/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    verify_signature: shared
  - name: bots
    match: {{ path_prefix: /bots/ }}
    upstream: app
    auth: none
    verify_signature: nonced
  - name: partners
    match: {{ path_prefix: /partners/ }}
    upstream: app
    auth: none
    verify_signature: issued
"""


def bearer(idp, sub="alice"):
    return "Bearer " + mint(idp.keys[0], sub=sub)


def signed(url, name, keys, *, method="POST", body=b'{"amount": 10}', headers=None, components=FAPI,
           tag="fapi-2-request", created=None, nonce=None, kid=None, algorithm=None, key=None):
    """A prepared request signed by the library: `name`'s key and algorithm unless told."""
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    req = requests.Request(method, url, headers=h, data=body).prepare()
    kid = kid or name
    signer = HTTPMessageSigner(
        signature_algorithm=algorithm or ALGORITHMS[name][0],
        key_resolver=MappingKeyResolver(public_keys={}, private_keys={kid: key or keys.secret(name)}))
    digest = "content-digest" in components
    signer.sign(req, key_id=kid, created=created, nonce=nonce, tag=tag,
                covered_component_ids=tuple(c for c in components if c != "content-digest"),
                body=body if digest else None)
    return req


def send(req):
    with requests.Session() as s:
        return s.send(req, timeout=10)


def saw(upstream, prefix):
    return sum(1 for r in upstream.requests if r["path"].startswith(prefix))


def refused(r, upstream, prefix, says=None):
    assert r.status_code == 401, (r.status_code, r.text)
    body = r.json()
    assert body["error"] == "invalid_signature"
    if says:
        assert says in body["error_description"], body["error_description"]
    assert r.headers["Accept-Signature"].startswith('sig1=(')
    assert r.headers["WWW-Authenticate"].startswith("Signature")
    assert saw(upstream, prefix) == 0


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_each_registered_algorithm_signed_by_the_library_is_accepted(
        gateway_factory, upstream, idp, keys, tmp_path, name):
    gw = gateway_factory(config(upstream, idp, keys.write(tmp_path / "keys.jwks")))
    prefix = "/shared/" if name == "hmac-sha256" else "/pay/"
    req = signed(gw.url(prefix + "1"), name, keys, headers={"Authorization": bearer(idp),
                                                           "X-Signature-Key": "forged"})
    r = send(req)
    assert r.status_code == 200, r.text
    seen = {k.lower(): v for k, v in r.json()["headers"]}
    # The key that signed, never the client's own copy of the header.
    assert seen["x-signature-key"] == name
    assert seen["x-signature-tag"] == "fapi-2-request"
    assert saw(upstream, prefix) == 1


def test_the_accept_signature_field_names_what_the_route_wants(gateway_factory, upstream, idp, keys, tmp_path):
    gw = gateway_factory(config(upstream, idp, keys.write(tmp_path / "keys.jwks")))
    r = requests.post(gw.url("/pay/1"), data=b"{}", headers={"Authorization": bearer(idp)}, timeout=5)
    refused(r, upstream, "/pay/", "Signature-Input")
    assert r.headers["Accept-Signature"] == \
        'sig1=("@method" "@target-uri" "authorization" "content-digest");created;tag="fapi-2-request"'


def test_a_body_changed_after_signing_is_refused(gateway_factory, upstream, idp, keys, tmp_path):
    gw = gateway_factory(config(upstream, idp, keys.write(tmp_path / "keys.jwks")))
    req = signed(gw.url("/pay/1"), "ed25519", keys, headers={"Authorization": bearer(idp)})
    req.body = b'{"amount": 1000}'
    req.headers["Content-Length"] = str(len(req.body))
    refused(send(req), upstream, "/pay/", "Content-Digest does not match")


def test_a_header_changed_after_signing_is_refused(gateway_factory, upstream, idp, keys, tmp_path):
    gw = gateway_factory(config(upstream, idp, keys.write(tmp_path / "keys.jwks")))
    req = signed(gw.url("/pay/1"), "ed25519", keys, headers={"Authorization": bearer(idp)})
    # Another valid token for the same caller: the token passes, the signature does not.
    req.headers["Authorization"] = bearer(idp)
    refused(send(req), upstream, "/pay/", "does not verify")


def test_a_signature_five_minutes_old_is_refused(gateway_factory, upstream, idp, keys, tmp_path):
    gw = gateway_factory(config(upstream, idp, keys.write(tmp_path / "keys.jwks")))
    old = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    req = signed(gw.url("/pay/1"), "ed25519", keys, headers={"Authorization": bearer(idp)}, created=old)
    refused(send(req), upstream, "/pay/", "older than 60")


def test_a_signature_from_the_future_is_refused(gateway_factory, upstream, idp, keys, tmp_path):
    gw = gateway_factory(config(upstream, idp, keys.write(tmp_path / "keys.jwks")))
    later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=2)
    req = signed(gw.url("/pay/1"), "ed25519", keys, headers={"Authorization": bearer(idp)}, created=later)
    refused(send(req), upstream, "/pay/", "in the future")


def test_authorization_not_covered_is_refused(gateway_factory, upstream, idp, keys, tmp_path):
    gw = gateway_factory(config(upstream, idp, keys.write(tmp_path / "keys.jwks")))
    req = signed(gw.url("/pay/1"), "ed25519", keys, headers={"Authorization": bearer(idp)},
                 components=("@method", "@target-uri", "content-digest"))
    refused(send(req), upstream, "/pay/", 'does not cover "authorization"')


def test_an_empty_component_list_is_refused(gateway_factory, upstream, idp, keys, tmp_path):
    gw = gateway_factory(config(upstream, idp, keys.write(tmp_path / "keys.jwks")))
    req = signed(gw.url("/pay/1"), "ed25519", keys, headers={"Authorization": bearer(idp)}, components=())
    assert "=();created=" in req.headers["Signature-Input"]
    refused(send(req), upstream, "/pay/", "does not cover")


def test_a_dpop_header_sent_but_not_covered_is_refused(gateway_factory, upstream, idp, keys, tmp_path):
    gw = gateway_factory(config(upstream, idp, keys.write(tmp_path / "keys.jwks")))
    req = signed(gw.url("/pay/1"), "ed25519", keys, headers={"Authorization": bearer(idp), "DPoP": "x.y.z"})
    refused(send(req), upstream, "/pay/", 'does not cover "dpop"')


def test_the_wrong_tag_is_refused(gateway_factory, upstream, idp, keys, tmp_path):
    gw = gateway_factory(config(upstream, idp, keys.write(tmp_path / "keys.jwks")))
    req = signed(gw.url("/pay/1"), "ed25519", keys, headers={"Authorization": bearer(idp)}, tag="web-bot-auth")
    refused(send(req), upstream, "/pay/", "no signature has the tag fapi-2-request")


def test_an_unknown_keyid_is_refused(gateway_factory, upstream, idp, keys, tmp_path):
    gw = gateway_factory(config(upstream, idp, keys.write(tmp_path / "keys.jwks")))
    stranger = OKPKey.generate_key("Ed25519", parameters={"kid": "stranger"})
    req = signed(gw.url("/pay/1"), "ed25519", keys, headers={"Authorization": bearer(idp)}, kid="stranger",
                 key=stranger.private_key)
    refused(send(req), upstream, "/pay/", "no key has keyid stranger")


@pytest.mark.parametrize("twin", ["another key", "an unusable member"])
def test_a_keyid_two_members_carry_is_refused(gateway_factory, upstream, idp, keys, tmp_path, twin):
    # RFC 7517 §4.5: a kid that names two members names none, even when one of them could
    # not be used (it is not a key this set can verify with, but it says the kid is shared).
    path = tmp_path / "keys.jwks"
    keys.write(path)
    doc = json.loads(path.read_text())
    if twin == "another key":
        doc["keys"].append(OKPKey.generate_key("Ed25519", parameters={"kid": "ed25519"}).as_dict(private=False))
    else:
        doc["keys"].append({"kty": "OKP", "crv": "Ed25519", "x": "not-a-key", "kid": "ed25519"})
    path.write_text(json.dumps(doc))
    gw = gateway_factory(config(upstream, idp, str(path)))
    req = signed(gw.url("/pay/1"), "ed25519", keys, headers={"Authorization": bearer(idp)})
    refused(send(req), upstream, "/pay/", "several keys have keyid ed25519")


def test_an_alg_that_is_not_the_keys_is_refused(gateway_factory, upstream, idp, keys, tmp_path):
    gw = gateway_factory(config(upstream, idp, keys.write(tmp_path / "keys.jwks")))
    # Signed as hmac-sha256 with a secret, under the kid of the Ed25519 key: the message's
    # alg never chooses the algorithm.
    req = signed(gw.url("/pay/1"), "ed25519", keys, headers={"Authorization": bearer(idp)},
                 algorithm=algorithms.HMAC_SHA256, key=b"k" * 32)
    refused(send(req), upstream, "/pay/", "alg hmac-sha256 is not the key's algorithm")


def test_a_token_refused_first_is_answered_as_a_token_refusal(gateway_factory, upstream, idp, keys, tmp_path):
    gw = gateway_factory(config(upstream, idp, keys.write(tmp_path / "keys.jwks")))
    req = signed(gw.url("/pay/1"), "ed25519", keys, headers={"Authorization": "Bearer nonsense"})
    r = send(req)
    assert r.status_code == 401 and r.json()["error"] == "invalid_token"
    assert saw(upstream, "/pay/") == 0


def test_a_body_that_streams_cannot_have_its_digest_checked(gateway_factory, upstream, idp, keys, tmp_path):
    gw = gateway_factory(config(upstream, idp, keys.write(tmp_path / "keys.jwks"), buffering=False))
    req = signed(gw.url("/pay/1"), "ed25519", keys, headers={"Authorization": bearer(idp)})
    refused(send(req), upstream, "/pay/", "cannot be checked on a body that streams")


def test_a_large_body_spooled_to_a_file_is_checked_whole(gateway_factory, upstream, idp, keys, tmp_path):
    gw = gateway_factory(config(upstream, idp, keys.write(tmp_path / "keys.jwks")))
    body = bytes(range(256)) * 4096  # 1 MiB: past the in-memory buffer, into the spool file
    req = signed(gw.url("/pay/1"), "ecdsa-p256-sha256", keys, headers={"Authorization": bearer(idp)}, body=body)
    assert send(req).status_code == 200
    req = signed(gw.url("/pay/2"), "ecdsa-p256-sha256", keys, headers={"Authorization": bearer(idp)}, body=body)
    req.body = body[:-1] + b"\x00"
    refused(send(req), upstream, "/pay/2", "Content-Digest does not match")
    assert saw(upstream, "/pay/1") == 1


def test_a_nonce_is_required_and_used_once(gateway_factory, upstream, idp, keys, tmp_path):
    gw = gateway_factory(config(upstream, idp, keys.write(tmp_path / "keys.jwks")))
    url = gw.url("/bots/page")
    req = signed(url, "ed25519", keys, method="GET", body=None, components=("@method", "@path"), tag=None)
    refused(send(req), upstream, "/bots/", "has no nonce")
    first = signed(url, "ed25519", keys, method="GET", body=None, components=("@method", "@path"), tag=None,
                   nonce="n-1")
    assert send(first).status_code == 200
    again = requests.Request("GET", url, headers=dict(first.headers)).prepare()
    refused(send(again), upstream, "/bots/x", "nonce was used before")


def test_a_nonce_reused_on_another_replica_sharing_redis_is_refused(gateway_factory, upstream, idp, keys, tmp_path):
    redis = RedisServer().start()
    try:
        store = f'store: {{ url: "redis://127.0.0.1:{redis.port}/4", prefix: "tg-sig:" }}'
        path = keys.write(tmp_path / "keys.jwks")
        a = gateway_factory(config(upstream, idp, path, extra_top=store))
        b = gateway_factory(config(upstream, idp, path, extra_top=store))
        first = signed(a.url("/bots/p"), "ecdsa-p384-sha384", keys, method="GET", body=None,
                       components=("@method", "@path"), tag=None, nonce="shared-nonce")
        assert send(first).status_code == 200
        # The same signed request, to the other replica (covering @path, not the authority).
        replay = requests.Request("GET", b.url("/bots/p"), headers=dict(first.headers)).prepare()
        r = send(replay)
        assert r.status_code == 401 and "nonce was used before" in r.json()["error_description"]
        assert saw(upstream, "/bots/") == 1
        assert any(k.startswith("tg-sig:signature:nonce:") for k in redis.cli("-n", "4", "KEYS", "*").split())
    finally:
        redis.close()


def test_keys_from_an_issuer_are_refetched_once_for_a_key_rotated_in(gateway_factory, upstream, idp, keys, tmp_path):
    gw = gateway_factory(config(upstream, idp, keys.write(tmp_path / "keys.jwks")))
    partner = OKPKey.generate_key("Ed25519", parameters={"kid": "partner-1", "use": "sig"})

    def call():
        return send(signed(gw.url("/partners/x"), "ed25519", keys, method="GET", body=None,
                           components=("@method", "@target-uri"), tag="partner", kid="partner-1",
                           key=partner.private_key))
    fetches = idp.hits
    # The gateway loaded the set before the partner's key was in it.
    idp.keys = idp.keys + [partner]
    r = call()
    assert r.status_code == 200, r.text
    assert idp.hits == fetches + 1
    # A keyid still unknown after that is refused (and asks no second refetch at once).
    stranger = OKPKey.generate_key("Ed25519", parameters={"kid": "stranger"})
    r = send(signed(gw.url("/partners/y"), "ed25519", keys, method="GET", body=None,
                    components=("@method", "@target-uri"), tag="partner", kid="stranger", key=stranger.private_key))
    refused(r, upstream, "/partners/y", "no key has keyid stranger")


def test_a_shared_secret_in_an_issuers_set_is_never_used(gateway_factory, upstream, idp, keys, tmp_path):
    gw = gateway_factory(config(upstream, idp, keys.write(tmp_path / "keys.jwks")))
    secret = OctKey.generate_key(256, parameters={"kid": "oct-1"})

    class Published:
        """The secret as a careless key server would publish it: with its `k`."""
        kid = "oct-1"

        def as_dict(self, private=False):
            return secret.as_dict(private=True)
    # The issuer's whole set is the secret (a set never mixes secrets and public keys).
    idp.keys = [Published()]
    req = signed(gw.url("/partners/x"), "hmac-sha256", keys, method="GET", body=None,
                 components=("@method", "@target-uri"), tag="partner", kid="oct-1", key=secret.raw_value)
    refused(send(req), upstream, "/partners/")


def test_a_second_content_digest_line_is_checked_as_the_signature_covers_it(
        gateway_factory, upstream, idp, keys, tmp_path):
    """RFC 9421 §2.1: the signature base joins every Content-Digest line. A right sha-256
    line, then a sha-512 of another body on a second line, once passed: only the first line
    was checked, while the signature vouched for both. Both are checked now. (An algorithm
    named twice is refused too: ContentDigest's unit tests, as this test's signing library
    will not sign such a field.)"""
    import base64
    import hashlib
    from support.gateway import raw_request
    gw = gateway_factory(config(upstream, idp, keys.write(tmp_path / "keys.jwks")))
    body = b'{"amount": 10}'

    def digest(name, data):
        return f"{name}=:" + base64.b64encode(getattr(hashlib, name.replace("-", ""))(data).digest()).decode() + ":"

    def send(path, first, second):
        """Signed over the two lines as the base combines them (the library reads one field),
        then sent as two Content-Digest lines."""
        req = requests.Request("POST", gw.url(path), data=body, headers={
            "Content-Type": "application/json", "Authorization": bearer(idp),
            "Content-Digest": first + ", " + second}).prepare()
        HTTPMessageSigner(
            signature_algorithm=ALGORITHMS["ed25519"][0],
            key_resolver=MappingKeyResolver(public_keys={}, private_keys={"ed25519": keys.secret("ed25519")}),
        ).sign(req, key_id="ed25519", tag="fapi-2-request", covered_component_ids=FAPI, use_existing_digest=True)
        lines = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{gw.port}", "Content-Type: application/json",
                 f"Authorization: {req.headers['Authorization']}", f"Content-Digest: {first}",
                 f"Content-Digest: {second}", f"Signature-Input: {req.headers['Signature-Input']}",
                 f"Signature: {req.headers['Signature']}", f"Content-Length: {len(body)}", "Connection: close"]
        return raw_request(gw.port, ("\r\n".join(lines) + "\r\n\r\n").encode() + body)

    right = digest("sha-256", body)
    status, response = send("/pay/7", right, digest("sha-512", b'{"amount": 99}'))
    assert status == 401, response[:600]
    assert b"invalid_signature" in response and b"Content-Digest does not match" in response, response[:600]
    assert saw(upstream, "/pay/7") == 0
    # The same two-line request with both digests right passes: the lines are read, not refused.
    status, response = send("/pay/8", right, digest("sha-512", body))
    assert status == 200, response[:600]


def test_check_config_warns_of_a_policy_that_covers_query_params_alone(upstream, idp, keys, tmp_path):
    """RFC 9421 §2.2.8: `@query-param` covers the parameters it names; others can be added
    (`&x=1`) unsigned. check-config says so where no component covers the whole query."""
    import subprocess
    from support.gateway import BIN
    text = config(upstream, idp, keys.write(tmp_path / "keys.jwks")).replace(
        'components: ["@method", "@path"]', 'components: ["@method", "@path", \'"@query-param";name="amount"\']')
    path = tmp_path / "tokengate.yaml"
    path.write_text(text.replace("{PORT}", "1").replace("{ADMIN}", "2"))
    r = subprocess.run([BIN, "check-config", str(path)], capture_output=True, text=True, timeout=30)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "signatures.nonced.components" in out and "@query-param signs only the parameters it names" in out, out
    assert "signatures.fapi.components" not in out
