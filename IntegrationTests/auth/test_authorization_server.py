"""The authorization server MCP clients see (docs/authorization-server.md), its
Enterprise-Managed Authorization part: a client whose `client_id` is the URL of its metadata
document (served here over https on 127.0.0.1) authenticates at the token endpoint with
`private_key_jwt` and the keys that document gives, and trades an Identity Assertion JWT
Authorization Grant its user's IdP issued for an access token for one MCP resource. The route
takes that token with `issuers: [self]`. Each refusal is tried from the attacker's side: a
replayed ID-JAG or client assertion, another resource or AS, a forged signature, a client
document that names another client, one that redirects, one too large, a host not allowed."""
import base64
import json
import os
import subprocess
import time

import pytest
import requests
from joserfc import jwt
from joserfc.jwk import ECKey

from support.cimd_host import CIMDHost
from support.gateway import BIN
from test_bearer import ec_key, idp  # noqa: F401 — idp is a fixture

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def jti():
    return base64.urlsafe_b64encode(os.urandom(12)).decode()


class Env:
    def __init__(self, gateway_factory, idp, upstream, tmp_path):  # noqa: F811
        self.idp = idp
        self.host = CIMDHost(tmp_path)
        self.client_key = ECKey.generate_key("P-256", parameters={"kid": "client-1", "alg": "ES256"}, private=True)
        self.client_id = self.host.url("/clients/app.json")
        self.host.put("/clients/app.json", self.document())
        as_key = tmp_path / "as.jwk"
        subprocess.run([BIN, "keys", "generate", "--alg", "ES256", "--kid", "as-1", "--out", str(as_key)],
                       capture_output=True, text=True, check=True)
        self.gw = gateway_factory(f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
public_url: "http://127.0.0.1:{{PORT}}"
authorization_server:
  issuer: "http://127.0.0.1:{{PORT}}"
  signing_keys: ["{as_key}"]
  access_token_ttl: 5m
  scopes:
    "mcp:read": {{}}
    "mcp:write": {{ claims: {{ groups: {{ contains: eng }} }} }}
  clients: {{ allowed_client_hosts: ["127.0.0.1"], ca_file: "{self.host.ca_file}" }}
  id_jag: {{ issuers: [corp] }}
issuers:
  corp: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], algorithms: [ES256] }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - name: mcp
    match: {{ path: /mcp }}
    upstream: app
    auth: token
    issuers: [self]
    resource: "http://127.0.0.1:{{PORT}}/mcp"
    require: {{ scopes: ["mcp:read"] }}
""")
        self.issuer = f"http://127.0.0.1:{self.gw.port}"
        self.resource = self.issuer + "/mcp"
        self.token_endpoint = self.issuer + "/oauth2/as/token"

    def document(self, **changes):
        d = {"client_id": self.host.url("/clients/app.json"), "client_name": "Test agent",
             "redirect_uris": ["http://127.0.0.1/cb"], "token_endpoint_auth_method": "private_key_jwt",
             "grant_types": [JWT_BEARER], "jwks": {"keys": [self.client_key.as_dict(private=False)]}}
        d.update(changes)
        return {k: v for k, v in d.items() if v is not None}

    def id_jag(self, key=None, typ="oauth-id-jag+jwt", **over):
        now = int(time.time())
        c = {"iss": "https://idp.one", "sub": "alice", "aud": self.issuer, "client_id": self.client_id,
             "resource": self.resource, "scope": "mcp:read mcp:write", "jti": jti(), "iat": now, "exp": now + 300,
             "groups": ["staff"], "email": "alice@example.com"}
        c.update(over)
        c = {k: v for k, v in c.items() if v is not None}
        key = key or self.idp.keys[0]
        return jwt.encode({"alg": "ES256", "kid": key.kid, "typ": typ}, c, key)

    def client_assertion(self, client_id=None, key=None, **over):
        now = int(time.time())
        client_id = client_id or self.client_id
        c = {"iss": client_id, "sub": client_id, "aud": self.issuer, "jti": jti(), "iat": now, "exp": now + 60}
        c.update(over)
        key = key or self.client_key
        return jwt.encode({"alg": "ES256", "kid": key.kid}, c, key)

    def token(self, assertion=None, client_assertion=None, dpop=None, **form):
        data = {"grant_type": JWT_BEARER, "assertion": assertion or self.id_jag(),
                "client_assertion_type": ASSERTION_TYPE, "client_assertion": client_assertion or self.client_assertion()}
        data.update(form)
        headers = {"DPoP": dpop} if dpop else {}
        return requests.post(self.token_endpoint, data={k: v for k, v in data.items() if v is not None},
                             headers=headers, timeout=10)


@pytest.fixture
def env(gateway_factory, idp, upstream, tmp_path):  # noqa: F811
    e = Env(gateway_factory, idp, upstream, tmp_path)
    yield e
    e.host.stop()


def claims_of(token):
    return json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))


def test_the_metadata_and_keys_say_what_is_offered(env):
    m = requests.get(env.issuer + "/.well-known/oauth-authorization-server", timeout=5)
    assert m.status_code == 200
    doc = m.json()
    assert doc["issuer"] == env.issuer and doc["token_endpoint"] == env.token_endpoint
    assert doc["grant_types_supported"] == [JWT_BEARER]
    assert doc["authorization_grant_profiles_supported"] == ["urn:ietf:params:oauth:grant-profile:id-jag"]
    assert doc["client_id_metadata_document_supported"] is True
    assert doc["token_endpoint_auth_methods_supported"] == ["private_key_jwt"]
    assert "authorization_endpoint" not in doc and doc["scopes_supported"] == ["mcp:read", "mcp:write"]
    keys = requests.get(doc["jwks_uri"], timeout=5).json()["keys"]
    assert [k["kid"] for k in keys] == ["as-1"] and all("d" not in k for k in keys)
    # The route's protected-resource metadata names this AS.
    prm = requests.get(env.issuer + "/.well-known/oauth-protected-resource/mcp", timeout=5).json()
    assert prm["authorization_servers"] == [env.issuer]


def test_an_id_jag_is_traded_for_a_token_the_mcp_route_takes(env, upstream):
    r = env.token()
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["token_type"] == "Bearer" and 0 < body["expires_in"] <= 300
    assert r.headers["Cache-Control"] == "no-store"
    # alice is not in eng: mcp:write is not granted.
    assert body["scope"] == "mcp:read"
    c = claims_of(body["access_token"])
    assert c["iss"] == env.issuer and c["aud"] == env.resource and c["sub"] == "alice"
    assert c["idp_iss"] == "https://idp.one" and c["client_id"] == env.client_id and c["scope"] == "mcp:read"
    call = requests.post(env.resource, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                         headers={"Authorization": f"Bearer {body['access_token']}"}, timeout=5)
    assert call.status_code == 200, call.text
    # In eng, both scopes; asked for one, one.
    both = env.token(assertion=env.id_jag(groups=["eng"]))
    assert both.json()["scope"] == "mcp:read mcp:write"
    one = env.token(assertion=env.id_jag(groups=["eng"]), scope="mcp:write")
    assert one.json()["scope"] == "mcp:write"
    metrics = requests.get(f"http://127.0.0.1:{env.gw.admin}/metrics", timeout=5).text
    assert 'tokengate_as_tokens_issued_total{grant="jwt-bearer"} 3' in metrics
    # The status page lists the client, by its document URL.
    status = requests.get(f"http://127.0.0.1:{env.gw.admin}/status.json", timeout=5).json()["authorization_server"]
    assert status["issuer"] == env.issuer
    assert [(c["client_id"], c["tokens"]) for c in status["clients"]] == [(env.client_id, 3)]
    page = requests.get(f"http://127.0.0.1:{env.gw.admin}/status", timeout=5).text
    assert "Authorization server" in page and env.client_id in page


def error(r):
    return r.status_code, r.json()["error"]


def test_every_refusal_of_the_grant(env):
    replayed = env.id_jag()
    assert env.token(assertion=replayed).status_code == 200
    cases = [
        (env.token(assertion=replayed), (400, "invalid_grant")),  # the same ID-JAG again
        (env.token(assertion=env.id_jag(aud="https://other.example")), (400, "invalid_grant")),
        (env.token(assertion=env.id_jag(resource=env.issuer + "/other")), (400, "invalid_grant")),
        (env.token(assertion=env.id_jag(client_id="https://127.0.0.1:1/other.json")), (400, "invalid_grant")),
        (env.token(assertion=env.id_jag(key=ec_key("one-1"))), (400, "invalid_grant")),  # not the IdP's key
        (env.token(assertion=env.id_jag(typ="JWT")), (400, "invalid_grant")),
        (env.token(assertion=env.id_jag(iss="https://evil.example")), (400, "invalid_grant")),
        (env.token(assertion=env.id_jag(jti=None)), (400, "invalid_grant")),
        (env.token(assertion=env.id_jag(exp=int(time.time()) + 3600)), (400, "invalid_grant")),
        (env.token(assertion=env.id_jag(scope="admin")), (400, "invalid_scope")),
        (env.token(resource=env.issuer + "/other"), (400, "invalid_target")),
        (env.token(grant_type="authorization_code"), (400, "unsupported_grant_type")),
        (env.token(client_assertion=env.client_assertion(key=ec_key("client-1"))), (401, "invalid_client")),
        (env.token(client_assertion=env.client_assertion(aud="https://other.example/token")), (401, "invalid_client")),
        # The token endpoint's URL is no audience (an AS that names it as its own could replay
        # an assertion made for it), nor a list that names the issuer among others.
        (env.token(client_assertion=env.client_assertion(aud=env.token_endpoint)), (401, "invalid_client")),
        (env.token(client_assertion=env.client_assertion(aud=[env.issuer, "https://evil.example"])),
         (401, "invalid_client")),
        (env.token(client_assertion_type=None), (401, "invalid_client")),
        (env.token(client_id="https://127.0.0.1:1/someone-else.json"), (401, "invalid_client")),
    ]
    for response, expected in cases:
        assert error(response) == expected, (expected, response.text)
    # A client assertion used twice: refused the second time.
    once = env.client_assertion()
    assert env.token(client_assertion=once).status_code == 200
    assert error(env.token(client_assertion=once)) == (401, "invalid_client")
    # Each parameter at most once (RFC 6749 §3.2).
    dup = requests.post(env.token_endpoint, data=[("grant_type", JWT_BEARER), ("grant_type", JWT_BEARER)], timeout=5)
    assert error(dup) == (400, "invalid_request")
    assert requests.get(env.token_endpoint, timeout=5).status_code == 405


def test_client_documents_that_are_refused(env):
    cases = {
        "/clients/other.json": env.document(),  # names /clients/app.json, not itself
        "/clients/redirect.json": None,
        "/clients/big.json": None,
        "/clients/secret.json": None,
        "/clients/public.json": None,
    }
    env.host.put("/clients/other.json", cases["/clients/other.json"])
    env.host.put("/clients/redirect.json", b"", status=302, headers={"Location": env.client_id})
    big = env.document(client_id=env.host.url("/clients/big.json"), padding="x" * 6000)
    env.host.put("/clients/big.json", big)
    env.host.put("/clients/secret.json", env.document(client_id=env.host.url("/clients/secret.json"), client_secret="s"))
    env.host.put("/clients/public.json", env.document(client_id=env.host.url("/clients/public.json"),
                                                      token_endpoint_auth_method="none", jwks=None))
    for path in cases:
        client_id = env.host.url(path)
        r = env.token(assertion=env.id_jag(client_id=client_id), client_assertion=env.client_assertion(client_id=client_id))
        assert error(r) == (401, "invalid_client"), (path, r.text)
    # A document that does not list the grant.
    path = "/clients/code-only.json"
    env.host.put(path, env.document(client_id=env.host.url(path), grant_types=["authorization_code"]))
    r = env.token(assertion=env.id_jag(client_id=env.host.url(path)),
                  client_assertion=env.client_assertion(client_id=env.host.url(path)))
    assert error(r) == (400, "unauthorized_client")
    # A host that is not allowed is never fetched: localhost is not 127.0.0.1.
    other = f"https://localhost:{env.host.port}/clients/app.json"
    before = sum(env.host.hits.values())
    r = env.token(assertion=env.id_jag(client_id=other), client_assertion=env.client_assertion(client_id=other))
    assert error(r) == (401, "invalid_client") and sum(env.host.hits.values()) == before


def test_a_dpop_proof_binds_the_token_to_its_key(env):
    from support.dpop_client import DPoPKey
    key = DPoPKey("ES256")
    r = env.token(dpop=key.proof("POST", env.token_endpoint))
    assert r.status_code == 200, r.text
    assert r.json()["token_type"] == "DPoP"
    tok = r.json()["access_token"]
    assert claims_of(tok)["cnf"] == {"jkt": key.jkt}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    ok = requests.post(env.resource, json=call, timeout=5,
                       headers={"Authorization": f"DPoP {tok}", "DPoP": key.proof("POST", env.resource, access_token=tok)})
    assert ok.status_code == 200, ok.text
    # Bound: as a bearer token, refused.
    assert requests.post(env.resource, json=call, headers={"Authorization": f"Bearer {tok}"}, timeout=5).status_code == 401
    # A proof for another endpoint, one used before, and two proofs: invalid_dpop_proof.
    used = key.proof("POST", env.token_endpoint)
    assert env.token(dpop=used).status_code == 200
    cases = [env.token(dpop=key.proof("POST", env.issuer + "/elsewhere")), env.token(dpop=used),
             env.token(dpop=key.proof("GET", env.token_endpoint))]
    for r in cases:
        assert error(r) == (400, "invalid_dpop_proof"), r.text
    import http.client
    import urllib.parse
    body = urllib.parse.urlencode({"grant_type": JWT_BEARER, "assertion": env.id_jag(),
                                   "client_assertion_type": ASSERTION_TYPE,
                                   "client_assertion": env.client_assertion()})
    conn = http.client.HTTPConnection("127.0.0.1", env.gw.port, timeout=5)
    conn.putrequest("POST", "/oauth2/as/token")
    conn.putheader("Content-Type", "application/x-www-form-urlencoded")
    conn.putheader("Content-Length", str(len(body)))
    for _ in range(2):
        conn.putheader("DPoP", key.proof("POST", env.token_endpoint))
    conn.endheaders(body.encode())
    answer = conn.getresponse()
    two = (answer.status, json.loads(answer.read())["error"])
    conn.close()
    assert two == (400, "invalid_dpop_proof")
    doc = requests.get(env.issuer + "/.well-known/oauth-authorization-server", timeout=5).json()
    assert "ES256" in doc["dpop_signing_alg_values_supported"]

