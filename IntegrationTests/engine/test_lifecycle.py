"""Reload, graceful shutdown, TLS listener, and the CLI's exit codes."""
import os
import signal
import subprocess
import tempfile
import threading

import requests

from support.gateway import BIN, basic_config, free_port
from support.waiting import wait_for


def test_sighup_reload_good_then_bad(upstream, gateway_factory):
    g = gateway_factory(basic_config(upstream.port))
    assert requests.get(g.url("/echo")).json()["path"] == "/echo"
    good = basic_config(upstream.port).replace(f'url: "http://127.0.0.1:{upstream.port}"', f'url: "http://127.0.0.1:{upstream.port}/v2"')
    g.write_config(good)
    g.signal(signal.SIGHUP)
    wait_for(lambda: requests.get(g.url("/echo")).json()["path"] == "/v2/echo", 5, interval=0.05, what="the reload")
    g.write_config(good.replace("upstream: app", "upstream: missing"))
    g.signal(signal.SIGHUP)
    # Once the refusal is logged, the bad config has been read and turned down: the gateway
    # is still up, on the config before it.
    assert g.logged("reload refused")
    assert g.logged('routes[0].upstream: \\"missing\\" is not defined')
    assert g.proc.poll() is None
    assert requests.get(g.url("/echo")).json()["path"] == "/v2/echo"


def test_sigterm_drains_in_flight_requests(upstream, gateway_factory):
    g = gateway_factory(basic_config(upstream.port))
    results = []

    def slow():
        results.append(requests.get(g.url("/slow?delay=1.5"), timeout=10).status_code)

    threads = [threading.Thread(target=slow) for _ in range(4)]
    for t in threads:
        t.start()
    # Wait until all four are in flight at the gateway, then ask it to stop.
    wait_for(lambda: "tokengate_inflight_requests 4" in requests.get(f"http://127.0.0.1:{g.admin}/metrics").text, 5,
             what="four requests in flight")
    g.signal(signal.SIGTERM)

    def refused():
        try:
            requests.get(g.url("/echo"), timeout=1)
        except requests.exceptions.ConnectionError:
            return True
    # New connections are no longer accepted while the old ones finish.
    wait_for(refused, 1, what="new connections to be refused")
    for t in threads:
        t.join()
    assert results == [200, 200, 200, 200]
    assert g.proc.wait(timeout=5) == 0


def test_tls_listener(upstream, gateway_factory):
    d = tempfile.mkdtemp()
    cert, key = os.path.join(d, "c.pem"), os.path.join(d, "k.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    cfg = basic_config(upstream.port).replace(
        "listen: 127.0.0.1:{PORT}", f"listen: {{ address: 127.0.0.1:{{PORT}}, tls: {{ cert_file: {cert}, key_file: {key} }} }}")
    g = gateway_factory(cfg)
    r = requests.get(f"https://127.0.0.1:{g.port}/echo", verify=cert)
    assert r.status_code == 200
    h = {k.lower(): v for k, v in r.json()["headers"]}
    assert h["x-forwarded-proto"] == "https"
    # Plain HTTP on the TLS port does not get through.
    try:
        requests.get(f"http://127.0.0.1:{g.port}/echo", timeout=2)
        ok = True
    except requests.exceptions.RequestException:
        ok = False
    assert not ok


def test_check_config_and_version(upstream):
    d = tempfile.mkdtemp()
    good = os.path.join(d, "good.yaml")
    bad = os.path.join(d, "bad.yaml")
    with open(good, "w") as f:
        f.write(basic_config(upstream.port).replace("{PORT}", "8080").replace("{ADMIN}", "9901"))
    with open(bad, "w") as f:
        f.write(basic_config(upstream.port).replace("{PORT}", "8080").replace("{ADMIN}", "9901").replace("upstream: app", "upstream: ordres"))
    r = subprocess.run([BIN, "check-config", good], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([BIN, "check-config", bad], capture_output=True, text=True)
    assert r.returncode == 1
    assert 'routes[0].upstream: "ordres" is not defined; defined: app' in r.stdout
    r = subprocess.run([BIN, "version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("tokengate ")
    r = subprocess.run([BIN, "serve", "--config", bad], capture_output=True, text=True, timeout=10)
    assert r.returncode == 2
    assert "ordres" in r.stderr


def test_a_second_gateway_on_a_held_port_fails_instead_of_sharing_it(upstream, gateway_factory):
    """The workers listen with SO_REUSEPORT; a second process of the same user could join that
    group and silently take a share of the first one's connections (two configurations on one
    address). It must fail to start, naming the address, and the first goes on serving."""
    first = gateway_factory(basic_config(upstream.port))
    d = tempfile.mkdtemp()
    for what, port, admin in (("listener", first.port, free_port()), ("admin listener", free_port(), first.admin)):
        path = os.path.join(d, "second.yaml")
        with open(path, "w") as f:
            f.write(basic_config(upstream.port).replace("{PORT}", str(port)).replace("{ADMIN}", str(admin)))
        r = subprocess.run([BIN, "serve", "--config", path], capture_output=True, text=True, timeout=10)
        assert r.returncode != 0, what
        held = first.port if what == "listener" else first.admin
        assert f"127.0.0.1:{held}: address in use" in r.stdout + r.stderr, (what, r.stdout, r.stderr)
    # Every request still reaches the first gateway's upstream, on a new connection each time
    # (the kernel would spread those across a shared group).
    for _ in range(20):
        assert requests.get(first.url("/echo"), headers={"Connection": "close"}).json()["path"] == "/echo"


def test_reload_applies_new_limits(upstream, gateway_factory):
    g = gateway_factory(basic_config(upstream.port, body="4MB"))
    assert requests.post(g.url("/echo"), data=b"a" * 4096).status_code == 200
    g.write_config(basic_config(upstream.port, body="1KB"))
    g.signal(signal.SIGHUP)
    wait_for(lambda: requests.post(g.url("/echo"), data=b"a" * 4096).status_code == 413, 5, interval=0.05,
             what="the new body limit")


def test_shipped_configs_are_valid(tmp_path):
    """The configs config/ and deploy/ hand to users must pass check-config."""
    import re
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    files = [os.path.join(root, "config", "quickstart.yaml"), os.path.join(root, "config", "protected-resource.yaml"),
             os.path.join(root, "deploy", "compose", "tokengate.yaml")]
    # The Kubernetes example embeds its config in a ConfigMap.
    k8s = open(os.path.join(root, "deploy", "kubernetes", "tokengate-sidecar.yaml")).read()
    block = re.search(r"tokengate\.yaml: \|\n((?:    .*\n|\s*\n)+)", k8s).group(1)
    embedded = tmp_path / "k8s.yaml"
    embedded.write_text("\n".join(l[4:] for l in block.splitlines()) + "\n")
    files.append(str(embedded))
    # config/fapi2.yaml names key files under /etc/tokengate: made here, the paths moved.
    fapi2 = open(os.path.join(root, "config", "fapi2.yaml")).read()
    key = tmp_path / "web-client.jwk"
    subprocess.run([BIN, "keys", "generate", "--alg", "ES256", "--kid", "web", "--out", str(key)], check=True,
                   capture_output=True)
    (tmp_path / "session.key").write_text("q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE=\n")
    moved = tmp_path / "fapi2.yaml"
    moved.write_text(fapi2.replace("/etc/tokengate/web-client.jwk", str(key))
                     .replace("/etc/tokengate/dpop.jwk", str(key))
                     .replace("/etc/tokengate/session.key", str(tmp_path / "session.key")))
    files.append(str(moved))
    env = dict(os.environ, TOKENGATE_SESSION_KEY="k" * 43, WEB_CLIENT_SECRET="s")
    for f in files:
        r = subprocess.run([BIN, "check-config", f], capture_output=True, text=True, env=env)
        assert r.returncode == 0, f + ": " + r.stdout + r.stderr


def test_quickstart_flow(upstream, gateway_factory):
    """The quickstart's first minute: 401, mint a token with the CLI, 200 with identity headers."""
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    text = open(os.path.join(root, "config", "quickstart.yaml")).read()
    text = (text.replace("127.0.0.1:8080", "127.0.0.1:{PORT}").replace("127.0.0.1:9901", "127.0.0.1:{ADMIN}")
                .replace("http://127.0.0.1:3000", f"http://127.0.0.1:{upstream.port}").replace("workers: auto", "workers: 1"))
    from support.gateway import Gateway
    g = Gateway(text)
    os.makedirs(os.path.join(g.dir, "dev"))
    key = os.path.join(g.dir, "dev", "dev.jwk")
    jwks = subprocess.run([BIN, "keys", "generate", "--alg", "ES256", "--kid", "dev", "--out", key], capture_output=True, text=True, check=True).stdout
    open(os.path.join(g.dir, "dev", "dev.jwks"), "w").write(jwks)
    g.start()
    try:
        r = requests.get(g.url("/api/hello"))
        assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Bearer")
        def mint(claims):
            return subprocess.run([BIN, "jwt", "sign", "--key", key, "--typ", "at+jwt", "--claims", claims],
                                  capture_output=True, text=True, check=True).stdout.strip()
        # RFC 9068 §2.2: the quickstart issuer is at+jwt, so a token without client_id is refused
        # (jwt sign adds iat, exp and jti itself).
        r = requests.get(g.url("/api/hello"), headers={"Authorization": "Bearer " + mint(
            '{"iss":"https://quickstart.local","aud":"demo-api","sub":"alice","scope":"demo:read"}')})
        assert r.status_code == 401 and 'error="invalid_token"' in r.headers["WWW-Authenticate"]
        token = mint('{"iss":"https://quickstart.local","aud":"demo-api","sub":"alice","client_id":"cli","scope":"demo:read"}')
        r = requests.get(g.url("/api/hello"), headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 200
        assert ["X-Forwarded-User", "alice"] in r.json()["headers"]
    finally:
        g.stop()


def tunables(pid):
    """GLIBC_TUNABLES as the process was started with it. glibc, parsing it, ends each value
    in place with a NUL where the ':' was, so the pieces after the first are rejoined."""
    with open(f"/proc/{pid}/environ", "rb") as f:
        entries = f.read().split(b"\0")
    at = next(i for i, e in enumerate(entries) if e.startswith(b"GLIBC_TUNABLES="))
    pieces = [entries[at][len(b"GLIBC_TUNABLES="):]]
    for e in entries[at + 1:]:
        if not e.startswith(b"glibc."):
            break
        pieces.append(e)
    return b":".join(pieces)


def test_serve_deepens_the_allocator_cache_and_keeps_its_pid(upstream, gateway_factory):
    # glibc reads GLIBC_TUNABLES only at start: serve sets the tcache depth and runs itself
    # again in the same process (the pid the test started is the one serving).
    g = gateway_factory(basic_config(upstream.port), env={"GLIBC_TUNABLES": ""})
    assert tunables(g.proc.pid) == b"glibc.malloc.tcache_count=64"
    assert requests.get(g.url("/echo")).json()["path"] == "/echo"
    # The exec of /proc/self/exe names the process "exe"; ps, top and pkill -x see the
    # program's own name again, on every thread.
    program = os.path.basename(g.proc.args[0])[:15].encode()
    tasks = f"/proc/{g.proc.pid}/task"
    names = {open(f"{tasks}/{t}/comm", "rb").read().strip() for t in os.listdir(tasks)}
    assert names == {program}


def test_an_operators_tunables_are_kept(upstream, gateway_factory):
    g = gateway_factory(basic_config(upstream.port), env={"GLIBC_TUNABLES": "glibc.malloc.arena_max=4"})
    assert tunables(g.proc.pid) == b"glibc.malloc.arena_max=4:glibc.malloc.tcache_count=64"
    # A depth the operator chose is theirs: nothing is added, nothing run again.
    h = gateway_factory(basic_config(upstream.port), env={"GLIBC_TUNABLES": "glibc.malloc.tcache_count=7"})
    assert tunables(h.proc.pid) == b"glibc.malloc.tcache_count=7"
    assert requests.get(h.url("/echo")).json()["path"] == "/echo"
