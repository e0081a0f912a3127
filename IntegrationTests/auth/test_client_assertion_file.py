"""`auth: client_assertion_file` (RFC 7523 §2.2) end to end: the gateway's client has no secret
and no key, only a file holding a JWT someone else issued — a workload identity's projected
token. The AS (idpyoidc) verifies each assertion's signature with the key registered for the
client (token_endpoint_auth_method private_key_jwt). The file is rotated between a login, a
refresh, a token exchange, an introspection and a logout's revocation, and inside a flow: during
a login (after its PAR, before its code exchange), between two refreshes of one session and
between two token exchanges of one route. Each request to the AS carries the file's content at
the time it is sent, and the AS verified it (one signed by another key it refuses); an expired or
unreadable file is a 503, never a request with a stale assertion.

The tokens here have no `jti`: a projected token is sent many times, and the AS would take a
jti as single-use."""
import json
import os
import time

import pytest
import requests
from cryptojwt.jws.jws import JWS

from support.authserver.server import TOKEN_EXCHANGE, new_client_key
from support.gateway import Gateway
from support.waiting import wait_for, sleep_into_second
from test_login import HTML, SESSION_KEY, parse_qs_form

TARGET = "https://orders.internal/"
OPQ_SECRET = "opq-secret-0123456789abcdef0123456789ab"


class WorkloadIdentity:
    """The issuer of the projected token (as the kubelet would get it) and its file."""

    def __init__(self, a, path):
        self.a = a
        self.path = path
        self.key, self.jwks = new_client_key(kid="k8s-1")
        self.n = 0

    def mint(self, lifetime=600, key=None):
        """A fresh token: iss = sub = the client (the AS finds the client's key by iss), signed
        by the issuer's key (or by key: a forger's)."""
        key = key or self.key
        self.n += 1
        now = int(time.time())
        claims = {"iss": "web", "sub": "web", "aud": [self.a.issuer, self.a.token_endpoint], "iat": now,
                  "exp": now + lifetime, "n": self.n}
        return JWS(json.dumps(claims), alg=key.alg).sign_compact([key], protected={"kid": key.kid})

    def rotate(self, lifetime=600, key=None):
        """Writes a new token the way the kubelet does (a new file renamed over the old), and
        waits past the second in which the gateway may still hold the last one."""
        token = self.mint(lifetime, key)
        with open(self.path + ".tmp", "w") as f:
            f.write(token + "\n")
        os.replace(self.path + ".tmp", self.path)
        self.settle()
        return token

    def remove(self):
        """Removes the file, and waits as `rotate` does."""
        os.remove(self.path)
        self.settle()

    @staticmethod
    def settle():
        """Waits past the second in which the gateway may still hold the file's last content.
        Not an event: the gateway looks at the file again at most once a (whole) second and
        says nothing when it does, and a request sent to find out would carry an assertion of
        its own. From the next second on, its next use looks."""
        sleep_into_second(time.time(), 1)


def config(a, path, upstream_port):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
public_url: http://127.0.0.1:{{PORT}}
session: {{ keys: ["{SESSION_KEY}"], secure_cookie: false, refresh_margin: 1s }}
issuers:
  as1:
    issuer: "{a.issuer}"
    discovery: true
    audiences: [api]
    algorithms: [ES256, RS256]
    introspection: {{ client: web }}
clients:
  web:
    issuer: as1
    client_id: web
    auth: client_assertion_file
    assertion_file: "{path}"
    scopes: [openid, profile, email, offline_access]
    extra: {{ prompt: consent }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream_port}" }}
routes:
  - name: orders
    match: {{ path_prefix: /api/orders/ }}
    upstream: app
    auth: bearer
    issuers: [as1]
    require: {{ scopes: [orders:read] }}
    token_exchange: {{ issuer: as1, client: web, resource: {TARGET}, scope: orders:read }}
  - name: opaque
    match: {{ path_prefix: /api/opaque/ }}
    upstream: app
    auth: bearer
    issuers: [as1]
    require: {{ scopes: [orders:read] }}
  - name: web
    match: {{ path_prefix: / }}
    upstream: app
    auth: login
    client: web
"""


@pytest.fixture
def env(authserver_factory, upstream, tmp_path):
    a = authserver_factory(login="form", rotate_refresh_tokens=True, access_token_lifetime=3, id_token_lifetime=300)
    wi = WorkloadIdentity(a, str(tmp_path / "oidc-token"))
    g = Gateway("")
    a.add_client("web", jwks=wi.jwks, token_endpoint_auth_method="private_key_jwt",
                 scopes=["openid", "profile", "email", "offline_access", "orders:read"],
                 redirect_uri=g.url("/oauth2/callback"))
    # A client whose access tokens are opaque: the gateway introspects them (as web).
    a.add_client("opq", client_secret=OPQ_SECRET, scopes=["orders:read"], audience=["api"],
                 access_token_format="opaque")
    first = wi.rotate()
    g.write_config(config(a, wi.path, upstream.port))
    g.start()
    yield a, wi, g, first
    g.stop()


def sent(a, path, grant_type=None):
    return [c["assertion"] for c in a.client_assertions
            if c["path"] == path and (grant_type is None or c["grant_type"] == grant_type)]


def answered(a, path, grant_type=None):
    """(assertion, the AS's status) of each request to path that carried one. The AS takes the
    client as private_key_jwt: a 2xx means it verified the assertion's signature with the key
    registered for the client."""
    return [(c["assertion"], c["status"]) for c in a.client_assertions
            if c["path"] == path and (grant_type is None or c["grant_type"] == grant_type)]


def login(a, g, browser, path="/orders/7"):
    r = browser.get(g.url(path), headers=HTML, allow_redirects=False, timeout=15)
    assert r.status_code == 302, (r.status_code, r.text, g.output()[-2000:])
    location = a.login_with_form(browser, r.headers["Location"])
    assert location.startswith(g.url("/oauth2/callback")), location
    r = browser.get(location, headers=HTML, allow_redirects=False, timeout=15)
    assert r.status_code == 302, (r.status_code, r.text, g.output()[-3000:])
    return browser.get(g.url(path), headers=HTML, allow_redirects=False, timeout=15)


def bearer(g, token):
    return requests.get(g.url("/api/orders/1"), headers={"Authorization": f"Bearer {token}"}, timeout=15)


def test_each_request_carries_the_files_current_assertion_through_rotation(env):
    a, wi, g, first = env
    browser = requests.Session()
    # The login: PAR and the code exchange carry the file's content.
    r = login(a, g, browser)
    logged_in = time.time()
    assert r.status_code == 200, r.text
    assert sent(a, "/par") == [first]
    assert sent(a, "/token", "authorization_code") == [first]

    # Rotated: the refresh carries the new token.
    second = wi.rotate()
    sleep_into_second(logged_in, 2)  # the access token (3 s) is within the 1 s margin
    r = browser.get(g.url("/after-refresh"), headers=HTML, allow_redirects=False, timeout=15)
    assert r.status_code == 200, (r.text, g.output()[-2000:])
    assert a.refresh_ok_count == 1
    assert sent(a, "/token", "refresh_token") == [second]

    # Rotated again: the token exchange carries the third.
    third = wi.rotate()
    r = bearer(g, a.code_flow(user="alice")["access_token"])
    assert r.status_code == 200, (r.text, g.output()[-2000:])
    assert sent(a, "/token", TOKEN_EXCHANGE) == [third]

    # Rotated: the introspection of an opaque token carries the new one.
    introspected = wi.rotate()
    opaque = a.client_credentials_token("opq", scope="orders:read", secret=OPQ_SECRET)["access_token"]
    assert opaque.count(".") != 2
    r = requests.get(g.url("/api/opaque/1"), headers={"Authorization": f"Bearer {opaque}"}, timeout=15)
    assert r.status_code == 200, (r.text, g.output()[-2000:])
    assert sent(a, "/introspection") == [introspected]

    # And a new login after one more rotation: both of its requests carry the fourth.
    fourth = wi.rotate()
    r = login(a, g, requests.Session(), "/orders/8")
    assert r.status_code == 200, r.text
    assert sent(a, "/par") == [first, fourth]
    assert sent(a, "/token", "authorization_code") == [first, fourth]

    # Logout: the revocation carries the fifth.
    fifth = wi.rotate()
    r = browser.get(g.url("/oauth2/logout"), headers=HTML, allow_redirects=False, timeout=15)
    token = parse_qs_form(r.text)["token"]
    r = browser.post(g.url("/oauth2/logout"), data={"token": token}, allow_redirects=False, timeout=15)
    assert r.status_code == 302
    # The AS records the call as it arrives and its status once answered: wait for the answer.
    wait_for(lambda: a.revocations and a.revocations[-1]["status"] is not None, 5, interval=0.05,
             what="the revocation's answer")
    assert sent(a, "/revocation") == [fifth] and a.revocations[-1]["status"] == 200
    held = (first, second, third, introspected, fourth, fifth)
    assert len(set(held)) == 6
    # The gateway never sent an assertion the file did not hold at the time.
    assert all(c["assertion"] in held for c in a.client_assertions)
    # And the AS verified each one it was sent (PAR's success is 201, RFC 9126 §2.2); the
    # revocation's status is recorded as the AS answers, after the logout's redirect.
    wait_for(lambda: all(c["status"] is not None for c in a.client_assertions), 5, interval=0.05,
             what="the AS's answers")
    assert all(c["status"] in (200, 201) for c in a.client_assertions), a.client_assertions


def test_a_rotation_inside_a_flow_reaches_the_flows_next_request(env):
    """The file rotated in the middle of each flow: while the user is at the AS (after the PAR,
    before the code exchange at the callback), between two refreshes of one session, and between
    two token exchanges of one route. Each request carries the file's content at the time it
    is sent, and the AS verified each of them."""
    a, wi, g, first = env
    browser = requests.Session()
    r = browser.get(g.url("/orders/9"), headers=HTML, allow_redirects=False, timeout=15)
    assert r.status_code == 302, (r.status_code, r.text, g.output()[-2000:])
    assert answered(a, "/par") == [(first, 201)]  # RFC 9126 §2.2: 201 Created
    location = a.login_with_form(browser, r.headers["Location"])
    assert location.startswith(g.url("/oauth2/callback")), location

    # Rotated while the user is at the AS: the code exchange of the same login carries the new one.
    at_the_as = wi.rotate()
    r = browser.get(location, headers=HTML, allow_redirects=False, timeout=15)
    assert r.status_code == 302, (r.status_code, r.text, g.output()[-3000:])
    assert answered(a, "/token", "authorization_code") == [(at_the_as, 200)]
    assert answered(a, "/par") == [(first, 201)]  # the login's PAR was not sent again
    r = browser.get(g.url("/orders/9"), headers=HTML, allow_redirects=False, timeout=15)
    assert r.status_code == 200, (r.status_code, r.text)

    # One session, two refreshes, the file rotated after the first: each carries the content of
    # its own time. Its access tokens live 3 s and are refreshed within 1 s of their end; a
    # second refresh of a session comes only after the 30 s in which the gateway answers a
    # refresh's outcome again (RefreshCoordinator): the loop asks until it has come.
    def refreshes(n):
        r = browser.get(g.url("/after-refresh"), headers=HTML, allow_redirects=False, timeout=15)
        assert r.status_code == 200, (r.status_code, r.text, g.output()[-2000:])
        return a.refresh_ok_count == n

    first_refresh = wi.rotate()
    wait_for(lambda: refreshes(1), 15, interval=0.2, what="the session's first refresh")
    second_refresh = wi.rotate()
    wait_for(lambda: refreshes(2), 60, interval=0.5, what="the session's second refresh")
    assert answered(a, "/token", "refresh_token") == [(first_refresh, 200), (second_refresh, 200)]

    # One route, two token exchanges (two callers), the file rotated between them.
    first_exchange = wi.rotate()
    r = bearer(g, a.code_flow(user="alice")["access_token"])
    assert r.status_code == 200, (r.text, g.output()[-2000:])
    second_exchange = wi.rotate()
    r = bearer(g, a.code_flow(user="bob")["access_token"])
    assert r.status_code == 200, (r.text, g.output()[-2000:])
    assert answered(a, "/token", TOKEN_EXCHANGE) == [(first_exchange, 200), (second_exchange, 200)]

    held = (first, at_the_as, first_refresh, second_refresh, first_exchange, second_exchange)
    assert len(set(held)) == len(held)
    # Nothing else was sent, and the AS verified everything that was.
    assert [c["assertion"] for c in a.client_assertions] == list(held)
    assert all(c["status"] in (200, 201) for c in a.client_assertions)


def test_the_as_refuses_an_assertion_its_key_does_not_verify(env):
    """The AS checks each assertion's signature: a file whose token was signed by another key
    (the same kid, iss and sub) is refused there (401), and the gateway's caller gets a 503,
    not the upstream. The next rotation, signed right, is taken again."""
    a, wi, g, _ = env
    forger, _ = new_client_key(kid=wi.key.kid)
    forged = wi.rotate(key=forger)
    r = bearer(g, a.code_flow(user="alice")["access_token"])
    assert r.status_code == 503, (r.status_code, r.text)
    assert r.json()["error"] == "temporarily_unavailable" and r.headers.get("Retry-After")
    assert "assertion" not in r.text and wi.path not in r.text  # no internals on the wire
    assert answered(a, "/token", TOKEN_EXCHANGE) == [(forged, 401)]

    fresh = wi.rotate()
    r = bearer(g, a.code_flow(user="alice")["access_token"])
    assert r.status_code == 200, (r.text, g.output()[-2000:])
    assert answered(a, "/token", TOKEN_EXCHANGE) == [(forged, 401), (fresh, 200)]


def test_an_expired_file_is_a_503_and_nothing_is_sent(env):
    a, wi, g, _ = env
    subject = a.code_flow(user="bob")["access_token"]
    wi.rotate(lifetime=-30)  # the kubelet stopped rotating it: its exp has passed
    before = list(a.client_assertions)

    r = bearer(g, subject)  # token exchange
    assert r.status_code == 503, (r.status_code, r.text)
    assert r.json()["error"] == "temporarily_unavailable" and r.headers.get("Retry-After")
    assert "assertion" not in r.text and wi.path not in r.text  # no internals on the wire
    r = requests.get(g.url("/orders/1"), headers=HTML, allow_redirects=False, timeout=15)  # login start (PAR)
    assert r.status_code == 503 and r.headers.get("Retry-After"), (r.status_code, r.text)
    assert wi.path not in r.text

    assert a.client_assertions == before  # no stale assertion reached the AS
    assert g.logged(f"client assertion file {wi.path}: expired")

    # Rotated: it works again, with the new token (for a new subject token: the AS's access
    # tokens here live 3 s).
    fresh = wi.rotate()
    r = bearer(g, a.code_flow(user="alice")["access_token"])
    assert r.status_code == 200, (r.text, g.output()[-2000:])
    assert sent(a, "/token", TOKEN_EXCHANGE) == [fresh]


def test_an_unreadable_file_is_a_503_and_nothing_is_sent(env):
    a, wi, g, _ = env
    subject = a.code_flow(user="bob")["access_token"]
    wi.remove()
    before = list(a.client_assertions)
    r = bearer(g, subject)
    assert r.status_code == 503, (r.status_code, r.text)
    r = requests.get(g.url("/orders/1"), headers=HTML, allow_redirects=False, timeout=15)
    assert r.status_code == 503, (r.status_code, r.text)
    assert a.client_assertions == before
    assert g.logged(f"client assertion file {wi.path}: unreadable")
