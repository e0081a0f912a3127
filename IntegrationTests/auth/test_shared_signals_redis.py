"""Shared Signals with a Redis store (a real redis-server): two tokengate replicas share one
stream and one revocation log. An event pushed to replica A is refused on replica B within a
second, and closes the caller's WebSocket on B while another caller's carries on; the same SET
pushed to B too is applied once; a replica killed right after its 202, or started later, still
refuses what stands; the store holds no subject in the clear; and a push the store cannot take
gets 503 and changes nothing."""
import signal
import time

import pytest
import requests

from support.ssf_transmitter import CAEP, RISC, Transmitter
from support.waiting import wait_for
from test_bearer import idp, token  # noqa: F401 — idp is a fixture
from test_shared_signals import config, get, iss_sub, metric


@pytest.fixture
def transmitter():
    t = Transmitter()
    yield t
    t.stop()


def store_config(idp, tx, token_file, redis, upstream_port, push_port="{PORT}"):  # noqa: F811
    text = config(idp, tx, token_file).replace("{UPSTREAM}", str(upstream_port))
    text = text.replace("{PORT}/.ssf/events", f"{push_port}/.ssf/events")
    return f'store: {{ url: "redis://127.0.0.1:{redis.port}/0", prefix: "ssf-test:" }}\n' + text


@pytest.fixture
def replicas(idp, transmitter, upstream, redis, gateway_factory, tmp_path):  # noqa: F811
    token_file = tmp_path / "ssf-token"
    token_file.write_text(transmitter.management_token + "\n")
    a = gateway_factory(store_config(idp, transmitter, token_file, redis, upstream.port))
    wait_for(lambda: transmitter.verifications == [202], timeout=10, what="the stream's verification")
    # B is told the same push URL (in front of both, a load balancer would have it).
    b = gateway_factory(store_config(idp, transmitter, token_file, redis, upstream.port, push_port=a.port))
    wait_for(lambda: transmitter.patches >= 1, timeout=10, what="the second replica's stream update")
    return a, b, token_file


def push_to(gateway, tx, set_token):
    """Pushes a signed SET to `gateway`'s push path with the stream's credential."""
    stream = tx.stream()
    return requests.post(gateway.url("/.ssf/events"), data=set_token, timeout=10, headers={
        "Content-Type": "application/secevent+jwt", "Authorization": stream["delivery"]["authorization_header"]})


def transmitter_row(g):
    status = requests.get(f"http://127.0.0.1:{g.admin}/status.json", timeout=5).json()
    return status["shared_signals"]["transmitters"][0]


def test_one_stream_and_a_revocation_pushed_to_one_replica_stands_on_both(replicas, transmitter, idp, redis):  # noqa: F811
    a, b, _ = replicas
    assert transmitter.creates == 1 and len(transmitter.streams) == 1
    # The verification came back to A; B learns it from the log.
    wait_for(lambda: transmitter_row(b)["verified"] is True, timeout=2, what="B to see the stream verified")
    key = idp.keys[0]
    now = int(time.time())
    alice, bob = token(key, sub="alice", iat=now - 10), token(key, sub="bob", iat=now - 10)
    assert get(a, alice).status_code == 200 and get(b, alice).status_code == 200
    set_token = transmitter.sign(transmitter.claims(CAEP + "session-revoked", iss_sub("alice"),
                                                    payload={"event_timestamp": now - 5}))
    assert push_to(a, transmitter, set_token).status_code == 202
    started = time.monotonic()
    wait_for(lambda: get(b, alice).status_code == 401, timeout=1.0, interval=0.05, what="B to refuse alice")
    assert time.monotonic() - started < 1.0
    r = get(b, alice)
    assert "revoked" in r.json()["error_description"] and 'error="invalid_token"' in r.headers["WWW-Authenticate"]
    assert get(a, alice).status_code == 401
    assert get(b, bob).status_code == 200 and get(a, bob).status_code == 200
    # The same SET pushed to B as well (a transmitter's retry through the balancer) is applied
    # once: a duplicate there, 202, nothing more.
    assert push_to(b, transmitter, set_token).status_code == 202
    dup = 'tokengate_ssf_events_total{transmitter="corp",event="session-revoked",result="duplicate"}'
    assert metric(b, dup) == 1
    assert metric(b, 'tokengate_ssf_events_total{transmitter="corp",event="session-revoked",result="applied"}') == 0
    # The store holds the record sealed and the jti as a digest: no subject in the clear.
    dump = redis.cli("XRANGE", "ssf-test:{ssf}:log", "-", "+") + redis.cli("KEYS", "ssf-test:*")
    assert "{ssf}:jti:" in dump and "alice" not in dump and transmitter.issuer not in dump
    # Each replica's verification, and the revocation.
    assert int(redis.cli("XLEN", "ssf-test:{ssf}:log")) == len(transmitter.verifications) + 1


def test_a_replica_killed_after_the_202_or_started_later_still_refuses(replicas, transmitter, idp, redis,
                                                                      gateway_factory, upstream):  # noqa: F811
    a, b, token_file = replicas
    key = idp.keys[0]
    dave = token(key, sub="dave", iat=int(time.time()) + 1)
    assert get(a, dave).status_code == 200
    assert transmitter.push(RISC + "account-disabled", {"format": "opaque", "id": "dave"}).status_code == 202
    a.signal(signal.SIGKILL)
    a.proc.wait()
    a.start()  # ready only once it has read the log
    assert get(a, dave).status_code == 401
    later = gateway_factory(store_config(idp, transmitter, token_file, redis, upstream.port, push_port=a.port))
    r = get(later, dave)
    assert r.status_code == 401 and "disabled" in r.json()["error_description"]
    assert transmitter.creates == 1
    # account-enabled, pushed to the restarted A, reaches the others.
    assert transmitter.push(RISC + "account-enabled", {"format": "opaque", "id": "dave"}).status_code == 202
    for g in (a, b, later):
        wait_for(lambda g=g: get(g, dave).status_code == 200, timeout=1.0, interval=0.05,
                 what=f"replica on {g.port} to let dave in again")


def test_a_push_the_store_cannot_take_gets_503_and_changes_nothing(replicas, transmitter, idp, redis):  # noqa: F811
    a, b, _ = replicas
    key = idp.keys[0]
    erin = token(key, sub="erin", iat=int(time.time()) - 10)
    redis.stop()
    set_token = transmitter.sign(transmitter.claims(CAEP + "session-revoked", iss_sub("erin")))
    r = push_to(a, transmitter, set_token)
    assert r.status_code == 503 and r.json()["error"] == "temporarily_unavailable"
    assert r.headers["Retry-After"] == "1"
    assert get(a, erin).status_code == 200
    a.logged("revocation_not_stored")
    # The transmitter delivers it again once the store is back: applied then, on both.
    redis.start()
    wait_for(lambda: push_to(a, transmitter, set_token).status_code == 202, timeout=10, interval=0.2,
             what="the push to be taken once the store is back")
    assert get(a, erin).status_code == 401
    wait_for(lambda: get(b, erin).status_code == 401, timeout=2, interval=0.05, what="B to refuse erin")


def test_a_revocation_pushed_to_one_replica_closes_the_callers_websocket_on_another(idp, transmitter, redis,
                                                                                   gateway_factory, tmp_path):  # noqa: F811
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    from support.ws_upstream import WSUpstream
    ws_up = WSUpstream()
    try:
        token_file = tmp_path / "ssf-token"
        token_file.write_text(transmitter.management_token + "\n")
        a = gateway_factory(store_config(idp, transmitter, token_file, redis, ws_up.port))
        wait_for(lambda: transmitter.verifications == [202], timeout=10, what="the stream's verification")
        b = gateway_factory(store_config(idp, transmitter, token_file, redis, ws_up.port, push_port=a.port))
        key = idp.keys[0]
        now = int(time.time())

        def open_ws(g, sub):
            tok = token(key, sub=sub, iat=now - 10)
            return connect(f"ws://127.0.0.1:{g.port}/api/live", additional_headers={"Authorization": f"Bearer {tok}"},
                           open_timeout=10)

        henry, iris = open_ws(b, "henry"), open_ws(b, "iris")
        henry.send("hello")
        assert henry.recv(timeout=5) == "hello"
        started = time.monotonic()
        assert push_to(a, transmitter, transmitter.sign(transmitter.claims(
            CAEP + "session-revoked", iss_sub("henry")))).status_code == 202
        with pytest.raises(ConnectionClosed):
            while True:
                henry.recv(timeout=3)
        assert henry.close_code == 1008 and time.monotonic() - started < 1.5
        iris.send("still here")
        assert iris.recv(timeout=5) == "still here"
        iris.close()
    finally:
        ws_up.stop()
