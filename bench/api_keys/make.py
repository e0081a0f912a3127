#!/usr/bin/env python3
"""The api-key scenarios' key set: a file of N entries, one of them the key wrk sends, made by
`tokengate api-keys create`; the N-1 others have random digests that no key has, so a lookup
runs against a table of N. Standard library only.

    make.py TOKENGATE_BIN DIR N    writes DIR/keys.yaml (the set), DIR/key (its real key) and
                                   DIR/other-key (a well-formed key of another file, which
                                   the set does not hold: the checks' unknown key)

The fillers are written first and the key appended by the command, which reads the whole
file back: a filler the gateway would refuse fails here, not at check-config."""
import os
import subprocess
import sys


def create(binary, path, sub):
    """A new key in `path`, by the gateway's own command; the key it prints."""
    r = subprocess.run([binary, "api-keys", "create", "--file", path, "--sub", sub,
                        "--client-id", "bench", "--scopes", "bench"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"make.py: tokengate api-keys create --file {path} failed:\n{r.stderr}")
    return r.stdout.strip()


binary, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(out, exist_ok=True)
keys = os.path.join(out, "keys.yaml")
with open(keys, "w") as f:
    f.write("# API keys (bench/api_keys/make.py): random digests beside the bench key.\n")
    for i in range(1, n):
        f.write(f'- id: "k_fill{i:05d}"\n  digest: sha256:{os.urandom(32).hex()}\n'
                f'  sub: "filler-{i:05d}"\n  client_id: "bench"\n  scopes: ["bench"]\n')
for name, path, sub in (("key", keys, "bench-user"), ("other-key", os.path.join(out, "other.yaml"), "other")):
    with open(os.path.join(out, name), "w") as f:
        f.write(create(binary, path, sub) + "\n")
