"""The resource side of `profile: fapi2` (an issuer held to FAPI 2.0), end to end with tokens
and DPoP proofs made by joserfc: the RP test plan's `rs-dpop-auth-scheme-case-insensitivity`
module, and sender-constrained tokens only — an unbound token of the profile's issuer is 401
`invalid_token` on every scheme, a DPoP- or certificate-bound one passes, and the same route's
other issuer keeps its own rules."""
import pytest
import requests

from support.dpop_client import DPoPKey
from support.tls_pki import make_pair
from test_bearer import JWKSServer, ec_key, token as mint
from test_mtls import ClientPKI, x5t


@pytest.fixture
def issuers():
    bank, other = JWKSServer(), JWKSServer()
    bank.keys, other.keys = [ec_key("bank-1")], [ec_key("other-1")]
    yield bank, other
    bank.stop()
    other.stop()


@pytest.fixture
def gw(upstream, issuers, gateway_factory, tmp_path):
    bank, other = issuers
    pki = ClientPKI(str(tmp_path))
    crt, key = make_pair(str(tmp_path), "server", ["127.0.0.1"])
    g = gateway_factory(f"""
listen: {{ address: 127.0.0.1:{{PORT}}, tls: {{ cert_file: {crt}, key_file: {key}, client_ca_file: {pki.crt} }} }}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
public_url: https://127.0.0.1:{{PORT}}
issuers:
  bank: {{ issuer: "https://idp.one", jwks_uri: "{bank.url}", audiences: [api], profile: fapi2 }}
  other: {{ issuer: "https://idp.two", jwks_uri: "{other.url}", audiences: [api], algorithms: [ES256] }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - {{ name: accounts, match: {{ path_prefix: /accounts/ }}, upstream: app, auth: token, issuers: [bank, other] }}
""")
    g.pki, g.server_crt = pki, crt
    return g


def get(gw, authorization, proof=None, cert=None):
    headers = {"Authorization": authorization}
    if proof:
        headers["DPoP"] = proof
    return requests.get(f"https://127.0.0.1:{gw.port}/accounts/1", headers=headers, cert=cert,
                        verify=gw.server_crt, timeout=10)


def url(gw):
    return f"https://127.0.0.1:{gw.port}/accounts/1"


@pytest.mark.parametrize("scheme", ["DPoP", "dpop", "DPOP", "dPoP"])
def test_rs_dpop_auth_scheme_case_insensitivity(gw, issuers, scheme):
    key = DPoPKey("ES256")
    tok = mint(issuers[0].keys[0], claims={"cnf": {"jkt": key.jkt}})
    r = get(gw, f"{scheme} {tok}", key.proof("GET", url(gw), access_token=tok))
    assert r.status_code == 200, r.text


def test_an_unbound_token_of_the_profiles_issuer_is_refused(gw, issuers):
    r = get(gw, f"Bearer {mint(issuers[0].keys[0])}")
    assert r.status_code == 401
    assert 'error="invalid_token"' in r.headers["WWW-Authenticate"]
    assert r.json()["error_description"] == "this issuer's tokens must be sender-constrained (DPoP or a client certificate)"


def test_a_certificate_bound_token_of_the_profiles_issuer_passes_with_its_certificate(gw, issuers):
    cert = gw.pki.issue("a", "/CN=tpp")
    tok = mint(issuers[0].keys[0], claims={"cnf": {"x5t#S256": x5t(cert[0])}})
    assert get(gw, f"Bearer {tok}", cert=cert).status_code == 200
    other = gw.pki.issue("b", "/CN=mallory")
    assert get(gw, f"Bearer {tok}", cert=other).status_code == 401


def test_the_other_issuers_unbound_tokens_keep_working(gw, issuers):
    assert get(gw, f"Bearer {mint(issuers[1].keys[0], iss='https://idp.two')}").status_code == 200


def test_a_token_bound_to_a_dpop_key_and_a_certificate_needs_both(gw, issuers):
    key = DPoPKey("ES256")
    cert = gw.pki.issue("a", "/CN=tpp")
    tok = mint(issuers[0].keys[0], claims={"cnf": {"jkt": key.jkt, "x5t#S256": x5t(cert[0])}})
    assert get(gw, f"DPoP {tok}", key.proof("GET", url(gw), access_token=tok), cert=cert).status_code == 200
    r = get(gw, f"DPoP {tok}", key.proof("GET", url(gw), access_token=tok))
    assert r.status_code == 401 and "client certificate" in r.json()["error_description"]


@pytest.mark.parametrize("bad", ["", "*" * 43, "AAAA", 7])
def test_a_malformed_certificate_binding_beside_a_dpop_key_is_refused(gw, issuers, bad):
    key = DPoPKey("ES256")
    cert = gw.pki.issue("a", "/CN=tpp")
    tok = mint(issuers[0].keys[0], claims={"cnf": {"jkt": key.jkt, "x5t#S256": bad}})
    r = get(gw, f"DPoP {tok}", key.proof("GET", url(gw), access_token=tok), cert=cert)
    assert r.status_code == 401
    assert r.json()["error_description"] == "the token's certificate binding (cnf.x5t#S256) is malformed"
