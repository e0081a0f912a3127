"""Pages for browsers on login routes (docs/login.md, "Pages"): a browser refused there (a failed
`require`, a session that cannot be checked) gets an HTML page, an API call keeps the JSON
error body; `pages_dir:` replaces the built-in templates; every substituted value is
HTML-escaped (the attacker's side: markup in a reflected value); a broken template is a
config error check-config reports with the fix. Real gateway, real AS (idpyoidc)."""
import os
import subprocess
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from support.gateway import BIN
from test_login import LoginEnv, parse_qs_form

JSON = {"Accept": "application/json"}
HTML = {"Accept": "text/html,application/xhtml+xml"}

ADMIN_ROUTE = """  - name: admin
    match: { path_prefix: /admin/ }
    upstream: app
    auth: login
    client: web
    require: { claims: { groups: { contains: admin } } }"""

CUSTOM = {
    "forbidden.html": "<html><body><h1 id=custom403>No entry</h1><p>{{error}} {{request_id}}</p>"
                      "<form method=post action=\"{{logout_action}}\"><input type=hidden name=\"token\" value=\"{{csrf_token}}\">"
                      "<button>out</button></form></body></html>",
    "error.html": "<html><body><h1 id=customerr>{{title}}</h1><p class=msg>{{message}}</p><p>{{status}} {{request_id}}</p></body></html>",
    "logout.html": "<html><body><h1 id=customlogout>Bye?</h1><form method=post action=\"{{logout_action}}\">"
                   "<input type=hidden name=\"token\" value=\"{{csrf_token}}\"><button id=logout>yes</button></form></body></html>",
}


def pages_dir(tmp_path, files):
    d = tmp_path / "pages"
    d.mkdir(exist_ok=True)
    for name, text in files.items():
        (d / name).write_text(text)
    return str(d)


@pytest.fixture
def login_as(authserver_factory):
    return authserver_factory(login="form")


def test_a_browser_gets_the_403_page_and_an_api_call_json(login_as, upstream, tmp_path):
    e = LoginEnv(login_as, upstream, tmp_path, extra_route=ADMIN_ROUTE)
    try:
        e.login()
        r = e.get("/admin/x", headers=HTML)
        assert r.status_code == 403 and r.headers["Content-Type"].startswith("text/html"), r.text
        assert "Access denied" in r.text and r.headers["X-Request-Id"] in r.text
        assert "script-src" not in r.headers["Content-Security-Policy"] and "default-src 'none'" in r.headers["Content-Security-Policy"]
        # Its logout form works: same-origin POST with the CSRF token.
        form = parse_qs_form(r.text)
        out = e.browser.post(e.url("/oauth2/logout"), data={"token": form["token"]}, allow_redirects=False, timeout=10)
        assert out.status_code == 302 and e.session_cookie() is None
    finally:
        e.stop()


@pytest.mark.parametrize("headers", [JSON, {"Accept": "text/html", "Sec-Fetch-Mode": "cors"},
                                     {"Accept": "text/html", "X-Requested-With": "XMLHttpRequest"}, {}])
def test_api_style_requests_keep_the_json_error(login_as, upstream, tmp_path, headers):
    e = LoginEnv(login_as, upstream, tmp_path, extra_route=ADMIN_ROUTE)
    try:
        e.login()
        r = e.browser.get(e.url("/admin/x"), headers=headers, allow_redirects=False, timeout=10)
        assert r.status_code == 403 and r.headers["Content-Type"] == "application/json", r.text
        assert r.json()["error"] == "insufficient_scope"
    finally:
        e.stop()


def test_a_navigation_without_accept_gets_the_page(login_as, upstream, tmp_path):
    e = LoginEnv(login_as, upstream, tmp_path, extra_route=ADMIN_ROUTE)
    try:
        e.login()
        r = e.browser.get(e.url("/admin/x"), headers={"Accept": "*/*", "Sec-Fetch-Mode": "navigate"}, allow_redirects=False, timeout=10)
        assert r.status_code == 403 and r.headers["Content-Type"].startswith("text/html")
        # A form POST from a browser without a session: the error page, not JSON and not a redirect.
        e.browser.cookies.clear()
        r = e.browser.post(e.url("/orders"), headers=HTML, data={"a": "1"}, allow_redirects=False, timeout=10)
        assert r.status_code == 401 and r.headers["Content-Type"].startswith("text/html") and "Sign-in required" in r.text, r.text
    finally:
        e.stop()


def test_pages_dir_templates_replace_the_built_in_pages(login_as, upstream, tmp_path):
    d = pages_dir(tmp_path, CUSTOM)
    e = LoginEnv(login_as, upstream, tmp_path, extra_route=ADMIN_ROUTE, extra_top=f"pages_dir: {d}")
    try:
        e.login()
        r = e.get("/admin/x", headers=HTML)
        assert r.status_code == 403 and "id=custom403" in r.text and f"insufficient_scope {r.headers['X-Request-Id']}" in r.text
        r = e.get("/oauth2/logout", headers=HTML)
        assert r.status_code == 200 and "id=customlogout" in r.text
        token = parse_qs_form(r.text)["token"]
        out = e.browser.post(e.url("/oauth2/logout"), data={"token": token}, allow_redirects=False, timeout=10)
        assert out.status_code == 302 and e.session_cookie() is None
    finally:
        e.stop()


def test_reflected_values_are_escaped(login_as, upstream, tmp_path):
    """The AS's error code is reflected in the sign-in failure page: an attacker who sends a
    browser to the callback with markup there must not get it rendered."""
    d = pages_dir(tmp_path, CUSTOM)
    e = LoginEnv(login_as, upstream, tmp_path, mode="plain", extra_top=f"pages_dir: {d}")
    try:
        cb = e.to_callback()
        q = parse_qs(urlsplit(cb).query)
        evil = "<script>alert(1)</script>\"'&"
        r = e.get(f"/oauth2/callback?state={q['state'][0]}&iss={quote(q['iss'][0])}&error={quote(evil)}", headers=HTML)
        assert r.status_code == 403 and "id=customerr" in r.text, r.text
        assert "<script>" not in r.text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;" in r.text
        assert f"403 {r.headers['X-Request-Id']}" in r.text
    finally:
        e.stop()


# --- check-config --------------------------------------------------------------------------------

def check_config(e, extra_top):
    text = open(e.gw.config_path).read()
    path = os.path.join(e.gw.dir, "check.yaml")
    with open(path, "w") as f:
        f.write(text.replace("issuers:", extra_top + "\nissuers:", 1))
    return subprocess.run([BIN, "check-config", path], capture_output=True, text=True)


@pytest.mark.parametrize("files,message", [
    ({"error.html": "<p>{{reqest_id}}</p>"},
     "pages_dir: error.html: line 1: unknown variable {{reqest_id}}; this page has {{error}}, {{error_description}}"),
    ({"forbidden.html": "<p>\n{{error}</p>"}, "pages_dir: forbidden.html: line 2: {{ is never closed with }}"),
    ({"error.html": "{{#items}}x{{/items}}"}, "is not a variable (only {{name}}, no logic)"),
    ({"logout.html": "<p>Bye</p>"}, "pages_dir: logout.html: must use {{csrf_token}} and {{logout_action}} (the page cannot work without it)"),
    ({"fobidden.html": "<p>x</p>"}, "pages_dir: fobidden.html is not a page (typo?); the pages are error.html, forbidden.html"),
    ({"error.html": b"\xff\xfe<p>"}, "pages_dir: error.html: not UTF-8 text"),
    # Finding 11: where HTML escaping does not protect, a variable is refused with file and line.
    ({"error.html": "<p>x</p>\n<script>var e = '{{error}}';</script>"},
     "pages_dir: error.html: line 2: {{error}}: a variable inside <script> is not escaped for JavaScript"),
    ({"error.html": "<style>\nh1:after { content: '{{error}}' }</style>"}, "pages_dir: error.html: line 2: {{error}}: a variable inside <style>"),
    ({"error.html": "<p class={{error}}>x</p>"},
     "pages_dir: error.html: line 1: {{error}}: a variable in an unquoted attribute value can add attributes (onmouseover=…); quote the value"),
    ({"error.html": "<img src=\"x\" onerror=\"log('{{error}}')\">"}, "{{error}}: a variable inside the onerror attribute runs as script"),
])
def test_check_config_refuses_a_broken_template(login_as, upstream, tmp_path, files, message):
    e = LoginEnv(login_as, upstream, tmp_path)
    try:
        d = tmp_path / "bad"
        d.mkdir()
        for name, text in files.items():
            (d / name).write_bytes(text if isinstance(text, bytes) else text.encode())
        r = check_config(e, f"pages_dir: {d}")
        assert r.returncode == 1 and message in r.stdout, r.stdout + r.stderr
        # The same dir with good templates passes.
        r = check_config(e, f"pages_dir: {pages_dir(tmp_path, CUSTOM)}")
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        e.stop()


def test_check_config_refuses_a_missing_or_unreadable_pages_dir(login_as, upstream, tmp_path):
    e = LoginEnv(login_as, upstream, tmp_path)
    try:
        r = check_config(e, f"pages_dir: {tmp_path}/nowhere")
        assert r.returncode == 1 and f"pages_dir: cannot read the directory {tmp_path}/nowhere" in r.stdout, r.stdout
        d = pages_dir(tmp_path, {"error.html": "x"})
        os.chmod(os.path.join(d, "error.html"), 0)
        if os.geteuid() != 0:  # root reads anything
            r = check_config(e, f"pages_dir: {d}")
            assert r.returncode == 1 and "pages_dir: error.html: cannot read" in r.stdout, r.stdout
        empty = tmp_path / "empty"
        empty.mkdir()
        r = check_config(e, f"pages_dir: {empty}")
        assert r.returncode == 1 and "holds none of the page templates" in r.stdout, r.stdout
    finally:
        e.stop()


def test_the_shipped_example_and_its_pages_pass_check_config(tmp_path):
    root = os.path.join(os.path.dirname(__file__), "..", "..", "config")
    env = dict(os.environ, TOKENGATE_SESSION_KEY="q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE=", CORP_SECRET="c", PARTNERS_SECRET="p")
    r = subprocess.run([BIN, "check-config", os.path.join(root, "login-clients.yaml")], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    # Every shipped page replaces its built-in one (none is a stray file).
    assert sorted(os.listdir(os.path.join(root, "pages"))) == ["choice.html", "choose.html", "error.html", "forbidden.html", "logout.html"]
