"""Distributed claims (OIDC Core §5.6.2) at login, against the real AS and a claims source on
127.0.0.1: the ID token leaves `groups` out and names a source for it in `_claim_names` /
`_claim_sources` (as Entra ID does above 200 groups). A source on the issuer's
`claim_sources` is called once per session with the access token, and the route's `require`
on `groups` passes on every request after it; a source not on the list is never called and
the route refuses, as it does when the source fails — each with the reason in the log. How
and when the user authenticated (acr, amr, auth_time) is the ID token's word alone: a listed
source that says acr "mfa" does not pass a step-up route."""
import http.server
import json
import threading
import time

import pytest

from support.gateway import sent_headers as sent
from support.waiting import sleep_into_second
from test_login import login_env  # noqa: F401 — fixture

JSON = {"Accept": "application/json"}

STAFF_ROUTE = """  - name: staff
    match: { path_prefix: /staff/ }
    upstream: app
    auth: login
    client: web
    require: { claims: { groups: { contains: staff } } }
    headers: { X-Forwarded-User: sub, X-Groups: groups }"""


class ClaimsSource:
    """A claims provider's endpoint: /claims/groups answers the user's groups (JSON),
    /claims/authn those and acr "mfa", amr and auth_time now, /claims/fail a 500, anything
    else 404. Every call is recorded (path, Authorization)."""

    def __init__(self):
        self.calls = []
        source = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                source.calls.append({"path": self.path, "authorization": self.headers.get("Authorization")})
                if self.path == "/claims/groups":
                    body, status = json.dumps({"groups": ["staff", "dev"]}).encode(), 200
                elif self.path == "/claims/authn":
                    # A source that also claims a strong, fresh authentication.
                    body = json.dumps({"groups": ["staff", "dev"], "acr": "mfa", "amr": ["otp", "pwd"],
                                       "auth_time": int(time.time())}).encode()
                    status = 200
                elif self.path == "/claims/identity":
                    # A source that also speaks for who the user is.
                    body = json.dumps({"groups": ["staff", "dev"], "sub": "admin", "email": "root@corp.example",
                                       "email_verified": True}).encode()
                    status = 200
                elif self.path == "/claims/fail":
                    body, status = b'{"error":"server_error"}', 500
                else:
                    body, status = b"{}", 404
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def source():
    s = ClaimsSource()
    yield s
    s.stop()


@pytest.fixture
def login_as(authserver_factory):
    return authserver_factory(login="form", rotate_refresh_tokens=True)


def distributed(a, endpoint):
    """Every ID token the AS issues from now on points to `endpoint` for its groups."""
    a.id_token_fault = {"claims": {"groups": None, "_claim_names": {"groups": "src1"},
                                   "_claim_sources": {"src1": {"endpoint": endpoint}}}}


def make(login_env, a, upstream, tmp_path, allowed):
    return login_env(a, upstream, tmp_path, extra_route=STAFF_ROUTE,
                     issuer_options=f'algorithms: [ES256, RS256], claim_sources: ["{allowed}"]')


def test_the_source_on_the_allow_list_is_called_once_per_session(login_env, login_as, upstream, tmp_path, source):
    distributed(login_as, source.url("/claims/groups"))
    e = make(login_env, login_as, upstream, tmp_path, source.url("/claims/"))
    r = e.login("/staff/report")
    assert r.status_code == 200, (r.status_code, r.text, e.gw.output()[-2000:])
    assert sent(r)["x-groups"] == "staff,dev"
    # Called once, with the session's access token (the source gave none of its own).
    assert [c["path"] for c in source.calls] == ["/claims/groups"]
    assert source.calls[0]["authorization"].startswith("Bearer ")
    # More requests, on both workers: the session has the groups; the source is not asked again.
    for i in range(6):
        r = e.browser.get(e.url(f"/staff/{i}"), headers=JSON, allow_redirects=False, timeout=10)
        assert r.status_code == 200 and sent(r)["x-groups"] == "staff,dev", r.text
    assert len(source.calls) == 1
    # Another session (another login) asks once more: the answer is the session's, not shared.
    e2 = make(login_env, login_as, upstream, tmp_path, source.url("/claims/"))
    assert e2.login("/staff/other").status_code == 200
    assert len(source.calls) == 2


def test_a_source_not_on_the_allow_list_is_never_called_and_require_refuses(
        login_env, login_as, upstream, tmp_path, source):
    distributed(login_as, source.url("/elsewhere/groups"))
    e = make(login_env, login_as, upstream, tmp_path, source.url("/claims/"))
    assert e.login("/").status_code == 200  # a route without the requirement: the login works
    r = e.browser.get(e.url("/staff/report"), headers=JSON, allow_redirects=False, timeout=10)
    assert r.status_code == 403 and r.json()["error"] == "insufficient_scope", r.text
    assert source.calls == []
    assert e.gw.logged("is not on issuers.as1.claim_sources; not called")
    assert e.gw.logged("distributed claims missing (groups: source src1")


def test_a_source_that_fails_makes_require_refuse_with_the_reason_logged(
        login_env, login_as, upstream, tmp_path, source):
    distributed(login_as, source.url("/claims/fail"))
    e = make(login_env, login_as, upstream, tmp_path, source.url("/claims/"))
    assert e.login("/").status_code == 200
    assert [c["path"] for c in source.calls] == ["/claims/fail"]
    for _ in range(3):
        r = e.browser.get(e.url("/staff/report"), headers=JSON, allow_redirects=False, timeout=10)
        assert r.status_code == 403 and r.json()["error"] == "insufficient_scope", r.text
    assert len(source.calls) == 1  # the failure is the session's too: not retried per request
    assert e.gw.logged("source src1 answered 500")
    assert e.gw.logged("distributed claims missing (groups: source src1 answered 500)")


def test_a_refresh_with_a_new_id_token_asks_the_source_again(login_env, authserver_factory, upstream, tmp_path,
                                                               source):
    """The new ID token's claims replace the session's (a group removed at the AS is gone): its
    distributed claims are had again, once for that refresh, not per request."""
    a = authserver_factory(login="form", rotate_refresh_tokens=True, access_token_lifetime=3, id_token_lifetime=300)
    distributed(a, source.url("/claims/groups"))
    e = login_env(a, upstream, tmp_path, extra_route=STAFF_ROUTE, session=", refresh_margin: 1s",
                  issuer_options=f'algorithms: [ES256, RS256], claim_sources: ["{source.url("/claims/")}"]')
    assert e.login("/staff/report").status_code == 200
    logged_in = time.time()
    assert len(source.calls) == 1
    # The access token (3 s, from the callback's second on) is within the 1 s margin two whole
    # seconds after the login has returned, however long it took.
    sleep_into_second(logged_in, 2)
    r = e.browser.get(e.url("/staff/after-refresh"), headers=JSON, allow_redirects=False, timeout=10)
    assert r.status_code == 200 and sent(r)["x-groups"] == "staff,dev", r.text
    assert a.refresh_ok_count == 1
    assert [t["grant_type"] for t in a.token_requests if t["status"] == 200][-1] == "refresh_token"
    assert len(source.calls) == 2
    r = e.browser.get(e.url("/staff/again"), headers=JSON, allow_redirects=False, timeout=10)
    assert r.status_code == 200 and len(source.calls) == 2


def test_a_userinfo_answer_can_name_the_source_too(login_env, login_as, upstream, tmp_path, source):
    """§5.6.2 applies to userinfo answers as well: with `userinfo: true`, a reference there is
    followed the same way (the ID token itself names none)."""
    login_as.userinfo_claims = {"alice": {"_claim_names": {"groups": "src1"},
                                          "_claim_sources": {"src1": {"endpoint": source.url("/claims/groups"),
                                                                      "access_token": "source-own-token"}}}}
    e = login_env(login_as, upstream, tmp_path, extra_route=STAFF_ROUTE, extra_client="    userinfo: true",
                  issuer_options=f'algorithms: [ES256, RS256], claim_sources: ["{source.url("/claims/")}"]')
    r = e.login("/staff/report")
    assert r.status_code == 200 and sent(r)["x-groups"] == "staff,dev", r.text
    # The source's own access token, not the session's.
    assert source.calls == [{"path": "/claims/groups", "authorization": "Bearer source-own-token"}]


VAULT_ROUTE = """  - name: vault
    match: { path_prefix: /vault/ }
    upstream: app
    auth: login
    client: web
    require: { acr: [mfa], max_age: 300 }
    headers: { X-Forwarded-User: sub, X-Auth-Acr: acr }"""

STAFF_ROUTE_WITH_ACR = STAFF_ROUTE.replace("X-Groups: groups }", "X-Groups: groups, X-Auth-Acr: acr, X-Auth-Amr: amr }")


@pytest.mark.parametrize("id_token_acr", [None, "urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport"])
def test_a_source_cannot_say_how_or_when_the_user_authenticated(
        login_env, login_as, upstream, tmp_path, source, id_token_acr):
    """OIDC Core §2, §5.6.2: the ID token (no acr, or a password acr; no auth_time) names an
    allow-listed source for acr, amr, auth_time and groups, and the source says acr "mfa",
    auth_time now. The groups are taken; the authentication claims are not: the step-up route
    sends the browser to a new login and refuses an API call, and its upstream never hears."""
    login_as.id_token_fault = {"claims": {
        "groups": None, "acr": id_token_acr, "amr": None, "auth_time": None,
        "_claim_names": {"groups": "src1", "acr": "src1", "amr": "src1", "auth_time": "src1"},
        "_claim_sources": {"src1": {"endpoint": source.url("/claims/authn")}}}}
    e = login_env(login_as, upstream, tmp_path, extra_route=STAFF_ROUTE_WITH_ACR + "\n" + VAULT_ROUTE,
                  issuer_options=f'algorithms: [ES256, RS256], claim_sources: ["{source.url("/claims/")}"]')
    r = e.login("/staff/report")
    assert r.status_code == 200, (r.status_code, r.text, e.gw.output()[-2000:])
    h = sent(r)
    # The source was reached and its groups kept: it is on the list and answered.
    assert [c["path"] for c in source.calls] == ["/claims/authn"]
    assert h["x-groups"] == "staff,dev"
    # Its acr and amr were not: the upstream sees the ID token's (or none).
    assert h.get("x-auth-acr") != "mfa" and "otp" not in h.get("x-auth-amr", "")
    if id_token_acr:
        assert h["x-auth-acr"] == id_token_acr
    # An API call on the step-up route: 401 login_required, as for a session without mfa.
    r = e.browser.get(e.url("/vault/1"), headers=JSON, allow_redirects=False, timeout=10)
    assert r.status_code == 401 and r.json()["error"] == "login_required", (r.status_code, r.text)
    # A navigation: a new login at the AS, asking for acr mfa.
    r = e.get("/vault/1")
    assert r.status_code == 302 and r.headers["Location"].startswith(login_as.url + "/authorization?"), \
        (r.status_code, r.headers.get("Location"), r.text)
    assert not [x for x in upstream.requests if x["path"].startswith("/vault/")]
    assert all(v != "mfa" for x in upstream.requests for k, v in x["headers"] if k.lower() == "x-auth-acr")
    assert len(source.calls) == 1


CORP_ROUTE = """  - name: corp
    match: { path_prefix: /corp/ }
    upstream: app
    auth: login
    client: web
    require: { email_domains: [corp.example] }
    headers: { X-Forwarded-User: sub, X-Forwarded-Email: email }"""


def test_a_source_cannot_say_who_the_user_is(login_env, login_as, upstream, tmp_path, source):
    """OIDC Core §5.6.2: a source speaks for its own claims, not for the OP's identity of the
    user. The ID token (without email) names an allow-listed source for sub, email,
    email_verified and groups, and the source says sub "admin", a verified corp email. The
    groups are taken; who the user is is not: the upstream sees the ID token's sub, and a
    route that requires the corp domain refuses the session."""
    login_as.id_token_fault = {"claims": {
        "groups": None, "email": None, "email_verified": None,
        "_claim_names": {"groups": "src1", "sub": "src1", "email": "src1", "email_verified": "src1"},
        "_claim_sources": {"src1": {"endpoint": source.url("/claims/identity")}}}}
    e = login_env(login_as, upstream, tmp_path, extra_route=STAFF_ROUTE + "\n" + CORP_ROUTE,
                  issuer_options=f'algorithms: [ES256, RS256], claim_sources: ["{source.url("/claims/")}"]')
    r = e.login("/staff/report")
    assert r.status_code == 200, (r.status_code, r.text, e.gw.output()[-2000:])
    h = sent(r)
    assert [c["path"] for c in source.calls] == ["/claims/identity"]
    assert h["x-groups"] == "staff,dev"
    assert h["x-forwarded-user"] != "admin"
    r = e.browser.get(e.url("/corp/1"), headers=JSON, allow_redirects=False, timeout=10)
    assert r.status_code == 403 and r.json()["error"] == "insufficient_scope", (r.status_code, r.text)
    assert not [x for x in upstream.requests if x["path"].startswith("/corp/")]


def test_a_sources_own_token_with_crlf_is_never_sent(login_env, login_as, upstream, tmp_path, source):
    """RFC 6750 §2.1: a source's own access_token goes out as `Bearer <b64token>`. One with
    CR/LF would split the call: the source is not called, and require on its claims refuses."""
    login_as.id_token_fault = {"claims": {"groups": None, "_claim_names": {"groups": "src1"}, "_claim_sources": {
        "src1": {"endpoint": source.url("/claims/groups"), "access_token": "tok\r\nX-Injected: 1"}}}}
    e = make(login_env, login_as, upstream, tmp_path, source.url("/claims/"))
    r = e.get(e.to_callback("/staff/report", "alice"))
    assert r.status_code == 302, (r.status_code, r.text)
    r = e.browser.get(e.url("/staff/report"), headers=JSON, allow_redirects=False, timeout=10)
    assert r.status_code == 403, (r.status_code, r.text)
    assert source.calls == []
    assert e.gw.logged("access_token is not a b64token")
