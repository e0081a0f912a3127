"""`auth: login` end to end (the gateway as the OpenID Connect client of a web app): a real
tokengate, a real upstream and the real authorization server (idpyoidc, its login form,
PAR, JAR, PKCE, refresh rotation, end_session, revocation), driven by a scripted browser
(requests.Session keeps cookies; redirects are followed by hand so every hop is checked).
The same round-trip in headless Chromium is in test_browser.py."""
import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from support.gateway import BIN, Gateway, sent_headers as sent
from support.waiting import sleep_into_second, wait_for

SESSION_KEY = "q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE="  # 32 bytes, base64
SECRET = "web-secret-0123456789abcdef0123456789abcd"
HTML = {"Accept": "text/html"}
# Client authentications without a shared secret (by their suffix).
KEYED = ("private_key_jwt", "tls_client_auth")


def gateway_key(tmp_path, alg="ES256"):
    """A client key made by `tokengate keys generate`: (path of the private JWK, public JWKS)."""
    path = tmp_path / f"web-{alg}.jwk"
    out = subprocess.run([BIN, "keys", "generate", "--alg", alg, "--kid", f"web-{alg.lower()}", "--out", str(path)],
                         capture_output=True, text=True, check=True).stdout
    return str(path), json.loads(out)


# A login route that sends the session's access token upstream (Authorization: Bearer).
API_ROUTE_FORWARDING_TOKEN = """  - name: api
    match: { path_prefix: /api/ }
    upstream: app
    auth: login
    client: web
    forward_token: true"""


class LoginEnv:
    """An AS with the web client registered, and a tokengate logging browsers in to `upstream`."""

    def __init__(self, a, upstream, tmp_path, mode="par", auth="private_key_jwt", extra_client="", extra_top="",
                 extra_route="", key_alg="ES256", session="", prompt="consent", session_key=SESSION_KEY, workers=2,
                 share_client_of=None, extra_issuers="", public_base=None, tls=None,
                 issuer_options="algorithms: [ES256, RS256]", assertion_audience="endpoint", ready=True,
                 client_tls=None):
        """share_client_of: another LoginEnv whose client registration and key this one uses
        (a second replica of the same gateway). tls: (cert, key) for a TLS listener (h2 and
        http/1.1 in ALPN); the public URL is then https. client_tls: (cert, key, subject DN)
        the client presents to the AS (`clients.web.tls`, RFC 8705); the DN is what a
        tls_client_auth client is registered with. An upstream with a `gateway_upstream`
        attribute is configured by it (an `upstreams.app` mapping) instead of by its port."""
        self.a = a
        self.gw = Gateway("")  # for its port: the redirect URI names it
        base = public_base or f"{'https' if tls else 'http'}://127.0.0.1:{self.gw.port}"
        self.base = base
        listen = "127.0.0.1:{PORT}"
        if tls:
            listen = f"{{ address: 127.0.0.1:{{PORT}}, tls: {{ cert_file: {tls[0]}, key_file: {tls[1]} }} }}"
        if share_client_of is not None:
            self.key_path = share_client_of.key_path
        else:
            self.key_path, jwks = gateway_key(tmp_path, key_alg)
            a.add_client("web", client_secret=SECRET if not auth.endswith(KEYED) else None, jwks=jwks,
                         scopes=["openid", "profile", "email", "offline_access", "orders:read"],
                         redirect_uri=f"{base}/oauth2/callback", token_endpoint_auth_method=auth,
                         post_logout_redirect_uri=f"{base}/bye",
                         tls_client_auth_subject_dn=client_tls[2] if client_tls else None,
                         jwks_uri=f"{self.gw.url('/.well-known/jwks.json')}")
        secret = f'secret: "{SECRET}"\n    ' if not auth.endswith(KEYED) else ""
        if client_tls:
            secret += f"tls: {{ cert_file: {client_tls[0]}, key_file: {client_tls[1]} }}\n    "
        self.gw.write_config(f"""
listen: {listen}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: {workers}
public_url: {base}
session: {{ keys: ["{session_key}"], secure_cookie: false {session} }}
{extra_top}
issuers:
  as1: {{ issuer: "{a.issuer}", discovery: true, audiences: [api], {issuer_options} }}
{extra_issuers}
clients:
  web:
    issuer: as1
    client_id: web
    auth: {auth}
    {secret}key_file: "{self.key_path}"
    assertion_audience: {assertion_audience}
    request_mode: {mode}
    scopes: [openid, profile, email, offline_access]
    extra: {{ prompt: {prompt} }}
    post_logout_redirect_uri: {base}/bye
{extra_client}
upstreams:
  app: {getattr(upstream, "gateway_upstream", None) or f'{{ url: "http://127.0.0.1:{upstream.port}" }}'}
routes:
  - name: bye
    match: {{ path: /bye }}
    upstream: app
    auth: none
{extra_route}
  - name: web
    match: {{ path_prefix: / }}
    upstream: app
    auth: login
    client: web
    headers: {{ X-Forwarded-User: sub, X-Forwarded-Email: email, X-Forwarded-Groups: groups }}
""")
        # ready=False: only alive (/healthz), for an AS whose metadata the gateway refuses.
        self.gw.start() if ready else self.gw.start_no_wait()
        self.browser = requests.Session()

    def url(self, path):
        return self.base + path if self.base.startswith("https:") else self.gw.url(path)

    def get(self, path_or_url, **kw):
        url = path_or_url if path_or_url.startswith("http") else self.url(path_or_url)
        kw.setdefault("headers", HTML)
        return self.browser.get(url, allow_redirects=False, timeout=15, **kw)

    def to_callback(self, path="/orders/7?x=1", user="alice"):
        """Opens a protected page and logs in at the AS's form: the callback URL the AS sends
        the browser to (not yet followed)."""
        r = self.get(path)
        assert r.status_code == 302, (r.status_code, r.text)
        location = self.a.login_with_form(self.browser, r.headers["Location"], user=user)
        assert location.startswith(self.url("/oauth2/callback")), location
        return location

    def login(self, path="/orders/7?x=1", user="alice"):
        """The whole round-trip from a protected page: returns that page (from the upstream)."""
        r = self.get(self.to_callback(path, user))
        assert r.status_code == 302, (r.status_code, r.text, self.gw.output()[-3000:])
        assert r.headers["Location"] == path
        return self.get(path)

    def session_cookie(self):
        return self.browser.cookies.get("tokengate_session")

    def stop(self):
        self.gw.stop()


@pytest.fixture
def login_as(authserver_factory):
    return authserver_factory(login="form", rotate_refresh_tokens=True)


@pytest.fixture
def login_env():
    """Makes gateways for a login test as `LoginEnv(...)` does, and stops every one of them
    when the test ends, whether it passed or not."""
    made = []

    def make(*args, **kwargs):
        e = LoginEnv(*args, **kwargs)
        made.append(e)
        return e

    yield make
    for e in reversed(made):
        e.stop()


@pytest.fixture
def env(login_env, login_as, upstream, tmp_path):
    return login_env(login_as, upstream, tmp_path)


def test_login_round_trip_par_private_key_jwt(env):
    r = env.login()
    assert r.status_code == 200, r.text
    h = sent(r)
    assert h["x-forwarded-email"] == "alice@example.com" and h["x-forwarded-user"]
    assert r.json()["path"] == "/orders/7?x=1"
    # The gateway's cookies never reach the upstream.
    assert "tokengate" not in h.get("cookie", "")
    # The AS saw a pushed, signed request object and PKCE S256.
    first = next(x for x in env.a.authorizations if x.get("client_id") == "web")
    assert first["via"] == "par" and first["signed"], first
    assert first["params"]["code_challenge_method"] == "S256" and first["params"]["nonce"], first


@pytest.mark.parametrize("mode,via", [("par", "par"), ("request", "request"), ("request_uri", "request_uri"), ("plain", "query")])
def test_each_request_mode(login_env, login_as, upstream, tmp_path, mode, via):
    e = login_env(login_as, upstream, tmp_path, mode=mode)
    r = e.login()
    assert r.status_code == 200 and sent(r)["x-forwarded-email"] == "alice@example.com", r.text
    first = next(x for x in login_as.authorizations if x.get("client_id") == "web")
    assert first["via"] == via and first["signed"] == (mode != "plain"), first
    if mode == "request_uri":
        # The AS fetched the hosted request object once; a second fetch finds nothing.
        fetched = login_as.request_uri_fetches[-1]
        assert fetched["status"] == 200 and fetched["content_type"].startswith("application/oauth-authz-req+jwt"), fetched
        assert requests.get(fetched["url"], timeout=5).status_code == 404


@pytest.mark.parametrize("auth", ["client_secret_jwt", "client_secret_basic", "client_secret_post"])
def test_other_client_authentication(login_env, login_as, upstream, tmp_path, auth):
    e = login_env(login_as, upstream, tmp_path, auth=auth, key_alg="RS256")
    assert e.login().status_code == 200
    code = [t for t in login_as.token_requests if t["grant_type"] == "authorization_code"][-1]
    assert code["status"] == 200, code


def test_the_session_serves_later_requests_without_the_as(env):
    env.login()
    before = len(env.a.authorizations)
    for path in ["/a", "/b?c=d", "/orders/7"]:
        r = env.get(path)
        assert r.status_code == 200 and sent(r)["x-forwarded-email"] == "alice@example.com"
    assert len(env.a.authorizations) == before
    # The cookie is sealed: no token or claim can be read from it.
    cookie = env.session_cookie()
    assert cookie and "alice" not in cookie and "." not in cookie


def test_jwks_publishes_the_client_key(env):
    keys = requests.get(env.url("/.well-known/jwks.json"), timeout=5).json()["keys"]
    assert [k["kid"] for k in keys] == ["web-es256"] and "d" not in keys[0]


# --- not a browser page: 401, never a redirect ------------------------------------------------

@pytest.mark.parametrize("headers,method", [
    ({"Accept": "application/json"}, "GET"),
    ({"Accept": "text/html", "X-Requested-With": "XMLHttpRequest"}, "GET"),
    ({"Accept": "text/html", "Sec-Fetch-Mode": "cors"}, "GET"),
    ({"Accept": "text/html"}, "POST"),
])
def test_non_navigation_requests_get_401(env, headers, method):
    r = env.browser.request(method, env.url("/api/x"), headers=headers, allow_redirects=False, timeout=10)
    if method == "POST":  # a browser's form POST: the error page (test_pages.py), still a 401
        assert r.status_code == 401 and r.headers["Content-Type"].startswith("text/html") and "Sign-in required" in r.text, r.text
    else:
        assert r.status_code == 401 and r.json()["error"] == "login_required", r.text
    assert "Location" not in r.headers


# --- refresh ---------------------------------------------------------------------------------

@pytest.fixture
def short_as(authserver_factory):
    """Access tokens that live 3 s; refresh tokens rotate (each works once)."""
    return authserver_factory(login="form", rotate_refresh_tokens=True, access_token_lifetime=3, id_token_lifetime=300)


def test_refresh_before_expiry_then_the_session_goes_on(login_env, short_as, upstream, tmp_path):
    e = login_env(short_as, upstream, tmp_path, session=", refresh_margin: 1s")
    e.login()
    logged_in = time.time()
    old = e.session_cookie()
    sleep_into_second(logged_in, 2)  # the access token (3 s) is within the 1 s margin
    r = e.get("/after-refresh")
    assert r.status_code == 200, r.text
    assert short_as.refresh_ok_count == 1
    assert e.session_cookie() != old  # the refreshed session, re-sealed
    r = e.get("/again")
    assert r.status_code == 200 and short_as.refresh_count == 1


def test_parallel_requests_at_refresh_time_make_one_refresh(login_env, short_as, upstream, tmp_path):
    """Rotating refresh tokens work once: 20 requests that all find the token due must share
    one refresh (on any worker), not race it — and every one of them succeeds."""
    e = login_env(short_as, upstream, tmp_path, session=", refresh_margin: 1s")
    e.login()
    logged_in = time.time()
    cookie = e.session_cookie()
    sleep_into_second(logged_in, 2)  # the access token is due
    def one(i):
        return requests.get(e.url(f"/p/{i}"), headers={"Accept": "application/json", "Cookie": f"tokengate_session={cookie}"},
                            timeout=15)
    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(one, range(20)))
    assert [r.status_code for r in results] == [200] * 20, [(r.status_code, r.text) for r in results if r.status_code != 200]
    assert short_as.refresh_count == 1 and short_as.refresh_ok_count == 1


def test_an_as_that_is_down_does_not_end_the_session(login_env, short_as, upstream, tmp_path):
    """The AS answers 503 when the access token is due: the session goes on where no token is
    sent upstream; a route that forwards the token answers 503 (try again) instead of sending
    an expired one; once the AS is back, one refresh and both routes work."""
    e = login_env(short_as, upstream, tmp_path, session=", refresh_margin: 1s",
                 extra_route=API_ROUTE_FORWARDING_TOKEN)
    e.login("/api/me")
    sleep_into_second(time.time(), 3)  # the access token (3 s) has expired
    short_as.down_status = 503
    try:
        r = e.browser.get(e.url("/api/me"), headers={"Accept": "application/json"}, allow_redirects=False, timeout=10)
        assert r.status_code == 503 and r.headers.get("Retry-After") and "Set-Cookie" not in r.headers, r.text
        r = e.browser.get(e.url("/page"), headers={"Accept": "application/json"}, allow_redirects=False, timeout=10)
        assert r.status_code == 200 and sent(r)["x-forwarded-user"], r.text
    finally:
        short_as.down_status = None
    before = short_as.refresh_ok_count
    r = e.browser.get(e.url("/api/me"), headers={"Accept": "application/json"}, allow_redirects=False, timeout=10)
    assert r.status_code == 200 and sent(r)["authorization"].startswith("Bearer "), r.text
    assert short_as.refresh_ok_count - before == 1


def test_failed_refresh_ends_the_session_cleanly(login_env, short_as, upstream, tmp_path):
    e = login_env(short_as, upstream, tmp_path, session=", refresh_margin: 1s")
    e.login()
    sleep_into_second(time.time(), 2)  # the access token is due
    short_as.down_status = 400  # the AS refuses the refresh (e.g. the grant was revoked)
    try:
        r = e.browser.get(e.url("/x"), headers={"Accept": "application/json"}, allow_redirects=False, timeout=10)
    finally:
        short_as.down_status = None
    assert r.status_code == 401 and r.json()["error"] == "login_required", r.text
    assert "tokengate_session=;" in r.headers.get("Set-Cookie", ""), "the dead session's cookie is cleared"
    # The next page view starts a new login (no loop, no error page).
    r = e.get("/x")
    assert r.status_code == 302 and r.headers["Location"].startswith(short_as.url)


# --- logout ------------------------------------------------------------------------------------

def test_logout_ends_the_session_revokes_and_logs_out_at_the_as(env):
    env.login()
    copied = env.session_cookie()
    # GET without a token: a confirmation page with a same-origin POST form (CSRF-safe).
    r = env.get("/oauth2/logout")
    assert r.status_code == 200 and 'method="post"' in r.text
    form = parse_qs_form(r.text)
    assert form["token"]
    # A POST without the token is refused and logs nobody out.
    r = env.browser.post(env.url("/oauth2/logout"), data={}, allow_redirects=False, timeout=10)
    assert r.status_code == 403
    assert env.get("/still-in").status_code == 200
    r = env.browser.post(env.url("/oauth2/logout"), data={"token": form["token"]}, allow_redirects=False, timeout=10)
    assert r.status_code == 302
    end = urlsplit(r.headers["Location"])
    q = parse_qs(end.query)
    assert r.headers["Location"].startswith(env.a.url + "/end_session")
    assert q["id_token_hint"] and q["post_logout_redirect_uri"] == [env.url("/bye")] and q["client_id"] == ["web"]
    assert "tokengate_session=;" in r.headers["Set-Cookie"]
    # The AS ends its own session and sends the browser back to the app.
    r = env.get(r.headers["Location"])
    assert r.status_code == 302 and r.headers["Location"].startswith(env.url("/bye")), r.text
    assert env.a.end_session_calls[-1]["status"] == 302
    # The revocation goes to the AS beside the redirect, not before it: wait for it (bounded).
    wait_for(lambda: env.a.revocations, 5, interval=0.05, what="the revocation")
    assert env.a.revocations and env.a.revocations[-1]["token_type_hint"] == "refresh_token"
    # The protected page asks for a login again — and the AS shows its form again.
    r = env.get("/orders/7")
    assert r.status_code == 302
    page = env.a.login_page(env.browser, r.headers["Location"])
    assert page.status_code == 200 and 'name="password"' in page.text
    # A copy of the old cookie is worth nothing (the embedded store remembers ended sessions).
    r = requests.get(env.url("/x"), headers={"Accept": "application/json", "Cookie": f"tokengate_session={copied}"}, timeout=10)
    assert r.status_code == 401


def parse_qs_form(html):
    import re
    return {m.group(1): m.group(2) for m in re.finditer(r'name="([^"]+)" value="([^"]*)"', html)}


# --- the callback from the attacker's side ------------------------------------------------------

def test_state_mismatch_is_refused(env):
    cb = env.to_callback()
    forged = cb.replace("state=", "state=x")
    r = env.get(forged)
    assert r.status_code == 400 and "not started in this browser" in r.text
    assert env.session_cookie() is None


def test_callback_without_the_login_state_cookie_is_refused(env):
    cb = env.to_callback()
    # The same callback URL in another browser (an attacker's link: login CSRF).
    r = requests.get(cb, headers=HTML, allow_redirects=False, timeout=10)
    assert r.status_code == 400 and "tokengate_session" not in r.headers.get("Set-Cookie", "")
    # The real browser can still finish its login.
    assert env.get(cb).status_code == 302


def test_replayed_code_is_refused(env):
    env.browser.get(env.url("/orders/7?x=1"), headers=HTML, allow_redirects=False, timeout=10)
    login_cookie = env.browser.cookies.get("tokengate_login")
    cb = env.to_callback()
    login_cookie = env.browser.cookies.get("tokengate_login")
    assert env.get(cb).status_code == 302
    # Replay: the same code with a copy of the login-state cookie as it was.
    replay = requests.Session()
    replay.cookies.set("tokengate_login", login_cookie)
    r = replay.get(cb, headers=HTML, allow_redirects=False, timeout=10)
    assert r.status_code == 400, r.text
    assert "tokengate_session" not in r.headers.get("Set-Cookie", "")
    codes = [t for t in env.a.token_requests if t["grant_type"] == "authorization_code"]
    assert codes[-1]["status"] != 200  # the AS refused the second use


def test_wrong_iss_in_the_callback_is_refused(env):
    """RFC 9207 mix-up defence: a response claiming another issuer, or none where the AS
    promised one, is refused before the code is used."""
    before = len(env.a.token_requests)
    for forge in [lambda cb: cb.replace("iss=http", "iss=https"), lambda cb: "&".join(p for p in cb.split("&") if not p.startswith("iss="))]:
        r = env.get(forge(env.to_callback()))
        assert r.status_code == 400 and "unexpected server" in r.text, r.text
    assert len(env.a.token_requests) == before
    # A refused response also spends its pending login: the genuine one cannot follow it.


def test_error_response_is_shown_not_looped(login_env, login_as, upstream, tmp_path):
    e = login_env(login_as, upstream, tmp_path, prompt="none")
    r = e.get("/orders/1")
    r = e.get(e.a.login_page(e.browser, r.headers["Location"]).headers["Location"])
    assert r.status_code == 403 and "login_required" in r.text and "Location" not in r.headers


def test_parallel_logins_in_tabs_and_no_cookie_pile_up(env):
    # Two tabs start logins before either comes back: both complete.
    cb1 = env.to_callback("/tab1")
    cb2 = env.to_callback("/tab2")
    assert env.get(cb2).headers["Location"] == "/tab2"
    assert env.get(cb1).headers["Location"] == "/tab1"
    # In a new browser, eight logins started: only the five newest stay pending, and the
    # login-state cookie stays one cookie.
    env.browser = requests.Session()
    cbs = [env.to_callback(f"/t{i}") for i in range(8)]
    assert len(env.browser.cookies.get("tokengate_login")) < 3800
    assert env.get(cbs[0]).status_code == 400
    assert env.get(cbs[-1]).status_code == 302


# --- session cookies from the attacker's side ------------------------------------------------------

def test_tampered_and_foreign_session_cookies(login_env, env, login_as, upstream, tmp_path):
    env.login()
    cookie = env.session_cookie()
    flipped = cookie[:40] + ("A" if cookie[40] != "A" else "B") + cookie[41:]
    for bad in [flipped, cookie[:-4], "x" + cookie, "garbage"]:
        r = requests.get(env.url("/x"), headers={"Accept": "application/json", "Cookie": f"tokengate_session={bad}"}, timeout=10)
        assert r.status_code == 401, bad[:20]
    # A gateway with another session key does not accept it.
    (tmp_path / "other").mkdir()
    other = login_env(login_as, upstream, tmp_path / "other", session_key="AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
    r = requests.get(other.url("/x"), headers={"Accept": "application/json", "Cookie": f"tokengate_session={cookie}"}, timeout=10)
    assert r.status_code == 401


def test_idle_and_absolute_timeouts(login_env, login_as, authserver_factory, upstream, tmp_path):
    """Real time, end to end, for both timeouts at once (5 s, the least either allows): a
    session left alone past the idle timeout, and an active one past the absolute timeout.
    That activity moves the idle deadline, and each boundary to the second, are tested with
    a manual clock (Tests/GatewayTests/SessionTimeTests.swift)."""
    idle = login_env(login_as, upstream, tmp_path, session=", idle_timeout: 5s, absolute_timeout: 1h")
    (tmp_path / "absolute").mkdir()
    absolute = login_env(authserver_factory(login="form"), upstream, tmp_path / "absolute",
                         session=", idle_timeout: 1h, absolute_timeout: 5s")
    idle.login()
    absolute.login()
    logged_in = time.time()
    sleep_into_second(logged_in, 3)
    assert absolute.get("/active").status_code == 200  # activity ...
    sleep_into_second(logged_in, 5)
    assert absolute.get("/late").status_code == 302  # ... but not past the absolute timeout
    assert idle.get("/idle").status_code == 302  # idle for 5 s


@pytest.mark.parametrize("rd", ["//evil.example/x", "https:evil.example", "/\\\\evil.example", "/%2F%2Fevil.example",
                                "%2F%2Fevil.example", "https://evil.example/", "javascript:alert(1)", "/%5Cevil.example",
                                "http://evil.example/", "https://allowed.test.evil.example/", "https://app.allowed.test@evil.example/",
                                # `//host` once dot segments are resolved (RFC 3986 §5.2.4), raw or decoded
                                "/.//evil.example", "/./%2Fevil.example", "/%2e//evil.example", "/a/..//evil.example",
                                "/../..//evil.example/x", "https://app.allowed.test/.//evil.example",
                                # ports no host has
                                "https://app.allowed.test:99999/", "https://app.allowed.test:0/", "https://app.allowed.test:/x",
                                "https://app.allowed.test:443443/", "https://app.allowed.test:-1/", "https://app.allowed.test:\u0663/"])
def test_open_redirects_are_refused(login_env, login_as, upstream, tmp_path, rd):
    e = login_env(login_as, upstream, tmp_path, extra_top="login: { allowed_redirect_hosts: [app.allowed.test] }")
    r = e.browser.get(e.url("/oauth2/start"), params={"rd": rd}, headers=HTML, allow_redirects=False, timeout=10)
    assert r.status_code == 302
    cb = e.a.login_with_form(e.browser, r.headers["Location"])
    assert e.get(cb).headers["Location"] == "/", rd


def test_allowed_return_targets(login_env, login_as, upstream, tmp_path):
    e = login_env(login_as, upstream, tmp_path, extra_top="login: { allowed_redirect_hosts: [app.allowed.test] }")
    for rd, want in [("/orders/7?tab=2", "/orders/7?tab=2"), ("https://app.allowed.test/done", "https://app.allowed.test/done"),
                     ("/a/./b/../orders/7?x=/../y", "/a/orders/7?x=/../y"), ("/..//../orders", "/orders"),
                     ("https://app.allowed.test:8443/done", "https://app.allowed.test:8443/done")]:
        r = e.browser.get(e.url("/oauth2/start"), params={"rd": rd}, headers=HTML, allow_redirects=False, timeout=10)
        cb = e.a.login_with_form(e.browser, r.headers["Location"])
        assert e.get(cb).headers["Location"] == want, rd


# --- sessions in Redis ---------------------------------------------------------------------------

def test_sessions_in_redis_are_shared_by_replicas(login_env, login_as, upstream, tmp_path):
    from support.redis_server import RedisServer
    redis = RedisServer().start()
    top = f"store: redis://127.0.0.1:{redis.port}/0"
    a = login_env(login_as, upstream, tmp_path, extra_top=top, session=", cache_ttl: 0s")
    (tmp_path / "b").mkdir()
    b = login_env(login_as, upstream, tmp_path / "b", extra_top=top, session=", cache_ttl: 0s", share_client_of=a)
    try:
        a.login()
        cookie = a.session_cookie()
        assert len(cookie) == 22  # only the session's random id
        r = requests.get(b.url("/on-b"), headers={"Accept": "application/json", "Cookie": f"tokengate_session={cookie}"}, timeout=10)
        assert r.status_code == 200 and sent(r)["x-forwarded-email"] == "alice@example.com"
        # Logout on A ends it on B too.
        page = a.get("/oauth2/logout")
        a.browser.post(a.url("/oauth2/logout"), data={"token": parse_qs_form(page.text)["token"]}, allow_redirects=False, timeout=10)
        r = requests.get(b.url("/on-b"), headers={"Accept": "application/json", "Cookie": f"tokengate_session={cookie}"}, timeout=10)
        assert r.status_code == 401
    finally:
        redis.close()


# --- DPoP at the token endpoint ------------------------------------------------------------------

def test_dpop_bound_tokens_from_the_token_endpoint(login_env, authserver_factory, upstream, tmp_path):
    """`dpop: true`: the gateway proves a key of its own at the token endpoint (RFC 9449 §5),
    for the code exchange and for refreshes, so the session's tokens are bound to it."""
    a = authserver_factory(login="form", dpop=True, rotate_refresh_tokens=True, access_token_lifetime=3)
    e = login_env(a, upstream, tmp_path, extra_client="    dpop: true", session=", refresh_margin: 1s",
                 extra_route=API_ROUTE_FORWARDING_TOKEN)
    r = e.login("/api/me")
    logged_in = time.time()
    assert r.status_code == 200, r.text
    token = sent(r)["authorization"].split(" ", 1)[1]
    claims = json.loads(base64url_decode(token.split(".")[1]))
    assert claims["cnf"]["jkt"], claims
    sleep_into_second(logged_in, 2)  # the access token is due
    r = e.get("/api/me")
    assert r.status_code == 200 and a.refresh_ok_count == 1
    token2 = sent(r)["authorization"].split(" ", 1)[1]
    assert token2 != token and json.loads(base64url_decode(token2.split(".")[1]))["cnf"] == claims["cnf"]


def base64url_decode(s):
    import base64
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


# --- authorization and what reaches the upstream (fixes from the login review) ---------------------

def test_session_routes_enforce_require(login_env, login_as, upstream, tmp_path):
    e = login_env(login_as, upstream, tmp_path, extra_route="""  - name: admin
    match: { path_prefix: /admin/ }
    upstream: app
    auth: login
    client: web
    require: { claims: { groups: { contains: admin } } }
  - name: staff
    match: { path_prefix: /staff/ }
    upstream: app
    auth: login
    client: web
    require: { claims: { groups: { contains: staff } } }""")
    e.login()
    r = e.browser.get(e.url("/admin/x"), headers={"Accept": "application/json"}, allow_redirects=False, timeout=10)
    assert r.status_code == 403 and r.json()["error"] == "insufficient_scope", r.text
    assert e.get("/staff/x").status_code == 200


def test_login_or_token_session_path_never_forwards_a_client_credential(login_env, login_as, upstream, tmp_path):
    e = login_env(login_as, upstream, tmp_path, extra_route="""  - name: mixed
    match: { path_prefix: /mixed/ }
    upstream: app
    auth: login_or_token
    client: web
    issuers: [as1]
    forward_token: true""")
    e.login()
    forged = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9."
    r = e.get("/mixed/x", headers={"Accept": "text/html", "Authorization": f"Bearer {forged}", "DPoP": "x"})
    assert r.status_code == 200
    h = sent(r)
    assert "authorization" not in h and "dpop" not in h, h
    assert h["x-forwarded-email"] == "alice@example.com"


def test_unverified_email_is_never_an_identity_header(login_env, login_as, upstream, tmp_path):
    e = login_env(login_as, upstream, tmp_path)
    r = e.login(user="mallory")
    assert r.status_code == 200
    assert "x-forwarded-email" not in sent(r) and sent(r)["x-forwarded-user"]


def test_upstream_cannot_set_the_gateways_cookies_and_session_cookies_are_not_cached(login_env, login_as, upstream, tmp_path):
    e = login_env(login_as, upstream, tmp_path, session=", idle_timeout: 10s")
    e.login()
    logged_in = time.time()
    r = e.get("/set-cookie/tokengate_session")
    assert r.status_code == 200
    assert "evil" not in r.headers.get("Set-Cookie", "") and "app=1" in r.headers.get("Set-Cookie", "")
    # At most once per idle/10 the gateway re-seals the session: that response is private.
    sleep_into_second(logged_in, 1)
    r = e.get("/cacheable")
    assert "tokengate_session=" in r.headers.get("Set-Cookie", ""), r.headers
    assert r.headers["Cache-Control"] == "private, no-store"
