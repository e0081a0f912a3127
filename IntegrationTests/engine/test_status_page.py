"""The admin listener's status page (/status, /status.json) end to end: a real tokengate with
routes, an issuer serving a real JWKS, an upstream that answers 5xx, reloads by SIGHUP, a real
Redis store behind a password, and the page rendered in headless Chromium. Every secret of the
config is looked for in what the page says."""
import base64
import calendar
import http.server
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time

import pytest
import requests
from joserfc import jwt
from joserfc.jwk import ECKey

from support.browser import browser  # noqa: F401 — fixture
from support.gateway import BIN, JSONServer, free_port
from support.waiting import wait_for
from support.ws_upstream import WSUpstream

SESSION_KEY = base64.b64encode(b"status-page-session-key-32-bytes").decode()
CLIENT_SECRET = "client-secret-Vq7Lw2Nz9Kp4"
DECISION_SECRET = "decision-secret-Rt5Yh8Mc3Xs6"
REDIS_PASSWORD = "redis-password-Gd4Fj7Bn2Qw"
SECRETS = [SESSION_KEY, CLIENT_SECRET, DECISION_SECRET, REDIS_PASSWORD]
HOSTILE = '<img src=x onerror="document.title=1">&\'route'


class FlakyUpstream:
    """A real HTTP/1.1 upstream (keep-alive): /…/fail answers 503, anything else 200."""

    def __init__(self):
        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                status = 503 if self.path.endswith("/fail") else 200
                body = b'{"ok":%s}' % (b"false" if status == 503 else b"true")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()


@pytest.fixture
def flaky():
    u = FlakyUpstream()
    yield u
    u.stop()


@pytest.fixture
def idp():
    key = ECKey.generate_key("P-256", parameters={"kid": "status-kid-1", "alg": "ES256", "use": "sig"}, private=True)
    s = JSONServer(lambda: {"keys": [key.as_dict(private=False)]})
    s.key = key
    yield s
    s.stop()


def status_config(upstream_port, idp_url, store="memory", extra_route="", extra_upstream="", workers=2):
    # No catch-all route: a path no route matches gets the gateway's own 404 on the public
    # listener, which is what /status must get there.
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: {workers}
store: "{store}"
trusted_proxies: [10.0.0.0/8]
decision: {{ secret: "{DECISION_SECRET}" }}
session: {{ keys: ["{SESSION_KEY}"] }}
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp_url}", audiences: [api] }}
clients:
  svc: {{ issuer: one, client_id: svc, auth: client_secret_basic, secret: "{CLIENT_SECRET}" }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream_port}" }}
{extra_upstream}
routes:
  - name: '{HOSTILE.replace("'", "''")}'
    match: {{ path_prefix: /hostile/ }}
    upstream: app
    auth: none
  - name: orders
    match: {{ path_prefix: /api/orders/ }}
    upstream: app
    auth: bearer
    issuers: [one]
{extra_route}"""


def admin(gw, path):
    return requests.get(f"http://127.0.0.1:{gw.admin}{path}", timeout=5)


def status(gw):
    r = admin(gw, "/status.json")
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/json"
    return r.json()


def test_status_json_reports_routes_issuers_pools_and_store(flaky, idp, gateway_factory):
    gw = gateway_factory(status_config(flaky.port, idp.url))
    for path in ("/hostile/fail", "/hostile/fail", "/hostile/ok"):
        assert requests.get(gw.url(path), timeout=5).status_code == (503 if path.endswith("fail") else 200)
    s = status(gw)
    version = subprocess.run([BIN, "version"], capture_output=True, text=True).stdout.split()[-1]
    assert s["version"] == version
    assert [(r["name"], r["auth"], r["path"]) for r in s["routes"]] == [
        (HOSTILE, "none", "/hostile/"), ("orders", "bearer", "/api/orders/")]
    assert s["routes"][1]["issuers"] == ["one"] and s["routes"][1]["upstream"] == "app"
    (issuer,) = s["issuers"]
    assert issuer["name"] == "one" and issuer["issuer"] == "https://idp.one" and issuer["keys_from"] == "jwks_uri"
    assert issuer["keys_loaded"] is True and issuer["key_ids"] == ["status-kid-1"]
    assert issuer["last_fetch"].endswith("Z") and issuer["last_error"] is None and issuer["fetch_failures"] == 0
    (app,) = s["upstreams"]
    assert app["url"] == f"http://127.0.0.1:{flaky.port}"
    assert app["recent_5xx"] == 2 and app["total_5xx"] == 2 and app["recent_failures"] == 0
    # The three answers came back on keep-alive connections now idle in the workers' pools.
    assert app["idle_connections"] >= 1 and app["active_connections"] == 0
    assert s["store"] == {"kind": "memory"}
    assert s["tunnels"] == {"open": 0}
    assert s["config"]["generation"] == 1 and s["config"]["worker_generations"] == [1, 1]
    assert s["config"]["reloads"] == []
    text = admin(gw, "/status.json").text + admin(gw, "/status").text
    for secret in SECRETS:
        assert secret not in text


CLASSES = ("1xx", "2xx", "3xx", "4xx", "5xx")


def answers(s, route, which):
    (r,) = [r for r in s["routes"] if r["name"] == route]
    return {c: r["requests"][which][c] for c in CLASSES}


@pytest.mark.parametrize("workers", [1, 2])
def test_route_answers_move_by_exactly_the_requests_sent(workers, flaky, idp, gateway_factory):
    """/status.json says when the process started and counts each route's answers by status
    class, since start and in the recent window, added up over the workers: 11 requests to
    one route (5 answered 200, 4 refused 401, 2 answered 503 by the upstream) move its counts
    by exactly those, and no other route's."""
    gw = gateway_factory(status_config(flaky.port, idp.url, workers=workers))
    before = status(gw)
    started = time.time()
    now = int(started)
    token = jwt.encode({"alg": "ES256", "kid": "status-kid-1"},
                       {"iss": "https://idp.one", "aud": "api", "sub": "x", "iat": now, "exp": now + 300},
                       idp.key, algorithms=["ES256"])
    bearer = {"Authorization": f"Bearer {token}"}
    sent = [("/api/orders/1", bearer, 200)] * 5 + [("/api/orders/1", {}, 401)] * 4 \
        + [("/api/orders/fail", bearer, 503)] * 2
    workers_seen = set()
    for path, headers, want in sent:  # each on a connection of its own
        r = requests.get(gw.url(path), headers=headers, timeout=5)
        assert r.status_code == want, (path, r.status_code, r.text)
        workers_seen.add(r.headers["X-Request-Id"][7])  # process prefix, worker, count
    if workers == 2:
        assert len(workers_seen) == 2, "both workers answered: the counts are added up"
    after = status(gw)
    for which in ("total", "recent"):
        moved = {c: answers(after, "orders", which)[c] - answers(before, "orders", which)[c] for c in CLASSES}
        assert moved == {"1xx": 0, "2xx": 5, "3xx": 0, "4xx": 4, "5xx": 2}, (which, moved)
        assert answers(after, HOSTILE, which) == answers(before, HOSTILE, which)
    assert after["recent_window_seconds"] == 300
    # started_at: RFC 3339, the process's start (before the first read); uptime runs on.
    start = calendar.timegm(time.strptime(after["started_at"], "%Y-%m-%dT%H:%M:%SZ"))
    assert started - 120 < start <= started + 1, (after["started_at"], started)
    assert isinstance(after["uptime_seconds"], int) and after["uptime_seconds"] >= before["uptime_seconds"] >= 0
    page = admin(gw, "/status").text
    assert "2xx 5 · 4xx 4 · 5xx 2" in page and "started " + after["started_at"] in page


def test_an_issuer_that_fails_shows_its_error(flaky, idp, gateway_factory):
    gw = gateway_factory(status_config(flaky.port, idp.url))
    idp.down = True
    # A token signed by a key of an unknown kid asks for one refetch, which fails while the
    # JWKS server answers 503.
    other = ECKey.generate_key("P-256", parameters={"kid": "other"}, private=True)
    now = int(time.time())
    token = jwt.encode({"alg": "ES256", "kid": "other"},
                       {"iss": "https://idp.one", "aud": "api", "sub": "x", "iat": now, "exp": now + 60},
                       other, algorithms=["ES256"])
    requests.get(gw.url("/api/orders/1"), headers={"Authorization": f"Bearer {token}"}, timeout=5)
    issuer = wait_for(lambda: (lambda i: i if i["last_error"] else None)(status(gw)["issuers"][0]),
                      what="the failed fetch on the status page")
    assert issuer["failing"] is True and issuer["fetch_failures"] >= 1 and issuer["last_error_at"].endswith("Z")
    # The last good keys keep serving and are still listed.
    assert issuer["key_ids"] == ["status-kid-1"]


def test_reloads_show_in_the_history(flaky, idp, gateway_factory):
    gw = gateway_factory(status_config(flaky.port, idp.url))
    gw.write_config(status_config(flaky.port, idp.url, extra_route="""
  - name: added
    match: { path: /added }
    upstream: app
    auth: none
"""))
    gw.signal(signal.SIGHUP)
    s = wait_for(lambda: (lambda s: s if s["config"]["generation"] == 2 else None)(status(gw)),
                 what="generation 2")
    assert [r["name"] for r in s["routes"]][-1] == "added"
    (applied,) = s["config"]["reloads"]
    assert applied["outcome"] == "applied" and applied["generation"] == 2 and applied["restart_needed"] is False
    wait_for(lambda: status(gw)["config"]["worker_generations"] == [2, 2], what="both workers on generation 2")
    gw.write_config("routes: [ { upstream: nowhere } ]\n")
    gw.signal(signal.SIGHUP)
    s = wait_for(lambda: (lambda s: s if len(s["config"]["reloads"]) == 2 else None)(status(gw)),
                 what="the refused reload")
    refused = s["config"]["reloads"][0]
    assert refused["outcome"] == "refused" and refused["generation"] == 2 and refused["problems"]
    assert s["config"]["generation"] == 2 and len(s["routes"]) == 3
    page = admin(gw, "/status").text
    assert "refused" in page and "applied" in page


def test_status_is_not_on_the_public_listener(flaky, idp, gateway_factory):
    gw = gateway_factory(status_config(flaky.port, idp.url))
    for path in ("/status", "/status.json", "/metrics"):
        r = requests.get(gw.url(path), timeout=5)
        assert r.status_code == 404, path
        assert "status-kid-1" not in r.text and "orders" not in r.text
    assert admin(gw, "/status").status_code == 200


def test_status_page_headers_and_escaping(flaky, idp, gateway_factory):
    gw = gateway_factory(status_config(flaky.port, idp.url))
    r = admin(gw, "/status")
    assert r.headers["Content-Type"] == "text/html; charset=utf-8"
    assert r.headers["Content-Security-Policy"].startswith("default-src 'none'")
    assert r.headers["Cache-Control"] == "no-store" and r.headers["X-Content-Type-Options"] == "nosniff"
    assert "<img" not in r.text and "&lt;img src=x onerror=&quot;document.title=1&quot;&gt;&amp;&#39;route" in r.text
    # Self-contained: nothing loaded from anywhere (the CSP would refuse it anyway).
    head = r.text.split("<body>")[0]
    for token in ("src=", "href=", "url(", "@import", "<script", "<link"):
        assert token not in head
    assert "<script" not in r.text


@pytest.fixture
def redis_with_password():
    port = free_port()
    d = tempfile.mkdtemp(prefix="tg-redis-")
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", d, "--requirepass", REDIS_PASSWORD],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)

    def pong():
        r = subprocess.run(["redis-cli", "-p", str(port), "-a", REDIS_PASSWORD, "--no-auth-warning", "PING"],
                           capture_output=True, text=True, timeout=5)
        return r.stdout.strip() == "PONG"

    wait_for(pong, timeout=10, interval=0.05, what="redis-server")
    yield port
    proc.kill()
    proc.wait()
    shutil.rmtree(d, ignore_errors=True)


def test_redis_store_health_without_its_password(flaky, idp, redis_with_password, gateway_factory):
    url = f"redis://:{REDIS_PASSWORD}@127.0.0.1:{redis_with_password}/0"
    gw = gateway_factory(status_config(flaky.port, idp.url, store=url))
    store = wait_for(lambda: (lambda st: st if st.get("role") else None)(status(gw)["store"]),
                     what="the store's role")
    assert store["kind"] == "redis" and store["up"] is True and store["role"] == "master"
    assert store["latency_ms"] >= 0 and store["last_error"] is None and store["checked_at"].endswith("Z")
    assert f"127.0.0.1:{redis_with_password}" in store["deployment"]
    text = admin(gw, "/status.json").text + admin(gw, "/status").text
    assert REDIS_PASSWORD not in text


def test_open_tunnels_are_counted(flaky, idp, gateway_factory):
    from websockets.sync.client import connect
    ws_up = WSUpstream()
    try:
        gw = gateway_factory(status_config(
            flaky.port, idp.url, extra_upstream=f'  ws: {{ url: "http://127.0.0.1:{ws_up.port}" }}',
            extra_route="""
  - name: chat
    match: { path_prefix: /chat }
    upstream: ws
    auth: none
"""))
        with connect(f"ws://127.0.0.1:{gw.port}/chat", open_timeout=5) as ws:
            ws.send("hello")
            assert ws.recv(timeout=5) == "hello"
            assert status(gw)["tunnels"] == {"open": 1}
            assert "<th>WebSocket tunnels open</th><td>1</td>" in admin(gw, "/status").text
        wait_for(lambda: status(gw)["tunnels"] == {"open": 0}, what="the tunnel to close")
    finally:
        ws_up.stop()


def png_size(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_status_page_in_chromium(flaky, idp, gateway_factory, browser, tmp_path):  # noqa: F811
    gw = gateway_factory(status_config(flaky.port, idp.url))
    requests.get(gw.url("/hostile/fail"), timeout=5)
    browser.get(f"http://127.0.0.1:{gw.admin}/status")
    assert browser.title == "tokengate status"  # the hostile name's markup did not run
    from selenium.webdriver.common.by import By
    routes = browser.find_element(By.ID, "routes").text
    assert "orders" in routes and HOSTILE in routes and "bearer" in routes
    issuers = browser.find_element(By.ID, "issuers").text
    assert "https://idp.one" in issuers and "status-kid-1" in issuers
    assert "1 / 1" in browser.find_element(By.ID, "upstreams").text
    assert browser.find_elements(By.TAG_NAME, "img") == [] and browser.find_elements(By.TAG_NAME, "script") == []
    rendered = browser.find_element(By.TAG_NAME, "body").text
    for secret in SECRETS:
        assert secret not in browser.page_source and secret not in rendered
    shot = tmp_path / "status-page.png"
    assert browser.save_screenshot(str(shot))
    data = shot.read_bytes()
    width, height = png_size(data)
    assert width >= 800 and height >= 600
    # A blank page of that size compresses to a few KB; tables of text do not.
    assert len(data) > 20_000, len(data)
    assert os.path.getsize(shot) == len(data)
