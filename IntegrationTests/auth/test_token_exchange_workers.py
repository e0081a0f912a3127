"""RFC 8693 token exchange shared by the workers of one process (docs/tokens.md, "Token exchange
toward the upstream"): with no Redis, the first request for a caller's token leads the exchange
and every other request, on any worker, waits for it or takes the kept token, so the AS sees
one exchange and the upstream one token. The wait is bounded by the route's upstream `timeout`
when that is shorter than the exchange's own 5 s. The real AS (idpyoidc) behind the fault proxy,
which holds its answers so that the requests meet while the exchange is under way."""
import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from support.fault_proxy import FaultProxy
from support.gateway import Gateway
from test_token_exchange import TARGET, basic_client, config, exchanges, get, upstream_authorization


def worker_of(r):
    """The worker that answered: the request id is a 7-digit process prefix, the worker, a count."""
    return r.headers["X-Request-Id"][7]


@pytest.fixture
def slow_as(authserver):
    proxy = FaultProxy(authserver.port).start()
    proxy.faults["/token"] = "slow"
    proxy.slow_for = 0.5
    yield authserver, proxy
    proxy.stop()


def test_twenty_new_connections_on_two_workers_make_one_exchange(slow_as, upstream):
    a, proxy = slow_as
    g = Gateway(config(a, basic_client(a), f'resource: {TARGET}, endpoint: "{proxy.url}/token"', upstream.port))
    g.start()
    try:
        subject = a.code_flow()["access_token"]
        # 20 at once, each on a connection of its own (no session): they land on both workers
        # while the one exchange is held at the proxy.
        with ThreadPoolExecutor(20) as pool:
            answers = list(pool.map(lambda _: get(g, subject), range(20)))
        assert [r.status_code for r in answers] == [200] * 20, [r.text for r in answers if r.status_code != 200]
        assert len({worker_of(r) for r in answers}) == 2, "both workers answered"
        assert len(exchanges(a)) == 1 and proxy.hits["/token"] == 1, exchanges(a)
        tokens = {upstream_authorization(r) for r in answers}
        assert len(tokens) == 1 and subject not in tokens
        # Later requests, on new connections too, take the kept token.
        later = [get(g, subject) for _ in range(6)]
        assert {upstream_authorization(r) for r in later} == tokens
        assert len({worker_of(r) for r in answers + later}) == 2
        assert len(exchanges(a)) == 1
    finally:
        g.stop()


def test_a_refusal_is_shared_by_the_workers_too(slow_as, upstream):
    a, proxy = slow_as
    text = config(a, basic_client(a), f'audience: not-a-target-of-this-as, endpoint: "{proxy.url}/token"',
                  upstream.port)
    g = Gateway(text)
    g.start()
    try:
        subject = a.code_flow()["access_token"]
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda _: get(g, subject), range(8)))
        assert [r.status_code for r in answers] == [403] * 8
        assert [t["error"] for t in exchanges(a)] == ["invalid_target"]
    finally:
        g.stop()


@pytest.mark.parametrize("workers", [1, 2])
def test_a_hung_as_is_503_within_the_routes_timeout(workers, authserver, upstream):
    """A route whose upstream `timeout` is 1s: its requests wait for the exchange 1 s, not the
    exchange's own 5 s, and get 503 with Retry-After in the gateway's error shape."""
    a = authserver
    hung = socket.socket()
    hung.bind(("127.0.0.1", 0))
    hung.listen(16)  # accepts (the kernel completes the handshake) and never answers
    text = config(a, basic_client(a), f'resource: {TARGET}, endpoint: "http://127.0.0.1:{hung.getsockname()[1]}/token"',
                  upstream.port, workers=workers)
    text = text.replace(f'url: "http://127.0.0.1:{upstream.port}" }}', f'url: "http://127.0.0.1:{upstream.port}", timeout: 1s }}')
    assert "timeout: 1s" in text
    g = Gateway(text)
    g.start()
    try:
        subject = a.code_flow()["access_token"]

        def timed(_):
            start = time.monotonic()
            r = get(g, subject)
            return r, time.monotonic() - start

        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(timed, range(4)))
        for r, took in results:
            assert r.status_code == 503 and r.headers.get("Retry-After"), r.text
            body = r.json()
            assert body["error"] == "temporarily_unavailable" and body["error_description"] and body["request_id"]
            assert set(body) == {"error", "error_description", "request_id"}
            # The route's 1 s, not the exchange's own 5 s: what is past 1 s is scheduling.
            assert 0.8 <= took < 1.8, took
        assert g.logged("token_not_exchanged")
        assert not any(json.dumps(r.json()).count("127.0.0.1") for r, _ in results)
    finally:
        g.stop()
        hung.close()
