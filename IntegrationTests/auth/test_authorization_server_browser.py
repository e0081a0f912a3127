"""The authorization server's browser part in a real browser: headless Chromium (Debian's
chromium and chromium-driver, driven by selenium). An MCP client's authorization URL → the
IdP's login form (idpyoidc, through the gateway's login) → back at tokengate's consent page,
which names the client, its host, the resource, the redirect host and the scopes → Allow → the
client's loopback redirect URI (a listener here) with code, state and iss; the code buys a
token the MCP route takes. A second authorization for the same client and resource skips the
page only for an https redirect URI: to a loopback one it is shown again, with a warning; the
page will not show in a frame; another user's Deny comes back with access_denied."""
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlsplit

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from support.browser import browser  # noqa: F401 — fixture
from test_authorization_server_login import Env, pkce
from test_login import login_as, login_env  # noqa: F401 — fixtures


class Callback:
    """The client's loopback redirect URI (RFC 8252 §7.3): records each query it is sent."""

    def __init__(self):
        self.queries = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                if not self.path.startswith("/cb"):  # the browser's /favicon.ico
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                outer.queries.append({k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()})
                body = b"<html><body>signed in</body></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.srv = HTTPServer(("127.0.0.1", 0), Handler)
        self.uri = f"http://127.0.0.1:{self.srv.server_address[1]}/cb"
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()


def test_sign_in_and_consent_in_chromium(browser, login_env, login_as, upstream, tmp_path):  # noqa: F811
    env = Env(login_env, login_as, upstream, tmp_path)
    cb = Callback()
    try:
        wait = WebDriverWait(browser, 15)
        verifier, challenge = pkce()
        browser.get(env.authorize_url(challenge, redirect_uri=cb.uri, state="chromium-1"))
        wait.until(EC.presence_of_element_located((By.NAME, "username")))
        assert browser.current_url.startswith(login_as.url)
        browser.find_element(By.NAME, "username").send_keys("alice")
        browser.find_element(By.NAME, "password").send_keys("alice-password")
        browser.find_element(By.CSS_SELECTOR, "[type=submit]").click()
        # tokengate's consent page: what asks, for what, and where the browser goes next.
        allow = wait.until(EC.element_to_be_clickable((By.ID, "allow")))
        assert browser.title == "Allow access?"
        assert "Test agent (127.0.0.1)" in browser.find_element(By.ID, "client").text
        assert browser.find_element(By.ID, "resource").text == env.resource
        # Not https: the whole URI, since a host alone would not say where it goes.
        assert browser.find_element(By.ID, "redirect-host").text == cb.uri
        scopes = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#scopes li")]
        assert scopes == ["mcp:read", "mcp:write"]
        allow.click()
        wait.until(lambda d: d.current_url.startswith(cb.uri))
        q = cb.queries[-1]
        assert q["state"] == "chromium-1" and q["iss"] == env.issuer and q["code"]
        r = env.redeem(q["code"], verifier, redirect_uri=cb.uri)
        assert r.status_code == 200, r.text
        assert env.call(r.json()["access_token"]).status_code == 200

        # The same client and resource again: to a loopback redirect URI (any program's on the
        # machine) the page is shown again, with a warning, though consent was given.
        _, challenge2 = pkce()
        browser.get(env.authorize_url(challenge2, redirect_uri=cb.uri, state="chromium-2"))
        allow = wait.until(EC.element_to_be_clickable((By.ID, "allow")))
        assert "program on this computer" in browser.find_element(By.ID, "local-warning").text
        allow.click()
        wait.until(lambda d: len(cb.queries) == 2)
        assert cb.queries[-1]["state"] == "chromium-2" and cb.queries[-1]["code"]

        # The AS's pages cannot be framed (frame-ancestors 'none'): another origin's frame of
        # one, here the page for a client in doubt (it needs no cookie), shows nothing of it;
        # the same page opened on its own shows its text.
        _, challenge3 = pkce()
        in_doubt = env.authorize_url(challenge3, redirect_uri="https://evil.example/cb")
        browser.get("data:text/html,<iframe id=f src='" + in_doubt.replace("&", "%26") + "'></iframe>")
        frame = wait.until(EC.presence_of_element_located((By.ID, "f")))
        browser.switch_to.frame(frame)
        # Loaded, or refused (Chromium's error page): either way done.
        wait.until(lambda d: d.execute_script("return document.readyState") == "complete")
        assert "cannot be completed" not in browser.find_element(By.TAG_NAME, "body").text
        browser.switch_to.default_content()
        browser.get(in_doubt)
        assert "cannot be completed" in browser.find_element(By.TAG_NAME, "body").text

        # Another user (cookies gone: the gateway's and the IdP's, both on 127.0.0.1) is asked
        # again, and Deny sends access_denied back, with no code.
        browser.get(env.issuer + "/.well-known/oauth-authorization-server")
        browser.delete_all_cookies()
        _, challenge4 = pkce()
        browser.get(env.authorize_url(challenge4, redirect_uri=cb.uri, state="chromium-4"))
        wait.until(EC.presence_of_element_located((By.NAME, "username")))
        browser.find_element(By.NAME, "username").send_keys("bob")
        browser.find_element(By.NAME, "password").send_keys("bob-password")
        browser.find_element(By.CSS_SELECTOR, "[type=submit]").click()
        deny = wait.until(EC.element_to_be_clickable((By.ID, "deny")))
        # bob is not staff: only mcp:read is offered.
        assert [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#scopes li")] == ["mcp:read"]
        deny.click()
        wait.until(lambda d: len(cb.queries) == 3)
        assert cb.queries[-1]["error"] == "access_denied" and cb.queries[-1]["state"] == "chromium-4"
        assert "code" not in cb.queries[-1]
    finally:
        cb.stop()
        env.host.stop()
