"""The FAPI 2.0 RP test plan (`fapi2-security-profile-final-client-test-plan` of the OpenID
conformance suite), module by module, against tokengate's `profile: fapi2` client: the suite
itself needs Maven Central and MongoDB, so its AS faults are injected by the project's test AS
(idpyoidc, with PAR, DPoP, PS256/ES256 keys and an RS256 "alternate" key). Each test is named
after its module and expects the suite's outcome: the happy paths end with a DPoP-protected
resource call from the gateway to an upstream that checks the proof (dpop_resource.py); every
other module must end the login before the code is used or the session begins.

Variant: client authentication private_key_jwt × sender constraint dpop (the gateway supports
no mTLS towards the AS)."""
import time

import pytest

from dpop_resource import rs  # noqa: F401 (a fixture)
from test_login import API_ROUTE_FORWARDING_TOKEN, login_env  # noqa: F401 (a fixture)

FAPI_CLIENT = "    dpop: true\n    profile: fapi2"


@pytest.fixture
def fapi_as(authserver_factory):
    # PS256 signs ID tokens; RS256 is the "alternate" algorithm of the invalid-alternate-alg
    # module (its key is published too). The metadata does not promise iss (RFC 9207): the
    # profile requires it anyway.
    return authserver_factory(login="form", dpop=True, algs=("ES256", "PS256", "RS256"), require_par=True,
                              advertise_iss=False, id_token_alg="PS256")


def fapi_env(login_env, a, rs, tmp_path, **kw):
    return login_env(a, rs, tmp_path, extra_client=FAPI_CLIENT, extra_route=API_ROUTE_FORWARDING_TOKEN,
                     issuer_options="profile: fapi2", assertion_audience="issuer", workers=1, **kw)


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
    """DPoP nonces at the AS (token endpoint) and at the resource, as the suite uses them."""
    fapi_as.token_dpop_nonce = "as-nonce-1"
    rs.nonce = "rs-nonce-1"
    e = fapi_env(login_env, fapi_as, rs, tmp_path)
    r = e.login("/api/accounts")
    assert r.status_code == 200, (r.text, e.gw.output()[-3000:])
    assert resource_calls(rs) == [(401, "use_dpop_nonce"), (200, None)]
    assert r.json()["proof"]["nonce"] == "rs-nonce-1"
    token_calls = [(t["grant_type"], t["status"], t["error"]) for t in fapi_as.token_requests]
    assert token_calls == [("authorization_code", 400, "use_dpop_nonce"), ("authorization_code", 200, None)]
    # Pushed (PAR) and signed (JAR), with PKCE S256 and the Message Signing limits (FAPI2MS
    # §5.3.1: nbf present, exp − nbf ≤ 60 min, aud the issuer as a string).
    pushed = [o for o in fapi_as.request_objects if o["via"] == "par" and o["error"] is None]
    assert len(pushed) == 1, fapi_as.request_objects
    c = pushed[0]["claims"]
    assert c["code_challenge_method"] == "S256" and c["code_challenge"]
    assert "nbf" in c and 0 < c["exp"] - c["nbf"] <= 3600 and c["aud"] == fapi_as.issuer
    assert pushed[0]["header"]["alg"] in ("PS256", "ES256", "EdDSA")
    assert fapi_as.last_headers("/token").get("dpop")


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


@pytest.mark.parametrize("module", list(ID_TOKEN_FAULTS))
def test_id_token_fault_is_refused(login_env, fapi_as, rs, tmp_path, module):
    fault, reason = ID_TOKEN_FAULTS[module]
    if fault.get("claims", {}).get("exp") == "EXPIRED":
        fault = {"claims": {"exp": int(time.time()) - 3600}}  # an hour ago, past any leeway
    fapi_as.id_token_fault = fault
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


def test_without_the_profile_a_missing_iss_follows_the_metadata(login_env, fapi_as, rs, tmp_path):
    """The contrast: the same client without profile: fapi2 takes a response without iss when
    the AS never promised one (RFC 9207 §2.4)."""
    e = login_env(fapi_as, rs, tmp_path, extra_client="    dpop: true", extra_route=API_ROUTE_FORWARDING_TOKEN,
                  issuer_options="profile: fapi2", workers=1)
    r = e.get(edit_query(e.to_callback("/api/accounts"), "iss", None))
    assert r.status_code == 302, r.text


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


@pytest.mark.parametrize("said", ["dpop", "DPOP"])
def test_token_type_case_insensitivity(login_env, fapi_as, rs, tmp_path, said):
    fapi_as.token_response_fault = {"token_type": said}
    happy(fapi_env(login_env, fapi_as, rs, tmp_path), rs)
