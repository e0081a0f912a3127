"""WebSockets in a real browser (headless Chromium through selenium) on a login route: the
page, reached after the login round-trip at the real AS, opens a WebSocket to the same
origin with its session cookie and exchanges messages; then the gateway closes it with 1008
when the session ends — a logout in another tab, a back-channel logout posted to another
replica sharing Redis, the absolute timeout — and the page's `onclose` sees the code."""
import time

import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from support.browser import browser  # noqa: F401 — fixture
from support.redis_server import RedisServer
from support.ws_upstream import WSUpstream
from test_backchannel_logout import logout_token
from test_login import LoginEnv, login_as  # noqa: F401 — fixture
from test_websocket import access_lines

PAGE = """<!doctype html><title>live</title><body><pre id=log></pre><script>
window.wsLog = []; window.wsClose = null; window.wsOpen = false;
const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/app/ws");
ws.onopen = () => { window.wsOpen = true; };
ws.onmessage = (e) => { window.wsLog.push(e.data); document.getElementById("log").textContent += e.data + "\\n"; };
ws.onclose = (e) => { window.wsClose = {code: e.code, reason: e.reason, at: Date.now()}; };
window.wsSend = (m) => ws.send(m);
</script>"""


@pytest.fixture
def app():
    u = WSUpstream(pages={"/app": PAGE})
    yield u
    u.stop()


def login_in_browser(driver, env, path="/app"):
    wait = WebDriverWait(driver, 20)
    driver.get(env.url(path))
    wait.until(EC.presence_of_element_located((By.NAME, "username")))
    driver.find_element(By.NAME, "username").send_keys("alice")
    driver.find_element(By.NAME, "password").send_keys("alice-password")
    driver.find_element(By.CSS_SELECTOR, "[type=submit]").click()
    wait.until(lambda d: d.current_url == env.url(path))
    wait.until(lambda d: d.execute_script("return window.wsOpen === true"))


def exchange(driver, text):
    driver.execute_script("window.wsSend(arguments[0])", text)
    WebDriverWait(driver, 10).until(lambda d: text in d.execute_script("return window.wsLog"))


def close_event(driver, within):
    WebDriverWait(driver, within, poll_frequency=0.1).until(lambda d: d.execute_script("return window.wsClose") is not None)
    return driver.execute_script("return window.wsClose")


def test_logout_in_another_tab_closes_the_pages_websocket(browser, login_as, app, tmp_path):  # noqa: F811
    env = LoginEnv(login_as, app, tmp_path, session=", cache_ttl: 1s")
    try:
        login_in_browser(browser, env)
        exchange(browser, "hello from the page")
        exchange(browser, "and again")
        page = browser.current_window_handle
        browser.switch_to.new_window("tab")
        browser.get(env.url("/oauth2/logout"))
        WebDriverWait(browser, 15).until(EC.element_to_be_clickable((By.ID, "logout"))).click()
        WebDriverWait(browser, 15).until(lambda d: d.current_url.startswith(env.url("/bye")))
        ended = time.time()
        browser.switch_to.window(page)
        # cache_ttl 1s, re-checked every 0.5s.
        event = close_event(browser, within=4)
        assert event["code"] == 1008 and event["reason"] == "session ended"
        assert time.time() - ended < 4
        assert any(l["reason"] == "session_ended" for l in access_lines(env.gw, "tunnel"))
    finally:
        env.stop()


def test_backchannel_logout_to_another_replica_closes_the_pages_websocket(browser, login_as, app, tmp_path):  # noqa: F811
    redis = RedisServer().start()
    top = f"store: {{ url: \"redis://127.0.0.1:{redis.port}/0\", prefix: \"tg:\" }}"
    (tmp_path / "b").mkdir()
    a = LoginEnv(login_as, app, tmp_path, extra_top=top, session=", cache_ttl: 1s")
    b = LoginEnv(login_as, app, tmp_path / "b", extra_top=top, session=", cache_ttl: 1s", share_client_of=a,
                 public_base=a.url("").rstrip("/"))
    try:
        login_in_browser(browser, a)
        exchange(browser, "on replica A")
        sub = next(l["sub"] for l in access_lines(a.gw) if l.get("sub"))
        r = requests.post(b.url("/oauth2/backchannel-logout"), data={"logout_token": logout_token(login_as, sub=sub)}, timeout=10)
        assert r.status_code == 200, r.text
        event = close_event(browser, within=4)
        assert event["code"] == 1008
    finally:
        a.stop()
        b.stop()
        redis.close()


def test_absolute_timeout_closes_the_pages_websocket(browser, login_as, app, tmp_path):  # noqa: F811
    env = LoginEnv(login_as, app, tmp_path, session=", absolute_timeout: 6s, cache_ttl: 1s")
    try:
        login_in_browser(browser, env)
        exchange(browser, "until the session's end")
        cookie = browser.get_cookie("tokengate_session")["value"]
        event = close_event(browser, within=10)
        assert event["code"] == 1008
        # The session is gone for plain requests too.
        r = requests.get(env.url("/app"), headers={"Cookie": f"tokengate_session={cookie}", "Accept": "application/json"},
                         allow_redirects=False, timeout=10)
        assert r.status_code == 401
    finally:
        env.stop()
