"""Step-up on a login route (RFC 9470 §4, OIDC Core §3.1.2.1, docs/policy.md): a route's
`require: { acr: [mfa, phr], max_age: 300 }` against the real AS (idpyoidc, its login form;
AuthServer(mfa=True) adds a second authentication method, acr "mfa": password and one-time
code). A password-only session meets the route → a new login asking acr_values and max_age
in the pushed, signed request → the AS's MFA form → the route. An AS that answers with a
weaker acr, or an old auth_time, is refused at the callback, and the browser keeps its
session. A refresh can neither drop nor forge a step-up. The same round trip in headless
Chromium is in test_step_up_login_browser.py."""
import time
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from support.authserver.server import MFA_ACR, PASSWORD_ACR
from support.gateway import sent_headers as sent
from support.waiting import sleep_into_second
from test_login import LoginEnv

VAULT_ROUTE = """  - name: vault
    match: { path_prefix: /vault/ }
    upstream: app
    auth: login
    client: web
    require: { acr: [mfa, phr], max_age: 300 }
    headers: { X-Forwarded-User: sub, X-Auth-Acr: acr, X-Auth-Time: auth_time }"""


@pytest.fixture
def mfa_as(authserver_factory):
    return authserver_factory(login="form", mfa=True, rotate_refresh_tokens=True)


@pytest.fixture
def env(mfa_as, upstream, tmp_path):
    e = LoginEnv(mfa_as, upstream, tmp_path, extra_route=VAULT_ROUTE)
    yield e
    e.stop()


def pushed_request(a, location):
    """The parameters of the pushed request the Location's request_uri names (RFC 9126)."""
    q = parse_qs(urlsplit(location).query)
    entry = a.par_requests[q["request_uri"][0]]
    assert entry["signed"], entry
    return entry["params"]


def vault_hits(upstream):
    return [x for x in upstream.requests if x["path"].startswith("/vault/")]


def step_up_redirect(e):
    """A password-only login, then the vault: the 302 to the AS asking for the step-up."""
    assert e.login("/orders/1").status_code == 200
    r = e.get("/vault/1")
    assert r.status_code == 302, (r.status_code, r.text)
    assert r.headers["Location"].startswith(e.a.url + "/authorization?"), r.headers["Location"]
    return r.headers["Location"]


def test_a_password_session_steps_up_and_reaches_the_route(env, upstream):
    location = step_up_redirect(env)
    params = pushed_request(env.a, location)
    # OIDC Core §3.1.2.1, in the signed request object the gateway pushed.
    assert params["acr_values"] == "mfa phr", params
    assert int(params["max_age"]) == 300, params
    assert params["nonce"] and params["code_challenge_method"] == "S256"
    assert not vault_hits(upstream)
    before = env.session_cookie()
    # The AS has a password session: acr_values mfa asks for its second method's form.
    callback = env.a.login_with_form(env.browser, location, user="alice")
    assert env.a.login_attempts[-1] == {"user": "alice", "ok": True, "mfa": True}
    r = env.get(callback)
    assert r.status_code == 302 and r.headers["Location"] == "/vault/1", (r.status_code, r.text)
    assert env.session_cookie() != before
    r = env.get("/vault/1")
    assert r.status_code == 200, r.text
    h = sent(r)
    assert h["x-auth-acr"] == MFA_ACR
    assert abs(int(h["x-auth-time"]) - time.time()) < 30
    # The plain route works with the same (stepped-up) session.
    r = env.get("/orders/2")
    assert r.status_code == 200 and sent(r)["x-forwarded-email"] == "alice@example.com"


def old_cookie_get(env, cookie, path):
    return requests.get(env.url(path), headers={"Accept": "application/json", "Cookie": f"tokengate_session={cookie}"},
                        allow_redirects=False, timeout=10)


def test_the_weaker_session_ends_when_the_step_up_replaces_it(env, upstream):
    """Whoever kept the password session's cookie cannot use it once the browser stepped up:
    the session a login replaces is ended (the sealed cookie's id joins the ended ones)."""
    location = step_up_redirect(env)
    weaker = env.session_cookie()
    assert old_cookie_get(env, weaker, "/orders/1").status_code == 200
    r = env.get(env.a.login_with_form(env.browser, location, user="alice"))
    assert r.status_code == 302 and r.headers["Location"] == "/vault/1", (r.status_code, r.text)
    assert env.session_cookie() != weaker
    seen = len(upstream.requests)
    r = old_cookie_get(env, weaker, "/orders/1")
    assert r.status_code == 401 and r.json()["error"] == "login_required", (r.status_code, r.text)
    assert len(upstream.requests) == seen
    assert env.get("/orders/2").status_code == 200


def test_a_session_that_meets_the_requirement_goes_straight_through(env, upstream):
    env.get(env.a.login_with_form(env.browser, step_up_redirect(env), user="alice"))
    authorizations, pars, tokens = len(env.a.authorizations), len(env.a.par_requests), len(env.a.token_requests)
    for i in range(3):
        r = env.get(f"/vault/{i}")
        assert r.status_code == 200 and sent(r)["x-auth-acr"] == MFA_ACR
    assert (len(env.a.authorizations), len(env.a.par_requests), len(env.a.token_requests)) == \
        (authorizations, pars, tokens)


def test_an_api_call_with_a_short_session_gets_401_login_required(env, upstream):
    assert env.login("/orders/1").status_code == 200
    r = env.get("/vault/1", headers={"Accept": "application/json"})
    assert r.status_code == 401
    assert r.json()["error"] == "login_required"
    assert not vault_hits(upstream)


def refused_at_the_callback(env, upstream, location):
    before = env.session_cookie()
    callback = env.a.login_with_form(env.browser, location, user="alice")
    r = env.get(callback)
    assert r.status_code == 403, (r.status_code, r.text)
    assert "did not meet the authentication this page needs" in r.text
    # No internals on the page; the browser keeps the session it had.
    assert "auth_time" not in r.text and "acr" not in r.text
    assert env.session_cookie() == before
    assert not any("tokengate_session=" in c for c in r.headers.get("Set-Cookie", "").split(","))
    r = env.get("/vault/1")
    assert r.status_code == 302, "the route is still not reached"
    assert not vault_hits(upstream)
    r = env.get("/orders/3")
    assert r.status_code == 200 and sent(r)["x-forwarded-email"] == "alice@example.com"
    log = env.gw.output()
    assert "insufficient_user_authentication" in log, log[-2000:]


def test_an_id_token_with_a_weaker_acr_is_refused(env, upstream):
    location = step_up_redirect(env)
    # The AS drops acr_values and answers from its password session (SSO, no form).
    env.a.ignore_acr_values = True
    refused_at_the_callback(env, upstream, location)
    assert pushed_request_seen(env.a)["acr_values"] == "mfa phr"


def pushed_request_seen(a):
    """The parameters of the last authorization request the AS received."""
    return a.authorizations[-1]["params"]


def test_an_id_token_with_a_stale_auth_time_is_refused(env, upstream):
    location = step_up_redirect(env)
    # The AS does the MFA login but says the user authenticated 1000 s ago.
    env.a.id_token_fault = {"claims": {"auth_time": int(time.time()) - 1000}}
    refused_at_the_callback(env, upstream, location)
    assert env.a.login_attempts[-1]["mfa"] is True


def test_an_id_token_without_auth_time_is_refused(env, upstream):
    location = step_up_redirect(env)
    env.a.id_token_fault = {"claims": {"auth_time": None}}
    refused_at_the_callback(env, upstream, location)


INT64_MIN = -9223372036854775808


def test_an_id_token_with_an_auth_time_at_int64s_end_is_refused_at_the_step_up(env, upstream):
    location = step_up_redirect(env)
    before = env.session_cookie()
    env.a.id_token_fault = {"claims": {"auth_time": INT64_MIN}}
    callback = env.a.login_with_form(env.browser, location, user="alice")
    r = env.get(callback)
    # The ID token is refused where it is admitted (the callback's 400 for an ID token that
    # fails its checks): no session, no trap, no internals.
    assert r.status_code == 400, (r.status_code, r.text)
    assert "could not be completed" in r.text
    assert str(INT64_MIN) not in r.text and "auth_time" not in r.text
    assert env.session_cookie() == before
    assert not vault_hits(upstream)
    env.a.id_token_fault = None
    r = env.get("/orders/3")
    assert r.status_code == 200 and env.gw.proc.poll() is None


def test_a_plain_login_never_stores_an_auth_time_outside_the_window(env, upstream):
    """A login that asks no max_age once kept the ID token's auth_time in the session; a
    sealed or Redis session outlives a restart, so its holder could stop the gateway on each
    visit to a max_age route. The ID token is refused at the login instead."""
    env.a.id_token_fault = {"claims": {"auth_time": INT64_MIN}}
    r = env.get(env.to_callback("/orders/1", "alice"))
    assert r.status_code == 400, (r.status_code, r.text)
    assert "could not be completed" in r.text
    assert env.session_cookie() is None
    assert str(INT64_MIN) not in r.text
    env.a.id_token_fault = None
    assert env.login("/orders/2").status_code == 200
    r = env.get("/vault/1")
    assert r.status_code == 302 and env.gw.proc.poll() is None


@pytest.fixture
def short_as(authserver_factory):
    """Access tokens that live 3 s (each request after that refreshes); rotating refresh tokens."""
    return authserver_factory(login="form", mfa=True, rotate_refresh_tokens=True, access_token_lifetime=3)


def test_a_refresh_can_neither_claim_nor_drop_a_step_up(short_as, upstream, tmp_path):
    e = LoginEnv(short_as, upstream, tmp_path, extra_route=VAULT_ROUTE, session=", refresh_margin: 1s")
    try:
        assert e.login("/orders/1").status_code == 200
        logged_in = time.time()
        # A refreshed ID token that claims a fresh MFA: a refresh authenticates nobody.
        short_as.id_token_fault = {"claims": {"acr": MFA_ACR, "auth_time": int(time.time())}}
        sleep_into_second(logged_in, 3)
        assert e.get("/orders/2").status_code == 200
        assert short_as.refresh_ok_count == 1
        assert e.get("/vault/1").status_code == 302
        assert not vault_hits(upstream)

        # A real step-up, then a refresh whose ID token says a password login now.
        short_as.id_token_fault = None
        location = e.get("/vault/1").headers["Location"]
        assert e.get(e.a.login_with_form(e.browser, location, user="alice")).status_code == 302
        r = e.get("/vault/1")
        stepped_up = time.time()
        assert r.status_code == 200
        auth_time = sent(r)["x-auth-time"]
        short_as.id_token_fault = {"claims": {"acr": PASSWORD_ACR, "auth_time": int(time.time()) - 5000}}
        sleep_into_second(stepped_up, 3)
        refreshes = short_as.refresh_ok_count
        r = e.get("/vault/2")
        assert short_as.refresh_ok_count == refreshes + 1
        assert r.status_code == 200, r.text
        assert sent(r)["x-auth-acr"] == MFA_ACR and sent(r)["x-auth-time"] == auth_time
    finally:
        e.stop()


def test_the_start_endpoint_refuses_a_malformed_step_up(env):
    r = requests.get(env.url("/oauth2/start?rd=/vault/1&acr_values=%22x&max_age=1"), headers={"Accept": "text/html"},
                     allow_redirects=False, timeout=5)
    assert r.status_code == 400
    assert "Location" not in r.headers


@pytest.fixture
def redis_replicas(mfa_as, upstream, tmp_path):
    """Two replicas sharing one real redis-server: sessions and pending logins in Redis."""
    from support.redis_server import RedisServer
    r = RedisServer().start()
    top = f"store: {{ url: \"redis://127.0.0.1:{r.port}/0\", prefix: \"tg:\" }}"
    envs = []
    for name in "ab":
        (tmp_path / name).mkdir()
        envs.append(LoginEnv(mfa_as, upstream, tmp_path / name, extra_top=top, extra_route=VAULT_ROUTE,
                             session=", cache_ttl: 0s", share_client_of=envs[0] if envs else None,
                             public_base=envs[0].url("").rstrip("/") if envs else None))
    yield envs
    for e in envs:
        e.stop()
    r.close()


def test_replicas_sharing_redis_carry_the_step_up(redis_replicas, upstream):
    """The pending login (what it asked) and the stepped-up session live in Redis: a step-up
    begun on A finishes on B, and the session reaches the route on either; a stale auth_time
    is refused on B, which read max_age from the pending login A stored."""
    from test_replicas import on
    a, b = redis_replicas
    location = step_up_redirect(a)
    weaker = a.session_cookie()
    assert old_cookie_get(b, weaker, "/orders/1").status_code == 200
    callback = a.a.login_with_form(a.browser, location, user="alice")
    r = a.get(on(b, callback))
    assert r.status_code == 302 and r.headers["Location"] == "/vault/1", (r.status_code, r.text)
    cookie = a.session_cookie()
    for env in (a, b):
        r = requests.get(env.url("/vault/2"), headers={"Accept": "text/html", "Cookie": f"tokengate_session={cookie}"},
                         allow_redirects=False, timeout=10)
        assert r.status_code == 200 and sent(r)["x-auth-acr"] == MFA_ACR
    # The password session the step-up replaced is gone from Redis: neither replica takes it.
    for env in (a, b):
        assert old_cookie_get(env, weaker, "/orders/1").status_code == 401

    # A second browser: a password login, a step-up whose ID token is stale, finished on B.
    a.browser = requests.Session()
    location = step_up_redirect(a)
    a.a.id_token_fault = {"claims": {"auth_time": int(time.time()) - 1000}}
    r = a.get(on(b, a.a.login_with_form(a.browser, location, user="alice")))
    assert r.status_code == 403, (r.status_code, r.text)


def test_decision_mode_sends_a_short_session_to_a_step_up_login(mfa_as, upstream, tmp_path):
    """forward-auth (Traefik, Caddy): a navigation whose session is short of the route's
    requirement gets the 302 to the start endpoint naming the session's client, acr_values
    and max_age; that login asks the AS for them; the stepped-up session is then allowed."""
    e = LoginEnv(mfa_as, upstream, tmp_path, extra_route=VAULT_ROUTE,
                 extra_top="trusted_proxies: [127.0.0.1/32]\ndecision: {}")
    try:
        assert e.login("/orders/1").status_code == 200

        def ask():
            return e.browser.get(e.gw.url("/_tokengate/forward-auth"), allow_redirects=False, timeout=10, headers={
                "Accept": "text/html", "X-Forwarded-Method": "GET", "X-Forwarded-Proto": "http",
                "X-Forwarded-Host": f"127.0.0.1:{e.gw.port}", "X-Forwarded-Uri": "/vault/1"})

        r = ask()
        assert r.status_code == 302, (r.status_code, r.text)
        start = r.headers["Location"]
        q = parse_qs(urlsplit(start).query)
        assert urlsplit(start).path == "/oauth2/start"
        assert q["client"] == ["web"] and q["acr_values"] == ["mfa phr"] and q["max_age"] == ["300"], q
        assert q["rd"] == [e.url("/vault/1")]
        r = e.get(start)
        assert r.status_code == 302
        params = pushed_request(mfa_as, r.headers["Location"])
        assert params["acr_values"] == "mfa phr" and int(params["max_age"]) == 300
        r = e.get(mfa_as.login_with_form(e.browser, r.headers["Location"], user="alice"))
        assert r.status_code == 302 and r.headers["Location"] == "/vault/1", (r.status_code, r.text)
        r = ask()
        assert r.status_code == 200, (r.status_code, r.text)
    finally:
        e.stop()


def test_a_websocket_on_a_step_up_route_ends_with_max_age(mfa_as, tmp_path):
    """A tunnel stands no longer than the authentication it was opened on (max_age)."""
    from websockets.exceptions import InvalidStatus
    from support.ws_upstream import WSUpstream
    from test_websocket_sessions import ended_with_1008, open_ws
    ws_upstream = WSUpstream()
    # max_age is read with the issuer's leeway, as the callback reads it: 1 s here.
    e = LoginEnv(mfa_as, ws_upstream, tmp_path, extra_route=VAULT_ROUTE.replace("max_age: 300", "max_age: 5"),
                 issuer_options="algorithms: [ES256, RS256], leeway: 1s")
    try:
        e.login("/orders/1")  # a password session (login() checks the round trip)
        location = e.get("/vault/live").headers["Location"]
        started = time.time()
        r = e.get(e.a.login_with_form(e.browser, location, user="alice"))
        assert r.status_code == 302 and r.headers["Location"] == "/vault/live", (r.status_code, r.text)
        with open_ws(e, "/vault/live") as ws:
            ws.send("x")
            assert ws.recv(timeout=5) == "x"
            assert ended_with_1008(ws, within=10)
        assert time.time() - started >= 4
        # Past max_age: a new one is refused before the upstream sees it (a new login is due).
        handshakes = ws_upstream.connections
        with pytest.raises(InvalidStatus) as refused:
            open_ws(e, "/vault/live")
        assert refused.value.response.status_code == 401
        assert ws_upstream.connections == handshakes
    finally:
        e.stop()
        ws_upstream.stop()
