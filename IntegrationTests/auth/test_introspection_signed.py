"""Signed introspection answers (RFC 9701) from the real test AS: with `introspection.signed:
true` (always with `profile: fapi2`) the gateway asks for `application/token-introspection+jwt`
and takes only a JWT signed by the issuer's published keys, typed token-introspection+jwt,
from the issuer, for the gateway's own client, recently issued. Every forgery — another key,
alg none, another audience or issuer, no typ, a plain JSON answer — is no answer about the
token: 503, nothing cached, the token never admitted."""
import pytest
import requests

from support.gateway import Gateway
from test_introspection_idp import GW_SECRET, config

OPQ_SECRET = "opq-secret-0123456789abcdef0123456789ab"


@pytest.fixture
def signed(authserver, upstream):
    a = authserver
    a.add_client("opq", client_secret=OPQ_SECRET, scopes=["orders:read"], audience=["api"],
                 access_token_format="opaque")
    a.add_client("tokengate", client_secret=GW_SECRET, token_endpoint_auth_method="client_secret_basic",
                 scopes=["openid"])
    text = (config(a, f'auth: client_secret_basic, secret: "{GW_SECRET}"').replace("@UPSTREAM@", str(upstream.port))
            .replace("introspection: { client: gw }", "introspection: { client: gw, signed: true, cache_ttl: 1s }"))
    g = Gateway(text)
    g.start()
    yield a, g
    g.stop()


def token(a):
    return a.client_credentials_token("opq", scope="orders:read", secret=OPQ_SECRET)["access_token"]


def get(g, tok):
    return requests.get(g.url("/api/orders/1"), headers={"Authorization": f"Bearer {tok}"}, timeout=10)


def test_a_signed_answer_admits_the_token(signed):
    a, g = signed
    r = get(g, token(a))
    assert r.status_code == 200, r.text + g.output()[-2000:]
    assert "token-introspection+jwt" in a.last_headers("/introspection").get("accept", "")


FORGERIES = {
    "another key": {"foreign_key": True},
    "alg none": {"alg": "none"},
    "another audience": {"claims": {"aud": "someone-else"}},
    "another issuer": {"claims": {"iss": "https://issuer.invalid"}},
    "no typ": {"typ": "JWT"},
    "no token_introspection": {"claims": {"token_introspection": None}},
    "an old answer": {"claims": {"iat": 1_000_000_000}},
}


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_a_forged_signed_answer_is_refused(signed, forgery):
    a, g = signed
    a.introspection_jwt_fault = FORGERIES[forgery]
    tok = token(a)
    r = get(g, tok)
    assert r.status_code == 503, r.text
    assert r.json()["error"] == "temporarily_unavailable"
    assert g.logged("signed introspection answer refused")
    # Nothing was cached: once the AS answers properly, the same token is admitted.
    a.introspection_jwt_fault = None
    assert get(g, tok).status_code == 200


def test_a_plain_json_answer_is_refused(signed, monkeypatch):
    a, g = signed
    monkeypatch.setattr(a, "_signed_introspection", lambda req, resp: resp)  # the AS ignores Accept
    r = get(g, token(a))
    assert r.status_code == 503, r.text
    assert g.logged("signed introspection answer refused")


def test_an_answer_signed_with_a_rotated_in_key_gets_one_refetch(signed):
    """The AS rotates its signing key after the gateway loaded the JWKS: the answer names a
    kid the gateway does not hold yet, so the keys are fetched again once and the answer
    verifies — as for a token signed with a new key."""
    a, g = signed
    assert get(g, token(a)).status_code == 200
    fetched = a.hits.get("/jwks.json", 0)
    a.rotate_key("ES256", keep_old=True)
    r = get(g, token(a))
    assert r.status_code == 200, r.text + g.output()[-2000:]
    assert a.hits.get("/jwks.json", 0) == fetched + 1
