"""RFC 8693 token exchange toward the upstream (`token_exchange` on a route), against the real
authorization server (idpyoidc's token-exchange helper, turned on in authserver/server.py): the
upstream gets a token for its own audience, never the caller's; one exchange serves many calls
(on every worker of the process and, through Redis, every replica); the AS's refusal is 403, a wrong-audience answer or an AS
that is down or hung is 503 within the exchange's bound."""
import base64
import json
import socket
import subprocess
import threading
import time

import pytest
import requests

from support.authserver.server import ACCESS_TOKEN_TYPE, TOKEN_EXCHANGE
from support.dpop_client import DPoPKey, ath, decode
from support.gateway import BIN, Gateway, free_port
from support.waiting import wait_for
from test_login import SESSION_KEY

GW_SECRET = "gateway-secret-0123456789abcdef0123456789"
TARGET = "https://orders.internal/"


def config(a, client_block, exchange, upstream_port, extra="", auth="bearer", workers=2):
    return f"""{extra}
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: {workers}
public_url: http://127.0.0.1:{{PORT}}
clients:
  gw: {{ client_id: tokengate, {client_block} }}
issuers:
  as1:
    issuer: "{a.issuer}"
    discovery: true
    audiences: [api]
    algorithms: [ES256]
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream_port}" }}
routes:
  - name: orders
    match: {{ path_prefix: /api/orders/ }}
    upstream: app
    auth: {auth}
    issuers: [as1]
    require: {{ scopes: [orders:read] }}
    headers: {{ X-Subject: sub }}
    token_exchange: {{ issuer: as1, client: gw, {exchange} }}
  - name: mcp
    match: {{ path: /mcp }}
    upstream: app
    auth: bearer
    issuers: [as1]
    require: {{ scopes: [orders:read] }}
    mcp: {{ tools: {{ deploy: {{ require: {{ scopes: [orders:write] }} }} }} }}
    token_exchange: {{ issuer: as1, client: gw, {exchange} }}
"""


def basic_client(a):
    a.add_client("tokengate", client_secret=GW_SECRET, token_endpoint_auth_method="client_secret_basic",
                 scopes=["openid", "orders:read"])
    return f'auth: client_secret_basic, secret: "{GW_SECRET}"'


def claims(token):
    return json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))


def upstream_authorization(r):
    values = [v for k, v in r.json()["headers"] if k.lower() == "authorization"]
    assert len(values) == 1, r.json()["headers"]
    assert values[0].startswith("Bearer ")
    return values[0][len("Bearer "):]


def exchanges(a):
    return [t for t in a.token_requests if t["grant_type"] == TOKEN_EXCHANGE]


def get(g, tok, path="/api/orders/1", **kw):
    return requests.get(g.url(path), headers={"Authorization": f"Bearer {tok}"}, timeout=15, **kw)


@pytest.mark.parametrize("method", ["client_secret_basic", "private_key_jwt"])
def test_the_upstream_gets_a_token_for_itself_never_the_callers(method, authserver, upstream, tmp_path):
    a = authserver
    if method == "private_key_jwt":
        key = tmp_path / "gw.jwk"
        jwks = subprocess.run([BIN, "keys", "generate", "--alg", "ES256", "--kid", "gw-1", "--out", str(key)],
                              capture_output=True, text=True, check=True).stdout
        a.add_client("tokengate", jwks=json.loads(jwks), token_endpoint_auth_method="private_key_jwt",
                     scopes=["openid", "orders:read"])
        block = f'auth: private_key_jwt, key_file: "{key}", assertion_audience: endpoint'
    else:
        block = basic_client(a)
    g = Gateway(config(a, block, f"resource: {TARGET}, scope: orders:read", upstream.port))
    g.start()
    try:
        subject = a.code_flow()["access_token"]
        assert claims(subject)["aud"] == ["api"]
        sent = []
        for _ in range(5):  # both workers, more than once each
            r = get(g, subject)
            assert r.status_code == 200, r.text + g.output()[-2000:]
            sent.append(upstream_authorization(r))
        # Two workers, one exchange: the process keeps the token for both (with Redis every
        # replica shares it, see below; test_token_exchange_workers.py has them at once).
        assert len(set(sent)) == len(exchanges(a)) == 1 and all(t["status"] == 200 for t in exchanges(a))
        for token in set(sent):
            assert token != subject and subject not in json.dumps(r.json())
            c = claims(token)
            assert c["aud"] == [TARGET] and c["sub"] == claims(subject)["sub"] and c["client_id"] == "tokengate"
            assert c["scope"].split() == ["orders:read"]
        assert a.exchange_subjects == [subject] * len(exchanges(a))
        # The route's identity headers still name the caller.
        assert {k.lower(): v for k, v in r.json()["headers"]}["x-subject"] == claims(subject)["sub"]
    finally:
        g.stop()


def test_each_caller_gets_its_own_exchanged_token(authserver, upstream):
    a = authserver
    g = Gateway(config(a, basic_client(a), "audience: orders-backend", upstream.port))
    g.start()
    try:
        alice, bob = a.code_flow(user="alice")["access_token"], a.code_flow(user="bob")["access_token"]
        ta, tb = upstream_authorization(get(g, alice)), upstream_authorization(get(g, bob))
        assert ta != tb
        assert claims(ta)["sub"] == claims(alice)["sub"] and claims(tb)["sub"] == claims(bob)["sub"]
        assert claims(ta)["aud"] == claims(tb)["aud"] == ["orders-backend"]
    finally:
        g.stop()


def test_the_client_cannot_smuggle_its_own_authorization_or_proof_upstream(authserver, upstream):
    a = authserver
    g = Gateway(config(a, basic_client(a), f"resource: {TARGET}", upstream.port))
    g.start()
    try:
        subject = a.code_flow()["access_token"]
        # A DPoP header beside the token never goes upstream (the proof is the caller's).
        r = requests.get(g.url("/api/orders/1"), headers={"Authorization": f"Bearer {subject}", "DPoP": "x.y.z"},
                         timeout=15)
        assert r.status_code == 200, r.text
        assert not any(k.lower() == "dpop" for k, _ in r.json()["headers"])
        assert upstream_authorization(r) != subject
    finally:
        g.stop()


def test_an_mcp_call_is_judged_then_sent_with_the_exchanged_token(authserver, upstream):
    a = authserver
    g = Gateway(config(a, basic_client(a), f"resource: {TARGET}", upstream.port))
    g.start()
    try:
        subject = a.code_flow(scope="openid orders:read")["access_token"]
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {}}}
        r = requests.post(g.url("/mcp"), json=call, headers={"Authorization": f"Bearer {subject}"}, timeout=15)
        assert r.status_code == 200, r.text
        assert claims(upstream_authorization(r))["aud"] == [TARGET]
        assert r.json()["body_length"] == len(json.dumps(call))
        # A call the token may not make is refused before any exchange.
        before = len(exchanges(a))
        call["params"]["name"] = "deploy"
        r = requests.post(g.url("/mcp"), json=call, headers={"Authorization": f"Bearer {subject}"}, timeout=15)
        assert r.status_code == 403 and 'error="insufficient_scope"' in r.headers["WWW-Authenticate"]
        assert len(exchanges(a)) == before
    finally:
        g.stop()


def test_the_as_refusing_the_exchange_is_403_and_remembered(authserver, upstream):
    a = authserver
    g = Gateway(config(a, basic_client(a), "audience: not-a-target-of-this-as", upstream.port))
    g.start()
    try:
        subject = a.code_flow()["access_token"]
        seen = len(upstream.requests)
        for _ in range(4):
            r = get(g, subject)
            assert r.status_code == 403, r.text
            body = r.json()
            assert body["error"] == "access_denied" and "refused to exchange" in body["error_description"]
            # The AS's answer stays in the log; the caller hears no AS internals.
            assert "invalid_target" not in r.text and subject not in r.text
        assert [t["error"] for t in exchanges(a)] == ["invalid_target"]
        assert g.logged("answered invalid_target")
        assert len(upstream.requests) == seen, "the upstream was called without a token"
    finally:
        g.stop()


def test_the_as_refusing_the_gateway_itself_is_503_not_403(authserver, upstream):
    """A wrong client secret: the AS refuses the gateway (invalid_client), not the caller's
    token, so the caller hears 503 (try again), and the AS's code stays in the log."""
    a = authserver
    basic_client(a)
    g = Gateway(config(a, 'auth: client_secret_basic, secret: "not-the-secret"', f"resource: {TARGET}", upstream.port))
    g.start()
    try:
        subject = a.code_flow()["access_token"]
        r = get(g, subject)
        assert r.status_code == 503 and r.headers.get("Retry-After"), r.text
        assert r.json()["error"] == "temporarily_unavailable" and "invalid_client" not in r.text
        assert g.logged("invalid_client")
    finally:
        g.stop()


def test_an_exchanged_token_for_another_audience_is_never_sent(authserver, upstream):
    """A misbehaving AS issues the exchanged token for another audience than the one asked
    for: the gateway does not send it on (503, the AS is at fault, not the caller), and does
    not keep it either: the next request asks again."""
    a = authserver
    g = Gateway(config(a, basic_client(a), f"resource: {TARGET}", upstream.port))
    g.start()
    try:
        subject = a.code_flow()["access_token"]
        a.exchange_audience_override = ["api"]
        for _ in range(3):
            r = get(g, subject)
            assert r.status_code == 503 and r.headers.get("Retry-After"), r.text
            assert r.json()["error"] == "temporarily_unavailable"
        assert len(exchanges(a)) == 3
        assert g.logged("aud does not name the target")
        a.exchange_audience_override = None
        r = get(g, subject)
        assert r.status_code == 200 and claims(upstream_authorization(r))["aud"] == [TARGET]
    finally:
        g.stop()


def test_an_as_down_or_hung_during_the_exchange_is_503_within_the_bound(authserver, upstream):
    a = authserver
    client = basic_client(a)
    # Hung: accepts the connection, never answers.
    hung = socket.socket()
    hung.bind(("127.0.0.1", 0))
    hung.listen(16)
    dead = free_port()
    for endpoint, most in ((f"http://127.0.0.1:{dead}/token", 2.0), (f"http://127.0.0.1:{hung.getsockname()[1]}/token", 8.0)):
        g = Gateway(config(a, client, f'resource: {TARGET}, endpoint: "{endpoint}"', upstream.port))
        g.start()
        try:
            subject = a.code_flow()["access_token"]
            start = time.time()
            r = get(g, subject)
            took = time.time() - start
            assert r.status_code == 503 and r.headers.get("Retry-After"), r.text
            assert r.json()["error"] == "temporarily_unavailable" and took < most, (took, r.text)
            assert g.logged("token_not_exchanged")
        finally:
            g.stop()
    hung.close()


@pytest.mark.parametrize("keep_alive", [False, True])
def test_an_expired_exchanged_token_is_exchanged_again(keep_alive, authserver_factory, upstream):
    """The exchanged token lives 60 s at this AS; with a 58 s margin it is used for 2 s. On one
    kept-alive connection (where the connection's memo of the admission holds the exchanged
    token too) as on a new connection per request."""
    a = authserver_factory()
    # One worker: every request meets the same worker's cache.
    g = Gateway(config(a, basic_client(a), f"resource: {TARGET}, margin: 58s", upstream.port, workers=1))
    g.start()
    client = requests.Session() if keep_alive else requests
    try:
        subject = a.code_flow()["access_token"]

        def call():
            r = client.get(g.url("/api/orders/1"), headers={"Authorization": f"Bearer {subject}"}, timeout=15)
            assert r.status_code == 200, r.text
            return upstream_authorization(r)
        first = call()

        def renewed():
            again = call()
            assert again == first or claims(again)["exp"] > claims(first)["exp"]
            return again if again != first else None
        again = wait_for(renewed, 10, interval=0.5,
                         what="a new exchanged token before the old one's expiry less the margin")
        assert claims(again)["aud"] == [TARGET]
    finally:
        g.stop()


def test_one_exchange_serves_every_replica_through_redis(authserver, upstream, redis):
    a = authserver
    store = (f'store: {{ url: "redis://127.0.0.1:{redis.port}/0", prefix: "tg:" }}\n'
             f'session: {{ keys: ["{SESSION_KEY}"] }}')
    text = config(a, basic_client(a), f"resource: {TARGET}", upstream.port, extra=store)
    gws = [Gateway(text), Gateway(text)]
    for g in gws:
        g.start()
    try:
        subject = a.code_flow()["access_token"]
        first = upstream_authorization(get(gws[0], subject))
        for g in gws * 3:
            assert upstream_authorization(get(g, subject)) == first
        assert len(exchanges(a)) == 1, "another worker or replica exchanged again"
        # Redis holds the exchanged token only sealed, under a digest: neither token is readable.
        keys = redis.cli("--scan", "--pattern", "tg:exchange:*").split()
        assert len(keys) == 1
        value = redis.cli("GET", keys[0])
        assert first not in value and subject not in value and subject not in keys[0] and "access_token" not in value
        assert 0 < int(redis.cli("TTL", keys[0])) <= 60
    finally:
        for g in gws:
            g.stop()


def test_a_dpop_bound_exchanged_token_goes_with_a_proof_of_the_gateways_key(authserver_factory, upstream):
    """dpop: true — the exchange carries the gateway's proof (this AS requires one at /token),
    the token is bound to the gateway's key, and each upstream request carries a fresh proof
    of that key for the upstream's URL, with ath. The caller's own proof and key never go."""
    from cryptojwt.jwk.jwk import key_from_jwk_dict
    from cryptojwt.jws.jws import JWS

    a = authserver_factory(dpop=True)
    g = Gateway(config(a, basic_client(a), f"resource: {TARGET}, dpop: true", upstream.port, auth="dpop"))
    g.start()
    try:
        caller = DPoPKey("ES256")
        subject = a.code_flow(dpop_key=caller)["access_token"]
        proofs = []
        for _ in range(3):
            url = g.url("/api/orders/1")  # htu: without the query (RFC 9449 §4.2)
            r = requests.get(url + "?x=1", headers={"Authorization": f"DPoP {subject}",
                                                    "DPoP": caller.proof("GET", url, access_token=subject)}, timeout=15)
            assert r.status_code == 200, r.text + g.output()[-2000:]
            h = [(k.lower(), v) for k, v in r.json()["headers"]]
            auth = [v for k, v in h if k == "authorization"]
            dpop = [v for k, v in h if k == "dpop"]
            assert len(auth) == 1 and auth[0].startswith("DPoP ") and len(dpop) == 1, h
            token, proof = auth[0][len("DPoP "):], dpop[0]
            assert token != subject
            header, pc = decode(proof)
            key = key_from_jwk_dict(header["jwk"])
            JWS(alg=header["alg"]).verify_compact(proof, keys=[key], sigalg=header["alg"])
            jkt = key.thumbprint("SHA-256").decode()
            assert header["typ"] == "dpop+jwt" and "d" not in header["jwk"]
            assert claims(token)["cnf"]["jkt"] == jkt != caller.jkt
            assert claims(token)["aud"] == [TARGET]
            assert pc["htm"] == "GET" and pc["htu"] == f"http://127.0.0.1:{upstream.port}/api/orders/1"
            assert pc["ath"] == ath(token) and abs(pc["iat"] - time.time()) < 30
            proofs.append(pc["jti"])
        assert len(set(proofs)) == 3, "a fresh proof per request"
        assert all(t["status"] == 200 for t in exchanges(a))
    finally:
        g.stop()


def test_a_dpop_bound_answer_without_a_proof_asked_is_never_sent(authserver_factory, upstream):
    """Without dpop: true the gateway sends no proof; an AS that binds tokens anyway (this
    one refuses any /token request without a proof) gets the gateway no token: 503."""
    a = authserver_factory(dpop=True)
    g = Gateway(config(a, basic_client(a), f"resource: {TARGET}", upstream.port, auth="dpop"))
    g.start()
    try:
        caller = DPoPKey("ES256")
        subject = a.code_flow(dpop_key=caller)["access_token"]
        url = g.url("/api/orders/1")
        r = requests.get(url, headers={"Authorization": f"DPoP {subject}",
                                       "DPoP": caller.proof("GET", url, access_token=subject)}, timeout=15)
        assert r.status_code == 503 and r.json()["error"] == "temporarily_unavailable", r.text
        assert [t["error"] for t in exchanges(a)] == ["invalid_dpop_proof"]
    finally:
        g.stop()
