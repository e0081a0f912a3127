"""A config of 10,000 routes: it passes check-config, every request reaches the route the
precedence rules name (exact, longest prefix, host), and a reload of that size under load
fails no request."""
import random
import signal
import subprocess
import threading
import time

import requests

from support.gateway import BIN, Gateway
from support.waiting import wait_for

ROUTES = 10_000
UPSTREAMS = 50


def routes_config(upstream_port, generation="a"):
    """N−1 prefix routes `/svcNNNNN/api/` over 50 upstreams, each upstream's base path naming
    it (so the echoed path tells which route forwarded); every 100th route also has an exact
    route under it, every 1000th a host route; the catch-all `/` comes last in the file, so a
    linear router would walk the whole table to reach it."""
    lines = [
        "listen: 127.0.0.1:{PORT}",
        "admin_listen: 127.0.0.1:{ADMIN}",
        "workers: 2",
        "access_log: false",
        "upstreams:",
        f'  app: {{ url: "http://127.0.0.1:{upstream_port}/echo/any" }}',
    ]
    for u in range(UPSTREAMS):
        lines.append(f'  u{u}: {{ url: "http://127.0.0.1:{upstream_port}/echo/{generation}{u}" }}')
    lines.append("routes:")
    for i in range(1, ROUTES - 20):
        lines.append(
            f"  - {{ name: svc{i}, match: {{ path_prefix: /svc{i:05d}/api/ }}, upstream: u{i % UPSTREAMS}, auth: none }}")
        if i % 100 == 0:
            lines.append(
                f"  - {{ name: exact{i}, match: {{ path: /svc{i:05d}/api/export }}, upstream: u{(i + 1) % UPSTREAMS}, auth: none }}")
        if i % 1000 == 0:
            lines.append(
                f"  - {{ name: host{i}, match: {{ host: 'h{i}.example.com', path_prefix: / }}, upstream: u{(i + 2) % UPSTREAMS}, auth: none }}")
    lines.append("  - { name: catch-all, match: { path_prefix: / }, upstream: app, auth: none }")
    return "\n".join(lines) + "\n"


def upstream_of(r):
    """The upstream a response came through: the first segment after /echo/."""
    assert r.status_code == 200, r.text
    return r.json()["path"].split("/")[2]


def test_ten_thousand_routes_route_by_precedence(upstream, gateway_factory, tmp_path):
    text = routes_config(upstream.port)
    assert text.count("name: ") >= ROUTES - 21
    path = tmp_path / "routes.yaml"
    path.write_text(text.replace("{PORT}", "1").replace("{ADMIN}", "2"))
    r = subprocess.run([BIN, "check-config", str(path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    g = gateway_factory(text)
    rng = random.Random(7)
    with requests.Session() as s:
        for i in rng.sample(range(1, ROUTES - 20), 300):
            assert upstream_of(s.get(g.url(f"/svc{i:05d}/api/orders/1"))) == f"a{i % UPSTREAMS}"
            # Not under the prefix: "/api" without its "/" and a neighbour's name fall through.
            assert upstream_of(s.get(g.url(f"/svc{i:05d}/api"))) == "any"
            assert upstream_of(s.get(g.url(f"/svc{i:05d}/apix/1"))) == "any"
        for i in range(100, ROUTES - 20, 100):
            assert upstream_of(s.get(g.url(f"/svc{i:05d}/api/export"))) == f"a{(i + 1) % UPSTREAMS}"
            assert upstream_of(s.get(g.url(f"/svc{i:05d}/api/export/"))) == f"a{(i + 1) % UPSTREAMS}"
            assert upstream_of(s.get(g.url(f"/svc{i:05d}/api/export/x"))) == f"a{i % UPSTREAMS}"
        for i in range(1000, ROUTES - 20, 1000):
            host = {"Host": f"h{i}.example.com"}
            assert upstream_of(s.get(g.url(f"/svc{i:05d}/api/x"), headers=host)) == f"a{(i + 2) % UPSTREAMS}"
            assert upstream_of(s.get(g.url("/"), headers={"Host": f"x.h{i}.example.com"})) == "any"
        assert upstream_of(s.get(g.url("/"))) == "any"
        assert upstream_of(s.get(g.url("/svc99999/api/x"))) == "any"
        # A dot-segment that leaves its route is refused however large the table.
        r = s.get(g.url("/svc00001/api/%2e%2e/%2e%2e/svc00002/api/x"))
        assert r.status_code == 400 and "dot-segments" in r.text


def test_reload_of_ten_thousand_routes_under_load_fails_no_request(upstream, gateway_factory):
    g = gateway_factory(routes_config(upstream.port, generation="a"))
    stop = threading.Event()
    seen = {"a": 0, "b": 0}
    failures = []
    lock = threading.Lock()

    def client(n):
        rng = random.Random(n)
        with requests.Session() as s:
            while not stop.is_set():
                i = rng.randrange(1, ROUTES - 20)
                try:
                    r = s.get(g.url(f"/svc{i:05d}/api/x"), timeout=5)
                    got = upstream_of(r)
                    if got[1:] != str(i % UPSTREAMS):
                        raise AssertionError(f"route {i} went to {got}")
                    with lock:
                        seen[got[0]] += 1
                except Exception as e:  # every failure is recorded, and fails the test below
                    with lock:
                        failures.append(repr(e))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    try:
        wait_for(lambda: seen["a"] > 200, timeout=10, what="load on the first config")
        g.write_config(routes_config(upstream.port, generation="b"))
        started = time.time()
        g.signal(signal.SIGHUP)
        wait_for(lambda: seen["b"] > 0, timeout=20, what="a request on the reloaded config")
        reload_seconds = time.time() - started
        before = seen["b"]
        wait_for(lambda: seen["b"] > before + 200, timeout=10, what="load on the reloaded config")
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert failures == []
    assert g.proc.poll() is None
    assert g.logged("config reloaded")
    print(f"reload of {ROUTES} routes: first request on the new config {reload_seconds:.2f} s after SIGHUP; "
          f"{seen['a']} requests before, {seen['b']} after, none failed")


def test_a_sighup_during_startup_does_not_end_the_process(upstream, tmp_path):
    # Reading and compiling 10,000 routes takes a moment; a SIGHUP in that moment (a config
    # tool that signals as soon as the process exists) must not kill it.
    g = Gateway(routes_config(upstream.port))
    g.log = open(g.log_path, "wb")
    g.proc = subprocess.Popen([BIN, "serve", "--config", g.config_path], stdout=g.log, stderr=subprocess.STDOUT)
    try:
        # As soon as the process ignores SIGHUP (its first step, before the config is read):
        # a fixed sleep would race the exec itself on a loaded machine, where no process
        # can handle a signal yet.
        wait_for(lambda: _ignores_sighup(g.proc.pid), timeout=10, what="SIGHUP ignored")
        g.signal(signal.SIGHUP)
        wait_for(lambda: g.proc.poll() is not None or _ready(g), timeout=20, what="readiness or exit")
        assert g.proc.poll() is None, g.output()
        assert upstream_of(requests.get(g.url("/svc00042/api/x"), timeout=5)) == f"a{42 % UPSTREAMS}"
    finally:
        g.stop()


def _ignores_sighup(pid):
    """Whether the process's SigIgn mask (proc(5)) has SIGHUP's bit."""
    try:
        with open(f"/proc/{pid}/status") as f:
            mask = next(line.split()[1] for line in f if line.startswith("SigIgn:"))
    except (OSError, StopIteration):
        return False
    return int(mask, 16) & (1 << (signal.SIGHUP - 1)) != 0


def _ready(g):
    try:
        return requests.get(f"http://127.0.0.1:{g.admin}/readyz", timeout=1).ok
    except requests.RequestException:
        return False
