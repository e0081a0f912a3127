"""The DPoP replay store (RFC 9449 §11.1) frozen: a real redis-server stopped with SIGSTOP
under a real tokengate. The connection stays open and nothing answers, so only the Redis
client's own deadline (docs/failure-modes.md: 1 s per reply) bounds the wait: each DPoP
request gets 503 `temporarily_unavailable` within it — never a proof let through unchecked —
Bearer routes keep serving, and after SIGCONT every worker recovers by itself.
(test_redis.py covers Redis killed and restarted.)"""
import signal
import time

import pytest
import requests

from support.dpop_client import DPoPKey
from support.redis_server import RedisServer
from support.waiting import wait_for_streak
from test_dpop import bound_token, call, idp  # noqa: F401 — idp is a fixture
from test_redis import URL, config

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

    def served():
        status = call(g, tok, key.proof("GET", URL, access_token=tok)).status_code
        assert status in (200, 503)
        return status == 200
    took = wait_for_streak(served, 8, RECOVERY, what="every worker to recover after SIGCONT")
    print(f"recovered {took:.2f} s after SIGCONT")
