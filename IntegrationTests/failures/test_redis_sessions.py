"""The Redis session store failing under a login route, seen from the browser: a real
redis-server frozen with SIGSTOP, killed and restarted under a real tokengate (two workers)
and the real AS. A request with a session cookie gets 503 with a page (JSON for an API
client) within the store's bound (docs/failure-modes.md: 1 s per command), never a redirect
to the AS whose answer could not be stored, so no loop; a route that needs no Redis keeps
serving; and every worker recovers by itself within a few seconds of Redis coming back."""
import re
import signal
import time
from html import unescape

import pytest
import requests

from support.gateway import raw_request
from support.redis_server import RedisServer
from support.waiting import wait_for, wait_for_streak
from test_login import LoginEnv

HTML = {"Accept": "text/html"}
JSON = {"Accept": "application/json"}
BOUND = 1.0  # CallBounds.redis: one command's reply
SLACK = 1.5
RECOVERY = 8.0  # reconnect backoff is at most 5 s; "a few seconds"
# A login-state cookie naming a pending login (a well-formed id): the callback must ask Redis.
LOGIN_COOKIE = "tokengate_login=" + "A" * 43


@pytest.fixture
def redis():
    r = RedisServer().start()
    yield r
    if r.proc:
        r.proc.send_signal(signal.SIGCONT)
    r.close()


@pytest.fixture
def env(authserver_factory, upstream, tmp_path, redis):
    a = authserver_factory(login="form")
    # No session cache: every request asks Redis, so each one sees the outage.
    e = LoginEnv(a, upstream, tmp_path, extra_top=f"store: redis://127.0.0.1:{redis.port}/0",
                 session=", cache_ttl: 0s")
    yield e
    e.stop()


def with_cookie(env, cookie, path, headers=HTML):
    t0 = time.time()
    r = requests.get(env.url(path), headers=dict(headers, Cookie=f"tokengate_session={cookie}"),
                     allow_redirects=False, timeout=15)
    return r, time.time() - t0


def assert_unavailable(r, elapsed, redis, html=True):
    assert r.status_code == 503, r.text
    assert elapsed < BOUND + SLACK, elapsed
    assert r.headers.get("Retry-After") and "Location" not in r.headers
    assert "tokengate_session" not in r.headers.get("Set-Cookie", "")
    seen = r.text + " ".join(f"{k}: {v}" for k, v in r.headers.items())
    for marker in (str(redis.port), "redis", "Redis", "timeout"):
        assert marker not in seen, (marker, seen)
    if html:
        assert r.headers["Content-Type"].startswith("text/html")
    else:
        assert r.json()["error"] == "temporarily_unavailable"


def keeps_serving_without_redis(env):
    t0 = time.time()
    assert requests.get(env.url("/bye"), timeout=5).status_code == 200
    assert time.time() - t0 < 1.0


def recovers(env, cookie, deadline_s=RECOVERY, in_a_row=8):
    """Until `in_a_row` requests on fresh connections (spread over the workers) in a row get
    `want`; the seconds it took."""
    def served():
        r, _ = with_cookie(env, cookie, "/orders/7", headers=JSON)
        assert r.status_code in (200, 503), r.text
        return r.status_code == 200
    return wait_for_streak(served, in_a_row, deadline_s, what="every worker to recover after Redis came back")


def test_redis_frozen_then_thawed(env, redis):
    assert env.login().status_code == 200
    cookie = env.session_cookie()
    redis.proc.send_signal(signal.SIGSTOP)
    # A browser: a page, with a retry of the same page, and no redirect to the AS.
    r, elapsed = with_cookie(env, cookie, "/orders/7?x=1")
    assert_unavailable(r, elapsed, redis)
    m = re.search(r'<a href="([^"]*)">Try again</a>', r.text)
    assert m and unescape(m.group(1)) == "/orders/7?x=1", r.text
    # An API client: the JSON form.
    r, elapsed = with_cookie(env, cookie, "/orders/7", headers=JSON)
    assert_unavailable(r, elapsed, redis, html=False)
    # A browser without a session: its login cannot be kept, so it is not sent to the AS.
    t0 = time.time()
    r = requests.get(env.url("/orders/7"), headers=HTML, allow_redirects=False, timeout=15)
    assert_unavailable(r, time.time() - t0, redis)
    keeps_serving_without_redis(env)
    attacker_pages_stay_inert(env, cookie)
    redis.proc.send_signal(signal.SIGCONT)
    took = recovers(env, cookie)
    print(f"recovered {took:.2f} s after SIGCONT")


def test_redis_killed_and_restarted(env, redis):
    assert env.login().status_code == 200
    cookie = env.session_cookie()
    redis.stop()
    for headers in (HTML, JSON):
        for _ in range(3):  # while the clients back off, each answer is at once
            r, elapsed = with_cookie(env, cookie, "/orders/7", headers=headers)
            assert_unavailable(r, elapsed, redis, html=headers is HTML)
    keeps_serving_without_redis(env)
    # /readyz stays 200 (every replica shares the store: pulling them all would stop the routes
    # that do not need it too) and says why in its text; the metric says it. The health check
    # runs every 2 s.
    admin = f"http://127.0.0.1:{env.gw.admin}"
    wait_for(lambda: "tokengate_store_up 0" in requests.get(admin + "/metrics", timeout=5).text, 5, interval=0.2,
             what="tokengate_store_up to drop to 0")
    ready = requests.get(admin + "/readyz", timeout=5)
    assert ready.status_code == 200 and "shared store does not answer" in ready.text, ready.text
    redis.start()  # empty: the session is gone, and the browser must sign in again
    def redirected():
        r = requests.get(env.url("/orders/7"), headers=dict(HTML, Cookie=f"tokengate_session={cookie}"),
                         allow_redirects=False, timeout=5)
        assert r.status_code in (302, 503), r.text
        return r.status_code == 302
    took = wait_for_streak(redirected, 8, RECOVERY, what="every worker to recover after Redis came back")
    print(f"recovered {took:.2f} s after restart")
    env.browser = requests.Session()
    assert env.login().status_code == 200


def attacker_pages_stay_inert(env, cookie):
    """An attacker who knows Redis is down and sends a victim crafted links: the 503 pages'
    "Try again" links stay on this origin and every value in them is escaped."""
    # A callback with markup in its query (sent raw, as a browser would not encode it): the
    # parser refuses it, or the page repeats the callback escaped.
    status, raw = raw_request(env.gw.port, (
        f"GET /oauth2/callback?state=x&code=\"><script>alert(1)</script> HTTP/1.1\r\nHost: 127.0.0.1:{env.gw.port}"
        f"\r\nAccept: text/html\r\nCookie: {LOGIN_COOKIE}\r\nConnection: close\r\n\r\n").encode(), timeout=10)
    assert status in (400, 503) and b"<script>" not in raw, raw
    # Encoded, as browsers send it: 503, the same callback offered again, on this origin.
    r = requests.get(env.url("/oauth2/callback?state=x&code=%22%3E%3Cscript%3E"), headers=dict(HTML, Cookie=LOGIN_COOKIE),
                     allow_redirects=False, timeout=15)
    assert r.status_code == 503 and "<script>" not in r.text, r.text
    assert 'href="/oauth2/callback?state=x&amp;code=%22%3E%3Cscript%3E"' in r.text, r.text
    # A target a browser would read as another host gets no link back to it.
    for target in ("//evil.example/orders", "/\\evil.example/orders"):
        status, raw = raw_request(env.gw.port, (
            f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{env.gw.port}\r\nAccept: text/html\r\n"
            f"Cookie: tokengate_session={cookie}\r\nConnection: close\r\n\r\n").encode(), timeout=10)
        assert status != 302, raw
        assert b"evil.example" not in raw.partition(b"\r\n\r\n")[2], raw


@pytest.mark.parametrize("fault", ["SIGSTOP", "kill"])
def test_pending_logins_in_the_cookie_still_send_no_browser_to_the_as(authserver_factory, upstream, tmp_path, redis,
                                                                      fault):
    """session.pending_logins: cookie keeps nothing in Redis before the callback, yet the
    session it leads to would be: while Redis does not answer no login begins (503 and a
    page, no redirect to the AS), and once it answers logins begin again by themselves."""
    a = authserver_factory(login="form")
    e = LoginEnv(a, upstream, tmp_path, extra_top=f"store: redis://127.0.0.1:{redis.port}/0",
                 session=", cache_ttl: 0s, pending_logins: cookie")
    try:
        assert e.get("/orders/7").status_code == 302
        if fault == "SIGSTOP":
            redis.proc.send_signal(signal.SIGSTOP)
        else:
            redis.stop()
        for _ in range(3):
            t0 = time.time()
            r = requests.get(e.url("/orders/7"), headers=HTML, allow_redirects=False, timeout=15)
            assert_unavailable(r, time.time() - t0, redis)
            assert "tokengate_login" not in r.headers.get("Set-Cookie", "")
        keeps_serving_without_redis(e)
        if fault == "SIGSTOP":
            redis.proc.send_signal(signal.SIGCONT)
        else:
            redis.start()
        def login_begins():
            r = requests.get(e.url("/orders/7"), headers=HTML, allow_redirects=False, timeout=5)
            assert r.status_code in (302, 503), r.text
            return r.status_code == 302
        wait_for_streak(login_begins, 8, RECOVERY, what="logins to begin again after Redis came back")
        assert e.login().status_code == 200
    finally:
        e.stop()
