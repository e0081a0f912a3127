"""The introspection cache shared through Redis: two tokengate processes with one
real redis-server and the real authorization server (idpyoidc) on 127.0.0.1. A token
introspected on one replica is not introspected again on the other; Redis holds neither the
token nor a readable answer, and a Redis writer cannot move an "active" answer onto another
token; without Redis, introspection still works (it is a cache, not a gate)."""
import base64
import hashlib

import pytest
import requests

from support.gateway import Gateway
from support.waiting import wait_for
from test_introspection_idp import GW_SECRET, config
from test_login import SESSION_KEY

OPQ_SECRET = "opq-secret-0123456789abcdef0123456789ab"


@pytest.fixture
def two(authserver, upstream, redis):
    a = authserver
    a.add_client("opq", client_secret=OPQ_SECRET, scopes=["orders:read"], audience=["api"], access_token_format="opaque")
    a.add_client("tokengate", client_secret=GW_SECRET, token_endpoint_auth_method="client_secret_basic", scopes=["openid"])
    text = (f'store: {{ url: "redis://127.0.0.1:{redis.port}/0", prefix: "tg:" }}\n'
            f'session: {{ keys: ["{SESSION_KEY}"] }}\n'
            + config(a, f'auth: client_secret_basic, secret: "{GW_SECRET}"').replace("@UPSTREAM@", str(upstream.port)))
    gws = [Gateway(text), Gateway(text)]
    for g in gws:
        g.start()
    yield a, gws
    for g in gws:
        g.stop()


def token(a):
    t = a.client_credentials_token("opq", scope="orders:read", secret=OPQ_SECRET)["access_token"]
    assert t.count(".") != 2
    return t


def call(g, tok):
    return requests.get(g.url("/api/orders/1"), headers={"Authorization": f"Bearer {tok}"}, timeout=10)


def stored(redis, key, timeout=5.0):
    """Waits (bounded) until the answer's entry is in Redis. A replica writes it in the loop
    turn that answers the client, so its answer can reach the client a moment before the
    entry reaches Redis: sharing promises the next request after the entry is stored, not
    after the answer. Fails if it never is."""
    wait_for(lambda: redis.cli("EXISTS", key).strip() == "1", timeout, interval=0.01, what=f"{key} in Redis")


def redis_key(a, tok):
    """The gateway's key: SHA-256 of the AS's issuer, its introspection endpoint and the
    token (NUL-separated); first 24 bytes, base64url."""
    endpoint = requests.get(f"{a.url}/.well-known/openid-configuration", timeout=5).json()["introspection_endpoint"]
    digest = hashlib.sha256(f"{a.issuer}\0{endpoint}\0{tok}".encode()).digest()[:24]
    return "tg:introspection:" + base64.urlsafe_b64encode(digest).decode().rstrip("=")


def test_one_introspection_serves_every_replica(two, redis):
    a, (g1, g2) = two
    tok = token(a)
    before = a.hits.get("/introspection", 0)
    r = call(g1, tok)
    assert r.status_code == 200, r.text
    stored(redis, redis_key(a, tok))
    for _ in range(4):  # both workers of the other replica (Gateway's default: 2), more than once
        r = call(g2, tok)
        assert r.status_code == 200, r.text
        assert {k.lower(): v for k, v in r.json()["headers"]}["x-subject"] == "opq"
    assert a.hits.get("/introspection", 0) - before == 1, "the other replica asked the AS again"
    # A negative answer is shared too.
    before = a.hits.get("/introspection", 0)
    for g in (g1, g2, g2):
        r = call(g, "opq_not-a-real-token")
        assert r.status_code == 401 and 'error="invalid_token"' in r.headers["WWW-Authenticate"]
        if g is g1:
            stored(redis, redis_key(a, "opq_not-a-real-token"))
    assert a.hits.get("/introspection", 0) - before == 1
    # Redis holds neither the token nor the answer readably; every entry expires.
    keys = redis.cli("--scan", "--pattern", "tg:introspection:*").split()
    assert redis_key(a, tok) in keys and len(keys) == 2
    for k in keys:
        value = redis.cli("GET", k)
        # Sealed (base64url): no token, and none of the answer's JSON.
        assert tok not in k and tok not in value and '"active"' not in value and '"sub"' not in value
        assert 0 < int(redis.cli("TTL", k)) <= 300


def test_an_answer_moved_to_another_tokens_key_does_not_open(two, redis):
    """A Redis writer copies token T's "active" answer onto the key of a token the AS never
    issued: the gateway does not accept that token (the value is bound to its own key) and
    asks the AS, which says inactive."""
    a, (g1, g2) = two
    tok = token(a)
    assert call(g1, tok).status_code == 200
    forged = "opq_forged-token-never-issued"
    assert redis.cli("SET", redis_key(a, forged), redis.cli("GET", redis_key(a, tok))) == "OK"
    before = a.hits.get("/introspection", 0)
    r = call(g2, forged)
    assert r.status_code == 401 and 'error="invalid_token"' in r.headers["WWW-Authenticate"], r.text
    assert a.hits.get("/introspection", 0) - before == 1
    # Garbage in the value is a miss too, never a crash or an acceptance.
    other = "opq_another-unknown-token"
    assert redis.cli("SET", redis_key(a, other), "not sealed at all") == "OK"
    assert call(g1, other).status_code == 401


def test_without_redis_introspection_still_answers(two, redis):
    a, (g1, g2) = two
    redis.stop()
    tok = token(a)
    before = a.hits.get("/introspection", 0)
    for g in (g1, g2):
        r = call(g, tok)
        assert r.status_code == 200, r.text
    assert a.hits.get("/introspection", 0) - before >= 1
    assert call(g1, "opq_not-a-real-token").status_code == 401
