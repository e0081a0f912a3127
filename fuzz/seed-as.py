#!/usr/bin/env python3
"""Seeds for ASFuzz (fuzz/corpus-as): what an authorization server reads from clients. The
first byte picks the entry (ASFuzzEntry.all: 0 a client_id, a registered redirect URI and a
requested one, one per line; 1 a client metadata document as fetched from
https://app.example/c.json; 2 an ID-JAG's claims, signed by the fuzzer; 3 a refresh token; 4 an
authorization request's query; 5 a registration's metadata).
Each entry has good inputs and the refusals its checks name. Usage: ./seed-as.py [DIR]"""
import json
import os
import sys

URL = "https://app.example/c.json"
JAG = {"iss": "https://idp.example", "sub": "alice", "aud": "https://gw.example", "client_id": URL,
       "resource": "https://gw.example/mcp", "scope": "mcp:read", "jti": "j1", "iat": 1800000000,
       "exp": 1800000300}


def doc(**changes):
    d = {"client_id": URL, "client_name": "App", "redirect_uris": ["http://127.0.0.1/cb", "https://app.example/cb"]}
    d.update(changes)
    return {k: v for k, v in d.items() if v is not None}


def jag(**changes):
    c = dict(JAG, **changes)
    return {k: v for k, v in c.items() if v is not None}


def main(out):
    os.makedirs(out, exist_ok=True)
    urls = [
        f"{URL}\nhttp://127.0.0.1/cb\nhttp://127.0.0.1:4711/cb",
        f"{URL}\nhttps://app.example/cb?x=1\nhttps://app.example/cb?x=1",
        "https://app.example/a/%2e%2e/c.json\ncom.example.app:/cb\ncom.example.app:/cb",
        "https://u@app.example/c.json#f\njavascript:alert(1)\njavascript:alert(1)",
        "https://[::1]:8443/c.json\nhttp://[::1]/cb\nhttp://[::1]:9/cb",
        "http://app.example/c.json\nhttp://app.example/cb\nhttp://app.example:1/cb",
    ]
    docs = [
        doc(),
        doc(token_endpoint_auth_method="private_key_jwt",
            jwks={"keys": [{"kty": "EC", "crv": "P-256", "kid": "c1",
                            "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
                            "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}),
        doc(token_endpoint_auth_method="private_key_jwt", jwks_uri="https://app.example/jwks.json"),
        doc(client_id="https://app.example/other.json"),
        doc(client_secret="s"),
        doc(redirect_uris=[]),
        doc(redirect_uris=["http://evil.example/cb"]),
        doc(grant_types=["authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:jwt-bearer"]),
        doc(response_types=["token"]),
        doc(token_endpoint_auth_method="client_secret_basic"),
    ]
    jags = [jag(), jag(aud=["https://gw.example", "x"]), jag(resource=None), jag(jti=None),
            jag(exp=1800003600), jag(client_id="https://evil.example/c.json"), jag(iss="https://evil.example")]
    tokens = ["AAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "a.b", ""]
    seeds = [(0, u.encode()) for u in urls]
    seeds += [(1, json.dumps(d).encode()) for d in docs]
    seeds += [(2, json.dumps(c).encode()) for c in jags] + [(0x82, json.dumps(jag()).encode())]
    seeds += [(3, t.encode()) for t in tokens]
    challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    good = (f"response_type=code&client_id={URL}&redirect_uri=http%3A%2F%2F127.0.0.1%3A4711%2Fcb"
            f"&code_challenge={challenge}&code_challenge_method=S256&resource=https%3A%2F%2Fgw.example%2Fmcp"
            "&state=s1&scope=mcp%3Aread")
    queries = [good, good + "&redirect_uri=x", good.replace("S256", "plain"), good + "&dpop_jkt=" + challenge,
               good.replace("state=s1", "state=a%0D%0ALocation%3A+x"), good + "&request_uri=urn%3Ax",
               "client_id=tg-dcr-AAAAAAAAAAAAAAAAAAAAAA&redirect_uri=https%3A%2F%2Fc.example%2Fcb"]
    seeds += [(4, q.encode()) for q in queries]
    registrations = [{"redirect_uris": ["https://c.example/cb"], "client_name": "Old agent"},
                     {"redirect_uris": ["https://c.example/cb"], "token_endpoint_auth_method": "private_key_jwt"},
                     {"redirect_uris": ["https://c.example/cb"], "client_secret": "s"},
                     {"redirect_uris": ["javascript:x"]}, {"redirect_uris": []}]
    seeds += [(5, json.dumps(m).encode()) for m in registrations]
    for i, (entry, body) in enumerate(seeds):
        with open(os.path.join(out, f"seed-{i:03d}"), "wb") as f:
            f.write(bytes([entry]) + body)
    print(f"{len(seeds)} seeds in {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus-as"))
