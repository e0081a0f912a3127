"""`tokengate keys generate`, `jwt sign`, `jwt decode`, `jwt verify` end to end (real process,
JWKS from a file and from a real HTTP server)."""
import json
import os
import subprocess
import tempfile

import pytest

from support.gateway import BIN, JSONServer


def run(*args, stdin=None):
    return subprocess.run([BIN, *args], input=stdin, capture_output=True, text=True, timeout=30)


@pytest.fixture(scope="module")
def keys():
    d = tempfile.mkdtemp()
    out = {}
    for alg in ["ES256", "RS256", "PS256", "EdDSA"]:
        priv = os.path.join(d, f"{alg}.jwk")
        r = run("keys", "generate", "--alg", alg, "--kid", f"k-{alg}", "--out", priv)
        assert r.returncode == 0, r.stderr
        jwks = json.loads(r.stdout)
        assert oct(os.stat(priv).st_mode & 0o777) == "0o600"
        for k in jwks["keys"]:
            assert not {"d", "p", "q", "dp", "dq", "qi"} & set(k), "private member in the public set"
        pub = os.path.join(d, f"{alg}.jwks")
        with open(pub, "w") as f:
            json.dump(jwks, f)
        out[alg] = (priv, pub)
    return out


@pytest.mark.parametrize("alg", ["ES256", "RS256", "PS256", "EdDSA"])
def test_sign_then_verify(keys, alg):
    priv, pub = keys[alg]
    tok = run("jwt", "sign", "--key", priv, "--claims", '{"sub":"alice","iss":"https://idp.test","aud":"api"}', "--typ", "at+jwt")
    assert tok.returncode == 0, tok.stderr
    token = tok.stdout.strip()
    ok = run("jwt", "verify", "--jwks", pub, "--iss", "https://idp.test", "--aud", "api", "--typ", "at+jwt", "--alg", alg, token)
    assert ok.returncode == 0, ok.stdout
    assert '"sub":"alice"' in ok.stdout
    # From standard input too.
    assert run("jwt", "verify", "--jwks", pub, "--alg", alg, "-", stdin=token).returncode == 0


def test_verify_failures_say_why(keys):
    priv, pub = keys["ES256"]
    token = run("jwt", "sign", "--key", priv, "--claims", '{"sub":"a","aud":"api"}').stdout.strip()
    r = run("jwt", "verify", "--jwks", pub, "--aud", "other", token)
    assert r.returncode == 1 and "audience_mismatch" in r.stdout
    r = run("jwt", "verify", "--jwks", pub, "--alg", "RS256", token)
    assert r.returncode == 1 and "algorithm_not_allowed" in r.stdout
    head, payload, sig = token.split(".")
    tampered = f"{head}.{payload}.{sig[:-2]}{'A' if sig[-2] != 'A' else 'B'}{sig[-1]}"
    r = run("jwt", "verify", "--jwks", pub, tampered)
    assert r.returncode == 1 and ("bad_signature" in r.stdout or "malformed" in r.stdout)
    _, other_pub = keys["RS256"]
    r = run("jwt", "verify", "--jwks", other_pub, "--alg", "ES256", token)
    assert r.returncode == 1 and "key_not_found" in r.stdout
    expired = run("jwt", "sign", "--key", priv, "--claims", '{"sub":"a","exp":1000}').stdout.strip()
    r = run("jwt", "verify", "--jwks", pub, expired)
    assert r.returncode == 1 and "expired" in r.stdout
    assert run("jwt", "verify", "--jwks", "/nonexistent", token).returncode == 2


def test_decode_shows_but_does_not_verify(keys):
    priv, _ = keys["ES256"]
    token = run("jwt", "sign", "--key", priv, "--claims", '{"sub":"bob"}').stdout.strip()
    r = run("jwt", "decode", token)
    assert r.returncode == 0
    assert '"sub":"bob"' in r.stdout and "NOT verified" in r.stdout
    assert run("jwt", "decode", "not.a.jwt!").returncode == 1


def test_verify_with_jwks_url(keys):
    priv, pub = keys["ES256"]
    srv = JSONServer(lambda: json.load(open(pub)))
    try:
        token = run("jwt", "sign", "--key", priv, "--claims", '{"sub":"a"}').stdout.strip()
        r = run("jwt", "verify", "--jwks", srv.url, token)
        assert r.returncode == 0, r.stdout + r.stderr
        assert srv.hits == 1
    finally:
        srv.stop()
