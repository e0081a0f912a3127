"""The login round-trip in a real browser: headless Chromium (Debian's chromium and
chromium-driver, driven by selenium) against a real tokengate, the real authorization server
(its login form) and a real upstream. Protected page → AS login form → back at the page,
whose upstream echo shows the identity headers; a reload (the session); past the access
token's lifetime (a refresh); logout → the page asks for a login again."""
import json
import subprocess
import time

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from support.browser import browser, new_browser  # noqa: F401 — fixture
from support.gateway import Gateway
from support.waiting import sleep_into_second
from test_login import SECRET, SESSION_KEY, LoginEnv


@pytest.fixture
def short_as(authserver_factory):
    return authserver_factory(login="form", rotate_refresh_tokens=True, access_token_lifetime=4)


def echoed(driver):
    """The upstream's echo (JSON) as the browser shows it."""
    body = driver.find_element(By.TAG_NAME, "body").text
    data = json.loads(body[body.index("{"):])
    return data, {k.lower(): v for k, v in data["headers"]}


def test_login_session_refresh_logout_in_chromium(browser, short_as, upstream, tmp_path):  # noqa: F811
    e = LoginEnv(short_as, upstream, tmp_path, session=", refresh_margin: 2s")
    try:
        wait = WebDriverWait(browser, 15)
        browser.get(e.url("/account?tab=1"))
        # The AS's own login form.
        wait.until(EC.presence_of_element_located((By.NAME, "username")))
        assert browser.current_url.startswith(short_as.url)
        browser.find_element(By.NAME, "username").send_keys("alice")
        browser.find_element(By.NAME, "password").send_keys("alice-password")
        browser.find_element(By.CSS_SELECTOR, "[type=submit]").click()
        # Back at the page it asked for, through the gateway, with the identity headers.
        wait.until(lambda d: d.current_url == e.url("/account?tab=1"))
        logged_in = time.time()
        data, headers = echoed(browser)
        assert data["path"] == "/account?tab=1"
        assert headers["x-forwarded-email"] == "alice@example.com" and headers["x-forwarded-user"]
        assert "tokengate" not in headers.get("cookie", "")
        cookie = browser.get_cookie("tokengate_session")
        assert cookie and cookie["httpOnly"] and cookie["sameSite"] == "Lax"

        # A reload: the session, no trip to the AS.
        before = len(short_as.authorizations)
        browser.refresh()
        assert echoed(browser)[1]["x-forwarded-email"] == "alice@example.com"
        assert len(short_as.authorizations) == before

        # Past the access token's lifetime: the gateway refreshes, the page just works.
        sleep_into_second(logged_in, 3)
        browser.get(e.url("/later"))
        assert echoed(browser)[0]["path"] == "/later"
        assert short_as.refresh_ok_count == 1

        # Logout: the confirmation form, the AS's end_session, back to the app's /bye.
        browser.get(e.url("/oauth2/logout"))
        wait.until(EC.element_to_be_clickable((By.ID, "logout"))).click()
        wait.until(lambda d: d.current_url.startswith(e.url("/bye")))
        assert short_as.end_session_calls and short_as.revocations
        assert browser.get_cookie("tokengate_session") is None
        # The protected page asks for a login again: the AS's form.
        browser.get(e.url("/account"))
        wait.until(EC.presence_of_element_located((By.NAME, "password")))
        assert browser.current_url.startswith(short_as.url)
    finally:
        e.stop()


# --- One login across subdomains (session.cookie_domain), in Chromium -----------------------
#
# Two host names under one test domain, app1.tokengate.test and app2.tokengate.test, both
# resolved to 127.0.0.1 by Chromium itself (--host-resolver-rules). The gateway listens with
# TLS: Chromium stores Secure cookies (and __Secure-/__Host- names) only from a secure
# origin, and http://app1.tokengate.test is not one (only http://localhost is exempt). The
# certificate is a throwaway self-signed one made here with openssl for both names, and
# Chromium is told to accept it (--ignore-certificate-errors): the test is about cookies,
# not about certificate validation, and this keeps the real Secure-cookie rules in force.

def _tls_cert(tmp_path):
    cert, key = tmp_path / "gw.crt", tmp_path / "gw.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
                    "-subj", "/CN=app1.tokengate.test", "-keyout", str(key), "-out", str(cert),
                    "-addext", "subjectAltName=DNS:app1.tokengate.test,DNS:app2.tokengate.test"],
                   check=True, capture_output=True)
    return str(cert), str(key)


class SubdomainEnv:
    """One tokengate (TLS) serving app1 and app2 under tokengate.test, logging in at the real AS."""

    def __init__(self, a, upstream, tmp_path, client_id, session_extra=""):
        self.gw = Gateway("")
        self.origins = [f"https://app{i}.tokengate.test:{self.gw.port}" for i in (1, 2)]
        a.add_client(client_id, client_secret=SECRET, scopes=["openid", "profile", "email"],
                     redirect_uri=[o + "/oauth2/callback" for o in self.origins], token_endpoint_auth_method="client_secret_basic")
        cert, key = _tls_cert(tmp_path)
        self.gw.write_config(f"""
listen:
  - address: 127.0.0.1:{{PORT}}
    tls: {{ cert_file: "{cert}", key_file: "{key}" }}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
public_url: [{", ".join(self.origins)}]
session: {{ keys: ["{SESSION_KEY}"] {session_extra} }}
issuers:
  as1: {{ issuer: "{a.issuer}", discovery: true, audiences: [api], algorithms: [ES256, RS256] }}
clients:
  web: {{ issuer: as1, client_id: {client_id}, secret: "{SECRET}", request_mode: plain, scopes: [openid, profile, email] }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - match: {{ path_prefix: / }}
    upstream: app
    auth: login
    client: web
    headers: {{ X-Forwarded-Email: email }}
""")
        self.gw.start()

    def url(self, app, path):
        return self.origins[app - 1] + path


def _browser_for_subdomains():
    return new_browser(extra_args=("--host-resolver-rules=MAP *.tokengate.test 127.0.0.1", "--ignore-certificate-errors"))


def _login_at_form(driver, a, wait):
    wait.until(EC.presence_of_element_located((By.NAME, "username")))
    assert driver.current_url.startswith(a.url)
    driver.find_element(By.NAME, "username").send_keys("alice")
    driver.find_element(By.NAME, "password").send_keys("alice-password")
    driver.find_element(By.CSS_SELECTOR, "[type=submit]").click()


def test_cookie_domain_one_login_for_two_hosts(authserver_factory, upstream, tmp_path):
    a = authserver_factory(login="form")
    e = SubdomainEnv(a, upstream, tmp_path, "sub-web", session_extra=", cookie_domain: tokengate.test")
    driver = _browser_for_subdomains()
    try:
        wait = WebDriverWait(driver, 15)
        driver.get(e.url(1, "/one"))
        _login_at_form(driver, a, wait)
        wait.until(lambda d: d.current_url == e.url(1, "/one"))
        assert echoed(driver)[1]["x-forwarded-email"] == "alice@example.com"
        cookies = {c["name"]: c for c in driver.execute_cdp_cmd("Network.getAllCookies", {})["cookies"]}
        session = cookies["__Secure-tokengate_session"]
        assert session["domain"] == ".tokengate.test" and session["secure"] and session["httpOnly"] and session["sameSite"] == "Lax"
        # The login-state cookie (if still there) stays host-only under __Host-.
        assert all(c["domain"] == "app1.tokengate.test" for n, c in cookies.items() if "tokengate_login" in n)
        assert not any(n.startswith("tokengate_") or n.startswith("__Host-tokengate_session") for n in cookies)
        # app2: the same login, no trip to the AS; the upstream never sees the gateway's cookie.
        before = len(a.authorizations)
        driver.get(e.url(2, "/two"))
        data, headers = echoed(driver)
        assert driver.current_url == e.url(2, "/two") and data["path"] == "/two"
        assert headers["x-forwarded-email"] == "alice@example.com" and "tokengate" not in headers.get("cookie", "")
        assert len(a.authorizations) == before
    finally:
        driver.quit()
        e.gw.stop()


def test_without_cookie_domain_each_host_logs_in(authserver_factory, upstream, tmp_path):
    a = authserver_factory(login="form")
    e = SubdomainEnv(a, upstream, tmp_path, "host-web")
    driver = _browser_for_subdomains()
    try:
        wait = WebDriverWait(driver, 15)
        driver.get(e.url(1, "/one"))
        _login_at_form(driver, a, wait)
        wait.until(lambda d: d.current_url == e.url(1, "/one"))
        assert echoed(driver)[1]["x-forwarded-email"] == "alice@example.com"
        cookies = {c["name"]: c for c in driver.execute_cdp_cmd("Network.getAllCookies", {})["cookies"]}
        assert cookies["__Host-tokengate_session"]["domain"] == "app1.tokengate.test"
        # app2 has no session: the gateway sends the browser to the AS to log in there too.
        before = len(a.authorizations)
        driver.get(e.url(2, "/two"))
        wait.until(lambda d: len(a.authorizations) > before and a.authorizations[-1]["params"])
        assert a.authorizations[-1]["params"]["redirect_uri"] == e.url(2, "/oauth2/callback")
    finally:
        driver.quit()
        e.gw.stop()


def test_same_site_strict_login_in_chromium(authserver_factory, upstream, tmp_path):
    """SameSite=Strict: the AS's redirect back is a cross-site navigation, whose redirects
    carry no Strict cookie; the callback's self-navigating page gets the browser to the page
    with its new session instead of into a login loop."""
    a = authserver_factory(login="form")
    e = SubdomainEnv(a, upstream, tmp_path, "strict-web", session_extra=", same_site: strict")
    driver = _browser_for_subdomains()
    try:
        wait = WebDriverWait(driver, 15)
        driver.get(e.url(1, "/one?x=1"))
        _login_at_form(driver, a, wait)
        wait.until(lambda d: d.current_url == e.url(1, "/one?x=1"))
        assert echoed(driver)[1]["x-forwarded-email"] == "alice@example.com"
        # One login, no loop back to the AS.
        assert [x["outcome"] for x in a.authorizations].count("code") == 1
        cookie = driver.get_cookie("__Host-tokengate_session")
        assert cookie["sameSite"] == "Strict" and cookie["secure"]
        driver.refresh()
        assert echoed(driver)[1]["x-forwarded-email"] == "alice@example.com"
    finally:
        driver.quit()
        e.gw.stop()


def test_same_site_none_in_chromium(authserver_factory, upstream, tmp_path):
    """SameSite=None (with Secure, which check-config requires): stored by Chromium as such,
    and the login works as with Lax."""
    a = authserver_factory(login="form")
    e = SubdomainEnv(a, upstream, tmp_path, "none-web", session_extra=", same_site: none")
    driver = _browser_for_subdomains()
    try:
        wait = WebDriverWait(driver, 15)
        driver.get(e.url(1, "/one"))
        _login_at_form(driver, a, wait)
        wait.until(lambda d: d.current_url == e.url(1, "/one"))
        assert echoed(driver)[1]["x-forwarded-email"] == "alice@example.com"
        cookie = driver.get_cookie("__Host-tokengate_session")
        assert cookie["sameSite"] == "None" and cookie["secure"]
    finally:
        driver.quit()
        e.gw.stop()


def test_login_round_trip_over_h2_in_chromium(short_as, upstream, tmp_path):
    # The gateway's TLS listener offers h2 in ALPN: Chromium's whole round trip through the
    # gateway (the protected page, the callback, the page again) is HTTP/2.
    cert, key = str(tmp_path / "c.pem"), str(tmp_path / "k.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    e = LoginEnv(short_as, upstream, tmp_path, tls=(cert, key))
    driver = new_browser(extra_args=("--ignore-certificate-errors",))
    try:
        wait = WebDriverWait(driver, 15)
        driver.get(e.url("/account"))
        wait.until(EC.presence_of_element_located((By.NAME, "username")))
        driver.find_element(By.NAME, "username").send_keys("alice")
        driver.find_element(By.NAME, "password").send_keys("alice-password")
        driver.find_element(By.CSS_SELECTOR, "[type=submit]").click()
        wait.until(lambda d: d.current_url == e.url("/account"))
        assert echoed(driver)[1]["x-forwarded-email"] == "alice@example.com"
        protocol = driver.execute_script("return performance.getEntriesByType('navigation')[0].nextHopProtocol")
        assert protocol == "h2"
        assert driver.get_cookie("tokengate_session")
    finally:
        driver.quit()
        e.gw.stop()
