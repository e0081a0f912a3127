#!/usr/bin/env python3
"""Writes the seeds of SignatureFuzz to corpus-signatures/ (or under the directory given):
RFC 9421 Appendix B.2's Signature-Input/Signature pairs over its test request, §2's component
examples, RFC 9530 Content-Digest fields, and malformed variants of each. Each entry's first
byte picks the parser (see SignatureFuzzEntry.all)."""
import hashlib
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = sys.argv[1] if len(sys.argv) > 1 else here
out = os.path.join(root, "corpus-signatures")
os.makedirs(out, exist_ok=True)

DIGEST = "sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:"
FIELDS = ["host: example.com", "date: Tue, 20 Apr 2021 02:07:55 GMT", "content-type: application/json",
          "content-digest: " + DIGEST, "content-length: 18", "authorization: Bearer x",
          "example-dict:  a=1,    b=2;x=1;y=2,   c=(a   b   c)", "example-header: value, with, lots",
          "example-header: of, commas", "signature-input: sig1=();created=1"]
SIG = "sig=:AAAA:"
INPUTS = [
    'sig-b21=();created=1618884473;keyid="test-key-rsa-pss";nonce="b3k2pp5k7z-50gnwp.yemd"',
    'sig-b22=("@authority" "content-digest" "@query-param";name="Pet");created=1618884473;keyid="test-key-rsa-pss";tag="header-example"',
    'sig-b23=("date" "@method" "@path" "@query" "@authority" "content-type" "content-digest" "content-length");created=1618884473;keyid="test-key-rsa-pss"',
    'sig-b24=("@status" "content-type" "content-digest" "content-length");created=1618884473;keyid="test-key-ecc-p256"',
    'sig-b25=("date" "@authority" "content-type");created=1618884473;keyid="test-shared-secret"',
    'sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"',
    'sig=("example-dict";sf "example-dict";key="b" "example-header";bs "authorization";req "@target-uri" "@request-target" "@scheme");created=1;expires=2;alg="ed25519";app="x"',
    'sig=("@method" "@method");created=1', 'sig=("Content-Type");created=1', 'sig=("@query-param");created=1',
    'sig=("x";tr);created=1', 'sig=("x";sf;bs);created=1', 'sig=("@signature-params");created=1',
    'sig=(method);created=1', 'sig=("@method");created="x"', 'sig=', 'sig=:AAAA:', '(', 'a=("b" "c"',
]
TARGETS = ["/foo?param=Value&Pet=dog", "/parameters?var=this%20is%20a%20big%0Avalue&bar=with+plus+whitespace",
           "/p?a=1&a=2", "/"]
DIGESTS = [DIGEST, "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:", "md5=:AAAA:", "sha-256=:AAAA:",
           "sha-256=\"x\"", "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:, unixsum=30637", "((", ""]
COMPONENTS = ["@method", "content-digest", '"@query-param";name="Pet"', '"example-dict";key="a"',
              '"example-dict";sf', '"x";bs', '"authorization";req', '"@method";bogus', '"x";tr', "X-Upper",
              '"@status"', '"a";key=1', '"a";sf=?0', '"', "@"]

seeds = []
for i, inp in enumerate(INPUTS):
    label = inp.split("=", 1)[0]
    sig = f"{label}=:AAAA:" if "=" in inp else SIG
    target = TARGETS[i % len(TARGETS)]
    seeds.append(bytes([0]) + "\n".join([inp, sig, target] + FIELDS).encode())
for d in DIGESTS:
    seeds.append(bytes([1]) + d.encode())
for c in COMPONENTS:
    seeds.append(bytes([2]) + c.encode())

for s in seeds:
    with open(os.path.join(out, hashlib.sha1(s).hexdigest()), "wb") as f:
        f.write(s)
print(f"{len(seeds)} seeds in {out}")
