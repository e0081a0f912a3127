"""Past one machine: three tokengate processes sharing one real redis-server (started here),
the real authorization server, a real upstream — all on 127.0.0.1 — behave as one gateway:
a session begun on one is valid on all; a DPoP proof used on one is refused on all; a logout
on one ends the session everywhere; a back-channel logout posted to one ends it on the others;
twenty parallel requests spread over the replicas when the access token is due make exactly
one refresh at the AS, and all twenty succeed."""
import subprocess
import threading
import time
from urllib.parse import parse_qs, urlsplit
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from support.dpop_client import DPoPKey
from support.gateway import sent_headers as sent
from support.waiting import sleep_into_second, wait_for_streak, wait_for
from test_backchannel_logout import logout_token
from test_bearer import ec_key, idp  # noqa: F401 — fixture
from test_dpop import bound_token
from test_login import LoginEnv, parse_qs_form

JSON = {"Accept": "application/json"}


@pytest.fixture
def replicas(authserver_factory, upstream, tmp_path, redis, idp):  # noqa: F811
    a = authserver_factory(login="form", rotate_refresh_tokens=True, access_token_lifetime=4)
    top = f"store: {{ url: \"redis://127.0.0.1:{redis.port}/0\", prefix: \"tg:\" }}"
    issuers = f'  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], algorithms: [ES256] }}'
    route = """  - name: dpop
    match: { path_prefix: /dpop/ }
    upstream: app
    auth: dpop
    issuers: [one]"""
    envs = []
    for name in "abc":
        (tmp_path / name).mkdir()
        # One public URL for all three, as behind a load balancer: replica A's.
        envs.append(LoginEnv(a, upstream, tmp_path / name, extra_top=top, extra_issuers=issuers, extra_route=route,
                             session=", cache_ttl: 0s, refresh_margin: 2s", share_client_of=envs[0] if envs else None,
                             public_base=envs[0].url("").rstrip("/") if envs else None))
    yield a, envs
    for e in envs:
        e.stop()


def with_cookie(env, cookie, path, headers=JSON):
    return requests.get(env.url(path), headers=dict(headers, Cookie=f"tokengate_session={cookie}"), allow_redirects=False, timeout=15)


def test_replicas_share_sessions_and_logouts(replicas, redis):
    a_s, (a, b, c) = replicas
    a.login()
    cookie = a.session_cookie()
    assert len(cookie) == 22  # the cookie is an id; the session is in Redis
    for env in (b, c):
        r = with_cookie(env, cookie, "/on-another-replica")
        assert r.status_code == 200 and sent(r)["x-forwarded-email"] == "alice@example.com"
    # RP-initiated logout on C ends the session on A and B.
    page = c.browser.get(c.url("/oauth2/logout"), headers={"Accept": "text/html", "Cookie": f"tokengate_session={cookie}"}, timeout=10)
    r = c.browser.post(c.url("/oauth2/logout"), data={"token": parse_qs_form(page.text)["token"]},
                       headers={"Cookie": f"tokengate_session={cookie}"}, allow_redirects=False, timeout=10)
    assert r.status_code == 302 and r.headers["Location"].startswith(a_s.url)
    logged_out = time.time()
    for env in (a, b):
        assert with_cookie(env, cookie, "/after-logout").status_code == 401
    # A back-channel logout posted to B ends a new session on A and C (begun in a later
    # second than the logout: session start times are whole seconds).
    sleep_into_second(logged_out, 1)
    a.browser = requests.Session()
    r = a.login()
    sub = sent(r)["x-forwarded-user"]
    cookie = a.session_cookie()
    assert with_cookie(c, cookie, "/x").status_code == 200
    assert requests.post(b.url("/oauth2/backchannel-logout"), data={"logout_token": logout_token(a_s, sub=sub)}, timeout=10).status_code == 200
    for env in (a, c):
        assert with_cookie(env, cookie, "/after-backchannel").status_code == 401
    assert redis.cli("--scan", "--pattern", "tg:session:*") == ""


def test_a_dpop_proof_used_on_one_replica_is_refused_on_the_others(replicas, idp):  # noqa: F811
    _, (a, b, c) = replicas
    key = DPoPKey("ES256")
    tok = bound_token(idp, key)
    proof = key.proof("GET", a.url("/dpop/x"), access_token=tok)  # the shared public URL
    h = {"Authorization": f"DPoP {tok}", "DPoP": proof}
    assert requests.get(a.url("/dpop/x"), headers=h, timeout=10).status_code == 200
    for env in (b, c):
        r = requests.get(env.url("/dpop/x"), headers=h, timeout=10)
        assert r.status_code == 401 and "used before" in r.json()["error_description"], r.text
    # A fresh proof is fine on any of them.
    assert requests.get(c.url("/dpop/x"), headers={"Authorization": f"DPoP {tok}", "DPoP": key.proof("GET", a.url("/dpop/x"), access_token=tok)},
                        timeout=10).status_code == 200


class Monitor:
    """Redis MONITOR while the block runs: the commands (as redis-cli prints them), from a mark
    seen at the start to one seen at the end — none missed at either edge."""

    def __init__(self, redis):
        self.redis = redis
        self.lines = []

    def _see(self, mark):
        """ECHOes `mark` until MONITOR shows it: every command sent before is in the lines."""
        def shown():
            if any(mark in line for line in self.lines):
                return True
            self.redis.cli("ECHO", mark)
        wait_for(shown, timeout=10, interval=0.05, what=f"MONITOR to show {mark}")

    def _read(self):
        for line in iter(self.proc.stdout.readline, ""):
            self.lines.append(line)

    def __enter__(self):
        self.proc = subprocess.Popen(["redis-cli", "-p", str(self.redis.port), "MONITOR"], stdout=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True).start()
        self._see("monitor-start")
        return self.lines

    def __exit__(self, *exc):
        try:
            self._see("monitor-end")
        finally:
            self.proc.terminate()
            self.proc.wait(timeout=5)


def test_one_refresh_for_twenty_requests_across_replicas(replicas, redis):
    a_s, (a, b, c) = replicas
    a.login()
    logged_in = time.time()
    cookie = a.session_cookie()
    before = a_s.refresh_count
    sleep_into_second(logged_in, 2)  # the access token (4 s) is now within the 2 s refresh margin
    envs = [a, b, c]
    # Every command Redis runs meanwhile: the refreshed session must be written once (by the
    # lease holder), not again by the requests that waited for it.
    with Monitor(redis) as commands:
        with ThreadPoolExecutor(max_workers=20) as pool:
            results = list(pool.map(lambda i: with_cookie(envs[i % 3], cookie, f"/p/{i}"), range(20)))
    assert [r.status_code for r in results] == [200] * 20, [(r.status_code, r.text[:200]) for r in results if r.status_code != 200]
    assert a_s.refresh_count - before == 1 and a_s.refresh_ok_count == 1
    saves = [c for c in commands if '"EVAL"' in c and "session-gen:" in c]
    assert len(saves) == 1, saves
    # The refreshed session serves every replica afterwards without another refresh.
    for env in envs:
        assert with_cookie(env, cookie, "/after").status_code == 200
    assert a_s.refresh_count - before == 1


def on(env, url):
    """The same path and query on another replica (they share one public URL: A's)."""
    parts = urlsplit(url)
    return env.url(parts.path + ("?" + parts.query if parts.query else ""))


def test_a_login_begun_on_one_replica_finishes_on_another(replicas, redis):
    """Pending login states live in Redis: the browser's login cookie is only a random id, the
    state (PKCE verifier, nonce, return address) is sealed in Redis with a TTL, and any replica
    finishes the login — once."""
    a_s, (a, b, c) = replicas
    r = b.get("/orders/7?x=1")  # begun on B
    assert r.status_code == 302
    browser_id = b.browser.cookies.get("tokengate_login")
    assert browser_id and len(browser_id) == 43  # 32 random bytes, nothing else
    keys = redis.cli("--scan", "--pattern", "tg:login-state:*").split()
    assert len(keys) == 1 and browser_id not in keys[0]
    assert 0 < int(redis.cli("TTL", keys[0])) <= 600
    stored = redis.cli("GET", keys[0])
    assert stored and "/orders/7" not in stored  # sealed: not even the return address is readable
    cb = a_s.login_with_form(b.browser, r.headers["Location"])
    assert parse_qs(urlsplit(cb).query)["state"] and cb.startswith(a.url("/oauth2/callback"))  # A's: the shared public URL
    r = b.get(on(c, cb))  # finished on C
    assert r.status_code == 302 and r.headers["Location"] == "/orders/7?x=1", r.text
    assert redis.cli("--scan", "--pattern", "tg:login-state:*") == ""  # used up
    cookie = b.session_cookie()
    assert with_cookie(a, cookie, "/orders/7").status_code == 200
    # The same callback again, on another replica: the state was used.
    r = b.get(on(a, cb))
    assert r.status_code == 400 and "not started in this browser" in r.text


def test_a_pending_login_answers_only_the_browser_that_began_it(replicas, redis):
    """Login CSRF across replicas: an attacker's callback (their state and code) opened in the
    victim's browser finds nothing — the state counts only with the browser id that began it —
    and a forged or altered browser id finds nothing either."""
    a_s, (a, b, c) = replicas
    attacker = requests.Session()
    r = attacker.get(a.url("/orders/7"), headers={"Accept": "text/html"}, allow_redirects=False, timeout=10)
    assert r.status_code == 302
    attacker_cb = a_s.login_with_form(attacker, r.headers["Location"], user="bob")
    attacker_id = attacker.cookies.get("tokengate_login")
    assert b.get("/mine").status_code == 302  # the victim has a login of their own pending
    victim_id = b.browser.cookies.get("tokengate_login")
    assert victim_id != attacker_id
    r = b.get(on(c, attacker_cb))
    assert r.status_code == 400 and "not started in this browser" in r.text and not b.session_cookie()
    altered = attacker_id[:10] + ("A" if attacker_id[10] != "A" else "B") + attacker_id[11:]
    for forged in (altered, "A" * 43, "", "x" * 5000):
        r = requests.get(on(b, attacker_cb), headers={"Accept": "text/html", "Cookie": f"tokengate_login={forged}"},
                         allow_redirects=False, timeout=10)
        assert r.status_code == 400 and "not started in this browser" in r.text, forged
    # None of that spent the attacker's own login: their browser can still finish it.
    r = attacker.get(on(b, attacker_cb), headers={"Accept": "text/html"}, allow_redirects=False, timeout=10)
    assert r.status_code == 302 and attacker.cookies.get("tokengate_session")


def test_pending_logins_fail_closed_when_redis_is_down(replicas, redis):
    """Neither a login's start nor its callback pretends: without Redis both answer 503 with
    Retry-After, quickly — and after Redis is back, logins work without a restart."""
    a_s, (a, b, c) = replicas
    r = a.get("/orders/7")
    assert r.status_code == 302
    cb = a_s.login_with_form(a.browser, r.headers["Location"])
    redis.stop()
    for env, path in ((b, cb), (c, "/orders/8")):
        t0 = time.time()
        r = a.get(on(env, path) if path.startswith("http") else env.url(path))
        assert time.time() - t0 < 3, "a login waited on a dead Redis"
        assert r.status_code == 503 and r.headers.get("Retry-After") and "Sign-in unavailable" in r.text, r.text
        assert "tokengate_session" not in r.headers.get("Set-Cookie", "")
    redis.start()
    wait_until_logins_start(a)
    a.browser = requests.Session()
    assert a.login().status_code == 200


def test_pending_logins_in_the_cookie_with_a_redis_store(authserver_factory, upstream, tmp_path, redis):
    """session.pending_logins: cookie — nothing is written to Redis before a user has logged
    in; the sealed cookie carries the pending login, and another replica with the same session
    keys still finishes it."""
    a_s = authserver_factory(login="form")
    top = f"store: redis://127.0.0.1:{redis.port}/0"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = LoginEnv(a_s, upstream, tmp_path / "a", extra_top=top, session=", cache_ttl: 0s, pending_logins: cookie")
    b = LoginEnv(a_s, upstream, tmp_path / "b", extra_top=top, session=", cache_ttl: 0s, pending_logins: cookie",
                 share_client_of=a, public_base=a.url("").rstrip("/"))
    try:
        r = b.get("/page")
        assert r.status_code == 302
        assert redis.cli("DBSIZE") == "0"  # a start writes nothing to Redis
        assert len(b.browser.cookies.get("tokengate_login")) > 200  # the sealed pending login itself
        cb = a_s.login_with_form(b.browser, r.headers["Location"])
        assert b.get(cb).status_code == 302  # finished on A (the shared public URL)
        assert b.get("/page").status_code == 200
        assert redis.cli("--scan", "--pattern", "tokengate:session:*") != ""  # the session is in Redis
    finally:
        a.stop()
        b.stop()


def test_request_uri_hosted_by_one_replica_is_served_by_another(authserver_factory, upstream, tmp_path, redis):
    """request_mode: request_uri behind one URL: the replica that begins the login hosts the
    request object in Redis; the AS fetches it from the public URL, which may be another
    replica."""
    a_s = authserver_factory(login="form")
    top = f"store: redis://127.0.0.1:{redis.port}/0"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = LoginEnv(a_s, upstream, tmp_path / "a", mode="request_uri", extra_top=top, session=", cache_ttl: 0s")
    b = LoginEnv(a_s, upstream, tmp_path / "b", mode="request_uri", extra_top=top, session=", cache_ttl: 0s",
                 share_client_of=a, public_base=a.url("").rstrip("/"))
    try:
        r = b.get("/page")  # begun on B; the request_uri names A
        assert r.status_code == 302
        request_uri = parse_qs(urlsplit(r.headers["Location"]).query)["request_uri"][0]
        object_id = request_uri.rsplit("/", 1)[1]
        keys = redis.cli("--scan", "--pattern", "tokengate:request-object:*").split()
        assert len(keys) == 1 and object_id not in keys[0]  # the key does not give the URL away
        stored = redis.cli("GET", keys[0])
        assert stored and not stored.startswith("eyJ") and "." not in stored  # sealed, not the JWT
        cb = a_s.login_with_form(b.browser, r.headers["Location"])
        fetch = a_s.request_uri_fetches[-1]
        assert fetch["status"] == 200 and fetch["url"].startswith(a.url("/oauth2/request/")), fetch
        assert redis.cli("--scan", "--pattern", "tokengate:request-object:*") == ""
        assert requests.get(on(b, request_uri), timeout=10).status_code == 404  # served once
        assert b.get(cb).status_code == 302
        assert b.get("/page").status_code == 200
    finally:
        a.stop()
        b.stop()


def test_redis_killed_and_restarted(replicas, redis):
    _, (a, b, c) = replicas
    a.login()
    cookie = a.session_cookie()
    redis.stop()
    for env in (a, b, c):
        t0 = time.time()
        r = with_cookie(env, cookie, "/during")
        assert time.time() - t0 < 3, "a request waited on a dead Redis"
        assert r.status_code == 503 and r.headers.get("Retry-After"), r.text
    redis.start()  # no persistence: the sessions are gone, and the gateways reconnect by themselves

    def answered():
        status = with_cookie(b, cookie, "/after").status_code
        return status if status != 503 else None
    assert wait_for(answered, timeout=10, interval=0.2, what="an answer other than 503") == 401
    # Each worker's client tries again once its backoff (at most 5 s) has passed: until then a
    # login's start is refused with 503 (never hangs); then every one succeeds.
    wait_until_logins_start(a)
    a.browser = requests.Session()
    assert a.login().status_code == 200
    assert with_cookie(c, a.session_cookie(), "/again").status_code == 200


def wait_until_logins_start(env, deadline_s=10):
    """Until every worker starts logins again: each has its own Redis client, which reconnects
    on its own, and each request's new connection lands on a worker by the kernel's hash. 24
    in a row: 8 could all reach one worker while the other still answered 503 (1 in 128)."""
    def login_begins():
        r = requests.get(env.url("/orders/7"), headers={"Accept": "text/html"}, allow_redirects=False, timeout=5)
        assert r.status_code in (302, 503), r.text
        return r.status_code == 302
    wait_for_streak(login_begins, 24, deadline_s, interval=0.2, what="the gateway to recover after Redis came back")


def test_a_replica_with_a_stale_cached_session_does_not_refresh_again(authserver_factory, upstream, tmp_path, redis):
    """With the default session cache (5 s), replica B may still hold the session as it was
    before A refreshed it. When B then finds it due, it must adopt A's refresh, not spend the
    old (rotated, now invalid) refresh token and log the user out."""
    a_s = authserver_factory(login="form", rotate_refresh_tokens=True, access_token_lifetime=4)
    top = f"store: redis://127.0.0.1:{redis.port}/0"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = LoginEnv(a_s, upstream, tmp_path / "a", extra_top=top, session=", refresh_margin: 2s")
    b = LoginEnv(a_s, upstream, tmp_path / "b", extra_top=top, session=", refresh_margin: 2s", share_client_of=a,
                 public_base=a.url("").rstrip("/"))
    try:
        a.login()
        logged_in = time.time()
        cookie = a.session_cookie()
        for _ in range(4):  # both of B's workers read (and cache) the session now
            assert with_cookie(b, cookie, "/warm").status_code == 200
        sleep_into_second(logged_in, 2)  # within the 2 s refresh margin
        assert with_cookie(a, cookie, "/refresh-on-a").status_code == 200
        assert a_s.refresh_count == 1
        for i in range(6):
            r = with_cookie(b, cookie, f"/stale-on-b/{i}")
            assert r.status_code == 200, r.text
        assert a_s.refresh_count == 1, "B spent the old refresh token"
        assert with_cookie(a, cookie, "/still-in").status_code == 200
    finally:
        a.stop()
        b.stop()
