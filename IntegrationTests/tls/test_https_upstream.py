"""HTTPS upstreams: a real TLS server (Python's ssl over the stdlib HTTP server,
support/tls_upstream.py) with throwaway CAs made here with `cryptography`; the real gateway
verifies it, sends SNI, presents a client certificate, keeps connections alive and resumes
sessions."""
import hashlib
import itertools
import os
import signal
import socket
import ssl
import subprocess
import tempfile
import time

import pytest
import requests

from support.gateway import BIN, Gateway
from support.pacing import paced
from support.tls_upstream import CA, TLSUpstream
from support.waiting import wait_for

@pytest.fixture(scope="module")
def pki():
    d = tempfile.mkdtemp(prefix="tg-pki-")
    ca = CA(d, "upstream-ca")
    other = CA(d, "other-ca")
    clients = CA(d, "client-ca")
    return {
        "dir": d, "ca": ca.path, "other_ca": other.path, "client_ca": clients.path,
        "good": ca.issue("good", dns=["localhost", "app.test"], ips=["127.0.0.1"]),
        "wrong_name": ca.issue("wrong-name", dns=["elsewhere.test"]),
        "expired": ca.issue("expired", dns=["localhost"], ips=["127.0.0.1"], expired=True),
        "client": clients.issue("gateway-client", client=True),
        "stranger": other.issue("stranger-client", client=True),
    }


@pytest.fixture
def tls_upstreams():
    started = []

    def make(cert_key, client_ca=None, max_version=None):
        u = TLSUpstream(*cert_key, client_ca=client_ca, max_version=max_version)
        started.append(u)
        return u

    yield make
    for u in started:
        u.stop()


@pytest.fixture
def gateways():
    started = []

    def make(upstream_block, workers=1, start=True):
        g = Gateway(f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: {workers}
limits: {{ max_body_size: 32MB, shutdown_grace: 5s }}
upstreams:
  app:
{upstream_block}
routes:
  - match: {{ path_prefix: / }}
    upstream: app
    auth: none
""", workers=workers)
        started.append(g)
        return g.start() if start else g

    yield make
    for g in started:
        g.stop()


def block(url, **tls):
    lines = [f"    url: \"{url}\"", "    connect_timeout: 2s", "    timeout: 5s"]
    if tls:
        lines.append("    tls:")
        lines += [f"      {k}: {v}" for k, v in tls.items()]
    return "\n".join(lines)


def log_has(g, text, timeout=3):
    return wait_for(lambda: text in g.output(), timeout, interval=0.05, what=lambda: f"{text!r} in {g.output()}")


def test_right_ca_gives_200_with_sni_and_host(pki, tls_upstreams, gateways):
    u = tls_upstreams(pki["good"])
    g = gateways(block(f"https://localhost:{u.port}", ca_file=pki["ca"]))
    r = requests.get(g.url("/hello"))
    assert r.status_code == 200
    assert r.text == f"ok /hello host=localhost:{u.port}"
    assert u.handshakes[0][0] == "localhost"


def test_ip_url_is_verified_against_ip_san_and_sends_no_sni(pki, tls_upstreams, gateways):
    u = tls_upstreams(pki["good"])
    g = gateways(block(f"https://127.0.0.1:{u.port}", ca_file=pki["ca"]))
    assert requests.get(g.url("/ip")).status_code == 200
    # RFC 6066 §3: no IP literal in server_name.
    assert u.handshakes[0][0] is None


def test_system_cas_do_not_trust_a_private_ca(pki, tls_upstreams, gateways):
    u = tls_upstreams(pki["good"])
    g = gateways(block(f"https://localhost:{u.port}"))
    r = requests.get(g.url("/x"))
    assert r.status_code == 502
    assert log_has(g, "unable to get local issuer certificate"), g.output()


def test_verify_error_is_logged_with_the_access_log_off(pki, tls_upstreams, gateways):
    u = tls_upstreams(pki["expired"])
    g = gateways(block(f"https://localhost:{u.port}", ca_file=pki["ca"]), start=False)
    with open(g.config_path) as f:
        text = f.read()
    g.write_config(text.replace("workers: 1", "workers: 1\naccess_log: false"))
    g.start()
    assert requests.get(g.url("/x")).status_code == 502
    assert log_has(g, '"msg":"upstream TLS handshake failed"'), g.output()
    assert g.logged("certificate verify failed: certificate has expired")
    assert '"msg":"access"' not in g.output()


def test_wrong_ca_gives_502_with_reason_only_in_log(pki, tls_upstreams, gateways):
    u = tls_upstreams(pki["good"])
    g = gateways(block(f"https://localhost:{u.port}", ca_file=pki["other_ca"]))
    r = requests.get(g.url("/x"))
    assert r.status_code == 502
    assert r.json()["error"] == "bad_gateway"
    assert "verify" not in r.text and "issuer" not in r.text and "certificate" not in r.text
    assert log_has(g, "certificate verify failed: unable to get local issuer certificate"), g.output()
    assert u.handshakes == []


def test_wrong_name_gives_502_and_server_name_fixes_it(pki, tls_upstreams, gateways):
    u = tls_upstreams(pki["wrong_name"])
    g = gateways(block(f"https://127.0.0.1:{u.port}", ca_file=pki["ca"]))
    r = requests.get(g.url("/x"))
    assert r.status_code == 502
    assert "mismatch" not in r.text
    assert log_has(g, "certificate verify failed: IP address mismatch"), g.output()
    g2 = gateways(block(f"https://127.0.0.1:{u.port}", ca_file=pki["ca"], server_name="elsewhere.test"))
    r = requests.get(g2.url("/y"))
    assert r.status_code == 200
    # The name is sent as SNI too, and the Host header stays the URL's authority.
    assert u.handshakes[-1][0] == "elsewhere.test"
    assert r.text == f"ok /y host=127.0.0.1:{u.port}"


def test_server_name_that_the_certificate_lacks_is_refused(pki, tls_upstreams, gateways):
    u = tls_upstreams(pki["good"])
    g = gateways(block(f"https://localhost:{u.port}", ca_file=pki["ca"], server_name="evil.test"))
    assert requests.get(g.url("/x")).status_code == 502
    assert log_has(g, "hostname mismatch"), g.output()


def test_expired_certificate_gives_502(pki, tls_upstreams, gateways):
    u = tls_upstreams(pki["expired"])
    g = gateways(block(f"https://localhost:{u.port}", ca_file=pki["ca"]))
    r = requests.get(g.url("/x"))
    assert r.status_code == 502
    assert "expired" not in r.text
    assert log_has(g, "certificate verify failed: certificate has expired"), g.output()


def test_mtls_supplied_gives_200(pki, tls_upstreams, gateways):
    u = tls_upstreams(pki["good"], client_ca=pki["client_ca"])
    cert, key = pki["client"]
    g = gateways(block(f"https://localhost:{u.port}", ca_file=pki["ca"], cert_file=cert, key_file=key))
    assert requests.get(g.url("/mtls")).status_code == 200


def test_mtls_missing_or_untrusted_client_certificate_gives_502(pki, tls_upstreams, gateways):
    u = tls_upstreams(pki["good"], client_ca=pki["client_ca"])
    g = gateways(block(f"https://localhost:{u.port}", ca_file=pki["ca"]))
    r = requests.get(g.url("/mtls"))
    assert r.status_code == 502
    assert "alert" not in r.text
    cert, key = pki["stranger"]
    g2 = gateways(block(f"https://localhost:{u.port}", ca_file=pki["ca"], cert_file=cert, key_file=key))
    assert requests.get(g2.url("/mtls")).status_code == 502
    # The server's handler thread counts a refused handshake a moment after the gateway,
    # which sees the alert, has answered 502.
    wait_for(lambda: u.failed_handshakes >= 2, what="both refused handshakes counted")
    assert u.handshakes == []


def test_connections_are_reused(pki, tls_upstreams, gateways):
    u = tls_upstreams(pki["good"])
    g = gateways(block(f"https://localhost:{u.port}", ca_file=pki["ca"]))
    with requests.Session() as s:
        for i in range(30):
            assert s.get(g.url(f"/n{i}")).status_code == 200
    assert len(u.handshakes) == 1
    m = requests.get(f"http://127.0.0.1:{g.admin}/metrics").text
    assert 'tokengate_upstream_tls_handshakes_total{upstream="app",resumed="false"} 1' in m
    assert 'tokengate_upstream_connections{upstream="app"} 1' in m


def test_sessions_are_resumed_on_new_connections(pki, tls_upstreams, gateways):
    u = tls_upstreams(pki["good"])
    g = gateways(block(f"https://localhost:{u.port}", ca_file=pki["ca"]))
    # The upstream closes each connection: every request needs a new one.
    for i in range(5):
        assert requests.get(g.url(f"/close{i}")).status_code == 200
    assert len(u.handshakes) == 5
    assert u.handshakes[0][1] is False
    assert all(reused for _, reused in u.handshakes[1:]), (u.handshakes, g.output())
    # The gateway counts them too.
    m = requests.get(f"http://127.0.0.1:{g.admin}/metrics").text
    assert 'tokengate_upstream_tls_handshakes_total{upstream="app",resumed="false"} 1' in m
    assert 'tokengate_upstream_tls_handshakes_total{upstream="app",resumed="true"} 4' in m


def test_insecure_skip_verify_works_and_warns_at_start_and_reload(pki, tls_upstreams, gateways):
    u = tls_upstreams(pki["expired"])
    g = gateways(block(f"https://localhost:{u.port}", insecure_skip_verify="true"))
    assert requests.get(g.url("/x")).status_code == 200
    warning = "upstream TLS verification is OFF (insecure_skip_verify: true)"
    assert g.output().count(warning) == 1
    g.signal(signal.SIGHUP)
    wait_for(lambda: g.output().count(warning) >= 2, 5, interval=0.05, what="the warning again")
    assert g.output().count(warning) == 2
    assert requests.get(g.url("/after-reload")).status_code == 200


def test_reload_picks_up_a_new_ca_file(pki, tls_upstreams, gateways):
    u = tls_upstreams(pki["good"])
    ca_copy = os.path.join(tempfile.mkdtemp(), "ca.pem")
    with open(ca_copy, "wb") as f:
        f.write(open(pki["other_ca"], "rb").read())
    g = gateways(block(f"https://localhost:{u.port}", ca_file=ca_copy))
    assert requests.get(g.url("/x")).status_code == 502
    with open(ca_copy, "wb") as f:
        f.write(open(pki["ca"], "rb").read())
    g.signal(signal.SIGHUP)
    wait_for(lambda: requests.get(g.url("/x")).status_code == 200, 5, interval=0.1, what="the new CA file")


def test_large_bodies_stream_both_ways(pki, tls_upstreams, gateways):
    u = tls_upstreams(pki["good"])
    g = gateways(block(f"https://localhost:{u.port}", ca_file=pki["ca"]), workers=2)
    n = 20 << 20
    r = requests.get(g.url(f"/big?n={n}"), stream=True)
    assert r.status_code == 200
    h = hashlib.sha256()
    got = 0
    for chunk in r.iter_content(1 << 16):
        h.update(chunk)
        got += len(chunk)
    assert got == n
    expected = hashlib.sha256()
    chunk = bytes(range(256)) * 256
    for _ in range(n // len(chunk)):
        expected.update(chunk)
    assert h.hexdigest() == expected.hexdigest()
    body = os.urandom(8 << 20)
    r = requests.post(g.url("/sha256"), data=body)
    assert r.status_code == 200 and r.text == hashlib.sha256(body).hexdigest()


def check_config(tmp_path, upstream_block):
    path = tmp_path / "c.yaml"
    path.write_text(f"""
listen: 127.0.0.1:8080
upstreams:
  app:
{upstream_block}
routes:
  - match: {{ path_prefix: / }}
    upstream: app
    auth: none
""")
    return subprocess.run([BIN, "check-config", str(path)], capture_output=True, text=True)


def test_check_config_explains_misuse(pki, tmp_path):
    cert, key = pki["client"]
    ok = check_config(tmp_path, block("https://app.test", ca_file=pki["ca"], cert_file=cert, key_file=key))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    cases = [
        (block("https://app.test", ca_file="/nonexistent/ca.pem"), "upstreams.app.tls.ca_file: cannot read /nonexistent/ca.pem"),
        (block("https://app.test", key_file=key), "upstreams.app.tls: a client certificate needs both cert_file and key_file; add cert_file"),
        (block("https://app.test", cert_file=cert), "add key_file"),
        (block("https://app.test", ca_file=pki["ca"], insecure_skip_verify="true"),
         "upstreams.app.tls.insecure_skip_verify: turns certificate verification off, so ca_file would never be used"),
        (block("http://app.test", ca_file=pki["ca"]), "upstreams.app.tls: applies only to an https:// url"),
        (block("https://app.test", server_name="\"bad name\""), "upstreams.app.tls.server_name: \"bad name\" is not a host name"),
        (block("https://app.test", cert_file=pki["good"][0], key_file=key), "cannot load key_file (or it does not match cert_file)"),
        (block("https://app.test", ca_file=key), "cannot load ca_file"),
        (block("https://app.test", insecure_skip_verify="maybe"), "upstreams.app.tls.insecure_skip_verify: must be true or false"),
        (block("https://app.test", verify="false"), "upstreams.app.tls.verify: is not a known key"),
    ]
    for text, expected in cases:
        r = check_config(tmp_path, text)
        assert r.returncode == 1, text
        assert expected in r.stdout, (text, r.stdout)


def test_shipped_example_is_valid(pki, tmp_path):
    """config/https-upstream.yaml passes check-config once its files exist."""
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    text = open(os.path.join(root, "config", "https-upstream.yaml")).read()
    cert, key = pki["client"]
    text = (text.replace("/etc/tokengate/internal-ca.pem", pki["ca"])
            .replace("/etc/tokengate/gateway-client.pem", cert).replace("/etc/tokengate/gateway-client.key", key))
    path = tmp_path / "example.yaml"
    path.write_text(text)
    r = subprocess.run([BIN, "check-config", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    # As shipped (no such files here), it explains what is missing.
    r = subprocess.run([BIN, "check-config", os.path.join(root, "config", "https-upstream.yaml")],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert "upstreams.billing.tls.ca_file: cannot read /etc/tokengate/internal-ca.pem" in r.stdout


def test_bytes_after_a_response_are_never_read_as_the_next_response(pki, tls_upstreams, gateways):
    u = tls_upstreams(pki["good"])
    g = gateways(block(f"https://localhost:{u.port}", ca_file=pki["ca"]))
    r = requests.get(g.url("/stray"))
    assert r.status_code == 200 and r.text == "stray"
    r = requests.get(g.url("/next"))
    assert r.status_code == 200 and r.text == f"ok /next host=localhost:{u.port}"
    # The connection that carried them was not reused.
    assert len(u.handshakes) == 2


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion:DeprecationWarning")
def test_an_upstream_below_tls_1_2_is_refused(pki, tls_upstreams, gateways):
    u = tls_upstreams(pki["good"], max_version=ssl.TLSVersion.TLSv1_1)
    # The server really speaks TLS 1.1 (a client that allows it gets through).
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(pki["ca"])
    ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
    ctx.minimum_version = ssl.TLSVersion.TLSv1
    with ctx.wrap_socket(socket.create_connection(("127.0.0.1", u.port)), server_hostname="localhost") as s:
        assert s.version() == "TLSv1.1"
    g = gateways(block(f"https://localhost:{u.port}", ca_file=pki["ca"]))
    r = requests.get(g.url("/old"))
    assert r.status_code == 502
    assert "protocol" not in r.text
    # The upstream's refusal of our TLS 1.2 minimum, in the log.
    assert log_has(g, "TLS handshake with localhost: TLS handshake; error:0A00042E:SSL routines::tlsv1 alert protocol version"), g.output()
    assert len(u.handshakes) == 1  # only the probe above


def test_slow_client_pauses_the_tls_upstream_and_gets_every_byte(pki, tls_upstreams, gateways):
    """The gateway stops reading the upstream while the client is slow (decrypted bytes
    may then wait inside OpenSSL, which no socket event announces) and resumes."""
    u = tls_upstreams(pki["good"])
    g = gateways(block(f"https://localhost:{u.port}", ca_file=pki["ca"]))
    # More than the socket buffers on both sides hold, so the gateway must pause.
    n = 24 << 20
    r = requests.get(g.url(f"/big?n={n}"), stream=True)
    assert r.status_code == 200
    h = hashlib.sha256()
    got = 0
    chunks = r.raw.stream(16384, decode_content=False)
    # The first hundred chunks slowly, then the rest at full speed.
    for chunk in itertools.chain(paced(itertools.islice(chunks, 100), 0.01), chunks):
        h.update(chunk)
        got += len(chunk)
    assert got == n
    expected = hashlib.sha256()
    pattern = bytes(range(256)) * 256
    for _ in range(n // len(pattern)):
        expected.update(pattern)
    assert h.hexdigest() == expected.hexdigest()
    # The connection stayed sound: it serves the next request.
    assert requests.get(g.url("/after")).status_code == 200
    assert len(u.handshakes) == 1


def test_large_posts_in_a_row_all_arrive_on_the_reused_connection(pki, tls_upstreams, gateways):
    """8 MB POSTs one after another on a kept-alive TLS upstream connection: each body goes out
    whole, including when resuming the client's body inside a write queues its rest beyond what
    the socket takes (the request is sent only once nothing is left queued)."""
    u = tls_upstreams(pki["good"])
    g = gateways(block(f"https://localhost:{u.port}", ca_file=pki["ca"]), workers=1)
    with requests.Session() as s:
        for _ in range(40):
            body = os.urandom(8 << 20)
            r = s.post(g.url("/sha256"), data=body)
            assert r.status_code == 200 and r.text == hashlib.sha256(body).hexdigest()
