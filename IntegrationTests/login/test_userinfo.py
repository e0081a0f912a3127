"""`userinfo: true` on a login client (OIDC Core §5.3) against the real AS (idpyoidc): the
userinfo endpoint is asked at login and after each refresh, with the session's access token
(Bearer, or DPoP-bound with a proof); its claims are merged into the session, so routes can
require and forward claims only userinfo carries; an answer for another `sub` (§5.3.2) ends
the login (or the session); the size is bounded."""
import time

import pytest

from support.gateway import sent_headers as sent
from support.waiting import sleep_into_second
from test_login import LoginEnv

JSON = {"Accept": "application/json"}

# Claims only userinfo carries (the ID token has no "teams").
AUDIT = {"alice": {"teams": ["audit", "ops"]}}

TEAMS_ROUTE = """  - name: audit
    match: { path_prefix: /audit/ }
    upstream: app
    auth: login
    client: web
    require: { claims: { teams: { contains: audit } } }
    headers: { X-Forwarded-User: sub, X-Teams: teams }"""


def make(a, upstream, tmp_path, userinfo=True, **kw):
    return LoginEnv(a, upstream, tmp_path, extra_client="    userinfo: true" if userinfo else "", extra_route=TEAMS_ROUTE, **kw)


@pytest.fixture
def login_as(authserver_factory):
    a = authserver_factory(login="form", rotate_refresh_tokens=True)
    a.userinfo_claims = dict(AUDIT)
    return a


def test_userinfo_claims_satisfy_require_and_reach_headers(login_as, upstream, tmp_path):
    e = make(login_as, upstream, tmp_path)
    try:
        r = e.login("/audit/report")
        assert r.status_code == 200, r.text
        assert sent(r)["x-teams"] == "audit,ops", sent(r)
        assert [u["scheme"] for u in login_as.userinfo_requests] == ["Bearer"]
        assert login_as.userinfo_requests[0]["status"] == 200
    finally:
        e.stop()


def test_without_userinfo_the_same_route_refuses(login_as, upstream, tmp_path):
    """The other side of the rule: the ID token alone has no teams → 403, and userinfo is never asked."""
    e = make(login_as, upstream, tmp_path, userinfo=False)
    try:
        assert e.login("/").status_code == 200
        r = e.browser.get(e.url("/audit/report"), headers=JSON, allow_redirects=False, timeout=10)
        assert r.status_code == 403 and r.json()["error"] == "insufficient_scope", r.text
        assert login_as.userinfo_requests == []
    finally:
        e.stop()


def test_a_userinfo_answer_for_another_sub_ends_the_login(login_as, upstream, tmp_path):
    login_as.userinfo_sub = "someone-else"
    e = make(login_as, upstream, tmp_path)
    try:
        r = e.get(e.to_callback("/audit/report"))
        assert r.status_code == 400, r.text
        assert "Sign-in failed" in r.text and "could not be completed" in r.text
        assert "tokengate_session" not in r.headers.get("Set-Cookie", "")
        assert e.session_cookie() is None
        assert e.gw.logged("userinfo endpoint answered for another sub")
        # No session: the protected page starts a new login, it does not serve.
        assert e.get("/audit/report").status_code == 302
    finally:
        e.stop()


def test_userinfo_claims_over_the_size_bound_end_the_login(login_as, upstream, tmp_path):
    # 200 teams of 40 bytes: ~8.6 KB of a kept claim, over the 4 KB a session keeps from userinfo.
    login_as.userinfo_claims = {"alice": {"teams": ["t%03d-" % i + "x" * 35 for i in range(200)]}}
    e = make(login_as, upstream, tmp_path)
    try:
        r = e.get(e.to_callback("/audit/report"))
        assert r.status_code == 400 and "Sign-in failed" in r.text, r.text
        assert e.session_cookie() is None
        assert e.gw.logged("the userinfo claims the session keeps take")
    finally:
        e.stop()


def test_a_userinfo_answer_over_64kb_is_refused(login_as, upstream, tmp_path):
    # An unkept claim, but the answer itself is over the cap: never parsed.
    login_as.userinfo_claims = {"alice": {"blob": "x" * (70 << 10)}}
    e = make(login_as, upstream, tmp_path)
    try:
        r = e.get(e.to_callback("/audit/report"))
        assert r.status_code == 400 and "Sign-in failed" in r.text, r.text
        assert e.session_cookie() is None
        assert e.gw.logged("larger than 65536 bytes")
    finally:
        e.stop()


def test_too_many_userinfo_claims_are_refused(login_as, upstream, tmp_path):
    login_as.userinfo_claims = {"alice": {f"c{i}": i for i in range(150)}}
    e = make(login_as, upstream, tmp_path)
    try:
        r = e.get(e.to_callback("/audit/report"))
        assert r.status_code == 400 and e.session_cookie() is None, r.text
        assert e.gw.logged("claims (at most 100)")
    finally:
        e.stop()


def test_dpop_bound_tokens_ask_userinfo_with_a_dpop_proof(authserver_factory, upstream, tmp_path):
    a = authserver_factory(login="form", dpop=True, rotate_refresh_tokens=True)
    a.userinfo_claims = dict(AUDIT)
    e = LoginEnv(a, upstream, tmp_path, extra_client="    dpop: true\n    userinfo: true", extra_route=TEAMS_ROUTE)
    try:
        r = e.login("/audit/report")
        assert r.status_code == 200, r.text
        assert sent(r)["x-teams"] == "audit,ops"
        assert a.userinfo_requests == [{"scheme": "DPoP", "dpop": True, "status": 200}]
    finally:
        e.stop()


def test_a_userinfo_dpop_nonce_challenge_is_answered_once(authserver_factory, upstream, tmp_path):
    """RFC 9449 §9: the resource server asks for a nonce; the gateway retries once with it."""
    a = authserver_factory(login="form", dpop=True)
    a.userinfo_claims = dict(AUDIT)
    a.userinfo_dpop_nonce = "nonce-from-userinfo"
    e = LoginEnv(a, upstream, tmp_path, extra_client="    dpop: true\n    userinfo: true", extra_route=TEAMS_ROUTE)
    try:
        assert e.login("/audit/report").status_code == 200
        assert [(u["status"], u.get("error")) for u in a.userinfo_requests] == [(401, "use_dpop_nonce"), (200, None)]
    finally:
        e.stop()


@pytest.fixture
def short_as(authserver_factory):
    a = authserver_factory(login="form", rotate_refresh_tokens=True, access_token_lifetime=3, id_token_lifetime=300)
    a.userinfo_claims = dict(AUDIT)
    return a


def test_userinfo_is_asked_again_after_each_refresh(short_as, upstream, tmp_path):
    e = make(short_as, upstream, tmp_path, session=", refresh_margin: 1s")
    try:
        assert e.login("/audit/report").status_code == 200
        logged_in = time.time()
        # The AS drops her from audit: the next refresh's userinfo takes the route away.
        short_as.userinfo_claims = {"alice": {"teams": ["ops"]}}
        sleep_into_second(logged_in, 2)  # the access token (3 s) is within the 1 s margin
        r = e.browser.get(e.url("/audit/report"), headers=JSON, allow_redirects=False, timeout=10)
        assert short_as.refresh_ok_count == 1
        assert r.status_code == 403 and r.json()["error"] == "insufficient_scope", r.text
        assert len(short_as.userinfo_requests) == 2
    finally:
        e.stop()


def test_another_sub_after_a_refresh_ends_the_session(short_as, upstream, tmp_path):
    e = make(short_as, upstream, tmp_path, session=", refresh_margin: 1s")
    try:
        assert e.login("/audit/report").status_code == 200
        logged_in = time.time()
        short_as.userinfo_sub = "someone-else"
        sleep_into_second(logged_in, 2)
        r = e.browser.get(e.url("/audit/report"), headers=JSON, allow_redirects=False, timeout=10)
        assert r.status_code == 401 and r.json()["error"] == "login_required", r.text
        assert "tokengate_session=;" in r.headers.get("Set-Cookie", "")
        assert e.gw.logged("userinfo after a refresh answered for another sub")
    finally:
        e.stop()


def test_check_config_refuses_userinfo_on_a_client_no_login_route_uses(login_as, upstream, tmp_path):
    import subprocess
    from support.gateway import BIN
    e = make(login_as, upstream, tmp_path)
    try:
        text = open(e.gw.config_path).read()
        bad = text.replace("upstreams:", "  spare:\n    issuer: as1\n    client_id: spare\n    secret: s\n    userinfo: true\nupstreams:", 1)
        path = e.gw.config_path + ".bad.yaml"
        open(path, "w").write(bad)
        r = subprocess.run([BIN, "check-config", path], capture_output=True, text=True)
        assert r.returncode == 1, r.stdout
        assert "clients.spare.userinfo: has no effect: no auth: login route lists this client" in r.stdout, r.stdout
        open(path, "w").write(text.replace("    userinfo: true", "    userinfo: yes please", 1))
        r = subprocess.run([BIN, "check-config", path], capture_output=True, text=True)
        assert r.returncode == 1 and "clients.web.userinfo" in r.stdout, r.stdout
    finally:
        e.stop()


@pytest.mark.parametrize("answer,status,page,log", [
    ((500, "application/json", "{}"), 503, "Sign-in unavailable", "userinfo endpoint answered 500"),
    ((401, "application/json", '{"error":"invalid_token"}'), 400, "Sign-in failed", "userinfo endpoint answered 401"),
    ((200, "application/jwt", "eyJhbGciOiJub25lIn0.e30."), 400, "Sign-in failed", "answered application/jwt, not application/json"),
    ((200, "application/json", "[1,2]"), 400, "Sign-in failed", "userinfo response is not a JSON object"),
])
def test_a_broken_userinfo_answer_ends_the_login(login_as, upstream, tmp_path, answer, status, page, log):
    login_as.userinfo_answer = answer
    e = make(login_as, upstream, tmp_path)
    try:
        r = e.get(e.to_callback("/audit/report"))
        assert r.status_code == status and page in r.text, r.text
        assert e.session_cookie() is None
        assert e.gw.logged(log)
    finally:
        e.stop()


# A refresh within RefreshCoordinator's 30 s grace answers the previous outcome (a request
# with the old cookie gets the new session), so "the next refresh" is 30 s (and a little) after
# the last one ended.
NEXT_REFRESH = 30.2


def test_userinfo_down_at_refresh_keeps_the_claims_until_the_next_refresh_only(short_as, upstream, tmp_path):
    """Finding 7: an unreachable userinfo keeps the previous claims for one refresh, no longer.
    End to end: the claims kept, then fresh ones at the next real refresh. That a second
    unreachable refresh in a row ends the session is tested step by step with a manual clock
    (SessionTimeTests.unreachableUserinfoKeepsClaimsUntilTheNextRefreshOnly): here it would
    cost two more 31 s waits."""
    e = make(short_as, upstream, tmp_path, session=", refresh_margin: 1s")
    try:
        assert e.login("/audit/report").status_code == 200
        logged_in = time.time()
        short_as.userinfo_answer = (503, "text/plain", "down")
        sleep_into_second(logged_in, 2)
        r = e.get("/audit/report")
        refreshed = time.time()
        assert r.status_code == 200 and sent(r)["x-teams"] == "audit,ops", r.text
        assert short_as.refresh_ok_count == 1
        assert e.gw.logged("userinfo after a refresh unreachable; the session keeps its claims until the next refresh")
        # Back at the next refresh: fresh claims, and the stale mark is cleared.
        short_as.userinfo_answer = None
        short_as.userinfo_claims = {"alice": {"teams": ["audit"]}}
        # Real time must pass (the coordinator's grace is on the gateway's clock), and a request
        # sent before then would be answered from the grace, not refreshed.
        time.sleep(max(0.0, refreshed + NEXT_REFRESH - time.time()))
        r = e.get("/audit/report")
        assert r.status_code == 200 and sent(r)["x-teams"] == "audit", r.text
        assert short_as.refresh_ok_count == 2
    finally:
        e.stop()


@pytest.mark.parametrize("answer,claims,log", [
    # The bloat attack: a kept claim grown past the session's bound before a group removal.
    (None, {"alice": {"teams": ["audit"] + ["t%03d-" % i + "x" * 35 for i in range(200)]}}, "the userinfo claims the session keeps take"),
    (None, {"alice": {"teams": ["audit"], **{f"c{i}": i for i in range(150)}}}, "claims (at most 100)"),
    ((401, "application/json", '{"error":"invalid_token"}'), None, "userinfo endpoint answered 401"),
    ((200, "text/html", "<html></html>"), None, "answered text/html, not application/json"),
    ((200, "application/json", "not json"), None, "userinfo response is not a JSON object"),
])
def test_a_refused_userinfo_after_a_refresh_ends_the_session(short_as, upstream, tmp_path, answer, claims, log):
    """Finding 7: only an unreachable AS keeps the previous claims; every refusal ends the session."""
    e = make(short_as, upstream, tmp_path, session=", refresh_margin: 1s")
    try:
        assert e.login("/audit/report").status_code == 200
        logged_in = time.time()
        short_as.userinfo_answer = answer
        if claims is not None:
            short_as.userinfo_claims = claims
        sleep_into_second(logged_in, 2)
        r = e.browser.get(e.url("/audit/report"), headers=JSON, allow_redirects=False, timeout=10)
        assert short_as.refresh_ok_count == 1
        assert r.status_code == 401 and r.json()["error"] == "login_required", r.text
        assert "tokengate_session=;" in r.headers.get("Set-Cookie", "")
        out = e.gw.output()
        assert "userinfo after a refresh was refused; the session ends" in out and log in out
    finally:
        e.stop()
