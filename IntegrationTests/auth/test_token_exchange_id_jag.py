"""`token_exchange: { mode: id_jag }` (docs/tokens.md): identity chained to an upstream that has
its own authorization server, through two real authorization servers on 127.0.0.1. The
caller's IdP (support/id_jag_idp.py) issues an ID-JAG by token exchange; the upstream's AS is a
second tokengate (`authorization_server` with `id_jag`, found by its RFC 8414 metadata), which
trades it for an access token for its own route; the gateway sends only that. The caller's
token never reaches the upstream; the upstream's route sees the caller as its AS vouched.
From the attacker's side: a caller the IdP refuses gets 403 and the upstream hears nothing;
an upstream AS that refuses the gateway's client gets 503."""
import json
import subprocess

import pytest
import requests

from support.cimd_host import CIMDHost
from support.gateway import BIN, sent_headers as sent
from support.id_jag_idp import IDJAGIdP


class Chain:
    def __init__(self, gateway_factory, upstream, tmp_path):
        self.host = CIMDHost(tmp_path)
        self.idp = IDJAGIdP()
        gw_key = tmp_path / "gw.jwk"
        jwks = json.loads(subprocess.run([BIN, "keys", "generate", "--alg", "ES256", "--kid", "gw-1", "--out",
                                          str(gw_key)], capture_output=True, text=True, check=True).stdout)
        as_key = tmp_path / "as.jwk"
        subprocess.run([BIN, "keys", "generate", "--alg", "ES256", "--kid", "files-as-1", "--out", str(as_key)],
                       capture_output=True, text=True, check=True)
        self.client_id = self.host.url("/clients/gateway.json")
        self.host.put("/clients/gateway.json", {
            "client_id": self.client_id, "client_name": "The gateway", "redirect_uris": ["https://gw.example/cb"],
            "token_endpoint_auth_method": "private_key_jwt",
            "grant_types": ["urn:ietf:params:oauth:grant-type:jwt-bearer"], "jwks": jwks})
        # The upstream: its own tokengate, its own AS, a route for its files.
        self.files = gateway_factory(f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
public_url: "http://127.0.0.1:{{PORT}}"
authorization_server:
  signing_keys: ["{as_key}"]
  scopes: {{ "files:read": {{}} }}
  clients: {{ allowed_client_hosts: ["127.0.0.1"], ca_file: "{self.host.ca_file}" }}
  id_jag: {{ issuers: [idp] }}
issuers:
  idp: {{ issuer: "{self.idp.issuer}", discovery: true, audiences: [api], algorithms: [ES256] }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - name: files
    match: {{ path_prefix: /files }}
    upstream: app
    auth: bearer
    issuers: [self]
    resource: "http://127.0.0.1:{{PORT}}/files"
    require: {{ scopes: ["files:read"] }}
    headers: {{ X-Forwarded-User: sub, X-Forwarded-Email: email }}
""")
        self.files_as = f"http://127.0.0.1:{self.files.port}"
        self.resource = self.files_as + "/files"
        self.idp.clients_at[self.files_as] = self.client_id
        # The gateway in front: callers bring the IdP's tokens.
        self.gw = gateway_factory(f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
issuers:
  idp: {{ issuer: "{self.idp.issuer}", discovery: true, audiences: [api], algorithms: [ES256] }}
  files-as: {{ issuer: "{self.files_as}", discovery: true, audiences: [unused], algorithms: [ES256] }}
clients:
  at-idp: {{ issuer: idp, client_id: gateway, auth: client_secret_basic, secret: "{self.idp.secret}" }}
  at-files: {{ issuer: files-as, client_id: "{self.client_id}", auth: private_key_jwt, key_file: "{gw_key}" }}
upstreams:
  files: {{ url: "{self.files_as}" }}
routes:
  - name: files
    match: {{ path_prefix: /files }}
    upstream: files
    auth: bearer
    issuers: [idp]
    token_exchange:
      mode: id_jag
      issuer: idp
      client: at-idp
      upstream_issuer: files-as
      upstream_client: at-files
      resource: "{self.resource}"
      scope: "files:read"
""")

    def get(self, path, token):
        return requests.get(self.gw.url(path), headers={"Authorization": f"Bearer {token}"}, timeout=10)

    def stop(self):
        self.host.stop()
        self.idp.stop()


@pytest.fixture
def chain(gateway_factory, upstream, tmp_path):
    c = Chain(gateway_factory, upstream, tmp_path)
    yield c
    c.stop()


def test_the_caller_reaches_an_upstream_with_its_own_as_through_an_id_jag(chain):
    token = chain.idp.access_token("alice")
    r = chain.get("/files/report.pdf", token)
    assert r.status_code == 200, (r.status_code, r.text, chain.gw.output()[-2000:])
    seen = sent(r)
    # The upstream's own gateway vouches for alice, from its AS's token; the caller's token
    # never reached it.
    assert seen["x-forwarded-user"] == "alice" and seen["x-forwarded-email"] == "alice@example.com"
    # The upstream's gateway takes only its own AS's tokens for its resource (issuers: [self],
    # resource): its 200 shows the gateway sent one, not the caller's token or the ID-JAG.
    assert files_metric(chain, 'tokengate_requests_total{route="files",status="200"}') == 1
    # The IdP was asked for an ID-JAG for the upstream's AS and resource.
    ask = chain.idp.exchanges[-1]
    assert ask["requested_token_type"] == "urn:ietf:params:oauth:token-type:id-jag"
    assert ask["audience"] == chain.files_as and ask["resource"] == chain.resource and ask["subject_token"] == token
    # The upstream's AS issued a token to the gateway's client for its resource.
    metrics = requests.get(f"http://127.0.0.1:{chain.files.admin}/metrics", timeout=5).text
    assert 'tokengate_as_tokens_issued_total{grant="jwt-bearer"} 1' in metrics
    # Kept: the next request asks neither AS again.
    asked = len(chain.idp.exchanges)
    assert chain.get("/files/other.pdf", token).status_code == 200
    assert len(chain.idp.exchanges) == asked
    assert 'tokengate_as_tokens_issued_total{grant="jwt-bearer"} 1' in requests.get(
        f"http://127.0.0.1:{chain.files.admin}/metrics", timeout=5).text


def files_metric(chain, line):
    text = requests.get(f"http://127.0.0.1:{chain.files.admin}/metrics", timeout=5).text
    return next((float(x.split()[-1]) for x in text.splitlines() if x.startswith(line)), 0.0)


def test_a_caller_the_idp_refuses_gets_403_and_the_upstream_hears_nothing(chain, upstream):
    chain.idp.refused_subjects.add("mallory")
    before = len(upstream.requests)
    r = chain.get("/files/x", chain.idp.access_token("mallory"))
    assert r.status_code == 403 and r.json()["error"] == "access_denied", r.text
    # Neither the upstream's gateway nor its AS heard of the request.
    assert len(upstream.requests) == before
    assert files_metric(chain, 'tokengate_requests_total{route="files"') == 0
    assert files_metric(chain, 'tokengate_as_tokens_issued_total') == 0
    # A token the IdP never signed is refused by the gateway itself, before any exchange.
    asked = len(chain.idp.exchanges)
    forged = chain.idp.access_token("alice")[:-4] + "AAAA"
    assert chain.get("/files/x", forged).status_code == 401
    assert len(chain.idp.exchanges) == asked


def test_an_upstream_as_that_refuses_the_gateway_gets_503(chain):
    # The gateway's document no longer lists the jwt-bearer grant: the upstream's AS refuses
    # the client (unauthorized_client), which is the gateway's problem, not the caller's.
    doc = json.loads(chain.host.documents["/clients/gateway.json"][1])
    doc["grant_types"] = ["authorization_code"]
    chain.host.put("/clients/gateway.json", doc)
    asked = len(chain.idp.exchanges)
    r = chain.get("/files/x", chain.idp.access_token("bob"))
    assert r.status_code == 503 and "Retry-After" in r.headers, (r.status_code, r.text)
    # The IdP gave its ID-JAG; the upstream's AS refused the gateway's client.
    assert len(chain.idp.exchanges) == asked + 1
    assert files_metric(chain, 'tokengate_as_refusals_total{endpoint="token",error="unauthorized_client"}') == 1
