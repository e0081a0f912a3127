#!/usr/bin/env python3
"""The signature-ed25519 scenario's material: an Ed25519 client key, the JWK Set tokengate
reads it from, and one RFC 9421 signature over ("@method" "@path") for `GET /`, valid for an
hour (every wrk request carries it; the route asks no nonce, so it may repeat). Only
`cryptography` (IntegrationTests/requirements.txt): the base is two lines, written here.

    sign.py DIR    writes DIR/jwks.json and DIR/headers (Signature-Input, Signature)"""
import base64
import json
import os
import sys
import time

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
key = ed25519.Ed25519PrivateKey.generate()
x = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
jwk = {"kty": "OKP", "crv": "Ed25519", "kid": "bench-client",
       "x": base64.urlsafe_b64encode(x).rstrip(b"=").decode()}
with open(os.path.join(out, "jwks.json"), "w") as f:
    json.dump({"keys": [jwk]}, f)
params = f'("@method" "@path");created={int(time.time())};keyid="bench-client"'
base = f'"@method": GET\n"@path": /\n"@signature-params": {params}'
signature = base64.b64encode(key.sign(base.encode())).decode()
with open(os.path.join(out, "headers"), "w") as f:
    f.write(f"sig1={params}\nsig1=:{signature}:\n")
