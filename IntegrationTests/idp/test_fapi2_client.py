"""The FAPI 2.0 RP test plan (`fapi2-security-profile-final-client-test-plan` of the OpenID
conformance suite), module by module, against tokengate's `profile: fapi2` client: the suite
itself needs Maven Central and MongoDB, so its AS faults are injected by the project's test AS
(idpyoidc, with PAR, DPoP, mutual TLS, PS256/ES256 keys and an RS256 "alternate" key). Each test
is named after its module and expects the suite's outcome: the happy paths end with a
sender-constrained resource call from the gateway to an upstream that checks the binding (a DPoP
proof, or the client certificate of the connection: support/dpop_resource.py); every other
module must end the login before the code is used or the session begins.

Every module runs in the plan's four variants: client authentication `private_key_jwt` or
`mtls` (tls_client_auth) × sender constraint `dpop` or `mtls` (certificate-bound tokens,
RFC 8705 §3)."""
import time

import pytest

from support.dpop_resource import DPoPResource
from support.tls_pki import make_pair
from test_login import API_ROUTE_FORWARDING_TOKEN, login_env  # noqa: F401 (a fixture)
from test_mtls import ClientPKI

SUBJECT_DN = "CN=bank-web,O=Tokengate Test"


class Variant:
    """One of the plan's variants: client authentication × sender constraint."""

    def __init__(self, auth, sender):
        self.auth, self.sender = auth, sender
        self.id = f"{auth}-{sender}"
        self.dpop = sender == "dpop"
        self.certificate = "mtls" in (auth, sender)


VARIANTS = [Variant("private_key_jwt", "dpop"), Variant("mtls", "dpop"), Variant("private_key_jwt", "mtls"),
            Variant("mtls", "mtls")]


@pytest.fixture(params=VARIANTS, ids=lambda v: v.id)
def fapi_variant(request):
    return request.param


@pytest.fixture
def fapi_pki(tmp_path):
    return ClientPKI(str(tmp_path), name="fapi-ca")


def make_fapi_as(authserver_factory, variant, pki):
    # PS256 signs ID tokens; RS256 is the "alternate" algorithm of the invalid-alternate-alg
    # module (its key is published too). The metadata does not promise iss (RFC 9207): the
    # profile requires it anyway.
    a = authserver_factory(login="form", dpop=variant.dpop, algs=("ES256", "PS256", "RS256"), require_par=True,
                           advertise_iss=False, id_token_alg="PS256", mtls=variant.certificate)
    a.variant = variant
    if variant.certificate:
        a.mtls.trust_ca(pki.crt)
        a.mtls.bind = variant.sender == "mtls"
        a.client_certificate = pki.issue("bank-web", "/O=Tokengate Test/CN=bank-web") + (SUBJECT_DN,)
    return a


@pytest.fixture
def fapi_as(authserver_factory, fapi_variant, fapi_pki):
    return make_fapi_as(authserver_factory, fapi_variant, fapi_pki)


@pytest.fixture
def rs(fapi_variant, fapi_pki, tmp_path):
    """The resource the gateway calls: DPoP-checking, or over TLS asking for the client's
    certificate and checking the token's binding to it."""
    if fapi_variant.sender == "dpop":
        r = DPoPResource().start()
    else:
        cert, key = make_pair(str(tmp_path), "resource", ["127.0.0.1"])
        r = DPoPResource(tls=(cert, key, fapi_pki.crt), bearer=True).start()
        r.server_cert = cert
    yield r
    r.stop()


def fapi_env(login_env, a, rs, tmp_path, **kw):
    v = getattr(a, "variant", VARIANTS[0])
    client = "    profile: fapi2" + ("\n    dpop: true" if v.dpop else "")
    issuer = "profile: fapi2"
    if v.certificate:
        kw["client_tls"] = a.client_certificate
        issuer += f', ca_file: "{a.mtls.cert}"'
    if v.sender == "mtls":
        crt, key, _ = a.client_certificate
        rs.gateway_upstream = (f'{{ url: "https://127.0.0.1:{rs.port}", tls: {{ ca_file: "{rs.server_cert}", '
                               f'cert_file: "{crt}", key_file: "{key}" }} }}')
    return login_env(a, rs, tmp_path, auth="tls_client_auth" if v.auth == "mtls" else "private_key_jwt",
                     extra_client=client, extra_route=API_ROUTE_FORWARDING_TOKEN, issuer_options=issuer,
                     assertion_audience="issuer", workers=1, **kw)


def resource_calls(rs):
    return [(c["status"], c["error"]) for c in rs.checked]


def expect_refused(e, a, rs, callback, before_tokens=None):
    """The callback is answered with the sign-in failure page and no session: the resource is
    never called, and the next request still has to log in."""
    r = e.get(callback)
    assert r.status_code in (400, 403), (r.status_code, r.text)
    assert e.session_cookie() is None
    assert rs.checked == []
    if before_tokens is not None:
        assert len(a.token_requests) == before_tokens, "the code must not be used"
    return r


def happy(e, rs):
    r = e.login("/api/accounts")
    assert r.status_code == 200, (r.text, e.gw.output()[-3000:])
    assert resource_calls(rs) == [(200, None)]
    return r


def test_happy_path(login_env, fapi_as, rs, tmp_path):
    """With DPoP: nonces at the AS (token endpoint) and at the resource, as the suite uses
    them. With mutual TLS: the token is bound to the client's certificate, which the resource
    checks on its connection from the gateway."""
    v = fapi_as.variant
    if v.dpop:
        fapi_as.token_dpop_nonce = "as-nonce-1"
        rs.nonce = "rs-nonce-1"
    e = fapi_env(login_env, fapi_as, rs, tmp_path)
    r = e.login("/api/accounts")
    assert r.status_code == 200, (r.text, e.gw.output()[-3000:])
    token_calls = [(t["grant_type"], t["status"], t["error"]) for t in fapi_as.token_requests]
    if v.dpop:
        assert resource_calls(rs) == [(401, "use_dpop_nonce"), (200, None)]
        assert r.json()["proof"]["nonce"] == "rs-nonce-1"
        assert token_calls == [("authorization_code", 400, "use_dpop_nonce"), ("authorization_code", 200, None)]
        assert fapi_as.last_headers("/token").get("dpop")
    else:
        assert resource_calls(rs) == [(200, None)]
        assert token_calls == [("authorization_code", 200, None)]
    if v.certificate:
        # The aliases were called, each with the client's certificate.
        assert {r["path"] for r in fapi_as.mtls.requests} >= {"/par", "/token"}
        assert fapi_as.mtls.refusals == []
    # Pushed (PAR) and signed (JAR), with PKCE S256 and the Message Signing limits (FAPI2MS
    # §5.3.1: nbf present, exp − nbf ≤ 60 min, aud the issuer as a string).
    pushed = [o for o in fapi_as.request_objects if o["via"] == "par" and o["error"] is None]
    assert len(pushed) == 1, fapi_as.request_objects
    c = pushed[0]["claims"]
    assert c["code_challenge_method"] == "S256" and c["code_challenge"]
    assert "nbf" in c and 0 < c["exp"] - c["nbf"] <= 3600 and c["aud"] == fapi_as.issuer
    assert pushed[0]["header"]["alg"] in ("PS256", "ES256", "EdDSA")


def test_happy_path_no_dpop_nonce(login_env, fapi_as, rs, tmp_path):
    e = fapi_env(login_env, fapi_as, rs, tmp_path)
    happy(e, rs)
    assert [t["status"] for t in fapi_as.token_requests] == [200]


def test_discovery_issuer_mismatch(login_env, fapi_as, rs, tmp_path):
    fapi_as.metadata_issuer = fapi_as.issuer + "/other"
    e = fapi_env(login_env, fapi_as, rs, tmp_path, ready=False)
    r = e.get("/api/accounts")
    # No login is started with metadata that names another issuer.
    assert r.status_code == 503, r.text
    assert fapi_as.authorizations == [] and fapi_as.par_requests == {}


# --- the ID token -----------------------------------------------------------------------------

# module: (the fault, what the gateway's log says it refused)
ID_TOKEN_FAULTS = {
    "invalid-iss": ({"claims": {"iss": "https://issuer.invalid"}}, "issuer_mismatch (iss)"),
    "invalid-missing-iss": ({"claims": {"iss": None}}, "missing_claim (iss)"),
    "invalid-aud": ({"claims": {"aud": "another-client"}}, "audience_mismatch (aud)"),
    "invalid-missing-aud": ({"claims": {"aud": None}}, "missing_claim (aud)"),
    # OIDC Core §3.1.3.7: another audience beside the client needs azp = the client.
    "invalid-secondary-aud": ({"claims": {"aud": ["web", "another-client"]}}, "audience_mismatch (azp)"),
    "invalid-null-alg": ({"alg": "none"}, "algorithm_not_allowed (alg)"),
    "invalid-alternate-alg": ({"alg": "RS256"}, "algorithm_not_allowed (alg): RS256"),
    "invalid-expired-exp": ({"claims": {"exp": "EXPIRED"}}, "expired (exp)"),
    "invalid-missing-exp": ({"claims": {"exp": None}}, "missing_claim (exp)"),
    "invalid-nonce": ({"claims": {"nonce": "not-the-nonce-sent"}}, "invalid_claim (nonce)"),
    "invalid-missing-nonce": ({"claims": {"nonce": None}}, "invalid_claim (nonce)"),
}


def module_fault(faults, module):
    """(fault, logged reason) of a module; "EXPIRED" becomes an hour ago, past any leeway."""
    fault, reason = faults[module]
    if fault.get("claims", {}).get("exp") == "EXPIRED":
        fault = {"claims": {"exp": int(time.time()) - 3600}}
    return fault, reason


@pytest.mark.parametrize("module", list(ID_TOKEN_FAULTS))
def test_id_token_fault_is_refused(login_env, fapi_as, rs, tmp_path, module):
    fapi_as.id_token_fault, reason = module_fault(ID_TOKEN_FAULTS, module)
    e = fapi_env(login_env, fapi_as, rs, tmp_path)
    expect_refused(e, fapi_as, rs, e.to_callback("/api/accounts"))
    assert e.gw.logged(f"ID token refused: {reason}")


def test_valid_aud_as_array(login_env, fapi_as, rs, tmp_path):
    fapi_as.id_token_fault = {"claims": {"aud": ["web"]}}
    happy(fapi_env(login_env, fapi_as, rs, tmp_path), rs)


# --- the authorization response -----------------------------------------------------------------

def edit_query(callback, name, value):
    base, _, query = callback.partition("?")
    pairs = [p for p in query.split("&") if not p.startswith(name + "=")]
    if value is not None:
        pairs.append(f"{name}={value}")
    return base + "?" + "&".join(pairs)


def test_invalid_authorization_response_iss(login_env, fapi_as, rs, tmp_path):
    e = fapi_env(login_env, fapi_as, rs, tmp_path)
    before = len(fapi_as.token_requests)
    r = expect_refused(e, fapi_as, rs, edit_query(e.to_callback("/api/accounts"), "iss", "https%3A%2F%2Fevil.example"),
                       before)
    assert "unexpected server" in r.text


def test_remove_authorization_response_iss(login_env, fapi_as, rs, tmp_path):
    """The metadata does not promise iss; profile: fapi2 requires it all the same."""
    e = fapi_env(login_env, fapi_as, rs, tmp_path)
    before = len(fapi_as.token_requests)
    r = expect_refused(e, fapi_as, rs, edit_query(e.to_callback("/api/accounts"), "iss", None), before)
    assert "unexpected server" in r.text


def test_without_the_profile_a_missing_iss_follows_the_metadata(login_env, authserver_factory, fapi_pki, tmp_path):
    """The contrast: the same client without profile: fapi2 takes a response without iss when
    the AS never promised one (RFC 9207 §2.4)."""
    a = make_fapi_as(authserver_factory, VARIANTS[0], fapi_pki)
    rs = DPoPResource().start()
    e = login_env(a, rs, tmp_path, extra_client="    dpop: true", extra_route=API_ROUTE_FORWARDING_TOKEN,
                  issuer_options="profile: fapi2", workers=1)
    try:
        r = e.get(edit_query(e.to_callback("/api/accounts"), "iss", None))
        assert r.status_code == 302, r.text
    finally:
        rs.stop()


def test_ensure_authorization_response_with_invalid_state_fails(login_env, fapi_as, rs, tmp_path):
    e = fapi_env(login_env, fapi_as, rs, tmp_path)
    before = len(fapi_as.token_requests)
    expect_refused(e, fapi_as, rs, edit_query(e.to_callback("/api/accounts"), "state", "forged-state"), before)


def test_ensure_authorization_response_with_missing_state_fails(login_env, fapi_as, rs, tmp_path):
    e = fapi_env(login_env, fapi_as, rs, tmp_path)
    before = len(fapi_as.token_requests)
    expect_refused(e, fapi_as, rs, edit_query(e.to_callback("/api/accounts"), "state", None), before)


# --- the token endpoint's answer --------------------------------------------------------------

def test_token_endpoint_response_without_expires_in(login_env, fapi_as, rs, tmp_path):
    fapi_as.token_response_fault = {"expires_in": None}
    happy(fapi_env(login_env, fapi_as, rs, tmp_path), rs)


@pytest.mark.parametrize("case", [str.lower, str.upper], ids=["lower", "upper"])
def test_token_type_case_insensitivity(login_env, fapi_as, rs, tmp_path, case):
    fapi_as.token_response_fault = {"token_type": case("DPoP" if fapi_as.variant.dpop else "Bearer")}
    happy(fapi_env(login_env, fapi_as, rs, tmp_path), rs)
