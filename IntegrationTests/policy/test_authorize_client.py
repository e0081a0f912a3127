"""An authorizer reached with a token the gateway asks for itself (`authorizers.NAME.auth:
{ client: NAME }`, docs/policy.md): the client credentials grant (RFC 6749 §4.4) at the real
authorization server, as one of the gateway's `clients:`, the token endpoint from the
issuer's metadata. The PDP checks the token against the AS's keys; one token serves many
calls; a token the PDP refuses is never sent again, and no new one is asked for within 5 s
of a refusal (a PDP refusing every token does not cost a token request per call); an AS that
refuses the gateway leaves the PDP uncalled and the request answered by `on_error`."""
import json
import time

import pytest
import requests
from joserfc import jwt
from joserfc.jwk import KeySet

from support.authzen_pdp import PDP
from support.waiting import wait_for
from test_bearer import idp, token as mint  # noqa: F401 — idp is a fixture

SECRET = "pdp-caller-secret-0123456789abcdef"


def config(upstream, idp, a, pdp_url, on_error="deny", secret=SECRET, auth=None):  # noqa: F811
    auth = auth or '{ client: pdp-caller, scope: "pdp:evaluate" }'
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], algorithms: [ES256] }}
  as1: {{ issuer: "{a.issuer}", discovery: true, audiences: [api] }}
clients:
  pdp-caller: {{ issuer: as1, client_id: pdp-caller, auth: client_secret_basic, secret: "{secret}" }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}", timeout: 5s }}
authorizers:
  pdp:
    url: "{pdp_url}"
    timeout: 2s
    on_error: {on_error}
    cache: {{ allow_ttl: 10s }}
    auth: {auth}
routes:
  - name: orders
    match: {{ path_prefix: /orders/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    authorize: pdp
"""


def bearer(idp, sub):  # noqa: F811
    return {"Authorization": "Bearer " + mint(idp.keys[0], sub=sub)}


def grants(a):
    return [t for t in a.token_requests if t["grant_type"] == "client_credentials"]


class Checker:
    """The PDP's check of the Authorization value: a JWT the AS signed, issued to
    pdp-caller with the scope asked for. `refuse_next`: the next good token is refused once
    (as if revoked)."""

    def __init__(self, a):
        self.keys = KeySet.import_key_set(a.jwks())
        self.issuer = a.issuer
        self.refuse_next = False
        self.seen = []

    def __call__(self, value):
        if not value or not value.startswith("Bearer "):
            return False
        token = value[len("Bearer "):]
        try:
            claims = jwt.decode(token, self.keys).claims
        except Exception:  # noqa: BLE001 — any failure is a refusal
            return False
        ok = claims.get("iss") == self.issuer and claims.get("client_id") == "pdp-caller" \
            and claims.get("scope") == "pdp:evaluate"
        if ok and self.refuse_next:
            self.refuse_next = False
            return False
        self.seen.append(token)
        return ok


@pytest.fixture
def env(authserver, upstream, idp, gateway_factory):  # noqa: F811
    a = authserver
    a.add_client("pdp-caller", client_secret=SECRET, token_endpoint_auth_method="client_secret_basic",
                 scopes=["pdp:evaluate"])
    check = Checker(a)
    p = PDP(token=check).start()
    yield a, p, check, lambda **kw: gateway_factory(config(upstream, idp, a, p.url, **kw))
    p.stop()


def wait_ready(gw, idp):  # noqa: F811
    """The issuer's metadata (its token endpoint) is read at start, off the request path."""
    def allowed():
        allowed.last = requests.get(gw.url("/orders/0"), headers=bearer(idp, "warm"), timeout=5)
        return allowed.last.status_code == 200
    wait_for(allowed, 5, interval=0.1, what=lambda: allowed.last.text)


def asked_after(a, request):
    """Whether the AS has had a token request yet; if not, sends `request` (which makes the
    gateway ask it once its metadata is in)."""
    if grants(a):
        return True
    request()
    return False


def test_the_pdp_gets_the_gateways_own_token_and_one_token_serves_many_calls(env, idp):  # noqa: F811
    a, p, check, start = env
    gw = start()
    wait_ready(gw, idp)
    for sub in ("alice", "bob", "carol", "dave", "erin", "frank"):
        r = requests.get(gw.url("/orders/1"), headers=bearer(idp, sub), timeout=5)
        assert r.status_code == 200, r.text
    # Each worker asks once (it holds its own), not once a call.
    assert 1 <= len([g for g in grants(a) if g["status"] == 200]) <= 2, grants(a)
    assert len(p.evaluation_calls()) >= 7 and not p.unauthorized
    assert len(set(check.seen)) <= 2


def test_a_token_the_pdp_refuses_is_never_sent_again(env, idp):  # noqa: F811
    a, p, check, start = env
    gw = start()
    wait_ready(gw, idp)
    before = len(grants(a))
    check.refuse_next = True
    # Refused: the PDP's 401 is an error, and on_error: deny answers 403.
    refused = [requests.get(gw.url("/orders/2"), headers=bearer(idp, f"u{i}"), timeout=5) for i in range(4)]
    assert 403 in [r.status_code for r in refused], [r.text for r in refused]
    assert len(p.unauthorized) == 1
    # Every later call carries a good token: once the refusal's backoff (5 s) is over, the
    # refused worker asks the AS again at its next call (which worker a connection lands on is
    # the kernel's choice: call until it has).
    # Real time must pass: the backoff is the gateway's clock, and a request sent to see it end
    # would be refused again (and restart it).
    time.sleep(5.2)
    asked = before
    for i in range(30):
        assert requests.get(gw.url("/orders/3"), headers=bearer(idp, f"v{i}"), timeout=5).status_code == 200
        asked = len(grants(a))
        if asked > before and i >= 3:
            break
    assert asked > before
    assert len(p.unauthorized) == 1
    assert p.unauthorized[0] not in ["Bearer " + t for t in check.seen[-4:]]


def test_a_pdp_refusing_every_token_does_not_cost_a_token_request_per_call(env, idp):  # noqa: F811
    """Without a backoff each call would drop the refused token and ask the AS for another:
    one token request per request. Within the 5 s after a refusal the worker asks none, and
    the calls take on_error."""
    a, p, check, start = env
    gw = start(on_error="unavailable")
    wait_ready(gw, idp)
    before = len(grants(a))
    p.token = lambda value: False  # the PDP now refuses whatever it is sent
    began = time.monotonic()
    answers = [requests.get(gw.url("/orders/5"), headers=bearer(idp, f"w{i}"), timeout=5) for i in range(20)]
    assert time.monotonic() - began < 5, "the calls outlasted the backoff: the count below means nothing"
    assert all(r.status_code == 503 and r.json()["error"] == "temporarily_unavailable" for r in answers), \
        [(r.status_code, r.text) for r in answers]
    # At most one refused token per worker (2), and at most one new token each.
    assert len(p.unauthorized) <= 2, p.unauthorized
    assert len(grants(a)) - before <= 2, grants(a)[before:]


def test_an_as_that_refuses_the_gateway_leaves_the_pdp_uncalled(env, idp):  # noqa: F811
    a, p, check, start = env
    gw = start(secret="not-the-secret-0123456789abcdef", on_error="unavailable")
    # The issuer's metadata is read at start: until then there is no endpoint to ask.
    def asked():
        if grants(a):
            return True
        r = requests.get(gw.url("/orders/4"), headers=bearer(idp, "alice"), timeout=5)
        assert r.status_code == 503, r.text
    wait_for(asked, 5, interval=0.05, what="the AS to be asked")
    r = requests.get(gw.url("/orders/4"), headers=bearer(idp, "alice"), timeout=5)
    assert r.status_code == 503, r.text
    assert r.json()["error"] == "temporarily_unavailable" and r.headers.get("Retry-After")
    assert "secret" not in r.text and "client" not in r.json().get("error_description", "")
    assert [g["status"] for g in grants(a)] and all(g["status"] == 401 for g in grants(a))
    assert p.evaluation_calls() == [] and p.unauthorized == []
    assert "no token for the PDP" in gw.output()


@pytest.mark.parametrize("auth,message", [
    ("{ client: nobody }", '"nobody" is not defined under clients'),
    ('{ client: pdp-caller, bearer_file: "/etc/hostname" }', "give bearer_file or client, not both"),
    ("{ scope: x }", "goes with client: NAME"),
    ('{ client: pdp-caller, token_endpoint: "ftp://x" }', "is not an http(s) URL"),
])
def test_check_config_refuses_what_cannot_work(upstream, idp, authserver, tmp_path, auth, message):  # noqa: F811
    import subprocess
    from support.gateway import BIN
    text = config(upstream, idp, authserver, "http://127.0.0.1:9/", auth=auth)
    path = tmp_path / "tokengate.yaml"
    path.write_text(text.replace("{PORT}", "1").replace("{ADMIN}", "2"))
    r = subprocess.run([BIN, "check-config", str(path)], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    assert message in r.stdout + r.stderr, r.stdout + r.stderr


SMUGGLED = "abc\r\nContent-Length: 0\r\n\r\nPOST /smuggled HTTP/1.1\r\nHost: pdp\r\nContent-Length: 17\r\n\r\n{\"decision\":true}"


def test_a_token_answer_with_crlf_never_splits_the_pdp_call(env, idp):  # noqa: F811
    """RFC 6750 §2.1: a token tokengate sends is a b64token. An access_token with CR/LF once
    split each evaluation in two, and the kept PDP connection answered later questions with the
    smuggled request's allow. Now the answer is no token: on_error, the PDP never called, and
    the AS not asked again on every request."""
    a, p, check, start = env
    a.token_response_fault = {"access_token": SMUGGLED}
    gw = start(on_error="deny")
    wait_for(lambda: asked_after(a, lambda: requests.get(gw.url("/orders/0"), headers=bearer(idp, "warm"), timeout=5)),
             5, interval=0.05, what="the AS to be asked")
    answers = [requests.get(gw.url("/orders/6"), headers=bearer(idp, f"s{i}"), timeout=5) for i in range(8)]
    assert [r.status_code for r in answers] == [403] * 8, [(r.status_code, r.text) for r in answers]
    assert p.calls == [] and p.unauthorized == []
    assert "abc" not in "".join(r.text for r in answers)
    assert "no token for the PDP" in gw.output()
    # One token answer per worker within the backoff, not one per request.
    assert 1 <= len(grants(a)) <= 2, grants(a)


def test_an_as_refusing_the_gateways_client_is_not_asked_on_every_request(env, idp):  # noqa: F811
    a, p, check, start = env
    gw = start(secret="not-the-secret-0123456789abcdef", on_error="unavailable")
    wait_for(lambda: asked_after(a, lambda: requests.get(gw.url("/orders/4"), headers=bearer(idp, "alice"), timeout=5)),
             5, interval=0.05, what="the AS to be asked")
    began = time.monotonic()
    answers = [requests.get(gw.url("/orders/4"), headers=bearer(idp, f"u{i}"), timeout=5) for i in range(20)]
    assert time.monotonic() - began < 5, "the calls outlasted the backoff: the count below means nothing"
    assert all(r.status_code == 503 for r in answers)
    # Each worker asked once and then waits out the backoff: 20 requests, at most 2 refusals.
    assert 1 <= len(grants(a)) <= 2 and all(g["status"] == 401 for g in grants(a)), grants(a)


@pytest.mark.parametrize("content", ["tok\r\nX-Injected: 1", "tok\nPOST /smuggled", "tok\rx", "to ken", "tok\x00"])
def test_a_bearer_file_with_any_byte_outside_b64token_gives_no_token(upstream, idp, authserver, gateway_factory,
                                                                     tmp_path, content):  # noqa: F811
    p = PDP(token=lambda value: True).start()
    try:
        path = tmp_path / "pdp.token"
        path.write_bytes(content.encode())
        gw = gateway_factory(config(upstream, idp, authserver, p.url, auth=f'{{ bearer_file: "{path}" }}'))
        r = requests.get(gw.url("/orders/7"), headers=bearer(idp, "alice"), timeout=5)
        assert r.status_code == 403, r.text
        assert p.calls == []
        # A file with a trailing newline (as editors write it) is still a token.
        path.write_bytes(b"good-token_0~+/=\n")
        # The file is read again at most once a second.
        wait_for(lambda: requests.get(gw.url("/orders/7"), headers=bearer(idp, "alice"), timeout=5).status_code == 200,
                 1.1, interval=0.1, what="the file read again")
        assert [c["headers"]["Authorization"] for c in p.evaluation_calls()] == ["Bearer good-token_0~+/="]
    finally:
        p.stop()
