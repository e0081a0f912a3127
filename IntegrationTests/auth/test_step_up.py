"""Step-up on token routes (RFC 9470, docs/identity.md): a route's `require.acr` and
`require.max_age`, tried with tokens the test's JWKS issuer mints: a token whose `acr` is
not listed, or whose `auth_time` is missing, too old or ahead of the clock past the leeway, gets 401 with the
`insufficient_user_authentication` challenge naming `acr_values` and `max_age`; a token that
also lacks a scope gets 403 `insufficient_scope` first; a connection's remembered admission
ends with `max_age`; check-config refuses the rules where they cannot apply."""
import http.client
import subprocess
import time

import pytest
import requests

from support.gateway import BIN
from support.waiting import sleep_into_second
from test_bearer import ec_key, idp, token as mint  # noqa: F401 — idp is a fixture


def config(upstream, idp, require="{ scopes: [orders:read], acr: [mfa, phr], max_age: 300 }"):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], algorithms: [ES256] }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}", timeout: 5s }}
routes:
  - name: transfers
    match: {{ path_prefix: /transfers/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    require: {require}
"""


def bearer(idp, **claims):  # noqa: F811
    return {"Authorization": "Bearer " + mint(idp.keys[0], **claims)}


@pytest.fixture
def gw(gateway_factory, upstream, idp):  # noqa: F811
    return gateway_factory(config(upstream, idp))


LEVEL = ('Bearer realm="tokengate", error="insufficient_user_authentication", '
         'error_description="a different authentication level is required", '
         'acr_values="mfa phr", max_age="300"')
FRESHNESS = ('Bearer realm="tokengate", error="insufficient_user_authentication", '
             'error_description="more recent authentication is required", '
             'acr_values="mfa phr", max_age="300"')


@pytest.mark.parametrize("claims,challenge", [
    ({"acr": None, "auth_time": "now"}, LEVEL),
    ({"acr": "pwd", "auth_time": "now"}, LEVEL),
    ({"acr": "mfa", "auth_time": None}, FRESHNESS),
    ({"acr": "mfa", "auth_time": -400}, FRESHNESS),
    # OIDC Core §2: auth_time is when the user authenticated; an hour ahead is no recent one.
    ({"acr": "mfa", "auth_time": 3600}, FRESHNESS),
])
def test_a_token_short_of_the_routes_authentication_gets_the_rfc_9470_challenge(
        gw, upstream, idp, claims, challenge):  # noqa: F811
    now = int(time.time())
    over = {k: (now if v == "now" else now + v if isinstance(v, int) else v) for k, v in claims.items()}
    r = requests.get(gw.url("/transfers/1"), headers=bearer(idp, **over), timeout=5)
    assert r.status_code == 401
    assert r.headers["WWW-Authenticate"] == challenge
    assert r.json()["error"] == "insufficient_user_authentication"
    assert not any(x["path"].startswith("/transfers/") for x in upstream.requests)


def test_a_strong_fresh_token_goes_through(gw, upstream, idp):  # noqa: F811
    for acr in ("mfa", "phr"):
        r = requests.get(gw.url("/transfers/2"), headers=bearer(idp, acr=acr, auth_time=int(time.time()) - 299),
                         timeout=5)
        assert r.status_code == 200
    # An auth_time a little ahead (clock skew, within the issuer's 30 s leeway) is accepted.
    r = requests.get(gw.url("/transfers/2"), headers=bearer(idp, acr="mfa", auth_time=int(time.time()) + 20), timeout=5)
    assert r.status_code == 200, r.text


def test_a_missing_scope_is_403_before_any_step_up(gw, idp):  # noqa: F811
    r = requests.get(gw.url("/transfers/3"), headers=bearer(idp, scope="orders:write", acr=None), timeout=5)
    assert r.status_code == 403
    assert 'error="insufficient_scope"' in r.headers["WWW-Authenticate"]


def test_a_remembered_admission_ends_with_max_age(gateway_factory, upstream, idp):  # noqa: F811
    gw = gateway_factory(config(upstream, idp, require="{ acr: [mfa], max_age: 2 }"))
    auth_time = int(time.time())
    headers = bearer(idp, acr="mfa", auth_time=auth_time)
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=5)
    try:
        conn.request("GET", "/transfers/4", headers=headers)
        first = conn.getresponse()
        first.read()
        assert first.status == 200
        sleep_into_second(auth_time, 3)
        # The same token on the same connection: past max_age now.
        conn.request("GET", "/transfers/5", headers=headers)
        second = conn.getresponse()
        second.read()
        assert second.status == 401
        assert 'max_age="2"' in second.getheader("WWW-Authenticate")
    finally:
        conn.close()


@pytest.mark.parametrize("route,message", [
    ("auth: bearer\n    issuers: [one]\n    require: { any_of: [{ acr: [mfa] }, { scopes: [a] }] }",
     "acr and max_age apply to the whole route"),
    ("auth: bearer\n    issuers: [one]\n    require: { max_age: 1500ms }", "must be a whole number of seconds"),
    ("auth: bearer\n    issuers: [one]\n    require: { acr: [] }", "is empty"),
    ("auth: login\n    client: web\n    require: { any_of: [{ acr: [mfa] }, { scopes: [a] }] }",
     "acr and max_age apply to the whole route"),
])
def test_check_config_refuses_step_up_where_it_cannot_apply(upstream, idp, tmp_path, route, message):  # noqa: F811
    text = f"""
listen: 127.0.0.1:1
session: {{ keys: ["q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE="] }}
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], algorithms: [ES256] }}
clients:
  web: {{ issuer: one, client_id: web, auth: client_secret_basic, secret: "0123456789abcdef0123456789abcdef" }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - name: r
    match: {{ path_prefix: / }}
    upstream: app
    {route}
"""
    path = tmp_path / "tokengate.yaml"
    path.write_text(text)
    r = subprocess.run([BIN, "check-config", str(path)], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    assert message in r.stdout + r.stderr, r.stdout + r.stderr


def test_check_config_warns_that_max_age_needs_auth_time_in_access_tokens(upstream, idp, tmp_path):  # noqa: F811
    path = tmp_path / "tokengate.yaml"
    path.write_text(config(upstream, idp).replace("{PORT}", "1").replace("{ADMIN}", "2"))
    r = subprocess.run([BIN, "check-config", str(path)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout + r.stderr
    assert "routes[0].require.max_age" in out and "carry auth_time only when their AS puts it there" in out, out
    # Without max_age, no such warning.
    path.write_text(config(upstream, idp, require="{ acr: [mfa] }").replace("{PORT}", "1").replace("{ADMIN}", "2"))
    r = subprocess.run([BIN, "check-config", str(path)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and "auth_time" not in r.stdout + r.stderr


def test_a_grpc_call_short_of_the_routes_authentication_is_unauthenticated_with_the_challenge(
        gateway_factory, upstream, idp):  # noqa: F811
    """gRPC answers the refusal in its own form: UNAUTHENTICATED, the challenge in its metadata."""
    from test_grpc_refusals import metadata, rpc
    text = config(upstream, idp).replace("listen: 127.0.0.1:{PORT}", "listen: { address: 127.0.0.1:{PORT}, http2: true }")
    text = text.replace("path_prefix: /transfers/", "path_prefix: /pkg.Transfers/")
    gw = gateway_factory(text)
    token = mint(idp.keys[0], acr="pwd", auth_time=int(time.time()))
    err = rpc(gw, "/pkg.Transfers/Send", metadata=[("authorization", "Bearer " + token)])
    import grpc
    assert err.code() == grpc.StatusCode.UNAUTHENTICATED, (err.code(), err.details())
    assert 'error="insufficient_user_authentication"' in metadata(err)["www-authenticate"]
    assert 'acr_values="mfa phr"' in metadata(err)["www-authenticate"]


def test_a_dpop_token_short_of_the_routes_authentication_is_challenged_on_the_dpop_scheme(
        gateway_factory, upstream, idp):  # noqa: F811
    from support.dpop_client import DPoPKey
    from test_dpop import bound_token
    text = config(upstream, idp).replace("auth: bearer", "auth: dpop").replace(
        "admin_listen:", "public_url: http://127.0.0.1:{PORT}\nadmin_listen:")
    gw = gateway_factory(text)
    key = DPoPKey()
    token = bound_token(idp, key, acr="mfa", auth_time=int(time.time()) - 301)
    url = gw.url("/transfers/6")
    r = requests.get(url, headers={"Authorization": "DPoP " + token, "DPoP": key.proof("GET", url, token)},
                     timeout=5)
    assert r.status_code == 401
    challenge = r.headers["WWW-Authenticate"]
    assert challenge.startswith("DPoP ")
    assert 'error="insufficient_user_authentication"' in challenge and 'max_age="300"' in challenge
    assert 'algs="' in challenge
    # Fresh enough: through.
    token = bound_token(idp, key, acr="mfa", auth_time=int(time.time()))
    r = requests.get(url, headers={"Authorization": "DPoP " + token, "DPoP": key.proof("GET", url, token)},
                     timeout=5)
    assert r.status_code == 200


# Int64's ends and just past the NumericDate window (0 … 9999-12-31): a signed number the
# step-up check once subtracted from the clock, trapping the process with every worker.
EXTREMES = [-9223372036854775808, -9223372036000000000, 9223372036854775807, -1, 253402300800]


@pytest.mark.parametrize("claim", ["auth_time", "exp", "nbf", "iat"])
@pytest.mark.parametrize("value", EXTREMES)
def test_a_date_claim_outside_the_window_is_refused_and_the_gateway_lives(gw, upstream, idp, claim, value):  # noqa: F811
    now = int(time.time())
    claims = {"acr": "mfa", "auth_time": now, claim: value}
    r = requests.get(gw.url("/transfers/9"), headers=bearer(idp, **claims), timeout=5)
    # Refused where the token is admitted (RFC 6750 §3.1), before any step-up arithmetic.
    assert r.status_code == 401, r.text
    assert 'error="invalid_token"' in r.headers["WWW-Authenticate"]
    assert str(value) not in r.text
    assert not any(x["path"] == "/transfers/9" for x in upstream.requests)
    # Every worker still serves.
    for _ in range(4):
        ok = requests.get(gw.url("/transfers/8"), headers=bearer(idp, acr="mfa", auth_time=now), timeout=5)
        assert ok.status_code == 200, ok.text
    assert gw.proc.poll() is None
