"""The DPoP replay store (RFC 9449 §11.1) frozen: a real redis-server stopped with SIGSTOP
under a real tokengate. The connection stays open and nothing answers, so only the Redis
client's own deadline (docs/failure-modes.md: 1 s per reply) bounds the wait: each DPoP
request gets 503 `temporarily_unavailable` within it — never a proof let through unchecked —
Bearer routes keep serving, and after SIGCONT every worker recovers by itself.
(test_dpop_redis.py covers Redis killed and restarted.)"""
import signal
import time

import pytest
import requests

from support.dpop_client import DPoPKey
from test_dpop import bound_token, call, idp  # noqa: F401 — idp is a fixture
from test_dpop_redis import RedisServer, URL, config

BOUND = 1.0  # CallBounds.redis: one reply
SLACK = 1.5
RECOVERY = 8.0


@pytest.fixture
def redis():
    r = RedisServer().start()
    yield r
    if r.proc:
        r.proc.send_signal(signal.SIGCONT)
    r.close()


def test_redis_frozen_dpop_fails_closed_within_the_bound_and_recovers(upstream, idp, redis, gateway_factory):  # noqa: F811
    g = gateway_factory(config(upstream, idp, redis.port))
    key = DPoPKey("ES256")
    tok = bound_token(idp, key)
    assert call(g, tok, key.proof("GET", URL, access_token=tok)).status_code == 200
    redis.proc.send_signal(signal.SIGSTOP)
    for _ in range(4):
        proof = key.proof("GET", URL, access_token=tok)
        t0 = time.time()
        r = call(g, tok, proof)
        elapsed = time.time() - t0
        assert r.status_code == 503 and elapsed < BOUND + SLACK, (r.status_code, elapsed)
        assert r.headers.get("Retry-After") and r.json()["error"] == "temporarily_unavailable"
        assert str(redis.port) not in r.text and "redis" not in r.text.lower()
    # A Bearer route needs no store.
    t0 = time.time()
    bearer = bound_token(idp, key, cnf=None)
    assert requests.get(g.url("/token/x"), headers={"Authorization": "Bearer " + bearer}, timeout=5).status_code == 200
    assert time.time() - t0 < 1.0
    redis.proc.send_signal(signal.SIGCONT)
    t0, streak = time.time(), 0
    while streak < 8:  # fresh connections, spread over the workers
        assert time.time() - t0 < RECOVERY, "a worker did not recover after SIGCONT"
        status = call(g, tok, key.proof("GET", URL, access_token=tok)).status_code
        assert status in (200, 503)
        streak = streak + 1 if status == 200 else 0
        if status == 503:
            time.sleep(0.1)
    print(f"recovered {time.time() - t0:.2f} s after SIGCONT")
