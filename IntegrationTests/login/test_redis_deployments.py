"""The gateway's shared store on each kind of Redis deployment it takes — TLS, Sentinel (with
a real failover while traffic runs), Cluster (three masters) — with real processes on
loopback ports: DPoP replay across two tokengate processes, and browser sessions."""
import threading
import time

import pytest
import requests

from support.dpop_client import DPoPKey
from support.gateway import sent_headers as sent
from support.redis_deployments import Cluster, SentinelSet, TLSRedis, cli, wait_for
from support.waiting import sleep_into_second
from test_backchannel_logout import logout_token
from test_bearer import idp  # noqa: F401 — fixture
from test_dpop import bound_token, call as dpop_call, config as dpop_config
from test_login import LoginEnv

URL = "https://api.example.com/dpop/orders/1"


def two_gateways(gateway_factory, upstream, idp, store_url):  # noqa: F811
    cfg = dpop_config(upstream, idp, public_url="https://api.example.com", extra_top=f'store: {{ url: "{store_url}", prefix: "tg:" }}')
    return gateway_factory(cfg), gateway_factory(cfg)


def replay_is_caught(a, b, idp):  # noqa: F811
    key = DPoPKey("ES256")
    tok = bound_token(idp, key)
    for _ in range(12):  # enough proofs that their keys spread over a cluster's nodes
        proof = key.proof("GET", URL, access_token=tok)
        assert dpop_call(a, tok, proof).status_code == 200
        r = dpop_call(b, tok, proof)
        assert r.status_code == 401 and "used before" in r.json()["error_description"], r.text


def test_tls(upstream, idp, gateway_factory):  # noqa: F811
    redis = TLSRedis()
    try:
        a, b = two_gateways(gateway_factory, upstream, idp, redis.url)
        replay_is_caught(a, b, idp)
        assert cli(redis.port, "DBSIZE", tls=redis.ca) == "12"
    finally:
        redis.close()


def test_tls_with_the_wrong_ca_fails_closed(upstream, idp, gateway_factory, tmp_path):  # noqa: F811
    redis = TLSRedis()
    other = TLSRedis()  # another CA
    try:
        g = gateway_factory(dpop_config(upstream, idp, public_url="https://api.example.com",
                                        extra_top=f'store: "rediss://127.0.0.1:{redis.port}/0?ca_file={other.ca}"'))
        key = DPoPKey("ES256")
        tok = bound_token(idp, key)
        t0 = time.time()
        r = dpop_call(g, tok, key.proof("GET", URL, access_token=tok))
        assert r.status_code == 503 and time.time() - t0 < 3
    finally:
        redis.close()
        other.close()


def test_cluster(upstream, idp, gateway_factory, authserver_factory, tmp_path):  # noqa: F811
    cluster = Cluster()
    try:
        a, b = two_gateways(gateway_factory, upstream, idp, cluster.url)
        replay_is_caught(a, b, idp)
        spread = cluster.keys_per_node("tg:dpop:jti:*")
        assert sum(spread) == 12 and sum(1 for n in spread if n) >= 2, spread
        # Browser sessions on the cluster: login (its pending state in the cluster too), a
        # refresh (saved by a script that checks the lease: both keys in the session's slot),
        # back-channel logout.
        a_s = authserver_factory(login="form", rotate_refresh_tokens=True, access_token_lifetime=4)
        env = LoginEnv(a_s, upstream, tmp_path, extra_top=f'store: "{cluster.url}"', session=", cache_ttl: 0s, refresh_margin: 2s")
        try:
            r = env.login()
            logged_in = time.time()
            assert r.status_code == 200
            sub = sent(r)["x-forwarded-user"]
            assert env.get("/again").status_code == 200
            before = a_s.refresh_ok_count
            sleep_into_second(logged_in, 2)  # the access token (4 s) is within the 2 s margin
            assert env.get("/refreshed").status_code == 200
            assert a_s.refresh_ok_count - before == 1
            assert env.get("/after-refresh").status_code == 200 and a_s.refresh_ok_count - before == 1
            assert requests.post(env.url("/oauth2/backchannel-logout"), data={"logout_token": logout_token(a_s, sub=sub)},
                                 timeout=10).status_code == 200
            assert env.get("/after").status_code == 302
        finally:
            env.stop()
    finally:
        cluster.close()


def test_sentinel_failover_while_traffic_runs(upstream, authserver_factory, tmp_path):
    """The master dies while requests run: each is answered 200 or 503 within 3 s (none
    hangs), and once a replica is promoted the session begun before is still there."""
    sentinels = SentinelSet()
    a_s = authserver_factory(login="form")
    env = LoginEnv(a_s, upstream, tmp_path, extra_top=f'store: "{sentinels.url}"', session=", cache_ttl: 0s")
    try:
        env.login()
        cookie = env.session_cookie()
        # The session reached the replica. (Not WAIT from redis-cli: WAIT counts acknowledgements
        # of the calling connection's own writes, and redis-cli has made none; and the replica
        # may be in a full resync Sentinel started, holding nothing for a moment.)
        wait_for(lambda: cli(sentinels.replica, "DBSIZE") == cli(sentinels.master, "DBSIZE") != "0",
                 timeout=15, interval=0.1, what="replication")
        results, stop = [], threading.Event()

        def traffic():
            while not stop.is_set():
                t0 = time.time()
                try:
                    r = requests.get(env.url("/during"), headers={"Accept": "application/json", "Cookie": f"tokengate_session={cookie}"},
                                     timeout=10)
                    results.append((r.status_code, time.time() - t0))
                except requests.RequestException as e:
                    results.append((str(e), time.time() - t0))
                stop.wait(0.05)  # a request each 50 ms; ends at once when told to stop

        t = threading.Thread(target=traffic)
        t.start()
        # Traffic is under way (answers came back) before the master goes.
        wait_for(lambda: len(results) >= 5, timeout=10, interval=0.05, what="traffic before the failover")
        sentinels.kill("master")
        wait_for(lambda: sentinels.current_master() == sentinels.replica, timeout=20, interval=0.1, what="failover")
        wait_for(lambda: requests.get(env.url("/after"), headers={"Accept": "application/json", "Cookie": f"tokengate_session={cookie}"},
                                      timeout=10).status_code == 200,
                 timeout=15, interval=0.1, what="the session on the new master")
        stop.set()
        t.join(15)
        assert results and all(s in (200, 503) for s, _ in results), set(s for s, _ in results)
        assert max(d for _, d in results) < 3, "a request waited on the failover"
        assert any(s == 503 for s, _ in results), "the failover was not seen at all"
    finally:
        env.stop()
        sentinels.close()
