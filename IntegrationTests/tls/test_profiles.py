"""TLS profiles on a listener, checked from outside with `openssl s_client`: for every cipher
suite OpenSSL knows, every TLS 1.3 suite and a set of groups, a handshake succeeds exactly
when the profile offers it, for an ECDSA and an RSA certificate. Also: nothing below TLS 1.2,
no session tickets, resumption from the shared session cache across workers, and the admin
listener over TLS with its own profile."""
import concurrent.futures
import os
import re
import subprocess

import pytest
import requests

from support.gateway import BIN, Gateway, basic_config
from support.tls_pki import fingerprint, make_pair, served
from test_certificates import tls_config

ALL_TLS12 = [c for c in subprocess.run(["openssl", "ciphers", "ALL:COMPLEMENTOFALL:@SECLEVEL=0"], capture_output=True,
                                       text=True, check=True).stdout.strip().split(":") if not c.startswith("TLS_")]
ALL_TLS13 = ["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256",
             "TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256"]
GROUPS = ["X25519", "P-256", "P-384", "P-521", "X448", "ffdhe2048"]
AEAD = ["AES128-GCM-SHA256", "AES256-GCM-SHA384", "CHACHA20-POLY1305"]
MOZILLA_TLS13 = set(ALL_TLS13[:3])
MOZILLA_GROUPS = {"X25519", "P-256", "P-384"}

PROFILES = {
    # name: (tls: settings, TLS 1.2 suites for an EC and an RSA key, TLS 1.3 suites, groups)
    "intermediate": ("", {"ec": {f"ECDHE-ECDSA-{a}" for a in AEAD}, "rsa": {f"ECDHE-RSA-{a}" for a in AEAD}},
                     MOZILLA_TLS13, MOZILLA_GROUPS),
    "modern": (", profile: modern", {"ec": set(), "rsa": set()}, MOZILLA_TLS13, MOZILLA_GROUPS),
    "custom": (", profile: custom, ciphers: 'ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384', "
               "ciphersuites: TLS_AES_256_GCM_SHA384, curves: 'P-384:X25519'",
               {"ec": {"ECDHE-ECDSA-AES256-GCM-SHA384"}, "rsa": {"ECDHE-RSA-AES256-GCM-SHA384"}},
               {"TLS_AES_256_GCM_SHA384"}, {"P-384", "X25519"}),
}


def handshake(port, *args):
    """The protocol and suite of a finished handshake, or None."""
    out = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", *args], input=b"",
                         capture_output=True, timeout=20).stdout.decode(errors="replace")
    m = re.search(r"New, (TLSv1\.[0-3]), Cipher is (\S+)", out)
    return (m.group(1), m.group(2)) if m and m.group(2) != "(NONE)" else None


def accepted(port, attempts):
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        results = list(pool.map(lambda a: handshake(port, *a[1]), attempts))
    return {name for (name, _), r in zip(attempts, results) if r is not None}


@pytest.mark.parametrize("kind", ["ec", "rsa"])
@pytest.mark.parametrize("profile", list(PROFILES))
def test_only_the_profiles_suites_and_groups_are_accepted(upstream, gateway_factory, tmp_path, profile, kind):
    settings, tls12, tls13, groups = PROFILES[profile]
    crt, key = make_pair(tmp_path, "c", ["127.0.0.1"], kind=kind)
    g = gateway_factory(tls_config(upstream.port, f"{{ cert_file: {crt}, key_file: {key}{settings} }}"))
    assert accepted(g.port, [(c, ["-tls1_2", "-cipher", f"{c}:@SECLEVEL=0"]) for c in ALL_TLS12]) == tls12[kind]
    assert accepted(g.port, [(c, ["-tls1_3", "-ciphersuites", c]) for c in ALL_TLS13]) == tls13
    assert accepted(g.port, [(gr, ["-tls1_3", "-groups", gr]) for gr in GROUPS]) == groups
    if kind == "rsa":
        # TLS 1.2 ties an ECDSA certificate's own curve to the groups a client offers (RFC
        # 8422 §5.1.1), so the ECDHE group alone is tried against the RSA key.
        expected12 = groups if tls12[kind] else set()
        assert accepted(g.port, [(gr, ["-tls1_2", "-groups", gr]) for gr in GROUPS]) == expected12
    old = [(v, [f"-{v}", "-cipher", "ALL:@SECLEVEL=0"]) for v in ("tls1", "tls1_1")]
    assert accepted(g.port, old) == set()


def test_no_session_tickets_and_resumption_from_the_shared_cache(upstream, gateway_factory, tmp_path):
    crt, key = make_pair(tmp_path, "c", ["127.0.0.1"])
    g = gateway_factory(tls_config(upstream.port, f"{{ cert_file: {crt}, key_file: {key} }}"), workers=2)
    sess = os.path.join(tmp_path, "sess.pem")
    first = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{g.port}", "-tls1_2", "-sess_out", sess],
                           input=b"", capture_output=True, timeout=20).stdout.decode()
    assert "New, TLSv1.2" in first
    assert "TLS session ticket lifetime hint" not in first
    # Connections land on either worker; every one resumes (one context, one cache).
    for _ in range(8):
        again = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{g.port}", "-tls1_2", "-sess_in", sess],
                               input=b"", capture_output=True, timeout=20).stdout.decode()
        assert "Reused, TLSv1.2" in again


def test_the_admin_listener_serves_over_tls_with_its_profile(upstream, tmp_path):
    crt, key = make_pair(tmp_path, "admin", ["127.0.0.1"])
    g = Gateway(basic_config(upstream.port).replace(
        "admin_listen: 127.0.0.1:{ADMIN}",
        f"admin_listen: {{ address: 127.0.0.1:{{ADMIN}}, tls: {{ cert_file: {crt}, key_file: {key}, profile: modern }} }}"))
    g.admin_scheme = "https"
    g.start()
    try:
        r = requests.get(f"https://127.0.0.1:{g.admin}/healthz", verify=False, timeout=5)
        assert r.status_code == 200 and r.text == "ok\n"
        assert served(g.admin) == fingerprint(crt)
        # The profile holds there too: modern is TLS 1.3 only.
        assert handshake(g.admin, "-tls1_3")[0] == "TLSv1.3"
        assert handshake(g.admin, "-tls1_2") is None
        # Plain HTTP is not spoken on it.
        try:
            plain = requests.get(f"http://127.0.0.1:{g.admin}/healthz", timeout=5).status_code
        except requests.exceptions.ConnectionError:
            plain = None
        assert plain != 200
        # Its certificate is watched and exported like a public listener's.
        metrics = requests.get(f"https://127.0.0.1:{g.admin}/metrics", verify=False, timeout=5).text
        assert f'tokengate_tls_certificate_not_after_seconds{{listen="127.0.0.1:{g.admin}"' in metrics
    finally:
        g.stop()


def test_admin_listen_tls_settings_are_checked(tmp_path):
    cfg = tmp_path / "c.yaml"
    for admin, expected in [
        ("{ tls: { cert_file: /x, key_file: /y } }", "admin_listen: needs address: host:port"),
        ("{ address: 127.0.0.1:9901, tls: { cert_file: /x, key_file: /y }, http2: true }", "admin_listen"),
        ("{ address: 127.0.0.1:9901, tls: { cert_file: /nonexistent.crt, key_file: /nonexistent.key, profile: old } }",
         "admin_listen.tls.profile"),
    ]:
        cfg.write_text(basic_config(9).replace("admin_listen: 127.0.0.1:{ADMIN}", f"admin_listen: {admin}")
                       .replace("{PORT}", "8080"))
        r = subprocess.run([BIN, "check-config", str(cfg)], capture_output=True, text=True)
        assert r.returncode == 1 and expected in r.stdout, r.stdout
