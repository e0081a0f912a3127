"""OpenID Connect Back-Channel Logout 1.0 at the gateway: the AS posts a logout token signed
with its key; every session of that user (sub) or AS session (sid) ends. Attacker-side: every
§2.6 rule broken is refused with 400, and a replayed token too."""
import secrets
import time

import pytest
import requests

from support.gateway import sent_headers as sent
from support.waiting import sleep_into_second
from test_login import LoginEnv, login_as  # noqa: F401 — fixture

EVENT = "http://schemas.openid.net/event/backchannel-logout"


@pytest.fixture
def env(login_as, upstream, tmp_path):  # noqa: F811
    e = LoginEnv(login_as, upstream, tmp_path)
    yield e
    e.stop()


def logout_token(a, **over):
    claims = {"iss": a.issuer, "aud": "web", "iat": int(time.time()), "jti": secrets.token_hex(8), "events": {EVENT: {}}}
    typ = over.pop("typ", "logout+jwt")
    for k, v in over.items():
        if v is None:
            claims.pop(k, None)
        else:
            claims[k] = v
    return a.sign(claims, alg="RS256", typ=typ)


def post(e, token):
    return requests.post(e.url("/oauth2/backchannel-logout"), data={"logout_token": token}, timeout=10)


def test_backchannel_logout_by_sub_ends_the_session(env):
    r = env.login()
    sub = sent(r)["x-forwarded-user"]
    assert env.get("/still").status_code == 200
    token = logout_token(env.a, sub=sub)
    r = post(env, token)
    assert r.status_code == 200, r.text
    assert r.headers["Cache-Control"] == "no-store"
    r = env.browser.get(env.url("/after"), headers={"Accept": "application/json"}, allow_redirects=False, timeout=10)
    assert r.status_code == 401
    # The same token again: refused (a logout token is good once).
    r = post(env, token)
    logged_out = time.time()
    assert r.status_code == 400 and r.json()["error"] == "invalid_request"
    # A new login after the logout is a new session, not caught by it. (Session start times
    # are in seconds, and one begun in the logout's second is ended too: the safe side.)
    sleep_into_second(logged_out, 1)
    env.browser = requests.Session()
    assert env.login().status_code == 200


def test_backchannel_logout_only_ends_that_users_sessions(env, login_as):  # noqa: F811
    env.login(user="alice")
    alice = env.browser
    env.browser = requests.Session()
    r = env.login(user="bob")
    bob_sub = sent(r)["x-forwarded-user"]
    assert post(env, logout_token(login_as, sub=bob_sub)).status_code == 200
    assert env.get("/bob").status_code == 302
    env.browser = alice
    assert env.get("/alice").status_code == 200


@pytest.mark.parametrize("breakage", [
    {"nonce": "n"}, {"events": None}, {"events": {"other": {}}}, {"sub": None, "sid": None},
    {"jti": None}, {"aud": "another-client"}, {"iat": 1}, {"typ": "at+jwt"}, {"iss": "https://evil.example"},
])
def test_invalid_logout_tokens_are_refused(env, breakage):
    r = env.login()
    sub = sent(r)["x-forwarded-user"]
    over = {"sub": sub}
    over.update(breakage)
    r = post(env, logout_token(env.a, **over))
    assert r.status_code == 400 and r.json()["error"] == "invalid_request", (breakage, r.text)
    assert env.get("/still-in").status_code == 200


def test_a_logout_token_not_signed_by_the_as_is_refused(env):
    r = env.login()
    sub = sent(r)["x-forwarded-user"]
    from cryptojwt.jwk.rsa import new_rsa_key
    from cryptojwt.jws.jws import JWS
    import json
    rogue = new_rsa_key(key_size=2048, kid=env.a.keys.current_kid("RS256"))
    claims = {"iss": env.a.issuer, "aud": "web", "iat": int(time.time()), "jti": "x", "events": {EVENT: {}}, "sub": sub}
    forged = JWS(json.dumps(claims), alg="RS256").sign_compact([rogue], protected={"typ": "logout+jwt", "kid": rogue.kid})
    assert post(env, forged).status_code == 400
    assert requests.post(env.url("/oauth2/backchannel-logout"), data={}, timeout=10).status_code == 400
    assert requests.get(env.url("/oauth2/backchannel-logout"), timeout=10).status_code == 405
    assert env.get("/still-in").status_code == 200
