"""The access log seen from outside: a real gateway writing JSON lines to a file or to its
standard output, a real upstream, a real JWKS server. Every line is read back with a JSON
parser. Covers the fields and their order, escaping of hostile request bytes, no line lost
across a SIGTERM under load, logrotate's rename + SIGUSR1, and a standard output that nobody
reads (requests keep flowing; the lines dropped are counted)."""
import http.client
from collections import Counter
import json
import os
import signal
import socket
import subprocess
import threading
import time

import requests

from support.gateway import BIN, Gateway, basic_config, raw_request
from support.waiting import wait_for
from test_bearer import idp, token  # noqa: F401

BASE_FIELDS = ["ts", "level", "msg", "request_id", "method", "path", "route", "status", "bytes", "duration_ms",
               "upstream_ms"]
OPTIONAL_FIELDS = ["sub", "client_id", "issuer", "rejection", "reason", "detail"]


def read_lines(path):
    """Every line of the file, each parsed strictly (a raw control byte in a string fails)."""
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        data = f.read()
    assert data == b"" or data.endswith(b"\n"), data[-200:]
    return [json.loads(line.decode("utf-8"), strict=True) for line in data.splitlines()]


def access(path):
    return [line for line in read_lines(path) if line["msg"] == "access"]


def metric(g, name):
    text = requests.get(f"http://127.0.0.1:{g.admin}/metrics", timeout=5).text
    return {line.split(" ")[0]: float(line.split(" ")[1]) for line in text.splitlines() if line.startswith(name)}


def file_gateway(gateway_factory, upstream, log_path, settings="", extra="", workers=2):
    return gateway_factory(basic_config(
        upstream.port, workers=workers,
        extra=f'access_log: {{ path: "{log_path}"{settings} }}\n{extra}'))


def test_every_field_in_its_documented_order(upstream, idp, gateway_factory, tmp_path):
    log_path = str(tmp_path / "access.log")
    g = gateway_factory(f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
access_log: {{ path: "{log_path}", buffer: 0 }}
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], algorithms: [ES256] }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - name: orders
    match: {{ path_prefix: /api/ }}
    upstream: app
    auth: bearer
    issuers: [one]
""")
    ok = requests.get(g.url("/api/x"), headers={"Authorization": "Bearer " + token(idp.keys[0])}, timeout=5)
    bad = requests.get(g.url("/api/x"), headers={"Authorization": "Bearer " + token(idp.keys[0], aud="other")},
                       timeout=5)
    assert (ok.status_code, bad.status_code) == (200, 401)
    lines = wait_for(lambda: len(access(log_path)) == 2 and access(log_path), what="two access lines")
    by_id = {line["request_id"]: line for line in lines}
    good, refused = by_id[ok.headers["X-Request-Id"]], by_id[bad.headers["X-Request-Id"]]
    for line in (good, refused):
        keys = list(line)
        assert keys[:len(BASE_FIELDS)] == BASE_FIELDS, keys
        rest = keys[len(BASE_FIELDS):]
        assert rest == [k for k in OPTIONAL_FIELDS if k in rest], keys
        assert line["level"] == "info" and line["route"] == "orders" and line["method"] == "GET"
        assert line["path"] == "/api/x"
        assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= line["upstream_ms"] >= 0
        assert line["ts"].endswith("Z") and len(line["ts"]) == 24
    assert good["status"] == 200 and good["bytes"] > 0
    assert (good["sub"], good["client_id"], good["issuer"]) == ("alice", "app1", "one")
    assert refused["status"] == 401 and refused["rejection"] == "invalid_token" and refused["detail"]


def test_hostile_path_and_header_bytes_are_escaped(upstream, gateway_factory, tmp_path):
    log_path = str(tmp_path / "access.log")
    g = file_gateway(gateway_factory, upstream, log_path, ", buffer: 0",
                     extra="trusted_proxies: [127.0.0.1/32]\ndecision: { forward_auth_path: /_fa }")
    # Quotes and backslashes reach the log through a refused request-target (logged as sent);
    # a tab, obs-text bytes that are no UTF-8 and a forged line through a decision request's
    # X-Forwarded-Uri, which the refusal's detail quotes.
    status, _ = raw_request(g.port, b'GET /a"b\\c/"}{"forged":1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    assert status == 400
    status, _ = raw_request(g.port, (
        b"GET /_fa HTTP/1.1\r\nHost: x\r\nX-Forwarded-Method: GET\r\nX-Forwarded-Proto: http\r\n"
        b"X-Forwarded-Host: x\r\nX-Forwarded-Uri: q\"\\\t\xff\xfe\xc0\xaf\"}\r\nConnection: close\r\n\r\n"))
    assert status == 400
    lines = wait_for(lambda: len(access(log_path)) == 2 and access(log_path), what="two access lines")
    with open(log_path, "rb") as f:
        raw = f.read()
    assert all(b >= 0x20 or b == 0x0A for b in raw), "no raw control byte in the file"
    raw.decode("utf-8")  # strict: the file is UTF-8 throughout
    assert lines[0]["path"] == '/a"b\\c/"}{"forged":1' or lines[1]["path"] == '/a"b\\c/"}{"forged":1'
    fa = next(line for line in lines if line["path"].startswith("/_fa"))
    assert 'q"\\\t' in fa["detail"] and "\ufffd" in fa["detail"], fa
    assert "forged" not in fa and all(set(line) <= set(BASE_FIELDS + OPTIONAL_FIELDS) for line in lines)


def load(port, stop, answered, errors):
    """Keep-alive GETs until told to stop or the gateway goes; counts whole answers."""
    conn = None
    while not stop.is_set():
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", "/echo")
            r = conn.getresponse()
            r.read()
            answered.append(r.status)
            if r.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException):
            errors.append(1)
            if conn:
                conn.close()
            conn = None
            stop.wait(0.01)  # not a busy loop of refused connects; ends at once when told to stop


def test_no_line_lost_across_sigterm_under_load(upstream, gateway_factory, tmp_path):
    log_path = str(tmp_path / "access.log")
    # A buffer larger than the run and a flush far away: every line is still in the workers'
    # buffers when SIGTERM comes, and only the drain can write them.
    g = file_gateway(gateway_factory, upstream, log_path, ", buffer: 16MB, flush: 1h")
    stop, answered, errors = threading.Event(), [], []
    threads = [threading.Thread(target=load, args=(g.port, stop, answered, errors)) for _ in range(16)]
    for t in threads:
        t.start()
    wait_for(lambda: len(answered) >= 500, timeout=30, what="500 answers")
    assert access(log_path) == [], "buffered: nothing written yet"
    g.proc.send_signal(signal.SIGTERM)
    g.proc.wait(timeout=15)
    stop.set()
    for t in threads:
        t.join(timeout=15)
    assert g.proc.returncode == 0
    lines = access(log_path)
    # Whatever the drain answered (a request that came after it began may get a 503), each
    # answer has its line, and no line is of a request that got no answer.
    assert len(answered) >= 500
    assert Counter(line["status"] for line in lines) == Counter(answered)
    assert len({line["request_id"] for line in lines}) == len(lines)


def test_file_reopened_on_sigusr1_after_a_rename(upstream, gateway_factory, tmp_path):
    log_path = str(tmp_path / "access.log")
    g = file_gateway(gateway_factory, upstream, log_path, ", buffer: 0")
    for _ in range(3):
        assert requests.get(g.url("/echo"), timeout=5).status_code == 200
    wait_for(lambda: len(access(log_path)) == 3, what="three lines")
    os.rename(log_path, log_path + ".1")  # what logrotate does first
    for _ in range(2):
        assert requests.get(g.url("/echo"), timeout=5).status_code == 200
    wait_for(lambda: len(access(log_path + ".1")) == 5, what="lines follow the renamed file until SIGUSR1")
    g.signal(signal.SIGUSR1)
    wait_for(lambda: os.path.exists(log_path), what="the file opened again")
    for _ in range(4):
        assert requests.get(g.url("/echo"), timeout=5).status_code == 200
    wait_for(lambda: len(access(log_path)) == 4, what="four lines in the new file")
    assert len(access(log_path + ".1")) == 5
    assert g.proc.poll() is None, "SIGUSR1 does not end the process"
    assert g.logged('"msg":"access log reopened"')


class PipeGateway(Gateway):
    """A gateway whose standard output is a pipe that nobody reads (stderr to a file)."""

    def spawn(self):
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([BIN, "serve", "--config", self.config_path],
                                     stdout=subprocess.PIPE, stderr=self.log)


def test_a_stdout_nobody_reads_does_not_stop_traffic(upstream):
    g = PipeGateway(basic_config(upstream.port, extra="access_log: true"))
    g.start()
    try:
        # 3 KB lines: 2,000 of them are 6 MB, far past the pipe (64 KiB) and the sink's bound.
        path = "/echo/" + "p" * 3000
        session = requests.Session()
        t0 = time.time()
        statuses = [session.get(g.url(path), timeout=5).status_code for _ in range(2000)]
        elapsed = time.time() - t0
        assert statuses == [200] * 2000
        assert elapsed < 60, elapsed
        dropped = metric(g, "tokengate_log_lines_dropped_total")
        assert dropped['tokengate_log_lines_dropped_total{sink="stdout"}'] > 1000, dropped
        # The gateway stays responsive: its admin endpoints and a fresh connection answer.
        assert requests.get(f"http://127.0.0.1:{g.admin}/healthz", timeout=1).status_code == 200
        assert requests.get(g.url("/echo"), timeout=1).status_code == 200
        # Said on stderr, and not once per line.
        warnings = [line for line in g.output().splitlines() if "log lines dropped" in line]
        assert 1 <= len(warnings) <= 1 + elapsed / 10, warnings
        json.loads(warnings[0])
        # SIGTERM still ends it: the last lines wait a bounded time for the pipe, then go.
        t0 = time.time()
        g.proc.send_signal(signal.SIGTERM)
        assert g.proc.wait(timeout=15) == 0
        assert time.time() - t0 < 10
    finally:
        g.stop()
        if g.proc.stdout:
            g.proc.stdout.close()
