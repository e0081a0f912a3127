"""Dynamic client registration (RFC 7591) at tokengate's authorization server, for MCP clients
without a metadata document: a public client registers its redirect URIs, signs its user in
through the code flow, and gets tokens; its user sees the consent page every time (nothing
vouches for a registered client), even after consenting and even with `consent: false`. From
the attacker's side: metadata with a secret, keys, a bad redirect URI, a body too large or not
JSON; an unknown id; registration off; and the per-address limit."""
import requests

from test_authorization_server_login import WEB_REDIRECT, Env, pkce
from test_login import login_as, login_env  # noqa: F401 — fixtures


def register(env, **metadata):
    body = {"redirect_uris": [WEB_REDIRECT], "client_name": "Old agent",
            "grant_types": ["authorization_code", "refresh_token"], "token_endpoint_auth_method": "none"}
    body.update(metadata)
    return requests.post(env.issuer + "/oauth2/as/register", json={k: v for k, v in body.items() if v is not None},
                         timeout=10)


def test_a_registered_client_signs_in_and_is_asked_every_time(login_env, login_as, upstream, tmp_path):  # noqa: F811
    env = Env(login_env, login_as, upstream, tmp_path, registration="registration: true")
    try:
        meta = requests.get(env.issuer + "/.well-known/oauth-authorization-server", timeout=5).json()
        assert meta["registration_endpoint"] == env.issuer + "/oauth2/as/register"
        r = register(env)
        assert r.status_code == 201, r.text
        client = r.json()
        assert client["client_id"].startswith("tg-dcr-") and client["token_endpoint_auth_method"] == "none"
        assert client["redirect_uris"] == [WEB_REDIRECT] and "client_secret" not in client
        env.client_id = client["client_id"]
        code, verifier, q = env.code(redirect_uri=WEB_REDIRECT)
        assert q["iss"] == env.issuer
        tokens = env.redeem(code, verifier, redirect_uri=WEB_REDIRECT)
        assert tokens.status_code == 200, tokens.text
        assert env.call(tokens.json()["access_token"]).status_code == 200
        refreshed = env.token(grant_type="refresh_token", refresh_token=tokens.json()["refresh_token"])
        assert refreshed.status_code == 200, refreshed.text
        # Consented, to an https redirect URI: a document's client would go straight back; a
        # registered one is asked again, and the page says no website vouches for it.
        _, challenge = pkce()
        again = env.login.get(env.authorize_url(challenge, redirect_uri=WEB_REDIRECT))
        assert again.status_code == 200 and "which no website vouches for" in again.text, again.status_code
        assert "calls itself “Old agent”" in again.text
        # What is kept is the metadata as checked: an unknown member the request held is not echoed.
        extra = register(env, software_statement="x" * 100, tos_uri="https://t.example/tos")
        assert extra.status_code == 201 and "software_statement" not in extra.json()
        # An id that was never registered is a page, not a redirect.
        env.client_id = "tg-dcr-" + "A" * 22
        unknown = env.login.get(env.authorize_url(challenge, redirect_uri=WEB_REDIRECT))
        assert unknown.status_code == 400 and "Location" not in unknown.headers
        assert env.token(grant_type="authorization_code", code="x" * 43, redirect_uri=WEB_REDIRECT,
                         code_verifier="v" * 43).status_code == 401
    finally:
        env.host.stop()


def test_every_refusal_of_a_registration(login_env, login_as, upstream, tmp_path):  # noqa: F811
    # A generous limit here: the default's burst of 5 is tried below.
    env = Env(login_env, login_as, upstream, tmp_path, extra_top="rate_limits: { wide: { key: ip, rate: 100/m, burst: 50 } }",
              registration="registration: true, registration_rate_limit: wide")
    try:
        cases = [
            (register(env, token_endpoint_auth_method="client_secret_basic"), "invalid_client_metadata"),
            (register(env, client_secret="s3cret"), "invalid_client_metadata"),
            (register(env, jwks={"keys": []}), "invalid_client_metadata"),
            (register(env, client_id="https://evil.example/c.json"), "invalid_client_metadata"),
            (register(env, grant_types=["password"]), "invalid_client_metadata"),
            (register(env, grant_types=["urn:ietf:params:oauth:grant-type:jwt-bearer"]), "invalid_client_metadata"),
            (register(env, redirect_uris=["http://evil.example/cb"]), "invalid_redirect_uri"),
            (register(env, redirect_uris=["https://client.example/cb#x"]), "invalid_redirect_uri"),
            (register(env, redirect_uris=None), "invalid_redirect_uri"),
            (requests.post(env.issuer + "/oauth2/as/register", data="{not json", timeout=5,
                           headers={"Content-Type": "application/json"}), "invalid_client_metadata"),
            (requests.post(env.issuer + "/oauth2/as/register", data={"redirect_uris": WEB_REDIRECT}, timeout=5),
             "invalid_client_metadata"),
        ]
        for r, code in cases:
            assert (r.status_code, r.json()["error"]) == (400, code), (code, r.status_code, r.text)
        big = register(env, client_name="x" * 6000)
        assert big.status_code == 413, big.status_code
    finally:
        env.host.stop()


def test_the_default_limit_per_address(login_env, login_as, upstream, tmp_path):  # noqa: F811
    env = Env(login_env, login_as, upstream, tmp_path, registration="registration: true")
    try:
        # A burst of 5, then 429 with Retry-After.
        statuses = [register(env).status_code for _ in range(5)]
        assert statuses == [201] * 5, statuses
        over = register(env)
        assert over.status_code == 429 and "Retry-After" in over.headers, over.status_code
    finally:
        env.host.stop()


def test_registration_is_off_unless_asked_for(env):
    assert register(env).status_code == 404
    meta = requests.get(env.issuer + "/.well-known/oauth-authorization-server", timeout=5).json()
    assert "registration_endpoint" not in meta


from test_authorization_server_login import env  # noqa: E402,F401 — fixture
