"""A real headless browser for the end-to-end tests, and tiny local web pages for it to land on.

The browser is Debian's chromium driven by Debian's chromium-driver through selenium (pinned in
IntegrationTests/requirements.txt; `scripts/setup.sh --test` installs the packages chromium and
chromium-driver). Nothing is downloaded at run time: selenium is given both paths.

  browser            pytest fixture: a selenium WebDriver (Chrome) on a fresh profile,
                     `--headless=new --no-sandbox --disable-dev-shm-usage`, quit after the test
  new_browser()      the same, for a test that needs another one (quit it yourself)
  LocalSite          a threaded HTTP server on 127.0.0.1 serving fixed pages (e.g. an OAuth
                     redirect_uri, a request object by reference) and recording every request
  local_site         pytest fixture: a started LocalSite, closed after the test

In a test module:  from browser import browser, local_site  # noqa: F401  (fixtures)
Selenium itself is imported only when a browser is made, so LocalSite needs no selenium.
"""
import http.server
import os
import threading
from urllib.parse import parse_qs, urlsplit

import pytest

CHROMIUM = os.environ.get("TOKENGATE_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("TOKENGATE_CHROMEDRIVER", "/usr/bin/chromedriver")
CHROMIUM_ARGS = ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage")


def new_browser(page_load_timeout=30, extra_args=()):
    """A selenium WebDriver for Debian's chromium (CHROMIUM) through Debian's chromedriver
    (CHROMEDRIVER); both paths can be overridden with TOKENGATE_CHROMIUM /
    TOKENGATE_CHROMEDRIVER."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            raise RuntimeError(f"{path} is missing: run scripts/setup.sh --test "
                               "(Debian packages chromium and chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in CHROMIUM_ARGS + ("--window-size=1280,900", "--no-first-run") + tuple(extra_args):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(page_load_timeout)
    return driver


@pytest.fixture
def browser():
    driver = new_browser()
    try:
        yield driver
    finally:
        driver.quit()


class LocalSite:
    """A small web site on 127.0.0.1:port, served from a background thread.

    site.page(path, body, content_type="text/html; charset=utf-8", status=200) sets what a GET
    of path (its query ignored) answers; unknown paths answer 404. site.requests records each
    request as {"method", "path", "query" (one value per name), "url"}; site.url(path) is the
    absolute URL of path."""

    def __init__(self):
        self.pages = {}
        self.requests = []
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                parts = urlsplit(self.path)
                site.requests.append({"method": "GET", "path": parts.path, "url": site.url(self.path),
                                      "query": {k: v[0] for k, v in parse_qs(parts.query,
                                                                             keep_blank_values=True).items()}})
                status, content_type, body = site.pages.get(parts.path, (404, "text/plain", "not found"))
                data = body.encode() if isinstance(body, str) else body
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"localsite-{self.port}", daemon=True)
        self._thread.start()

    def url(self, path="/"):
        return f"http://127.0.0.1:{self.port}{path}"

    def page(self, path, body, content_type="text/html; charset=utf-8", status=200):
        self.pages[path] = (status, content_type, body)
        return self.url(path)

    def hits(self, path):
        return [r for r in self.requests if r["path"] == path]

    def close(self):
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)


@pytest.fixture
def local_site():
    site = LocalSite()
    try:
        yield site
    finally:
        site.close()
