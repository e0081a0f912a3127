"""A login session that a Shared Signals event revokes (docs/shared-signals.md): with the real
AS and a browser session, a `session-revoked` pushed by the transmitter for the signed-in user
ends that session as a logout does (the next page is sent to sign in, the cookie cleared),
while another user's session goes on; signing in again after the event works."""
import time

import pytest
import requests

from support.gateway import sent_headers as sent
from support.ssf_transmitter import CAEP, Transmitter
from support.waiting import sleep_into_second, wait_for
from test_login import env, login_as, login_env  # noqa: F401 — fixtures


@pytest.fixture
def transmitter():
    t = Transmitter()
    yield t
    t.stop()


def signals_env(login_env, login_as, upstream, tmp_path, transmitter):  # noqa: F811
    """A login gateway with the test transmitter's stream, made and verified."""
    token_file = tmp_path / "ssf-token"
    token_file.write_text(transmitter.management_token)
    extra = f"""shared_signals:
  corp:
    issuer: "{transmitter.issuer}"
    issuers: [as1]
    endpoint_url: "http://127.0.0.1:{{PORT}}/.ssf/events"
    auth: {{ bearer_file: "{token_file}" }}
"""
    env = login_env(login_as, upstream, tmp_path, extra_top=extra)
    wait_for(lambda: transmitter.verifications == [202], timeout=10, what="the stream's verification")
    return env


def test_a_revoked_user_s_session_ends_and_another_s_goes_on(login_env, login_as, upstream, tmp_path,  # noqa: F811
                                                               transmitter):
    env = signals_env(login_env, login_as, upstream, tmp_path, transmitter)
    page = env.login(user="alice")
    assert page.status_code == 200, (page.status_code, page.text[:300], env.gw.output()[-2000:])
    sub = sent(page)["x-forwarded-user"]
    alice = env.browser
    # A second browser, bob's, on the same gateway.
    env.browser = requests.Session()
    env.login(user="bob")
    bob = env.browser
    sleep_into_second(time.time(), 1)  # the event comes in a later second than both logins
    r = transmitter.push(CAEP + "session-revoked", {"format": "iss_sub", "iss": login_as.issuer, "sub": sub})
    assert r.status_code == 202, r.text
    pushed = time.time()
    env.browser = alice
    gone = env.get("/orders/7")
    assert gone.status_code == 302 and "tokengate_session=;" in gone.headers.get("Set-Cookie", "").replace(" ", "")
    env.browser = bob
    assert env.get("/orders/7").status_code == 200
    # Signing in again (a session begun after the event: a later second, since one begun in
    # the event's own second cannot be told to follow it) works.
    sleep_into_second(pushed, 1)
    env.browser = requests.Session()
    assert sent(env.login(user="alice"))["x-forwarded-user"] == sub


def test_a_claims_change_refreshes_the_session_and_it_goes_on(login_env, login_as, upstream, tmp_path,  # noqa: F811
                                                                transmitter):
    env = signals_env(login_env, login_as, upstream, tmp_path, transmitter)
    page = env.login(user="alice")
    assert page.status_code == 200, (page.status_code, page.text[:300])
    sub = sent(page)["x-forwarded-user"]
    refreshes = login_as.refresh_ok_count
    sleep_into_second(time.time(), 1)  # the event comes in a later second than the login
    r = transmitter.push(CAEP + "token-claims-change", {"format": "iss_sub", "iss": login_as.issuer, "sub": sub})
    assert r.status_code == 202, r.text
    # The next request refreshes the session's tokens at the AS and goes on; the one after
    # needs no refresh (its tokens postdate the change).
    old = env.session_cookie()
    r = env.get("/orders/7")
    assert r.status_code == 200 and sent(r)["x-forwarded-user"] == sub, (r.status_code, r.text[:300])
    assert login_as.refresh_ok_count == refreshes + 1
    assert env.session_cookie() != old
    assert env.get("/orders/8").status_code == 200
    assert login_as.refresh_ok_count == refreshes + 1
