"""Failure kinds seen from outside: every refusal is counted in
`tokengate_auth_failures_total` under the code the client was sent, the access log names it
(`rejection`) and, for what the gateway could not decide or a login it could not finish, a
stable `reason`. Real gateway, real JWKS server, real AS."""
import json

import requests

from support.gateway import Gateway, bearer_get as call
from support.waiting import wait_for
from test_bearer import (JWKSServer, bearer_config, ec_key, first_fetch_failed, gw, idp, second_idp,  # noqa: F401
                         token)
from test_login import HTML, env, login_as, login_env  # noqa: F401


def access_lines(g):
    lines = []
    for line in g.output().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("msg") == "access":
            lines.append(entry.get("metadata", entry))
    return lines


def access_line(g, request_id, timeout=5):
    return wait_for(lambda: next((line for line in access_lines(g) if line.get("request_id") == request_id), None),
                    timeout, interval=0.05,
                    what=lambda: f"the access line of {request_id}; output ends: {g.output()[-2000:]}")


def auth_failure_samples(g):
    m = requests.get(f"http://127.0.0.1:{g.admin}/metrics", timeout=5).text
    return {line for line in m.splitlines() if line.startswith("tokengate_auth_failures_total{")}


def test_each_refusal_is_counted_and_logged_under_the_code_it_was_sent(gw, idp):
    key = idp.keys[0]
    refusals = [
        (call(gw), 401, "no_credentials"),
        (requests.get(gw.url("/api/orders/1"), headers={"Authorization": "Bearer a b"}, timeout=10), 400,
         "invalid_request"),
        (call(gw, tok=token(key, aud="other")), 401, "invalid_token"),
        (call(gw, tok=token(key, aud="other")), 401, "invalid_token"),
        (call(gw, tok=token(key, scope="orders:write")), 403, "insufficient_scope"),
    ]
    for r, status, code in refusals:
        assert r.status_code == status, r.text
        if code != "no_credentials":
            assert f'error="{code}"' in r.headers["WWW-Authenticate"]
        line = access_line(gw, r.headers["X-Request-Id"])
        assert line["rejection"] == code, line
        assert "reason" not in line, line
    assert auth_failure_samples(gw) == {
        'tokengate_auth_failures_total{error="insufficient_scope"} 1',
        'tokengate_auth_failures_total{error="invalid_request"} 1',
        'tokengate_auth_failures_total{error="invalid_token"} 2',
        'tokengate_auth_failures_total{error="no_credentials"} 1',
    }
    # An accepted request is neither counted nor marked.
    ok = call(gw, tok=token(key))
    assert ok.status_code == 200
    assert "rejection" not in access_line(gw, ok.headers["X-Request-Id"])


def test_keys_never_loaded_is_503_with_its_reason_and_no_auth_failure(upstream, second_idp):
    srv = JWKSServer()
    srv.down = True
    key = ec_key("one-1")
    srv.keys = [key]
    try:
        g = Gateway(bearer_config(upstream, srv, second_idp[1]))
        g.start_no_wait()
        try:
            first_fetch_failed(g)
            r = call(g, tok=token(key))
            assert r.status_code == 503 and r.json()["error"] == "temporarily_unavailable"
            assert r.headers["Retry-After"] == "5"
            line = access_line(g, r.headers["X-Request-Id"])
            assert line["rejection"] == "unavailable" and line["reason"] == "keys_not_loaded", line
            assert "no keys loaded for issuer one" in line["detail"]
            # Not the caller's fault: not an auth failure.
            assert auth_failure_samples(g) == set()
        finally:
            g.stop()
    finally:
        srv.stop()


def test_refused_callbacks_log_their_reason(env):
    r = env.get("/oauth2/callback?code=x")
    assert r.status_code == 400 and "not valid" in r.text
    line = access_line(env.gw, r.headers["X-Request-Id"])
    assert line["reason"] == "no_state" and line["detail"].startswith("callback without state"), line

    forged = env.to_callback().replace("state=", "state=x")
    r = env.get(forged)
    assert r.status_code == 400 and "not started in this browser" in r.text
    line = access_line(env.gw, r.headers["X-Request-Id"])
    assert line["reason"] == "no_pending_login", line

    # A page navigation without a session is a redirect to the AS, not a refusal; an API call is.
    r = requests.get(env.url("/orders/1"), headers={"Accept": "application/json"}, allow_redirects=False, timeout=10)
    assert r.status_code == 401 and r.json()["error"] == "login_required"
    assert access_line(env.gw, r.headers["X-Request-Id"])["rejection"] == "login_required"
    assert 'tokengate_auth_failures_total{error="login_required"} 1' in auth_failure_samples(env.gw)


def test_refused_back_channel_logouts_log_their_reason(env):
    cases = [
        ({}, "no_logout_token"),
        ({"logout_token": "not-a-jws"}, "malformed_logout_token"),
    ]
    for form, reason in cases:
        r = requests.post(env.url("/oauth2/backchannel-logout"), data=form, timeout=10)
        assert r.status_code == 400 and r.json()["error"] == "invalid_request"
        assert access_line(env.gw, r.headers["X-Request-Id"])["reason"] == reason
