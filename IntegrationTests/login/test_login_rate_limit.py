"""`login.rate_limit` (docs/login.md, "The login endpoints as routes"): the browser's login
endpoints run on a built-in route whose chain counts a limit per client address before the
endpoint answers, so one client cannot flood `/oauth2/start` (each start is a PAR call to the AS
and a login state kept) or the callback. From the attacker's side: past the budget they answer
429 with Retry-After; another client address keeps its own budget; the endpoints the AS calls
and the proxied routes are not counted. Real gateway, real AS (idpyoidc)."""
import pytest

from test_login import LoginEnv

LIMIT = """rate_limits:
  login-per-ip: { key: ip, rate: 1/m, burst: 2 }
login:
  rate_limit: login-per-ip
trusted_proxies: [127.0.0.1/32]"""


@pytest.fixture
def login_as(authserver_factory):
    return authserver_factory(login="form")


def test_the_login_endpoints_are_limited_per_client_address(login_as, upstream, tmp_path):
    e = LoginEnv(login_as, upstream, tmp_path, auth="client_secret_basic", extra_top=LIMIT)
    try:
        # The round-trip: the protected page sends the browser to the AS; the callback is the
        # first request counted (the budget is 2).
        page = e.login()
        assert page.status_code == 200, page.text
        start = e.get("/oauth2/start?rd=/orders/1")
        assert start.status_code == 302, (start.status_code, start.text)
        assert "login-per-ip" in start.headers["RateLimit-Policy"], start.headers
        refused = e.get("/oauth2/start?rd=/orders/1")
        assert refused.status_code == 429, (refused.status_code, refused.text)
        assert int(refused.headers["Retry-After"]) >= 1
        assert e.get("/oauth2/logout").status_code == 429, "the browser's login endpoints share one budget"
        # What the AS calls (from one address for every user) is never counted: a back-channel
        # logout still reaches its own check (GET is not its method).
        assert e.get("/oauth2/backchannel-logout").status_code == 405
        # Another client address (through the trusted proxy) has its own budget.
        other = e.get("/oauth2/start?rd=/orders/1", headers={"X-Forwarded-For": "10.0.0.9", "Accept": "text/html"})
        assert other.status_code == 302, (other.status_code, other.text)
        # The proxied route is not the login route: its requests are not counted.
        for _ in range(3):
            assert e.get("/orders/2").status_code == 200
        log = e.gw.output()
        assert '"route":"login"' in log and '"status":429' in log, log[-2000:]
    finally:
        e.stop()


def test_a_limit_by_caller_on_the_login_endpoints_is_a_config_error(login_as, upstream, tmp_path):
    # The login endpoints have no caller yet: a `sub` budget would be one for everyone. The
    # gateway refuses to start, naming the key and the fix.
    bad = LIMIT.replace("key: ip", "key: sub")
    with pytest.raises(RuntimeError) as refused:
        LoginEnv(login_as, upstream, tmp_path, auth="client_secret_basic", extra_top=bad)
    problem = ('"login-per-ip" counts by sub: the login endpoints have no caller yet, '
               "and a header is the client's to vary; count them by ip")
    assert "login.rate_limit" in str(refused.value) and problem in str(refused.value), refused.value
