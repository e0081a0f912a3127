"""Step-up on a login route in a real browser: headless Chromium (Debian's chromium and
chromium-driver, driven by selenium) against a real tokengate, the real AS (its password
form, and its MFA form for acr "mfa": AuthServer(mfa=True)) and a real upstream. A password
login reaches a plain page; the step-up page sends the browser to the AS again, asking
acr_values and max_age; the AS's MFA form; back at the step-up page, the session saying
acr "mfa"; the plain page still works."""
import json
from urllib.parse import parse_qs, urlsplit

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from support.authserver.server import OTP_CODES
from support.browser import browser  # noqa: F401 — fixture
from test_login import LoginEnv
from test_step_up_login import VAULT_ROUTE


@pytest.fixture
def mfa_as(authserver_factory):
    return authserver_factory(login="form", mfa=True, rotate_refresh_tokens=True)


def echoed(driver):
    """The upstream's echo (JSON) as the browser shows it: its path and request headers."""
    body = driver.find_element(By.TAG_NAME, "body").text
    data = json.loads(body[body.index("{"):])
    return data, {k.lower(): v for k, v in data["headers"]}


def test_a_browser_steps_up_for_the_route_in_chromium(browser, mfa_as, upstream, tmp_path):  # noqa: F811
    e = LoginEnv(mfa_as, upstream, tmp_path, extra_route=VAULT_ROUTE)
    try:
        wait = WebDriverWait(browser, 15)
        # A password login for a plain page.
        browser.get(e.url("/account"))
        wait.until(EC.presence_of_element_located((By.NAME, "username")))
        assert not browser.find_elements(By.NAME, "otp"), "a plain login asks no second factor"
        browser.find_element(By.NAME, "username").send_keys("alice")
        browser.find_element(By.NAME, "password").send_keys("alice-password")
        browser.find_element(By.CSS_SELECTOR, "[type=submit]").click()
        wait.until(lambda d: d.current_url == e.url("/account"))
        assert echoed(browser)[1]["x-forwarded-email"] == "alice@example.com"

        # The step-up page: back to the AS, which asks for the one-time code this time.
        browser.get(e.url("/vault/keys?x=1"))
        wait.until(EC.presence_of_element_located((By.NAME, "otp")))
        assert browser.current_url.startswith(mfa_as.url)
        # What the gateway asked, in the request it pushed and signed (RFC 9126, RFC 9101).
        asked = mfa_as.authorizations[-1]
        assert asked["via"] == "par" and asked["signed"], asked
        assert asked["params"]["acr_values"] == "mfa phr" and int(asked["params"]["max_age"]) == 300
        browser.find_element(By.NAME, "username").send_keys("alice")
        browser.find_element(By.NAME, "password").send_keys("alice-password")
        browser.find_element(By.NAME, "otp").send_keys(OTP_CODES["alice"])
        browser.find_element(By.CSS_SELECTOR, "[type=submit]").click()
        wait.until(lambda d: d.current_url == e.url("/vault/keys?x=1"))
        data, headers = echoed(browser)
        assert data["path"] == "/vault/keys?x=1"
        assert headers["x-auth-acr"] == "mfa" and headers["x-forwarded-user"]
        assert mfa_as.login_attempts[-1] == {"user": "alice", "ok": True, "mfa": True}

        # The same session serves both pages now, without the AS.
        before = len(mfa_as.authorizations)
        browser.get(e.url("/account"))
        assert echoed(browser)[1]["x-forwarded-email"] == "alice@example.com"
        browser.get(e.url("/vault/other"))
        assert echoed(browser)[0]["path"] == "/vault/other"
        assert len(mfa_as.authorizations) == before
        assert not parse_qs(urlsplit(browser.current_url).query)
    finally:
        e.stop()
