"""`tokengate api-keys create|list|revoke|rotate` end to end (real process, real files): the
key's shape checked independently (Python's zlib.crc32 and hashlib), the file holding only
digests, and every refusal with its reason."""
import hashlib
import os
import re
import subprocess
import tempfile
import zlib

from support.gateway import BIN

BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def run(*args):
    return subprocess.run([BIN, "api-keys", *args], capture_output=True, text=True, timeout=30)


def base62(n, width):
    out = ""
    for _ in range(width):
        n, r = divmod(n, 62)
        out = BASE62[r] + out
    assert n == 0
    return out


def key_file():
    return os.path.join(tempfile.mkdtemp(), "keys.yaml")


def create(path, *extra):
    r = run("create", "--file", path, *extra)
    assert r.returncode == 0, r.stderr
    key = r.stdout.strip()
    added = re.search(r"added (\S+) to", r.stderr)
    assert added, r.stderr
    return key, added.group(1)


def test_a_key_has_its_shape_and_only_its_digest_is_kept():
    path = key_file()
    key, kid = create(path, "--sub", "partner-acme", "--client-id", "acme-sync", "--scopes", "orders:read",
                      "--claim", "org=acme", "--claim", "team=a", "--claim", "team=b", "--expires", "90d")
    assert re.fullmatch(r"tgk_[0-9A-Za-z]{49}", key), key
    # The check digits are the CRC32 (zlib's) of what precedes them, in six base62 digits.
    assert key[-6:] == base62(zlib.crc32(key[:-6].encode()), 6)
    text = open(path).read()
    assert "tgk_" not in text
    assert "sha256:" + hashlib.sha256(key.encode()).hexdigest() in text
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    # A claim named once is a string, named again a list.
    assert '"org": "acme"' in text and '"team": ["a", "b"]' in text
    r = run("create", "--file", path, "--sub", "x", "--scopes", "a b")
    assert r.returncode != 0 and "not a scope-token" in r.stderr, r.stderr
    # Two keys are never alike.
    other, _ = create(path, "--sub", "partner-acme")
    assert other != key and other[4:20] != key[4:20]
    listed = run("list", "--file", path)
    assert listed.returncode == 0, listed.stderr
    assert kid in listed.stdout and "sub=partner-acme" in listed.stdout and "scopes=orders:read" in listed.stdout
    assert "sha256" not in listed.stdout and key not in listed.stdout


def test_rotate_keeps_the_identity_and_ends_the_old_key_after_the_overlap():
    path = key_file()
    old_key, old_id = create(path, "--sub", "ci", "--client-id", "builder", "--scopes", "a,b", "--id", "ci-1")
    assert old_id == "ci-1"
    r = run("rotate", "--file", path, "ci-1", "--overlap", "2027-01-01T00:00:00Z")
    assert r.returncode == 0, r.stderr
    new_key = r.stdout.strip()
    assert new_key != old_key and re.fullmatch(r"tgk_[0-9A-Za-z]{49}", new_key)
    lines = run("list", "--file", path).stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("ci-1\t") and "expires=2027-01-01T00:00:00Z" in lines[0]
    assert "sub=ci\tclient_id=builder\tscopes=a,b\texpires=never" in lines[1]
    text = open(path).read()
    assert hashlib.sha256(new_key.encode()).hexdigest() in text and hashlib.sha256(old_key.encode()).hexdigest() in text
    r = run("revoke", "--file", path, "ci-1")
    assert r.returncode == 0, r.stderr
    assert hashlib.sha256(old_key.encode()).hexdigest() not in open(path).read()
    assert len(run("list", "--file", path).stdout.splitlines()) == 1


def test_refusals_say_why():
    path = key_file()
    create(path, "--sub", "a", "--id", "k_1")
    cases = [
        (("revoke", "--file", path, "k_9"), "no key has the id k_9"),
        (("rotate", "--file", path, "k_9"), "no key has the id k_9"),
        (("create", "--file", path, "--sub", "b", "--id", "k_1"), "id k_1 is taken"),
        (("create", "--file", path, "--sub", "b", "--id", "k 2"), "an id is 1 to 64"),
        (("create", "--file", path, "--sub", "b", "--expires", "1d", "--not-before", "2d"), "expire before"),
        (("create", "--file", path, "--sub", "b", "--expires", "soon"), "neither an RFC 3339 time nor a duration"),
        (("list", "--file", path + ".missing"), "does not exist"),
    ]
    before = open(path).read()
    for args, why in cases:
        r = run(*args)
        assert r.returncode != 0, args
        assert why in r.stderr, (args, r.stderr)
    assert open(path).read() == before, "a refused command changed the file"
    with open(path, "a") as f:
        f.write("- id: k_2\n  sub: b\n  digest: sha256:12\n")
    line = len(before.splitlines()) + 3
    r = run("list", "--file", path)
    assert r.returncode != 0 and f"line {line}: digest must be sha256: and 64 hex digits" in r.stderr, r.stderr
    r = run("create", "--file", path, "--sub", "c")
    assert r.returncode != 0 and f"line {line}" in r.stderr, r.stderr
    assert not r.stdout, "a key was printed for a file it was not added to"
