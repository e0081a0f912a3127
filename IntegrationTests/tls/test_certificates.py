"""Listener certificates: rotation by SIGHUP and by a Kubernetes Secret volume's `..data`
swap with no signal, a broken pair that keeps the last good one, SNI over several
certificates (exact, wildcard, an ECDSA and an RSA one for one name), and what the metrics,
/readyz and the status page say of them."""
import http.client
import os
import signal
import ssl
import subprocess
import time

import requests

from support.gateway import BIN, basic_config
from support.tls_pki import fingerprint, make_pair, served
from support.waiting import wait_for
from test_access_log import metric


def tls_config(upstream_port, tls):
    return basic_config(upstream_port).replace(
        "listen: 127.0.0.1:{PORT}", f"listen: {{ address: 127.0.0.1:{{PORT}}, tls: {tls} }}")


def single(crt, key):
    return f"{{ cert_file: {crt}, key_file: {key} }}"


def replace_pair(src, dst):
    """Writes the new pair over the old files (new inodes, as `cp` and cert-manager do)."""
    for s, d in zip(src, dst):
        tmp = d + ".tmp"
        with open(s, "rb") as f, open(tmp, "wb") as g:
            g.write(f.read())
        os.replace(tmp, d)


def keep_alive(port):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=5)


def get(conn, path="/echo"):
    conn.request("GET", path)
    r = conn.getresponse()
    r.read()
    return r.status


def test_sighup_serves_new_certificates_and_open_connections_carry_on(upstream, gateway_factory, tmp_path):
    a = make_pair(tmp_path, "a", ["127.0.0.1"])
    b = make_pair(tmp_path, "b", ["127.0.0.1"])
    live = (str(tmp_path / "live.crt"), str(tmp_path / "live.key"))
    replace_pair(a, live)
    # No watching: only the signal can be what reloads.
    g = gateway_factory(tls_config(upstream.port, f"{{ cert_file: {live[0]}, key_file: {live[1]}, watch: off }}"))
    assert served(g.port) == fingerprint(a[0])
    before = keep_alive(g.port)
    assert get(before) == 200
    # The sentinel: a gateway that watches the same files (each second) has seen the swap; one
    # that does not watch has had that long, and still serves the old pair.
    watching = gateway_factory(tls_config(upstream.port, f"{{ cert_file: {live[0]}, key_file: {live[1]}, watch: 1s }}"))
    assert served(watching.port) == fingerprint(a[0])
    replace_pair(b, live)
    wait_for(lambda: served(watching.port) == fingerprint(b[0]), 10, interval=0.2, what="the watching gateway's reload")
    assert served(g.port) == fingerprint(a[0])
    g.signal(signal.SIGHUP)
    wait_for(lambda: served(g.port) == fingerprint(b[0]), 5, interval=0.2, what="the new certificate")
    # The connection opened before the rotation keeps working on its own session.
    assert get(before) == 200
    assert get(before) == 200
    assert metric(g, "tokengate_tls_certificate_reloads_total")['tokengate_tls_certificate_reloads_total{result="loaded"}'] >= 1
    assert "TLS certificates loaded" in g.output()


def test_a_secret_volume_swap_is_seen_without_a_signal(upstream, gateway_factory, tmp_path):
    # The layout the kubelet writes: tls.crt -> ..data/tls.crt, ..data -> ..<timestamp>/,
    # and an update is a new timestamped directory and an atomic rename of ..data.
    vol = tmp_path / "secret"
    vol.mkdir()
    first = vol / "..2026_11_26_a"
    first.mkdir()
    a = make_pair(first, "tls", ["127.0.0.1"])
    os.symlink("..2026_11_26_a", vol / "..data")
    os.symlink("..data/tls.crt", vol / "tls.crt")
    os.symlink("..data/tls.key", vol / "tls.key")
    g = gateway_factory(tls_config(upstream.port, f"{{ cert_file: {vol}/tls.crt, key_file: {vol}/tls.key, watch: 2s }}"))
    assert served(g.port) == fingerprint(a[0])
    second = vol / "..2026_11_26_b"
    second.mkdir()
    b = make_pair(second, "tls", ["127.0.0.1"])
    os.symlink("..2026_11_26_b", vol / "..data_tmp")
    os.replace(vol / "..data_tmp", vol / "..data")
    started = time.time()
    wait_for(lambda: served(g.port) == fingerprint(b[0]), 60, interval=0.2, what="the new certificate")
    assert time.time() - started < 60


def test_a_broken_pair_is_refused_and_the_last_good_one_keeps_serving(upstream, gateway_factory, tmp_path):
    a = make_pair(tmp_path, "a", ["127.0.0.1"])
    other = make_pair(tmp_path, "other", ["127.0.0.1"])
    later = make_pair(tmp_path, "later", ["127.0.0.1"], starts_in_days=2)
    # Loads and matches, but OpenSSL's security level (2 on Debian) refuses to serve it.
    weak = make_pair(tmp_path, "weak", ["127.0.0.1"], kind="rsa", rsa_bits=1024)
    live = (str(tmp_path / "live.crt"), str(tmp_path / "live.key"))
    replace_pair(a, live)
    # No watching: each change is tried once, by the signal.
    g = gateway_factory(tls_config(upstream.port, f"{{ cert_file: {live[0]}, key_file: {live[1]}, watch: off }}"))
    refused = 'tokengate_tls_certificate_reloads_total{result="refused"}'
    cases = [
        ((a[0], other[1]), "key_file does not match cert_file"),  # a key that is not the certificate's
        (later, "not valid yet"),  # not valid yet
        (weak, "cannot be served"),  # a 1024-bit RSA key
    ]
    for n, (pair, reason) in enumerate(cases, start=1):
        replace_pair(pair, live)
        g.signal(signal.SIGHUP)
        wait_for(lambda: metric(g, "tokengate_tls_certificate_reloads_total")[refused] == n, 5, interval=0.2,
                 what=f"refusal {n}")
        assert served(g.port) == fingerprint(a[0])
        assert reason in g.output()
    # A file that cannot be read at all.
    os.remove(live[0])
    g.signal(signal.SIGHUP)
    wait_for(lambda: metric(g, "tokengate_tls_certificate_reloads_total")[refused] == 4, 5, interval=0.2,
             what="refusal 4")
    assert served(g.port) == fingerprint(a[0])
    assert "TLS certificates refused; the last good ones keep serving" in g.output()
    assert requests.get(f"https://127.0.0.1:{g.port}/echo", verify=False, timeout=5).status_code == 200


def test_sni_picks_exact_then_wildcard_names_and_the_first_without_one(upstream, gateway_factory, tmp_path):
    first = make_pair(tmp_path, "first", ["first.test"])
    exact = make_pair(tmp_path, "exact", ["api.example.test"])
    wild = make_pair(tmp_path, "wild", ["*.example.test"])
    certs = ", ".join(single(*p) for p in (first, wild, exact))
    g = gateway_factory(tls_config(upstream.port, f"{{ certificates: [ {certs} ] }}"))
    assert served(g.port, "api.example.test") == fingerprint(exact[0])  # exact beats an earlier wildcard
    assert served(g.port, "other.example.test") == fingerprint(wild[0])
    assert served(g.port, "a.b.example.test") == fingerprint(first[0])  # a wildcard covers one label
    assert served(g.port, "first.test") == fingerprint(first[0])
    assert served(g.port, "unknown.test") == fingerprint(first[0])
    assert served(g.port, None) == fingerprint(first[0])


def openssl_peer_key(port, server_name, sigalgs):
    out = subprocess.run(
        ["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", server_name, "-sigalgs", sigalgs],
        input=b"", capture_output=True, timeout=10).stdout.decode()
    return "EC" if "Server public key is 256 bit" in out else ("RSA" if "Server public key is 2048 bit" in out else out)


def test_an_ecdsa_and_an_rsa_certificate_for_one_name_follow_the_client(upstream, gateway_factory, tmp_path):
    ec_pair = make_pair(tmp_path, "ec", ["both.test"], kind="ec")
    rsa_pair = make_pair(tmp_path, "rsa", ["both.test"], kind="rsa")
    certs = f"{single(*rsa_pair)}, {single(*ec_pair)}"
    g = gateway_factory(tls_config(upstream.port, f"{{ certificates: [ {certs} ] }}"))
    for name in ("both.test", "unknown.test"):  # the first's twin of another key type is served too
        assert openssl_peer_key(g.port, name, "ecdsa_secp256r1_sha256") == "EC"
        assert openssl_peer_key(g.port, name, "rsa_pss_rsae_sha256:rsa_pkcs1_sha256") == "RSA"


def test_expiry_in_metrics_readyz_and_the_status_page(upstream, gateway_factory, tmp_path):
    soon = make_pair(tmp_path, "soon", ["127.0.0.1"], days=3)
    g = gateway_factory(tls_config(upstream.port, single(*soon)))
    samples = metric(g, "tokengate_tls_certificate_not_after_seconds")
    [(name, value)] = samples.items()
    assert soon[0] in name and abs(value - (time.time() + 3 * 86400)) < 3600
    ready = requests.get(f"http://127.0.0.1:{g.admin}/readyz", timeout=5)
    assert ready.status_code == 200 and "expire within 7 days" in ready.text and soon[0] in ready.text
    status = requests.get(f"http://127.0.0.1:{g.admin}/status.json", timeout=5).json()
    [c] = status["certificates"]
    assert c["cert_file"] == soon[0] and c["expires_within_7_days"] is True and c["sha256"] == fingerprint(soon[0])
    page = requests.get(f"http://127.0.0.1:{g.admin}/status", timeout=5).text
    assert "within 7 days" in page
    assert "PRIVATE KEY" not in page and "PRIVATE KEY" not in str(status)


def test_a_pair_that_cannot_load_at_start_is_a_clear_error(upstream, tmp_path):
    a = make_pair(tmp_path, "a", ["127.0.0.1"])
    b = make_pair(tmp_path, "b", ["127.0.0.1"])
    cfg = tmp_path / "c.yaml"
    cfg.write_text(tls_config(upstream.port, single(a[0], b[1])).replace("{PORT}", "1").replace("{ADMIN}", "2"))
    r = subprocess.run([BIN, "serve", "--config", str(cfg)], capture_output=True, text=True, timeout=20)
    assert r.returncode != 0
    assert "key_file does not match cert_file" in r.stdout + r.stderr

