#!/usr/bin/env python3
"""How many ID-JAG grants a second the authorization server's token endpoint answers
(docs/authorization-server.md), with two workers and the memory store on 127.0.0.1: the
issue's goal is 2,000 or more on this machine.

usage: grants.py TOKENGATE_BIN [SECONDS] [CONNECTIONS]

Starts, all on 127.0.0.1: the IdP's JWKS (a static server), the client's metadata document
host (https, the test suite's CIMDHost), and tokengate with an `authorization_server`. Makes
one form body per request it may send (each with its own ID-JAG and client assertion: both
`jti`s are claimed once), runs wrk for SECONDS (default 8) over CONNECTIONS (default 32)
connections with lua/grants.lua cycling through them, and prints the rate, the non-200s and
tokengate's CPU seconds per grant. Bodies are made before wrk starts, with joserfc: their
signing is not measured."""
import base64
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

from joserfc import jwt
from joserfc.jwk import ECKey

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "IntegrationTests"))
from support.cimd_host import CIMDHost  # noqa: E402
from support.authserver.server import free_port  # noqa: E402

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def jti():
    return base64.urlsafe_b64encode(os.urandom(12)).decode()


def main():
    binary = sys.argv[1]
    seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    connections = int(sys.argv[3]) if len(sys.argv) > 3 else 32
    work = tempfile.mkdtemp(prefix="tg-bench-as-")
    idp_key = ECKey.generate_key("P-256", parameters={"kid": "idp-1", "alg": "ES256"}, private=True)
    with open(os.path.join(work, "jwks.json"), "w") as f:
        json.dump({"keys": [idp_key.as_dict(private=False)]}, f)

    class Quiet(SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=work, **kw)

        def log_message(self, *a):
            pass
    jwks = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=jwks.serve_forever, daemon=True).start()
    host = CIMDHost(work)
    client_key = ECKey.generate_key("P-256", parameters={"kid": "client-1", "alg": "ES256"}, private=True)
    client_id = host.url("/clients/bench.json")
    host.put("/clients/bench.json", {"client_id": client_id, "redirect_uris": ["http://127.0.0.1/cb"],
                                     "token_endpoint_auth_method": "private_key_jwt", "grant_types": [JWT_BEARER],
                                     "jwks": {"keys": [client_key.as_dict(private=False)]}},
             headers={"Cache-Control": "max-age=3600"})
    port, admin = free_port(), free_port()
    issuer = f"http://127.0.0.1:{port}"
    as_key = os.path.join(work, "as.jwk")
    subprocess.run([binary, "keys", "generate", "--alg", "ES256", "--kid", "as-1", "--out", as_key],
                   capture_output=True, check=True)
    config = os.path.join(work, "tokengate.yaml")
    with open(config, "w") as f:
        f.write(f"""listen: 127.0.0.1:{port}
admin_listen: 127.0.0.1:{admin}
workers: 2
access_log: false
authorization_server:
  issuer: "{issuer}"
  signing_keys: ["{as_key}"]
  scopes: {{ "mcp:read": {{}} }}
  clients: {{ allowed_client_hosts: ["127.0.0.1"], ca_file: "{host.ca_file}" }}
  id_jag: {{ issuers: [corp] }}
issuers:
  corp: {{ issuer: "https://idp.bench", jwks_uri: "http://127.0.0.1:{jwks.server_address[1]}/jwks.json", audiences: [api], algorithms: [ES256] }}
upstreams:
  app: {{ url: "http://127.0.0.1:9" }}
routes:
  - {{ name: mcp, match: {{ path: /mcp }}, upstream: app, auth: bearer, issuers: [self], resource: "{issuer}/mcp" }}
""")
    # More bodies than can be sent: a body sent twice is a replay, refused.
    count = seconds * 15000
    now = int(time.time())
    bodies = os.path.join(work, "bodies.txt")
    with open(bodies, "w") as f:
        for _ in range(count):
            jag = jwt.encode({"alg": "ES256", "kid": "idp-1", "typ": "oauth-id-jag+jwt"},
                             {"iss": "https://idp.bench", "sub": "alice", "aud": issuer, "client_id": client_id,
                              "resource": issuer + "/mcp", "scope": "mcp:read", "jti": jti(), "iat": now,
                              "exp": now + 600}, idp_key)
            assertion = jwt.encode({"alg": "ES256", "kid": "client-1"},
                                   {"iss": client_id, "sub": client_id, "aud": issuer, "jti": jti(), "iat": now,
                                    "exp": now + 300}, client_key)
            f.write(urllib.parse.urlencode({
                "grant_type": JWT_BEARER, "assertion": jag,
                "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                "client_assertion": assertion}) + "\n")
    proc = subprocess.Popen([binary, "serve", "--config", config], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{admin}/readyz", timeout=1).status == 200:
                    break
            except OSError:
                time.sleep(0.05)
        cpu = lambda: sum(int(x) for x in open(f"/proc/{proc.pid}/stat").read().split(")")[1].split()[11:13])  # noqa: E731
        before = cpu()
        lua = os.path.join(os.path.dirname(__file__), "..", "lua", "grants.lua")
        out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "-s", lua, issuer + "/oauth2/as/token",
                              "--", bodies], capture_output=True, text=True).stdout
        ticks = cpu() - before
        print(out)
        total = next((int(line.split()[0]) for line in out.splitlines() if "requests in" in line), 0)
        non200 = next((int(line.split(":")[1]) for line in out.splitlines() if "Non-2xx" in line), 0)
        hz = os.sysconf("SC_CLK_TCK")
        print(f"grants/s: {(total - non200) / seconds:.0f}; non-200: {non200}; "
              f"tokengate CPU per grant: {ticks / hz / max(1, total) * 1e6:.0f} us")
    finally:
        proc.terminate()
        proc.wait()
        host.stop()
        jwks.shutdown()


if __name__ == "__main__":
    main()
