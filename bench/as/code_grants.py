#!/usr/bin/env python3
"""How many codes a second the authorization server's authorization endpoint issues to a
signed-in browser, and how many authorization_code grants a second its token endpoint answers
(docs/authorization-server.md), with two workers and the memory store on 127.0.0.1: the
issue's goal is 2,000 grants a second or more on this machine.

usage: code_grants.py TOKENGATE_BIN [SECONDS] [CONNECTIONS]

Starts, all on 127.0.0.1: the test suite's IdP (idpyoidc, signing alice in by itself), the
client's metadata document host (https, CIMDHost: a public client with an https redirect URI
and the refresh_token grant), and tokengate with an `authorization_server` (`consent: false`).
Signs a browser in once, then:
1. runs wrk on /authorize with that browser's cookie for SECONDS, collecting the codes
   (lua/authorize.lua): codes issued a second;
2. posts each code once with its PKCE verifier (lua/grants.lua, one form body per code) for
   SECONDS: grants a second, each an access token and a refresh-token family.
Prints both rates, the non-2xx/3xx answers, and tokengate's CPU seconds per request."""
import base64
import glob
import hashlib
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import requests

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "IntegrationTests"))
from support.authserver.server import AuthServer, free_port  # noqa: E402
from support.cimd_host import CIMDHost  # noqa: E402

SESSION_KEY = "q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE="
REDIRECT = "https://client.bench/cb"


def rate(out, seconds):
    total = next((int(line.split()[0]) for line in out.splitlines() if "requests in" in line), 0)
    bad = next((int(line.split(":")[1]) for line in out.splitlines() if "Non-2xx" in line), 0)
    return total, bad


def main():
    binary = sys.argv[1]
    seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    connections = int(sys.argv[3]) if len(sys.argv) > 3 else 32
    work = tempfile.mkdtemp(prefix="tg-bench-code-")
    port, admin = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    idp = AuthServer().start()
    idp.add_client("web", client_secret="web-secret-0123456789abcdef0123456789abcd",
                   scopes=["openid", "profile", "email"], redirect_uri=f"{base}/oauth2/callback")
    host = CIMDHost(work)
    client_id = host.url("/clients/bench.json")
    host.put("/clients/bench.json", {"client_id": client_id, "redirect_uris": [REDIRECT],
                                     "token_endpoint_auth_method": "none",
                                     "grant_types": ["authorization_code", "refresh_token"]},
             headers={"Cache-Control": "max-age=3600"})
    as_key = os.path.join(work, "as.jwk")
    subprocess.run([binary, "keys", "generate", "--alg", "ES256", "--kid", "as-1", "--out", as_key],
                   capture_output=True, check=True)
    config = os.path.join(work, "tokengate.yaml")
    with open(config, "w") as f:
        f.write(f"""listen: 127.0.0.1:{port}
admin_listen: 127.0.0.1:{admin}
workers: 2
access_log: false
public_url: {base}
session: {{ keys: ["{SESSION_KEY}"], secure_cookie: false }}
issuers:
  idp: {{ issuer: "{idp.issuer}", discovery: true, audiences: [api], algorithms: [ES256, RS256] }}
clients:
  web: {{ issuer: idp, client_id: web, auth: client_secret_basic, secret: "web-secret-0123456789abcdef0123456789abcd", request_mode: plain, scopes: [openid, profile, email] }}
authorization_server:
  login: web
  signing_keys: ["{as_key}"]
  consent: false
  scopes: {{ "mcp:read": {{}} }}
  clients: {{ allowed_client_hosts: ["127.0.0.1"], ca_file: "{host.ca_file}" }}
upstreams:
  app: {{ url: "http://127.0.0.1:9" }}
routes:
  - {{ name: mcp, match: {{ path: /mcp }}, upstream: app, auth: bearer, issuers: [self], resource: "{base}/mcp" }}
""")
    verifier = base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=").decode()
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    authorize = base + "/oauth2/as/authorize?" + urllib.parse.urlencode({
        "client_id": client_id, "redirect_uri": REDIRECT, "response_type": "code", "code_challenge": challenge,
        "code_challenge_method": "S256", "resource": base + "/mcp", "state": "s"})
    proc = subprocess.Popen([binary, "serve", "--config", config], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        for _ in range(200):
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{admin}/readyz", timeout=1).status == 200:
                    break
            except OSError:
                time.sleep(0.05)
        browser = requests.Session()
        url = authorize
        for _ in range(8):  # /authorize → /oauth2/start → the IdP → the callback → /authorize → the client
            r = browser.get(url, allow_redirects=False, timeout=10)
            url = urllib.parse.urljoin(url, r.headers.get("Location", ""))
            if url.startswith(REDIRECT):
                break
        assert url.startswith(REDIRECT + "?code="), (r.status_code, url)
        cookie = "; ".join(f"{c.name}={c.value}" for c in browser.cookies if c.domain.startswith("127.0.0.1")
                           and c.name.startswith("tokengate"))
        cpu = lambda: sum(int(x) for x in open(f"/proc/{proc.pid}/stat").read().split(")")[1].split()[11:13])  # noqa: E731
        hz = os.sysconf("SC_CLK_TCK")
        lua = os.path.join(os.path.dirname(__file__), "..", "lua")
        codes_file = os.path.join(work, "codes")
        before = cpu()
        out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "-H", f"Cookie: {cookie}",
                              "-s", os.path.join(lua, "authorize.lua"), authorize, "--", codes_file],
                             capture_output=True, text=True).stdout
        ticks = cpu() - before
        total, bad = rate(out, seconds)
        codes = [c for path in glob.glob(codes_file + ".*") for c in open(path).read().split()]
        print(out)
        print(f"codes/s: {len(codes) / seconds:.0f}; other answers: {total - len(codes)}; "
              f"tokengate CPU per code: {ticks / hz / max(1, total) * 1e6:.0f} us")
        bodies = os.path.join(work, "bodies.txt")
        with open(bodies, "w") as f:
            for code in codes:
                f.write(urllib.parse.urlencode({"grant_type": "authorization_code", "code": code,
                                                "redirect_uri": REDIRECT, "code_verifier": verifier,
                                                "client_id": client_id}) + "\n")
        before = cpu()
        out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "-s",
                              os.path.join(lua, "grants.lua"), base + "/oauth2/as/token", "--", bodies],
                             capture_output=True, text=True).stdout
        ticks = cpu() - before
        total, non200 = rate(out, seconds)
        print(out)
        # A code sent twice (more requests than codes) is refused: only first uses count.
        granted = min(total - non200, len(codes))
        print(f"grants/s: {granted / seconds:.0f}; non-200: {non200}; "
              f"tokengate CPU per grant: {ticks / hz / max(1, total) * 1e6:.0f} us")
    finally:
        proc.terminate()
        proc.wait()
        host.stop()
        idp.close()


if __name__ == "__main__":
    main()
