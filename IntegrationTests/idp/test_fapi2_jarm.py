"""JARM (FAPI 2.0 Message Signing §5.4) at tokengate's `profile: fapi2` client with
`response_mode: jwt`: the Message Signing RP plan's JARM modules, each fault injected by the
project's test AS into the `response` JWT it redirects with. A response that does not verify
ends the login before its code is used; so does a plain response to a client that asked for a
JWT (a downgrade), and plain parameters slipped in beside the JWT."""
import base64
import json
from urllib.parse import quote

import pytest

from support.dpop_resource import rs  # noqa: F401 (a fixture)
from test_fapi2_client import (VARIANTS, expect_refused, fapi_as, fapi_pki, module_fault,  # noqa: F401 (fixtures)
                               resource_calls)
from test_login import API_ROUTE_FORWARDING_TOKEN, login_env  # noqa: F401 (a fixture)
from support.authserver.server import redirect_params

JARM_CLIENT = "    dpop: true\n    profile: fapi2\n    response_mode: jwt"


@pytest.fixture
def fapi_variant():
    """JARM is independent of the sender constraint: the private_key_jwt × dpop variant."""
    return VARIANTS[0]


def jarm_env(login_env, a, rs, tmp_path, **kw):
    return login_env(a, rs, tmp_path, extra_client=JARM_CLIENT, extra_route=API_ROUTE_FORWARDING_TOKEN,
                     issuer_options="profile: fapi2", assertion_audience="issuer", workers=1, **kw)


def test_jarm_happy_path(login_env, fapi_as, rs, tmp_path):
    e = jarm_env(login_env, fapi_as, rs, tmp_path)
    callback = e.to_callback("/api/accounts")
    # The AS was asked for JARM inside the pushed request object, and the browser carries only
    # the signed response.
    pushed = [o for o in fapi_as.request_objects if o["via"] == "par" and o["error"] is None]
    assert pushed[-1]["claims"]["response_mode"] == "jwt"
    assert list(redirect_params(callback)) == ["response"]
    r = e.get(callback)
    assert r.status_code == 302, (r.text, e.gw.output()[-3000:])
    assert e.get("/api/accounts").status_code == 200
    assert resource_calls(rs) == [(200, None)]


# module: (the fault, what the gateway's log says it refused)
JARM_FAULTS = {
    "jarm-invalid-iss": ({"claims": {"iss": "https://issuer.invalid"}}, "issuer_mismatch (iss)"),
    "jarm-missing-iss": ({"claims": {"iss": None}}, "missing_claim (iss)"),
    "jarm-invalid-aud": ({"claims": {"aud": "another-client"}}, "audience_mismatch (aud)"),
    "jarm-missing-aud": ({"claims": {"aud": None}}, "missing_claim (aud)"),
    "jarm-expired-exp": ({"claims": {"exp": "EXPIRED"}}, "expired (exp)"),
    "jarm-missing-exp": ({"claims": {"exp": None}}, "missing_claim (exp)"),
    "jarm-invalid-signature": ({"foreign_key": True}, "bad_signature"),
    "jarm-null-alg": ({"alg": "none"}, "algorithm_not_allowed (alg)"),
    "jarm-alternate-alg": ({"alg": "RS256"}, "algorithm_not_allowed (alg): RS256"),
}


@pytest.mark.parametrize("module", list(JARM_FAULTS))
def test_jarm_fault_is_refused(login_env, fapi_as, rs, tmp_path, module):
    fapi_as.jarm_fault, reason = module_fault(JARM_FAULTS, module)
    e = jarm_env(login_env, fapi_as, rs, tmp_path)
    callback = e.to_callback("/api/accounts")
    before = len(fapi_as.token_requests)
    r = expect_refused(e, fapi_as, rs, callback, before)
    assert "not valid" in r.text
    assert e.gw.logged(f"response JWT refused: {reason}"), e.gw.output()[-3000:]


def test_jarm_swapped_state_is_refused(login_env, fapi_as, rs, tmp_path):
    """A response JWT for another login of this browser: signed, but not this login's answer."""
    fapi_as.jarm_fault = {"claims": {"state": "another-login"}}
    e = jarm_env(login_env, fapi_as, rs, tmp_path)
    expect_refused(e, fapi_as, rs, e.to_callback("/api/accounts"), len(fapi_as.token_requests))


def test_a_plain_response_to_a_jarm_client_is_a_downgrade(login_env, fapi_as, rs, tmp_path):
    """The attacker strips the JWT and sends the code and state it read from it in the clear."""
    e = jarm_env(login_env, fapi_as, rs, tmp_path)
    callback = e.to_callback("/api/accounts")
    claims = _claims(redirect_params(callback)["response"])
    base = callback.partition("?")[0]
    plain = f"{base}?code={quote(claims['code'])}&state={quote(claims['state'])}&iss={quote(fapi_as.issuer)}"
    before = len(fapi_as.token_requests)
    expect_refused(e, fapi_as, rs, plain, before)
    assert e.gw.logged("response JWT refused: response_mode jwt: expected only a response JWT")


def test_plain_parameters_beside_the_jwt_are_refused(login_env, fapi_as, rs, tmp_path):
    e = jarm_env(login_env, fapi_as, rs, tmp_path)
    callback = e.to_callback("/api/accounts")
    before = len(fapi_as.token_requests)
    expect_refused(e, fapi_as, rs, callback + "&code=injected", before)


def test_an_error_comes_signed_too(login_env, fapi_as, rs, tmp_path):
    """An AS refusal arrives as a signed error (JARM §2.2), shown as the AS's error."""
    fapi_as.jarm_fault = {"claims": {"code": None, "error": "access_denied"}}
    e = jarm_env(login_env, fapi_as, rs, tmp_path)
    r = expect_refused(e, fapi_as, rs, e.to_callback("/api/accounts"), len(fapi_as.token_requests))
    assert r.status_code == 403 and "access_denied" in r.text


def _claims(jwt):
    part = jwt.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def test_a_response_signed_with_an_unknown_key_keeps_the_login(login_env, fapi_as, rs, tmp_path):
    """A kid the AS does not publish, even after the gateway fetched its keys again: no verdict
    on the response (503 with a retry), the code not spent, the pending login kept."""
    fapi_as.jarm_fault = {"kid": "not-published"}
    e = jarm_env(login_env, fapi_as, rs, tmp_path)
    callback = e.to_callback("/api/accounts")
    before, fetched = len(fapi_as.token_requests), fapi_as.hits.get("/jwks.json", 0)
    r = e.get(callback)
    assert r.status_code == 503, r.text
    assert len(fapi_as.token_requests) == before and rs.checked == []
    assert fapi_as.hits.get("/jwks.json", 0) == fetched + 1
    assert e.gw.logged("response JWT: key_not_found")
    # The same callback again finds the login still there (a spent one would be a 400).
    again = e.get(callback)
    assert again.status_code == 503, (again.status_code, again.headers.get("Location"), e.gw.output()[-1500:])
