"""WebSockets on login routes: opened after the login round-trip with the session cookie,
refused without one before anything reaches the upstream, and closed by the gateway (Close
1008 to the client and to the upstream) when the session ends — RP logout from another
tab, back-channel logout posted to another replica sharing Redis, the absolute timeout —
within `session.cache_ttl` plus the re-check interval. Short config windows, no long sleeps."""
import time

import pytest
import requests
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from support.pacing import paced, during
from support.redis_server import RedisServer
from support.waiting import wait_for
from support.ws_upstream import WSUpstream
from test_backchannel_logout import logout_token
from test_login import LoginEnv, login_as, parse_qs_form  # noqa: F401 — fixture
from test_websocket import access_lines

LOGIN_OR_TOKEN = """  - name: mixed
    match: { path_prefix: /mixed/ }
    upstream: app
    auth: login_or_token
    client: web
    issuers: [as1]"""


@pytest.fixture
def ws_upstream():
    u = WSUpstream()
    yield u
    u.stop()


@pytest.fixture
def redis():
    r = RedisServer().start()
    yield r
    r.close()


def open_ws(env, path="/live", cookie=None):
    cookie = cookie or env.session_cookie()
    return connect(f"ws://127.0.0.1:{env.gw.port}{path}", additional_headers={"Cookie": f"tokengate_session={cookie}"},
                   open_timeout=10)


def ended_with_1008(ws, within):
    """Reads until the gateway closes; True if it did within `within` seconds with 1008."""
    started = time.time()
    try:
        while time.time() - started < within:
            ws.recv(timeout=within)
    except ConnectionClosed:
        return ws.close_code == 1008 and time.time() - started < within
    except TimeoutError:
        return False
    return False


def rp_logout(env, cookie):
    """RP-initiated logout as another tab does it: the confirmation page, then its form."""
    headers = {"Cookie": f"tokengate_session={cookie}"}
    page = requests.get(env.url("/oauth2/logout"), headers=dict(headers, Accept="text/html"), timeout=10)
    r = requests.post(env.url("/oauth2/logout"), data={"token": parse_qs_form(page.text)["token"]}, headers=headers,
                      allow_redirects=False, timeout=10)
    assert r.status_code == 302, r.text


def test_login_route_echo_and_refusal_without_a_session(login_as, ws_upstream, tmp_path):  # noqa: F811
    env = LoginEnv(login_as, ws_upstream, tmp_path)
    try:
        env.login()
        with open_ws(env) as ws:
            ws.send("after login")
            assert ws.recv(timeout=5) == "after login"
        handshakes = ws_upstream.connections
        # No session, or a forged one: 401 login_required, and the upstream sees nothing.
        for headers in ({}, {"Cookie": "tokengate_session=forged"}):
            with pytest.raises(InvalidStatus) as e:
                connect(f"ws://127.0.0.1:{env.gw.port}/live", additional_headers=headers, open_timeout=10)
            assert e.value.response.status_code == 401
        assert ws_upstream.connections == handshakes
    finally:
        env.stop()


def test_rp_logout_in_another_tab_closes_the_tunnel_with_1008(login_as, ws_upstream, tmp_path):  # noqa: F811
    env = LoginEnv(login_as, ws_upstream, tmp_path, session=", cache_ttl: 1s")
    try:
        env.login()
        cookie = env.session_cookie()
        with open_ws(env) as ws:
            ws.send("x")
            assert ws.recv(timeout=5) == "x"
            rp_logout(env, cookie)
            # cache_ttl 1s, re-checked every 0.5s: well within 3s.
            assert ended_with_1008(ws, within=3)
        assert wait_for(lambda: any(l["reason"] == "session_ended" for l in access_lines(env.gw, "tunnel")))
        assert wait_for(lambda: ws_upstream.closes and ws_upstream.closes[-1] and ws_upstream.closes[-1][0] == 1008)
    finally:
        env.stop()


def test_absolute_timeout_closes_the_tunnel(login_as, ws_upstream, tmp_path):  # noqa: F811
    env = LoginEnv(login_as, ws_upstream, tmp_path, session=", absolute_timeout: 5s, cache_ttl: 1s")
    try:
        started = time.time()
        env.login()
        with open_ws(env) as ws:
            ws.send("x")
            assert ws.recv(timeout=5) == "x"
            assert ended_with_1008(ws, within=8)
        assert time.time() - started >= 4
    finally:
        env.stop()


def test_backchannel_logout_on_another_replica_closes_the_tunnel(login_as, ws_upstream, tmp_path, redis):  # noqa: F811
    top = f"store: {{ url: \"redis://127.0.0.1:{redis.port}/0\", prefix: \"tg:\" }}"
    (tmp_path / "b").mkdir()
    a = LoginEnv(login_as, ws_upstream, tmp_path, extra_top=top, session=", cache_ttl: 1s")
    b = LoginEnv(login_as, ws_upstream, tmp_path / "b", extra_top=top, session=", cache_ttl: 1s", share_client_of=a,
                 public_base=a.url("").rstrip("/"))
    try:
        a.login()
        cookie = a.session_cookie()
        with open_ws(a, cookie=cookie) as on_a, open_ws(b, cookie=cookie) as on_b:
            for ws in (on_a, on_b):
                ws.send("x")
                assert ws.recv(timeout=5) == "x"
            # The AS tells replica B; replica A's tunnel ends too, through Redis.
            token = logout_token(login_as, sub=a_sub(a, cookie))
            assert requests.post(b.url("/oauth2/backchannel-logout"), data={"logout_token": token}, timeout=10).status_code == 200
            assert ended_with_1008(on_a, within=3)
            assert ended_with_1008(on_b, within=3)
    finally:
        a.stop()
        b.stop()


def a_sub(env, cookie):
    """The session's subject, from the tunnel's handshake access line."""
    for line in access_lines(env.gw):
        if line.get("sub"):
            return line["sub"]
    raise AssertionError("no access line with sub")


def test_login_or_token_route_takes_a_session_or_a_token(login_as, ws_upstream, tmp_path):  # noqa: F811
    env = LoginEnv(login_as, ws_upstream, tmp_path, extra_route=LOGIN_OR_TOKEN)
    try:
        env.login()
        with open_ws(env, path="/mixed/live") as ws:
            ws.send("session")
            assert ws.recv(timeout=5) == "session"
        now = int(time.time())
        tok = login_as.sign({"iss": login_as.issuer, "aud": "api", "sub": "svc", "iat": now, "exp": now + 300,
                             "client_id": "svc", "jti": str(now)})
        with connect(f"ws://127.0.0.1:{env.gw.port}/mixed/live", additional_headers={"Authorization": f"Bearer {tok}"},
                     open_timeout=10) as ws:
            ws.send("token")
            assert ws.recv(timeout=5) == "token"
        with pytest.raises(InvalidStatus) as e:
            connect(f"ws://127.0.0.1:{env.gw.port}/mixed/live", additional_headers={"Authorization": "Bearer nope"},
                    open_timeout=10)
        assert e.value.response.status_code == 401
        # The token side takes Bearer and DPoP tokens: a challenge for each (RFC 9449 §7.1),
        # the error on the scheme the client used.
        challenges = e.value.response.headers.get_all("WWW-Authenticate")
        assert [c.split(" ")[0] for c in challenges] == ["Bearer", "DPoP"]
        assert 'error="invalid_token"' in challenges[0] and "error=" not in challenges[1]
    finally:
        env.stop()


def test_session_idle_timeout_closes_even_a_busy_tunnel(login_as, ws_upstream, tmp_path):  # noqa: F811
    # An open WebSocket is not activity: the session's idle deadline (5s) still ends it.
    env = LoginEnv(login_as, ws_upstream, tmp_path, session=", idle_timeout: 5s, cache_ttl: 1s")
    try:
        env.login()
        with open_ws(env) as ws:
            opened = time.time()
            closed = None
            try:
                for _ in paced(during(10, since=opened), 0.3):
                    ws.send("busy")
                    assert ws.recv(timeout=2) == "busy"
            except ConnectionClosed:
                closed = time.time() - opened
            assert closed is not None and 3 < closed < 8, closed
            assert ws.close_code == 1008
    finally:
        env.stop()


def test_a_refresh_the_as_refuses_closes_the_tunnel(authserver_factory, ws_upstream, tmp_path):
    # Access tokens live 4s and refresh tokens 1s: the refresh due 2s before expiry is
    # refused (invalid_grant), which ends the session, and so the WebSocket.
    a = authserver_factory(login="form", rotate_refresh_tokens=True, access_token_lifetime=4, refresh_token_lifetime=1)
    env = LoginEnv(a, ws_upstream, tmp_path, session=", refresh_margin: 2s, cache_ttl: 1s")
    try:
        env.login()
        with open_ws(env) as ws:
            ws.send("x")
            assert ws.recv(timeout=5) == "x"
            assert ended_with_1008(ws, within=8)
        assert a.refresh_count >= 1 and a.refresh_ok_count == 0
    finally:
        env.stop()
