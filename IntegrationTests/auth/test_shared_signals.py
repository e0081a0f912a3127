"""Shared Signals (SSF 1.0, CAEP, RISC) with push delivery (RFC 8935), against a transmitter
written for the tests (support/ssf_transmitter.py): the gateway makes its stream once (a
second replica reuses it), has it verified, and takes the transmitter's events. A token issued
before a `session-revoked` event is refused on its next request, on every worker, and one
issued after it passes; `account-disabled` refuses every token until `account-enabled`; each
subject format hits what it names. Every push the receiver refuses gets its RFC 8935 `err`,
changes nothing, and leaves the gateway serving."""
import json
import time

import pytest
import requests
from joserfc.jwk import OctKey

from support.ssf_transmitter import CAEP, RISC, Transmitter
from support.waiting import wait_for
from test_bearer import ec_key, idp, token  # noqa: F401 — idp is a fixture

SESSION_KEY = "q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE="


@pytest.fixture
def transmitter():
    t = Transmitter()
    yield t
    t.stop()


def config(idp, tx, token_file):  # noqa: F811
    return f"""
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
    endpoint_url: "http://127.0.0.1:{{PORT}}/.ssf/events"
    auth: {{ bearer_file: "{token_file}" }}
upstreams:
  app: {{ url: "http://127.0.0.1:{{UPSTREAM}}" }}
routes:
  - name: orders
    match: {{ path_prefix: /api/ }}
    upstream: app
    auth: bearer
    issuers: [one]
"""


@pytest.fixture
def gateway(idp, transmitter, upstream, gateway_factory, tmp_path):  # noqa: F811
    token_file = tmp_path / "ssf-token"
    token_file.write_text(transmitter.management_token + "\n")
    text = config(idp, transmitter, token_file).replace("{UPSTREAM}", str(upstream.port))
    g = gateway_factory(text)
    # Made and verified: the verification event came back 202.
    wait_for(lambda: transmitter.verifications == [202], timeout=10, what="the stream's verification")
    return g


def get(g, tok):
    return requests.get(g.url("/api/orders"), headers={"Authorization": f"Bearer {tok}"}, timeout=5)


def iss_sub(sub):
    return {"format": "iss_sub", "iss": "https://idp.one", "sub": sub}


def metric(g, sample):
    text = requests.get(f"http://127.0.0.1:{g.admin}/metrics", timeout=5).text
    for line in text.splitlines():
        if line.startswith(sample + " "):
            return float(line.split()[-1])
    return 0.0


def test_the_stream_is_made_once_verified_and_needs_its_credential(gateway, transmitter, idp, gateway_factory,
                                                                   tmp_path):  # noqa: F811
    stream = transmitter.stream()
    assert stream["delivery"]["method"] == "urn:ietf:rfc:8935"
    assert stream["delivery"]["endpoint_url"] == gateway.url("/.ssf/events")
    assert stream["delivery"]["authorization_header"].startswith("Bearer ")
    assert set(stream["events_requested"]) >= {CAEP + "session-revoked", RISC + "account-disabled"}
    assert transmitter.creates == 1
    # A second replica with the same session keys and URL reuses the stream: no second one, and
    # the credential it sets is the one the first already accepts.
    token_file = tmp_path / "ssf-token"
    text = config(idp, transmitter, token_file).replace("{UPSTREAM}", "9").replace(
        "{PORT}/.ssf/events", f"{gateway.port}/.ssf/events")
    gateway_factory(text)
    wait_for(lambda: transmitter.patches >= 1, timeout=10, what="the second replica's update")
    assert transmitter.creates == 1 and len(transmitter.streams) == 1
    r = transmitter.push(CAEP + "session-revoked", iss_sub("nobody"))
    assert r.status_code == 202 and r.text == ""
    # The status page shows the stream, verified, with its last event, and never the credential.
    status = requests.get(f"http://127.0.0.1:{gateway.admin}/status.json", timeout=5)
    [row] = status.json()["shared_signals"]["transmitters"]
    assert row["name"] == "corp" and row["stream_id"] == stream["stream_id"] and row["verified"] is True
    assert row["keys_loaded"] is True and row["last_event_at"] and row["last_error"] is None
    assert row["delivery"] == "push" and 0 <= row["delivery_lag_seconds"] < 5
    assert status.json()["shared_signals"]["revocations"] == 1
    assert stream["delivery"]["authorization_header"].split()[1] not in status.text


def test_a_revoked_session_refuses_earlier_tokens_on_every_worker_and_later_ones_pass(gateway, transmitter, idp):  # noqa: F811
    key = idp.keys[0]
    now = int(time.time())
    alice_before = token(key, sub="alice", iat=now - 10)
    bob = token(key, sub="bob", iat=now - 10)
    assert get(gateway, alice_before).status_code == 200
    r = transmitter.push(CAEP + "session-revoked", iss_sub("alice"), payload={"event_timestamp": now - 5})
    assert r.status_code == 202
    started = time.monotonic()
    # New connections land on both workers: each refuses it.
    answers = [get(gateway, alice_before) for _ in range(8)]
    assert time.monotonic() - started < 1.0
    for a in answers:
        assert a.status_code == 401
        assert 'error="invalid_token"' in a.headers["WWW-Authenticate"] and "revoked" in a.json()["error_description"]
    assert get(gateway, bob).status_code == 200
    # A token issued after the event passes.
    assert get(gateway, token(key, sub="alice", iat=now - 2)).status_code == 200
    assert metric(gateway, 'tokengate_ssf_revoked_requests_total{route="orders"}') == 8
    assert metric(gateway, 'tokengate_ssf_events_total{transmitter="corp",event="session-revoked",result="applied"}') == 1


def test_a_disabled_account_is_refused_until_enabled_and_email_subjects_match_emails(gateway, transmitter, idp):  # noqa: F811
    key = idp.keys[0]
    now = int(time.time())
    fresh = token(key, sub="carol", email="carol@example.com", iat=now + 1)
    assert transmitter.push(RISC + "account-disabled", {"format": "email", "email": "carol@example.com"}).status_code == 202
    r = get(gateway, fresh)
    assert r.status_code == 401 and "disabled" in r.json()["error_description"]
    # Another user with the same sub at nobody's email is untouched; an opaque subject is a sub.
    assert get(gateway, token(key, sub="dave", email="dave@example.com")).status_code == 200
    assert transmitter.push(RISC + "account-disabled", {"format": "opaque", "id": "dave"}).status_code == 202
    assert get(gateway, token(key, sub="dave", email="dave@example.com")).status_code == 401
    assert transmitter.push(RISC + "account-enabled", {"format": "email", "email": "carol@example.com"}).status_code == 202
    assert get(gateway, fresh).status_code == 200
    # An iss_sub of another issuer names nobody here.
    other = {"format": "iss_sub", "iss": "https://elsewhere.example", "sub": "erin"}
    assert transmitter.push(RISC + "account-disabled", other).status_code == 202
    assert get(gateway, token(key, sub="erin")).status_code == 200


def test_a_session_narrowed_event_ends_that_session_only(gateway, transmitter, idp):  # noqa: F811
    key = idp.keys[0]
    now = int(time.time())
    one, two = token(key, sub="frank", sid="s-1", iat=now - 10), token(key, sub="frank", sid="s-2", iat=now - 10)
    subject = {"format": "complex", "user": iss_sub("frank"), "session": {"format": "opaque", "id": "s-1"}}
    assert transmitter.push(CAEP + "session-revoked", subject, payload={"event_timestamp": now}).status_code == 202
    assert get(gateway, one).status_code == 401
    assert get(gateway, two).status_code == 200


def err(r):
    assert r.status_code == 400 and r.headers["Content-Language"] == "en", (r.status_code, r.text)
    return r.json()["err"]


def test_every_push_the_receiver_refuses_gets_its_err_and_changes_nothing(gateway, transmitter, idp):  # noqa: F811
    key = idp.keys[0]
    victim = token(key, sub="grace", iat=int(time.time()) - 10)
    t = transmitter
    good = t.claims(CAEP + "session-revoked", iss_sub("grace"))
    other_key = ec_key("tx-1")
    public = json.dumps(t.key.as_dict(private=False)).encode()
    cases = [
        (t.push_token(t.sign(good, key=other_key)), "invalid_key"),  # not the transmitter's key
        (t.push_token(t.sign(good, key=OctKey.import_key(public), alg="HS256")), "invalid_key"),  # key confusion
        (t.push_token(t.sign(good).rsplit(".", 1)[0].replace(
            t.sign(good).split(".")[0], "eyJhbGciOiJub25lIiwidHlwIjoic2VjZXZlbnQrand0In0") + "."), "invalid_key"),  # none
        (t.push_claims(dict(good, iss="https://evil.example")), "invalid_issuer"),
        (t.push_claims(dict(good, aud="https://other.example")), "invalid_audience"),
        (t.push_token(t.sign(good, typ=None)), "invalid_request"),
        (t.push_claims(dict(good, events={CAEP + "session-revoked": {}, RISC + "account-disabled": {}})),
         "invalid_request"),
        (t.push_claims(dict(good, sub="grace")), "invalid_request"),
        (t.push_claims(good, authorization=False), "authentication_failed"),
        (t.push_claims(good, authorization="Bearer not-the-stream-credential"), "authentication_failed"),
        (t.push_claims(good, content_type="application/json"), "invalid_request"),
        (t.push_claims(good, content_type=";"), "invalid_request"),  # nothing before the parameters
        (t.push_claims(good, content_type=";", authorization=False), "authentication_failed"),  # that first
        (t.push_claims(dict(good, iat=int(time.time()) - 2 * 86400)), "invalid_request"),  # too old to be new
        (t.push_token(json.dumps(good), content_type="application/secevent+jwt"), "invalid_request"),
    ]
    for response, expected in cases:
        assert err(response) == expected
    assert t.push_token("x" * (65 << 10)).status_code == 413
    assert t.push_token(t.sign(good), method="GET").status_code == 405
    assert get(gateway, victim).status_code == 200  # nothing applied
    # A SET pushed twice is applied once: the second is 202 and counted as a duplicate.
    once = t.sign(good)
    assert t.push_token(once).status_code == 202 and t.push_token(once).status_code == 202
    assert get(gateway, victim).status_code == 401
    sample = 'tokengate_ssf_events_total{transmitter="corp",event="session-revoked",result="duplicate"}'
    assert metric(gateway, sample) == 1
    # Still serving.
    assert requests.get(gateway.url("/api/orders"), timeout=5).status_code == 401


def test_a_revoked_callers_websocket_closes_with_1008_and_others_stay(idp, transmitter, gateway_factory,
                                                                       tmp_path):  # noqa: F811
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    from support.ws_upstream import WSUpstream
    ws_up = WSUpstream()
    try:
        token_file = tmp_path / "ssf-token"
        token_file.write_text(transmitter.management_token)
        text = config(idp, transmitter, token_file).replace("{UPSTREAM}", str(ws_up.port))
        g = gateway_factory(text)
        wait_for(lambda: transmitter.verifications == [202], timeout=10, what="the stream's verification")
        key = idp.keys[0]
        now = int(time.time())

        def open_ws(sub):
            tok = token(key, sub=sub, iat=now - 10)
            return connect(f"ws://127.0.0.1:{g.port}/api/live", additional_headers={"Authorization": f"Bearer {tok}"},
                           open_timeout=10)

        henry, iris = open_ws("henry"), open_ws("iris")
        henry.send("hello")
        assert henry.recv(timeout=5) == "hello"
        started = time.monotonic()
        assert transmitter.push(CAEP + "session-revoked", iss_sub("henry")).status_code == 202
        with pytest.raises(ConnectionClosed):
            while True:
                henry.recv(timeout=3)
        assert henry.close_code == 1008 and time.monotonic() - started < 1.5
        iris.send("still here")
        assert iris.recv(timeout=5) == "still here"
        iris.close()
        wait_for(lambda: metric(g, 'tokengate_tunnel_closes_total{reason="revoked"}') == 1, timeout=5,
                 what="the revoked tunnel counted")
    finally:
        ws_up.stop()
