"""Several login clients and the gateway's pages in a real browser (headless Chromium,
selenium): the choice page of a route with `clients: [web, partners]` → the chosen AS's
login form → back at the page; the session is the partners' one (another route's client
logs in again); and a refused page view shows the HTML 403 page, not JSON."""
import json

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from support.browser import browser  # noqa: F401 — fixture
from test_login import LoginEnv
from test_clients import TwoClients
from test_pages import ADMIN_ROUTE


def echoed(driver):
    body = driver.find_element(By.TAG_NAME, "body").text
    data = json.loads(body[body.index("{"):])
    return data, {k.lower(): v for k, v in data["headers"]}


def log_in_at_form(driver, wait, user="alice"):
    wait.until(EC.presence_of_element_located((By.NAME, "username")))
    driver.find_element(By.NAME, "username").send_keys(user)
    driver.find_element(By.NAME, "password").send_keys(f"{user}-password")
    driver.find_element(By.CSS_SELECTOR, "[type=submit]").click()


def test_choose_a_client_then_log_in_in_chromium(browser, authserver_factory, upstream, tmp_path):  # noqa: F811
    as1 = authserver_factory(login="form")
    as2 = authserver_factory(login="form")
    e = TwoClients(as1, as2, upstream, tmp_path)
    try:
        wait = WebDriverWait(browser, 15)
        browser.get(e.url("/both/report?q=1"))
        # The choice page: one link per client.
        wait.until(EC.element_to_be_clickable((By.ID, "client-partners")))
        assert browser.find_element(By.ID, "client-web").text == "web"
        browser.find_element(By.ID, "client-partners").click()
        # as2's login form, then back at the page through the gateway.
        wait.until(EC.presence_of_element_located((By.NAME, "username")))
        assert browser.current_url.startswith(as2.url)
        log_in_at_form(browser, wait)
        wait.until(lambda d: d.current_url == e.url("/both/report?q=1"))
        data, headers = echoed(browser)
        assert data["path"] == "/both/report?q=1" and headers["x-forwarded-email"] == "alice@example.com"
        assert [t["grant_type"] for t in as2.token_requests] == ["authorization_code"] and as1.token_requests == []
        # The partners-only route: the same session.
        browser.get(e.url("/partners/p"))
        assert echoed(browser)[0]["path"] == "/partners/p"
        # A web-only page: the partners session does not open it; as1's login form instead.
        browser.get(e.url("/orders/1"))
        wait.until(EC.presence_of_element_located((By.NAME, "username")))
        assert browser.current_url.startswith(as1.url)
    finally:
        e.stop()


def test_a_refused_page_view_shows_the_403_page_in_chromium(browser, authserver_factory, upstream, tmp_path):  # noqa: F811
    a = authserver_factory(login="form")
    e = LoginEnv(a, upstream, tmp_path, extra_route=ADMIN_ROUTE)
    try:
        wait = WebDriverWait(browser, 15)
        browser.get(e.url("/home"))
        log_in_at_form(browser, wait)
        wait.until(lambda d: d.current_url == e.url("/home"))
        browser.get(e.url("/admin/panel"))
        wait.until(EC.presence_of_element_located((By.TAG_NAME, "h1")))
        assert browser.find_element(By.TAG_NAME, "h1").text == "Access denied"
        # Its button logs out (a same-origin POST with the CSRF token), then on to the AS.
        browser.find_element(By.ID, "logout").click()
        wait.until(lambda d: d.current_url.startswith(e.url("/bye")))
        assert browser.get_cookie("tokengate_session") is None
    finally:
        e.stop()
