"""Shared Signals by poll delivery (RFC 8936), against the test transmitter's poll endpoint:
the gateway makes a poll stream once, long-polls it, applies what it brings, and acknowledges
each SET in its next poll only once it is applied; a SET it refuses comes back in `setErrs`
with its `err`, and changes nothing. With a Redis store, a SET the store cannot take is neither
acknowledged nor refused, so the transmitter delivers it again."""
import time

import pytest

from support.ssf_transmitter import CAEP, POLL, RISC, Transmitter
from support.waiting import wait_for
from test_bearer import ec_key, idp, token  # noqa: F401 — idp is a fixture
from test_shared_signals import SESSION_KEY, get, iss_sub, metric

AUDIENCE = "https://gw.example.test"


@pytest.fixture
def transmitter():
    t = Transmitter()
    t.audience = AUDIENCE
    yield t
    t.stop()


def poll_config(idp, tx, token_file, upstream_port, store=""):  # noqa: F811
    return f"""{store}
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
session: {{ keys: ["{SESSION_KEY}"] }}
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], algorithms: [ES256] }}
shared_signals:
  corp:
    issuer: "{tx.issuer}"
    issuers: [one]
    delivery: poll
    audience: "{AUDIENCE}"
    poll_interval: 200ms
    auth: {{ bearer_file: "{token_file}" }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream_port}" }}
routes:
  - name: orders
    match: {{ path_prefix: /api/ }}
    upstream: app
    auth: bearer
    issuers: [one]
"""


def start(idp, transmitter, upstream, gateway_factory, tmp_path, store=""):  # noqa: F811
    token_file = tmp_path / "ssf-token"
    token_file.write_text(transmitter.management_token + "\n")
    g = gateway_factory(poll_config(idp, transmitter, token_file, upstream.port, store))
    wait_for(lambda: len(transmitter.acked) >= 1, timeout=10, what="the verification event acknowledged")
    return g


def test_a_poll_stream_is_made_verified_and_its_events_applied_then_acknowledged(
        idp, transmitter, upstream, gateway_factory, tmp_path):  # noqa: F811
    g = start(idp, transmitter, upstream, gateway_factory, tmp_path)
    stream = transmitter.stream()
    assert stream["delivery"]["method"] == POLL and stream["description"] == "tokengate corp"
    assert transmitter.creates == 1
    # Long polling, with a bound on what one answer may bring.
    assert all(p["returnImmediately"] is False and p["maxEvents"] == 64 for p in transmitter.polls)
    key = idp.keys[0]
    now = int(time.time())
    alice, bob = token(key, sub="alice", iat=now - 10), token(key, sub="bob", iat=now - 10)
    assert get(g, alice).status_code == 200
    jti = transmitter.enqueue(CAEP + "session-revoked", iss_sub("alice"), payload={"event_timestamp": now - 5})
    started = time.monotonic()
    wait_for(lambda: get(g, alice).status_code == 401, timeout=1.0, interval=0.05, what="alice refused")
    assert time.monotonic() - started < 1.0
    assert get(g, bob).status_code == 200
    # Acknowledged in the poll after the one that brought it, and not delivered again.
    wait_for(lambda: jti in transmitter.acked, timeout=3, what="the SET acknowledged")
    assert transmitter.acked.count(jti) == 1 and jti not in transmitter.queue
    assert metric(g, 'tokengate_ssf_events_total{transmitter="corp",event="session-revoked",result="applied"}') == 1
    # The status page has the stream verified by the polled verification event.
    import requests
    row = requests.get(f"http://127.0.0.1:{g.admin}/status.json", timeout=5).json()["shared_signals"]["transmitters"][0]
    assert row["verified"] is True and row["stream_id"] == stream["stream_id"]
    # No push path is served for a poll transmitter.
    assert requests.post(g.url("/.ssf/events"), data="x", timeout=5).status_code == 404
    # A restart reuses the stream.
    g.stop()
    g.start()
    wait_for(lambda: transmitter.patches >= 1, timeout=10, what="the stream reused")
    assert transmitter.creates == 1


def test_a_refused_set_comes_back_in_set_errs_and_changes_nothing(idp, transmitter, upstream, gateway_factory,
                                                                  tmp_path):  # noqa: F811
    g = start(idp, transmitter, upstream, gateway_factory, tmp_path)
    key = idp.keys[0]
    carol = token(key, sub="carol", iat=int(time.time()) - 10)
    forged = transmitter.enqueue(RISC + "account-disabled", iss_sub("carol"), key=ec_key("tx-1"))
    wrong_aud = transmitter.enqueue(RISC + "account-disabled", iss_sub("carol"), aud="https://other.example")
    wait_for(lambda: forged in transmitter.set_errs and wrong_aud in transmitter.set_errs, timeout=5,
             what="both SETs refused in setErrs")
    assert transmitter.set_errs[forged]["err"] == "invalid_key"
    assert transmitter.set_errs[wrong_aud]["err"] == "invalid_audience"
    assert transmitter.set_errs[forged]["description"]
    assert forged not in transmitter.acked and wrong_aud not in transmitter.acked
    assert get(g, carol).status_code == 200


def test_with_a_store_a_set_not_stored_is_not_acknowledged_and_comes_again(idp, transmitter, upstream, redis,
                                                                           gateway_factory, tmp_path):  # noqa: F811
    store = f'store: {{ url: "redis://127.0.0.1:{redis.port}/0", prefix: "ssf-poll:" }}'
    g = start(idp, transmitter, upstream, gateway_factory, tmp_path, store=store)
    key = idp.keys[0]
    dave = token(key, sub="dave", iat=int(time.time()) - 10)
    redis.stop()
    jti = transmitter.enqueue(CAEP + "credential-change", iss_sub("dave"))
    g.logged("ssf polled event not applied now")
    assert jti not in transmitter.acked and jti not in transmitter.set_errs
    assert get(g, dave).status_code == 200
    redis.start()
    wait_for(lambda: jti in transmitter.acked, timeout=10, what="the SET acknowledged once stored")
    assert get(g, dave).status_code == 401
    # The store came back empty (it keeps nothing on disk): the log holds that one record.
    assert redis.cli("XLEN", "ssf-poll:{ssf}:log") == "1"
