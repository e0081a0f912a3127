#!/usr/bin/env python3
"""Writes every compact JWS, JWK and JWK Set found in Tests/JOSETests/Fixtures to one file
each (named by kind and content hash) in the directory given, as libFuzzer seeds."""
import glob, hashlib, json, os, re, sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "JOSETests", "Fixtures")
out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/jose-seeds"
os.makedirs(out, exist_ok=True)
seen = set()

def put(kind, value):
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    data = text.encode()
    name = f"{kind}-{hashlib.sha1(data).hexdigest()[:16]}"
    if name not in seen:
        seen.add(name)
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)

def walk(x):
    if isinstance(x, dict):
        if isinstance(x.get("kty"), str):
            put("jwk", x)
        if isinstance(x.get("keys"), list) and all(isinstance(k, dict) for k in x["keys"]):
            put("jwks", {"keys": x["keys"]})
        for v in x.values():
            walk(v)
    elif isinstance(x, list):
        for v in x:
            walk(v)
    elif isinstance(x, str) and len(x) > 20 and re.fullmatch(r"[A-Za-z0-9_\-=+/ ]*(\.[A-Za-z0-9_\-=+/ ]*){2}", x):
        put("jws", x)

for path in glob.glob(os.path.join(root, "**", "*.json"), recursive=True):
    # Raw-signature Wycheproof files hold no JOSE objects; the json_web_* ones do.
    if "wycheproof" in path and "json_web" not in os.path.basename(path):
        continue
    with open(path) as f:
        walk(json.load(f))
print(f"{len(seen)} seeds in {out}")
