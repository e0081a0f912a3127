"""The authorization server failing during a browser login, seen from the browser: a real AS
(idpyoidc) behind the fault proxy (IntegrationTests/support/fault_proxy.py), a real tokengate, a
real upstream. Each endpoint a login calls (PAR, token, userinfo) is refused, held, slowed or
garbled; the browser gets an error page within the endpoint's documented bound
(docs/failure-modes.md: 10 s for each), JSON when it is not a browser, never the AS's internals;
a login whose code exchange got no verdict is kept, so a reload finishes it; routes that need no
AS keep serving; and logins work again once the endpoint does."""
import re
import time
from html import unescape

import pytest
import requests

from support.fault_proxy import FaultProxy, LEAK_MARKERS
from support.gateway import free_port
from support.redis_server import RedisServer
from support.waiting import wait_for, sleep_into_second
from test_login import LoginEnv

HTML = {"Accept": "text/html"}
JSON = {"Accept": "application/json"}
AS_BOUND = 10.0  # CallBounds.tokenEndpoint / userinfo total
SLACK = 2.5  # a loaded 2-core machine
BACKOFF = 5.0  # RefreshCoordinator.slowFailureBackoff: a refresh that waited the bound, remembered
FAST = 3.0  # a fault that needs no timeout (refused, reset, an answer) is answered well within this


@pytest.fixture
def faulty_as(authserver_factory):
    """(AS, proxy): the AS's metadata, endpoints and tokens name the proxy."""
    port = free_port()
    a = authserver_factory(login="form", issuer=f"http://127.0.0.1:{port}")
    p = FaultProxy(a.port, port=port).start()
    yield a, p
    p.stop()


@pytest.fixture
def redis():
    r = RedisServer().start()
    yield r
    r.close()


@pytest.fixture
def envs():
    made = []

    def make(*args, **kwargs):
        e = LoginEnv(*args, **kwargs)
        made.append(e)
        return e

    yield make
    for e in reversed(made):
        e.stop()


def timed_get(env, path, headers=HTML):
    t0 = time.time()
    r = env.get(path, headers=headers)
    return r, time.time() - t0


def retry_link(r):
    m = re.search(r'<a href="([^"]*)">Try again</a>', r.text)
    assert m, r.text
    return unescape(m.group(1))


def assert_unavailable_page(r, proxy):
    assert r.status_code == 503, r.text
    assert r.headers["Content-Type"].startswith("text/html")
    assert r.headers.get("Retry-After") == "5"
    assert "Location" not in r.headers
    assert "tokengate_session" not in r.headers.get("Set-Cookie", "")
    assert_no_leak(r, proxy)


def assert_no_leak(r, proxy):
    seen = r.text + " ".join(f"{k}: {v}" for k, v in r.headers.items())
    for marker in LEAK_MARKERS + (f"127.0.0.1:{proxy.port}", "curl", "Couldn't", "Timeout"):
        assert marker not in seen, (marker, seen)


def still_serving(env):
    """A route that needs no AS (auth: none) answers at once."""
    t0 = time.time()
    r = requests.get(env.url("/bye"), timeout=5)
    assert r.status_code == 200 and time.time() - t0 < 1.0


# -- beginning a login: PAR ---------------------------------------------------------------

@pytest.mark.parametrize("fault", ["refuse", "reset", "html", "truncated", "wrongtype", "5xx"])
def test_a_broken_par_endpoint_gives_a_page_with_a_retry(faulty_as, upstream, tmp_path, envs, fault):
    a, proxy = faulty_as
    env = envs(a, upstream, tmp_path)
    if fault == "refuse":
        proxy.refuse()
    else:
        proxy.faults["/par"] = fault
    r, elapsed = timed_get(env, "/orders/7?x=1")
    assert elapsed < FAST, elapsed
    assert_unavailable_page(r, proxy)
    # The retry is this same login: back to the page the browser asked for.
    link = retry_link(r)
    assert link == "/oauth2/start?rd=%2Forders%2F7%3Fx%3D1&client=web"
    # An API client gets the JSON form, with the same Retry-After.
    r = requests.get(env.url("/oauth2/start?rd=/orders/7"), headers=JSON, allow_redirects=False, timeout=15)
    assert r.status_code == 503 and r.headers.get("Retry-After") == "5", r.text
    assert r.json()["error"] == "temporarily_unavailable" and r.json()["request_id"] == r.headers["X-Request-Id"]
    assert_no_leak(r, proxy)
    still_serving(env)
    # The endpoint is back: the retry link starts the login, which then completes.
    if fault == "refuse":
        proxy.start()
    proxy.faults.pop("/par", None)
    r = env.get(link)
    assert r.status_code == 302 and "request_uri=" in r.headers["Location"], r.text
    cb = a.login_with_form(env.browser, r.headers["Location"])
    r = env.get(cb)
    assert r.status_code == 302 and r.headers["Location"] == "/orders/7?x=1", r.text
    assert env.get("/orders/7?x=1").status_code == 200


def test_a_hung_par_endpoint_is_answered_within_its_bound(faulty_as, upstream, tmp_path, envs):
    a, proxy = faulty_as
    env = envs(a, upstream, tmp_path)
    proxy.faults["/par"] = "hang"
    r, elapsed = timed_get(env, "/orders/7")
    assert AS_BOUND - 0.5 < elapsed < AS_BOUND + SLACK, elapsed
    assert_unavailable_page(r, proxy)
    still_serving(env)


def test_a_slow_par_endpoint_within_its_bound_still_logs_in(faulty_as, upstream, tmp_path, envs):
    a, proxy = faulty_as
    env = envs(a, upstream, tmp_path)
    proxy.faults["/par"] = "slow"
    proxy.slow_for = 1.5
    assert env.login().status_code == 200


# -- finishing a login: the code exchange ----------------------------------------------------

@pytest.mark.parametrize("store", ["cookie", "redis"])
@pytest.mark.parametrize("fault", ["refuse", "reset", "5xx"])
def test_a_failed_code_exchange_keeps_the_login_for_a_reload(faulty_as, upstream, tmp_path, envs, redis, store, fault):
    """The AS never saw the code (refused, reset, or a 5xx from in front of it): 503 with a
    retry of this very callback; once the token endpoint is back, the reload finishes the
    login — with the pending login kept in the sealed cookie or in Redis."""
    a, proxy = faulty_as
    top = f"store: redis://127.0.0.1:{redis.port}/0" if store == "redis" else ""
    env = envs(a, upstream, tmp_path, extra_top=top)
    cb = env.to_callback("/orders/7?x=1")
    if fault == "refuse":
        proxy.refuse()
    else:
        proxy.faults["/token"] = fault
    r, elapsed = timed_get(env, cb)
    assert elapsed < FAST, elapsed
    assert_unavailable_page(r, proxy)
    assert "tokengate_login" not in r.headers.get("Set-Cookie", "")  # the login state stays
    assert retry_link(r) == cb[len(env.url("")):]
    still_serving(env)
    # A reload while the endpoint is still down: the same answer, the login still kept.
    r = env.get(cb)
    assert r.status_code == 503
    if fault == "refuse":
        proxy.start()
    proxy.faults.pop("/token", None)
    r = env.get(retry_link(r))
    assert r.status_code == 302 and r.headers["Location"] == "/orders/7?x=1", r.text
    assert env.session_cookie()
    assert env.get("/orders/7?x=1").status_code == 200
    # Used once: the callback again is refused, as before.
    assert env.get(cb).status_code == 400


def test_a_hung_token_endpoint_is_answered_within_its_bound_and_the_reload_finishes(faulty_as, upstream, tmp_path, envs):
    a, proxy = faulty_as
    env = envs(a, upstream, tmp_path)
    cb = env.to_callback()
    proxy.faults["/token"] = "hang"
    r, elapsed = timed_get(env, cb)
    assert AS_BOUND - 0.5 < elapsed < AS_BOUND + SLACK, elapsed
    assert_unavailable_page(r, proxy)
    proxy.faults.pop("/token")
    r = env.get(retry_link(r))
    assert r.status_code == 302 and env.session_cookie(), r.text


def test_a_code_the_as_redeemed_but_whose_answer_was_cut_is_not_retried_forever(faulty_as, upstream, tmp_path, envs):
    """The AS did redeem the code, and its answer was cut short: 503 and a retry; the retry
    finds the code spent (RFC 6749 §4.1.2), and the page offers a new login instead."""
    a, proxy = faulty_as
    env = envs(a, upstream, tmp_path)
    cb = env.to_callback("/orders/7")
    proxy.faults["/token"] = "truncated"
    r = env.get(cb)
    assert_unavailable_page(r, proxy)
    proxy.faults.pop("/token")
    r = env.get(retry_link(r))
    assert r.status_code == 400 and "Sign-in failed" in r.text and "Location" not in r.headers, r.text
    assert 'href="/oauth2/start"' in r.text
    assert_no_leak(r, proxy)
    assert env.login("/orders/7").status_code == 200


@pytest.mark.parametrize("fault", ["html", "wrongtype"])
def test_a_token_endpoint_answering_garbage_ends_the_login_with_a_page(faulty_as, upstream, tmp_path, envs, fault):
    a, proxy = faulty_as
    env = envs(a, upstream, tmp_path)
    cb = env.to_callback()
    proxy.faults["/token"] = fault
    r, elapsed = timed_get(env, cb)
    assert elapsed < FAST
    assert r.status_code == 400 and "Sign-in failed" in r.text and 'href="/oauth2/start"' in r.text, r.text
    assert "Service maintenance" not in r.text and "portal" not in r.text
    assert_no_leak(r, proxy)
    assert env.session_cookie() is None


# -- userinfo -------------------------------------------------------------------------------

@pytest.mark.parametrize("fault", ["reset", "5xx", "hang"])
def test_userinfo_down_at_login_gives_a_page_with_a_new_login(faulty_as, upstream, tmp_path, envs, fault):
    a, proxy = faulty_as
    env = envs(a, upstream, tmp_path, extra_client="    userinfo: true")
    cb = env.to_callback("/orders/7")
    proxy.faults["/userinfo"] = fault
    r, elapsed = timed_get(env, cb)
    assert elapsed < (AS_BOUND + SLACK if fault == "hang" else FAST), elapsed
    assert_unavailable_page(r, proxy)
    # The code is spent: the retry is a new login to the same page.
    assert retry_link(r) == "/oauth2/start?rd=%2Forders%2F7&client=web"
    proxy.faults.pop("/userinfo")
    r = env.get(retry_link(r))
    assert r.status_code == 302
    r = env.get(a.login_with_form(env.browser, r.headers["Location"]))
    assert r.status_code == 302 and r.headers["Location"] == "/orders/7" and env.session_cookie(), r.text


# -- a session's refresh ----------------------------------------------------------------------

def test_a_hung_token_endpoint_at_refresh_keeps_the_session_within_its_bound(authserver_factory, upstream, tmp_path,
                                                                              envs):
    """The access token is due and the token endpoint hangs: the request that refreshes waits
    at most the endpoint's bound, then the session goes on (a page that sends no token is
    served); a route that would forward the expired token answers 503 with a retry instead."""
    from test_login import API_ROUTE_FORWARDING_TOKEN
    port = free_port()
    a = authserver_factory(login="form", issuer=f"http://127.0.0.1:{port}", access_token_lifetime=3)
    proxy = FaultProxy(a.port, port=port).start()
    try:
        env = envs(a, upstream, tmp_path, session=", refresh_margin: 1s", extra_route=API_ROUTE_FORWARDING_TOKEN)
        assert env.login("/page").status_code == 200
        sleep_into_second(time.time(), 3)  # the access token has expired
        proxy.faults["/token"] = "hang"
        r, page = timed_get(env, "/page", headers=JSON)
        assert r.status_code == 200 and page < AS_BOUND + SLACK, (r.status_code, page)
        # The refresh that waited the bound is remembered for a short backoff: the session's
        # next requests answer at once instead of each waiting the bound again.
        r, api = timed_get(env, "/api/me", headers=JSON)
        assert r.status_code == 503 and r.headers.get("Retry-After") and api < 1, (r.text, api)
        assert_no_leak(r, proxy)
        r, again = timed_get(env, "/page", headers=JSON)
        assert r.status_code == 200 and again < 1, (r.status_code, again)
        proxy.faults.pop("/token")
        # Back: within the backoff (5 s) a request refreshes, and the forwarding route serves.
        wait_for(lambda: timed_get(env, "/api/me", headers=JSON)[0].status_code == 200, BACKOFF + SLACK, interval=0.25,
                 what="the forwarding route to serve again")
        print(f"refresh against a hung token endpoint: page {page:.2f} s, then forwarding route {api:.2f} s, "
              f"page {again:.2f} s")
    finally:
        proxy.stop()
