"""The login round-trip in a real browser: headless Chromium (Debian's chromium and
chromium-driver, driven by selenium) against a real tokengate, the real authorization server
(its login form) and a real upstream. Protected page → AS login form → back at the page,
whose upstream echo shows the identity headers; a reload (the session); past the access
token's lifetime (a refresh); logout → the page asks for a login again."""
import json
import time

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from browser import browser  # noqa: F401 — fixture
from test_login import LoginEnv


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
        time.sleep(3)
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
