"""DPoP replay defence across replicas (RFC 9449 §11.1) with `store: redis://…`: two tokengate
processes share a real redis-server (Debian's, started here on 127.0.0.1), so a proof used on
one is refused on the other; when Redis is gone the gateway fails closed (503, never a
possibly replayed proof) without hanging, and recovers by itself."""
import time

import requests

from support.dpop_client import DPoPKey
from support.waiting import wait_for
from test_dpop import bound_token, call, config as dpop_config, idp, refused  # noqa: F401 — idp is a fixture


def config(upstream, idp, redis_port):
    """test_dpop's routes, with a Redis store (database 3, a key prefix) and a fixed origin."""
    return dpop_config(upstream, idp, public_url="https://api.example.com",
                       extra_top=f'store: {{ url: "redis://127.0.0.1:{redis_port}/3", prefix: "tg-test:" }}')


URL = "https://api.example.com/dpop/orders/1"


def test_proof_used_on_one_replica_is_refused_on_the_other(upstream, idp, redis, gateway_factory):
    a = gateway_factory(config(upstream, idp, redis.port))
    b = gateway_factory(config(upstream, idp, redis.port))
    key = DPoPKey("ES256")
    tok = bound_token(idp, key)
    proof = key.proof("GET", URL, access_token=tok)
    assert call(a, tok, proof).status_code == 200
    r = call(b, tok, proof)
    refused(r, 401, "invalid_dpop_proof")
    assert "used before" in r.json()["error_description"]
    refused(call(a, tok, proof), 401, "invalid_dpop_proof")
    # A fresh proof works on either.
    assert call(b, tok, key.proof("GET", URL, access_token=tok)).status_code == 200
    # What Redis holds: one key per proof under the prefix and database, expiring with the proof.
    keys = redis.cli("-n", "3", "KEYS", "tg-test:dpop:jti:*").split()
    assert len(keys) == 2
    ttl = int(redis.cli("-n", "3", "TTL", keys[0]))
    # The proof's horizon (iat + 60 s window + 5 s leeway) plus a 10 s margin for clock skew
    # between replicas.
    assert 60 < ttl <= 60 + 5 + 1 + 10
    assert redis.cli("-n", "0", "DBSIZE") == "0"


def test_redis_down_fails_closed_without_hanging_and_recovers(upstream, idp, redis, gateway_factory):
    g = gateway_factory(config(upstream, idp, redis.port))
    key = DPoPKey("ES256")
    tok = bound_token(idp, key)
    assert call(g, tok, key.proof("GET", URL, access_token=tok)).status_code == 200
    redis.stop()
    for _ in range(5):
        t0 = time.time()
        r = call(g, tok, key.proof("GET", URL, access_token=tok))
        assert time.time() - t0 < 3, "a request waited on a dead Redis"
        assert r.status_code == 503, r.text
        assert r.headers.get("Retry-After") and r.json()["error"] == "temporarily_unavailable"
    # Routes that need no store keep working.
    assert requests.get(g.url("/token/x"), headers={"Authorization": "Bearer " + bound_token(idp, key, cnf=None)},
                        timeout=5).status_code == 200
    redis.start()
    wait_for(lambda: call(g, tok, key.proof("GET", URL, access_token=tok)).status_code == 200, 10, interval=0.2,
             what="the gateway to reconnect to Redis by itself")


def test_readiness_reports_the_store_and_fail_open_is_counted(upstream, idp, redis, gateway_factory):
    g = gateway_factory(config(upstream, idp, redis.port).replace("public_url: https://api.example.com",
                                                                   "public_url: https://api.example.com\ndpop: { on_store_failure: fail_open }"))
    key = DPoPKey("ES256")
    tok = bound_token(idp, key)
    ready = lambda: requests.get(f"http://127.0.0.1:{g.admin}/readyz", timeout=5)
    assert ready().status_code == 200
    redis.stop()
    wait_for(lambda: "store" in ready().text, 10, interval=0.2, what="readiness to report the store")
    # Reported, but still ready: every replica shares the store, and pulling them all out of
    # the load balancer would stop the routes that do not need it too.
    r = ready()
    assert r.status_code == 200 and "store does not answer" in r.text
    # fail_open: the proof passes without a replay check — and the metric says so.
    r = call(g, tok, key.proof("GET", URL, access_token=tok))
    assert r.status_code == 200, r.text
    metrics = requests.get(f"http://127.0.0.1:{g.admin}/metrics", timeout=5).text
    assert "tokengate_dpop_unchecked_proofs_total 1" in metrics and "tokengate_store_up 0" in metrics
    redis.start()
    wait_for(lambda: "store" not in ready().text, 10, interval=0.2, what="readiness to stop reporting the store")
    assert "tokengate_store_up 1" in requests.get(f"http://127.0.0.1:{g.admin}/metrics", timeout=5).text
