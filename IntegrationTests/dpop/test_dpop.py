"""`auth: dpop` and `auth: token` end to end (RFC 9449): a real tokengate and upstream, a real
JWKS server, access tokens and DPoP proofs made with a third-party JOSE library (joserfc, via
dpop_client). Every §4.3 rule has a request that breaks exactly that rule."""
import http.client
import json
import time

import pytest
import requests

from support.dpop_client import DPoPKey, hs256_proof
from support.gateway import sent_headers as sent
from support.waiting import wait_for
from test_bearer import ec_key, idp, token as mint  # noqa: F401 — idp is a fixture


def config(upstream, idp, extra_top="", trusted="", public_url="http://127.0.0.1:{PORT}"):
    """public_url: the origin proofs must name (a YAML value), or None to leave it out."""
    origin = f"public_url: {public_url}" if public_url else ""
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
{origin}
{trusted}
{extra_top}
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], algorithms: [ES256] }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - name: dpop
    match: {{ path_prefix: /dpop/ }}
    upstream: app
    auth: dpop
    issuers: [one]
    require: {{ scopes: [orders:read] }}
  - name: nonce
    match: {{ path_prefix: /nonce/ }}
    upstream: app
    auth: dpop
    issuers: [one]
    dpop: {{ nonce: required }}
  - name: token
    match: {{ path_prefix: /token/ }}
    upstream: app
    auth: token
    issuers: [one]
  - name: forward
    match: {{ path_prefix: /fwd/ }}
    upstream: app
    auth: dpop
    issuers: [one]
    forward_token: true
    dpop: {{ forward_proof: true, jkt_header: X-Key-Thumbprint, algorithms: [ES256] }}
  - name: public
    match: {{ path_prefix: / }}
    upstream: app
    auth: none
"""


@pytest.fixture
def gw(upstream, idp, gateway_factory):
    return gateway_factory(config(upstream, idp))


@pytest.fixture
def client():
    return DPoPKey("ES256")


def bound_token(idp, key, **over):
    """An access token bound to `key` (cnf.jkt, RFC 9449 §6.1)."""
    return mint(idp.keys[0], claims={"cnf": {"jkt": key.jkt}}, **over)


def call(gw, tok, proof, path="/dpop/orders/1", method="GET", scheme="DPoP", headers=None):
    h = dict(headers or {})
    if tok is not None:
        h["Authorization"] = f"{scheme} {tok}"
    if proof is not None:
        h["DPoP"] = proof
    return requests.request(method, gw.url(path), headers=h, timeout=10)


def challenge(r):
    return r.headers.get("WWW-Authenticate", "")


def refused(r, status, error, scheme="DPoP"):
    """The refusal RFC 6750 §3 / RFC 9449 §7.1 describe: the status, the error in the body,
    and the error on the challenge of `scheme` (other challenges stay bare)."""
    assert r.status_code == status, (r.status_code, r.text, challenge(r))
    assert r.json()["error"] == error, r.text
    values = r.raw.headers.get_all("WWW-Authenticate")
    mine = [v for v in values if v.startswith(scheme + " ")]
    assert len(mine) == 1 and f'error="{error}"' in mine[0], values
    assert all("error=" not in v for v in values if v not in mine), values


# --- the valid path -------------------------------------------------------------------------

def test_valid_proof_reaches_upstream_with_identity_and_key(gw, idp, client):
    tok = bound_token(idp, client)
    url = gw.url("/dpop/orders/1")
    r = call(gw, tok, client.proof("GET", url, access_token=tok))
    assert r.status_code == 200, (r.text, challenge(r))
    h = sent(r)
    assert h["x-forwarded-user"] == "alice"
    assert h["x-forwarded-jkt"] == client.jkt
    # The credential and the proof were for the gateway; neither goes upstream by default.
    assert "authorization" not in h and "dpop" not in h


@pytest.mark.parametrize("alg", ["ES384", "PS256", "RS256", "EdDSA"])
def test_other_proof_algorithms(gw, idp, alg):
    k = DPoPKey(alg)
    tok = bound_token(idp, k)
    r = call(gw, tok, k.proof("GET", gw.url("/dpop/x"), access_token=tok), path="/dpop/x")
    assert r.status_code == 200, r.text


def test_query_is_not_part_of_htu(gw, idp, client):
    tok = bound_token(idp, client)
    r = call(gw, tok, client.proof("GET", gw.url("/dpop/orders"), access_token=tok), path="/dpop/orders?page=2")
    assert r.status_code == 200, r.text
    assert r.json()["path"] == "/dpop/orders?page=2"


def test_post_with_body(gw, idp, client):
    tok = bound_token(idp, client)
    r = requests.post(gw.url("/dpop/orders"), data=b"hello",
                      headers={"Authorization": f"DPoP {tok}", "DPoP": client.proof("POST", gw.url("/dpop/orders"), access_token=tok)},
                      timeout=10)
    assert r.status_code == 200, r.text


def test_forward_proof_and_token_when_asked(gw, idp, client):
    tok = bound_token(idp, client)
    proof = client.proof("GET", gw.url("/fwd/a"), access_token=tok)
    r = call(gw, tok, proof, path="/fwd/a")
    assert r.status_code == 200, r.text
    h = sent(r)
    assert h["dpop"] == proof and h["authorization"] == f"DPoP {tok}"
    assert h["x-key-thumbprint"] == client.jkt and "x-forwarded-jkt" not in h


def test_upstream_dpop_nonce_never_reaches_the_client(upstream, idp, gateway_factory, client):
    g = gateway_factory(config(upstream, idp))
    tok = bound_token(idp, client)
    path = "/dpop/upstream-nonce"
    r = call(g, tok, client.proof("GET", g.url(path), access_token=tok), path=path)
    assert r.status_code == 200 and "DPoP-Nonce" not in r.headers, r.headers
    # On a route where the gateway does not check DPoP, the upstream's header passes as is.
    assert requests.get(g.url("/public/upstream-nonce"), timeout=5).headers["DPoP-Nonce"] == "from-the-upstream"


def test_client_cannot_forge_the_key_header(gw, idp, client):
    r = requests.get(gw.url("/public"), headers={"X-Forwarded-Jkt": "forged", "X-Key-Thumbprint": "forged"}, timeout=10)
    assert r.status_code == 200
    assert "x-forwarded-jkt" not in sent(r) and "x-key-thumbprint" not in sent(r)
    tok = bound_token(idp, client)
    r = call(gw, tok, client.proof("GET", gw.url("/dpop/a"), access_token=tok), path="/dpop/a", headers={"X-Forwarded-Jkt": "forged"})
    assert sent(r)["x-forwarded-jkt"] == client.jkt



def proof_routes_config(upstream, idp):
    """One route of each kind where the gateway does not forward a proof: bearer, `auth: none`,
    MCP, a DPoP route without `forward_proof`; and one with it. HTTP/1.1 and HTTP/2 on one
    listener."""
    return f"""
listen: {{ address: 127.0.0.1:{{PORT}}, http2: true }}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 1
public_url: http://127.0.0.1:{{PORT}}
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], algorithms: [ES256] }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - {{ name: bearer, match: {{ path_prefix: /bearer/ }}, upstream: app, auth: bearer, issuers: [one] }}
  - {{ name: token, match: {{ path_prefix: /token/ }}, upstream: app, auth: token, issuers: [one] }}
  - {{ name: dpop, match: {{ path_prefix: /dpop/ }}, upstream: app, auth: dpop, issuers: [one] }}
  - name: mcp
    match: {{ path: /mcp }}
    upstream: app
    auth: bearer
    issuers: [one]
    mcp: {{ tools: {{ deploy: {{ require: {{ scopes: [mcp:deploy] }} }} }} }}
  - name: forward
    match: {{ path_prefix: /fwd/ }}
    upstream: app
    auth: dpop
    issuers: [one]
    dpop: {{ forward_proof: true }}
  - {{ name: public, match: {{ path_prefix: / }}, upstream: app, auth: none }}
"""


MCP_CALL = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}'


def proof_requests(g, idp, key):
    """(path, method, headers, body) per route kind: a credential the route admits, and a
    DPoP proof the attacker wants the upstream to take as the gateway's word."""
    plain = mint(idp.keys[0])
    bound = bound_token(idp, key)
    proof = key.proof("GET", g.url("/public/x"))
    return {
        "bearer": ("/bearer/x", "GET", {"authorization": f"Bearer {plain}", "dpop": proof}, None),
        "token": ("/token/x", "GET", {"authorization": f"Bearer {plain}", "dpop": proof}, None),
        "public": ("/public/x", "GET", {"dpop": proof}, None),
        "mcp": ("/mcp", "POST", {"authorization": f"Bearer {plain}", "dpop": proof,
                                 "content-type": "application/json",
                                 "accept": "application/json, text/event-stream"}, MCP_CALL),
        "dpop": ("/dpop/x", "GET", {"authorization": f"DPoP {bound}",
                                    "dpop": key.proof("GET", g.url("/dpop/x"), access_token=bound)}, None),
    }


@pytest.mark.parametrize("kind", ["bearer", "token", "public", "mcp", "dpop"])
def test_a_clients_proof_never_reaches_the_upstream_without_forward_proof(upstream, idp, gateway_factory, kind):
    """A client's DPoP header goes upstream only where the route says `forward_proof: true`:
    on a bearer, public or MCP route the gateway never checked it, and an upstream that reads
    DPoP would take it as verified. Over HTTP/1.1 and HTTP/2."""
    from support.h2_client import H2Connection
    g = gateway_factory(proof_routes_config(upstream, idp))
    key = DPoPKey("ES256")
    path, method, headers, body = proof_requests(g, idp, key)[kind]
    r = requests.request(method, g.url(path), headers=headers, data=body, timeout=10)
    assert r.status_code == 200, r.text
    assert "dpop" not in sent(r), sent(r)
    path, method, headers, body = proof_requests(g, idp, key)[kind]
    with H2Connection(g.port) as c:
        a = c.request(method, path, headers=list(headers.items()), body=body)
    assert a.status == 200, a.body
    seen = {k.lower() for k, _ in json.loads(a.body)["headers"]}
    assert "dpop" not in seen, seen


def test_forward_proof_still_forwards_it(upstream, idp, gateway_factory):
    g = gateway_factory(proof_routes_config(upstream, idp))
    key = DPoPKey("ES256")
    tok = bound_token(idp, key)
    proof = key.proof("GET", g.url("/fwd/x"), access_token=tok)
    r = call(g, tok, proof, path="/fwd/x")
    assert r.status_code == 200 and sent(r)["dpop"] == proof, r.text


# --- challenges -----------------------------------------------------------------------------

def test_no_credentials_gets_bare_dpop_challenge_with_algs(gw):
    r = call(gw, None, None)
    assert r.status_code == 401
    c = challenge(r)
    assert c.startswith("DPoP ") and "error=" not in c
    assert 'algs="ES256 ES384 EdDSA PS256 RS256"' in c


def test_token_route_offers_both_schemes(gw):
    r = call(gw, None, None, path="/token/a")
    assert r.status_code == 401
    values = r.raw.headers.get_all("WWW-Authenticate")
    assert [v.split(" ")[0] for v in values] == ["Bearer", "DPoP"], values


# --- §4.3, one rule at a time ----------------------------------------------------------------

def test_missing_proof(gw, idp, client):
    refused(call(gw, bound_token(idp, client), None), 401, "invalid_dpop_proof")


def test_two_dpop_headers(gw, idp, client):
    tok = bound_token(idp, client)
    url = gw.url("/dpop/orders/1")
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=10)
    conn.putrequest("GET", "/dpop/orders/1")
    conn.putheader("Authorization", f"DPoP {tok}")
    conn.putheader("DPoP", client.proof("GET", url, access_token=tok))
    conn.putheader("DPoP", client.proof("GET", url, access_token=tok))
    conn.endheaders()
    resp = conn.getresponse()
    body = resp.read().decode()
    assert resp.status == 401 and '"invalid_dpop_proof"' in body
    assert "more than one DPoP header" in resp.getheader("WWW-Authenticate")


def test_malformed_proof(gw, idp, client):
    tok = bound_token(idp, client)
    refused(call(gw, tok, "not.a.jwt"), 401, "invalid_dpop_proof")
    refused(call(gw, tok, client.proof("GET", gw.url("/dpop/orders/1"), access_token=tok)[:-4]), 401, "invalid_dpop_proof")


def test_typ_missing_or_wrong(gw, idp, client):
    tok = bound_token(idp, client)
    url = gw.url("/dpop/orders/1")
    refused(call(gw, tok, client.proof("GET", url, access_token=tok, drop_header=["typ"])), 401, "invalid_dpop_proof")
    refused(call(gw, tok, client.proof("GET", url, access_token=tok, header_overrides={"typ": "JWT"})), 401, "invalid_dpop_proof")


def test_hs256_proof(gw, idp, client):
    tok = bound_token(idp, client)
    p = hs256_proof(b"k" * 32, "GET", gw.url("/dpop/orders/1"), access_token=tok)
    refused(call(gw, tok, p), 401, "invalid_dpop_proof")


def test_alg_not_on_the_routes_list(gw, idp):
    k = DPoPKey("EdDSA")
    tok = bound_token(idp, k)
    refused(call(gw, tok, k.proof("GET", gw.url("/fwd/a"), access_token=tok), path="/fwd/a"), 401, "invalid_dpop_proof")


def test_private_key_in_jwk(gw, idp, client):
    tok = bound_token(idp, client)
    p = client.proof("GET", gw.url("/dpop/orders/1"), access_token=tok, header_overrides={"jwk": client.private_jwk})
    r = call(gw, tok, p)
    refused(r, 401, "invalid_dpop_proof")
    assert "private key" in r.json()["error_description"]


def test_signature_by_another_key_than_its_jwk(gw, idp, client):
    other = DPoPKey("ES256")
    tok = bound_token(idp, client)
    p = other.proof("GET", gw.url("/dpop/orders/1"), access_token=tok, header_overrides={"jwk": client.public_jwk})
    refused(call(gw, tok, p), 401, "invalid_dpop_proof")


def test_wrong_htm(gw, idp, client):
    tok = bound_token(idp, client)
    refused(call(gw, tok, client.proof("POST", gw.url("/dpop/orders/1"), access_token=tok)), 401, "invalid_dpop_proof")


@pytest.mark.parametrize("htu", [
    "http://127.0.0.2:{port}/dpop/orders/1",      # other host
    "http://127.0.0.1:{other}/dpop/orders/1",     # other port
    "https://127.0.0.1:{port}/dpop/orders/1",     # other scheme
    "http://127.0.0.1:{port}/dpop/orders/2",      # other path
    "http://127.0.0.1:{port}/dpop/orders/1?q=1",  # a query in htu (§4.2: without query)
])
def test_wrong_htu(gw, idp, client, htu):
    tok = bound_token(idp, client)
    htu = htu.format(port=gw.port, other=gw.port + 1)
    r = call(gw, tok, client.proof("GET", htu, access_token=tok))
    refused(r, 401, "invalid_dpop_proof")
    assert "htu" in r.json()["error_description"]


def test_htu_compared_in_normal_form(gw, idp, client):
    tok = bound_token(idp, client)
    for htu in [f"HTTP://127.0.0.1:{gw.port}/dpop/orders/1", f"http://127.0.0.1:{gw.port}/dpop/x/../orders/%31"]:
        r = call(gw, tok, client.proof("GET", htu, access_token=tok))
        assert r.status_code == 200, (htu, r.text)


@pytest.mark.parametrize("offset", [-120, 120])
def test_iat_outside_window(gw, idp, client, offset):
    tok = bound_token(idp, client)
    r = call(gw, tok, client.proof("GET", gw.url("/dpop/orders/1"), access_token=tok, iat=int(time.time()) + offset))
    refused(r, 401, "invalid_dpop_proof")


def test_replayed_proof_is_refused_on_every_worker(gw, idp, client):
    tok = bound_token(idp, client)
    proof = client.proof("GET", gw.url("/dpop/orders/1"), access_token=tok)
    assert call(gw, tok, proof).status_code == 200
    # New connections spread over both workers (SO_REUSEPORT): the cache is shared.
    for _ in range(8):
        r = call(gw, tok, proof)
        refused(r, 401, "invalid_dpop_proof")
        assert "used before" in r.json()["error_description"]


def test_same_jti_from_another_key_is_not_a_replay(gw, idp, client):
    other = DPoPKey("ES256")
    tok, tok2 = bound_token(idp, client), bound_token(idp, other)
    assert call(gw, tok, client.proof("GET", gw.url("/dpop/a"), access_token=tok, jti="same"), path="/dpop/a").status_code == 200
    assert call(gw, tok2, other.proof("GET", gw.url("/dpop/a"), access_token=tok2, jti="same"), path="/dpop/a").status_code == 200


def test_wrong_ath(gw, idp, client):
    tok = bound_token(idp, client)
    other_tok = bound_token(idp, client, jti="another")
    refused(call(gw, tok, client.proof("GET", gw.url("/dpop/orders/1"), access_token=other_tok)), 401, "invalid_dpop_proof")
    refused(call(gw, tok, client.proof("GET", gw.url("/dpop/orders/1"))), 401, "invalid_dpop_proof")


def test_proof_key_is_not_the_bound_key(gw, idp, client):
    other = DPoPKey("ES256")
    tok = bound_token(idp, client)
    r = call(gw, tok, other.proof("GET", gw.url("/dpop/orders/1"), access_token=tok))
    refused(r, 401, "invalid_token")
    assert "bound to another key" in r.json()["error_description"]


def test_unbound_token_with_dpop_scheme(gw, idp, client):
    tok = mint(idp.keys[0])
    r = call(gw, tok, client.proof("GET", gw.url("/dpop/orders/1"), access_token=tok))
    refused(r, 401, "invalid_token")
    assert "not DPoP-bound" in r.json()["error_description"]


def test_bound_token_as_bearer(gw, idp, client):
    tok = bound_token(idp, client)
    # On a dpop route: Bearer is not a scheme it takes.
    refused(call(gw, tok, None, scheme="Bearer"), 401, "invalid_token")
    # On a token route: the Bearer rules refuse a bound token (RFC 9449 §7.2), and the
    # error is on the Bearer challenge, the DPoP one stays bare.
    r = call(gw, tok, None, path="/token/a", scheme="Bearer")
    refused(r, 401, "invalid_token", scheme="Bearer")
    assert "DPoP-bound" in r.json()["error_description"]
    values = r.raw.headers.get_all("WWW-Authenticate")
    assert values[1].startswith("DPoP ") and "error=" not in values[1]


def test_plain_bearer_token_on_dpop_route(gw, idp):
    refused(call(gw, mint(idp.keys[0]), None, scheme="Bearer"), 401, "invalid_token")


def test_token_route_takes_both_by_their_rules(gw, idp, client):
    r = call(gw, mint(idp.keys[0]), None, path="/token/a", scheme="Bearer")
    assert r.status_code == 200 and "x-forwarded-jkt" not in sent(r)
    tok = bound_token(idp, client)
    r = call(gw, tok, client.proof("GET", gw.url("/token/a"), access_token=tok), path="/token/a")
    assert r.status_code == 200 and sent(r)["x-forwarded-jkt"] == client.jkt
    refused(call(gw, tok, None, path="/token/a"), 401, "invalid_dpop_proof")


def test_scopes_still_apply(gw, idp, client):
    tok = bound_token(idp, client, scope="orders:write")
    r = call(gw, tok, client.proof("GET", gw.url("/dpop/orders/1"), access_token=tok))
    refused(r, 403, "insufficient_scope")


def test_expired_and_foreign_tokens(gw, idp, client):
    now = int(time.time())
    tok = bound_token(idp, client, iat=now - 600, exp=now - 300)
    refused(call(gw, tok, client.proof("GET", gw.url("/dpop/orders/1"), access_token=tok)), 401, "invalid_token")
    stranger = ec_key("one-1")  # same kid, other key: a forged token
    tok = mint(stranger, claims={"cnf": {"jkt": client.jkt}})
    refused(call(gw, tok, client.proof("GET", gw.url("/dpop/orders/1"), access_token=tok)), 401, "invalid_token")


# --- server nonces (§8, §9) ------------------------------------------------------------------

def test_nonce_required(gw, idp, client):
    tok = bound_token(idp, client)
    url = gw.url("/nonce/a")
    r = call(gw, tok, client.proof("GET", url, access_token=tok), path="/nonce/a")
    refused(r, 401, "use_dpop_nonce")
    nonce = r.headers["DPoP-Nonce"]
    r = call(gw, tok, client.proof("GET", url, access_token=tok, nonce=nonce), path="/nonce/a")
    assert r.status_code == 200, r.text
    # Forged and foreign nonces are asked to be replaced, not accepted.
    for bad in ["made-up", "A" * 32, nonce[:-2] + ("AA" if not nonce.endswith("AA") else "BB")]:
        r = call(gw, tok, client.proof("GET", url, access_token=tok, nonce=bad), path="/nonce/a")
        refused(r, 401, "use_dpop_nonce")
        assert r.headers["DPoP-Nonce"]


def test_nonce_rotates_before_expiry_then_expires(upstream, idp, gateway_factory, client):
    g = gateway_factory(config(upstream, idp, extra_top="dpop: { nonce_lifetime: 10s }"))
    tok = bound_token(idp, client)
    url = g.url("/nonce/a")
    nonce = call(g, tok, client.proof("GET", url, access_token=tok), path="/nonce/a").headers["DPoP-Nonce"]
    # A nonce lives one or two 5 s slots; once a newer slot has begun, a successful response
    # carries a fresh nonce (§8.2) while the old one still works.
    started = time.monotonic()

    def with_old_nonce():
        return call(g, tok, client.proof("GET", url, access_token=tok, nonce=nonce), path="/nonce/a")

    def fresh_nonce():
        r = with_old_nonce()
        assert r.status_code == 200, r.text
        return r.headers.get("DPoP-Nonce")
    fresh = wait_for(fresh_nonce, 12, interval=0.5, what="a fresh nonce")
    assert fresh != nonce
    # The old one expires within the lifetime.
    wait_for(lambda: with_old_nonce().status_code == 401, 12 - (time.monotonic() - started), interval=0.5,
             what="the old nonce to expire")
    refused(with_old_nonce(), 401, "use_dpop_nonce")
    assert call(g, tok, client.proof("GET", url, access_token=tok, nonce=fresh), path="/nonce/a").status_code == 200


def test_nonce_of_another_gateway_key_is_refused(upstream, idp, gateway_factory, client):
    a = gateway_factory(config(upstream, idp, extra_top=f'dpop: {{ nonce_keys: ["{"a" * 32}"] }}'))
    b = gateway_factory(config(upstream, idp, extra_top=f'dpop: {{ nonce_keys: ["{"b" * 32}"] }}'))
    shared = gateway_factory(config(upstream, idp, extra_top=f'dpop: {{ nonce_keys: ["{"b" * 32}", "{"a" * 32}"] }}'))
    tok = bound_token(idp, client)
    nonce = call(a, tok, client.proof("GET", a.url("/nonce/a"), access_token=tok), path="/nonce/a").headers["DPoP-Nonce"]
    r = call(b, tok, client.proof("GET", b.url("/nonce/a"), access_token=tok, nonce=nonce), path="/nonce/a")
    refused(r, 401, "use_dpop_nonce")
    # A replica holding the same key (here as its second, rotated-out key) accepts it.
    r = call(shared, tok, client.proof("GET", shared.url("/nonce/a"), access_token=tok, nonce=nonce), path="/nonce/a")
    assert r.status_code == 200, r.text


# --- the URL the client addressed -----------------------------------------------------------

def test_forwarded_origin_only_from_trusted_proxies(upstream, idp, gateway_factory, client):
    trusted = gateway_factory(config(upstream, idp, trusted="trusted_proxies: [127.0.0.1/32]", public_url=None))
    untrusted = gateway_factory(config(upstream, idp))
    tok = bound_token(idp, client)
    external = "https://api.example.com/dpop/orders/1"
    fwd = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "api.example.com"}
    assert call(trusted, tok, client.proof("GET", external, access_token=tok), headers=fwd).status_code == 200
    # An untrusted client cannot steer the htu comparison with these headers.
    refused(call(untrusted, tok, client.proof("GET", external, access_token=tok), headers=fwd), 401, "invalid_dpop_proof")
    # Behind trusted proxies without public_url, a request that does not come through one
    # (no X-Forwarded-Host) has no origin the gateway can vouch for.
    r = call(trusted, tok, client.proof("GET", trusted.url("/dpop/orders/1"), access_token=tok))
    refused(r, 401, "invalid_dpop_proof")
    assert "origin" in r.json()["error_description"]


def test_host_header_cannot_steer_the_origin(gw, idp, client):
    """A proof made for another origin (sent there, then replayed here) does not pass by
    naming that origin in the Host header."""
    tok = bound_token(idp, client)
    proof = client.proof("GET", "http://files.example.com/dpop/orders/1", access_token=tok)
    refused(call(gw, tok, proof, headers={"Host": "files.example.com"}), 401, "invalid_dpop_proof")
    proof = client.proof("GET", f"http://127.0.0.1:{gw.port + 1}/dpop/orders/1", access_token=tok)
    refused(call(gw, tok, proof, headers={"Host": f"127.0.0.1:{gw.port + 1}"}), 401, "invalid_dpop_proof")


def test_several_public_urls(upstream, idp, gateway_factory, client):
    g = gateway_factory(config(upstream, idp, public_url='["http://127.0.0.1:{PORT}", "http://localhost:{PORT}"]'))
    tok = bound_token(idp, client)
    for host in (f"127.0.0.1:{g.port}", f"localhost:{g.port}"):
        r = call(g, tok, client.proof("GET", f"http://{host}/dpop/orders/1", access_token=tok), headers={"Host": host})
        assert r.status_code == 200, (host, r.text)
    r = call(g, tok, client.proof("GET", "http://other.example/dpop/orders/1", access_token=tok), headers={"Host": "other.example"})
    refused(r, 401, "invalid_dpop_proof")


def test_public_url_pins_the_origin(upstream, idp, gateway_factory, client):
    g = gateway_factory(config(upstream, idp, public_url="https://api.example.com"))
    tok = bound_token(idp, client)
    assert call(g, tok, client.proof("GET", "https://api.example.com/dpop/orders/1", access_token=tok)).status_code == 200
    # The Host the request came with does not matter any more.
    refused(call(g, tok, client.proof("GET", g.url("/dpop/orders/1"), access_token=tok)), 401, "invalid_dpop_proof")
