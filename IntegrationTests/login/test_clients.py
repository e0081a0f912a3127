"""Several login clients (`clients: [web, partners]` on a route) against two real
authorization servers (idpyoidc): the choice page, `?client=`, the session bound to the
client it logged in with — its refresh, logout and back-channel logout go to that client's
AS — and, from the attacker's side, an unknown client and a session of one client on a route
of another."""
import re
import subprocess
import time
from urllib.parse import quote

import pytest
import requests

from support.gateway import BIN, sent_headers as sent
from support.waiting import sleep_into_second, wait_for
from test_backchannel_logout import logout_token, post
from test_login import LoginEnv, SECRET, parse_qs_form

JSON = {"Accept": "application/json"}

ROUTES = """  - name: both
    match: { path_prefix: /both/ }
    upstream: app
    auth: login
    clients: [web, partners]
  - name: partners
    match: { path_prefix: /partners/ }
    upstream: app
    auth: login
    client: partners
  - name: corp-admin
    match: { path_prefix: /corp-admin/ }
    upstream: app
    auth: login
    clients: [web, partners]
    require: { clients: [web] }"""


class TwoClients(LoginEnv):
    """web logs in at as1 (the LoginEnv's), partners at as2."""

    def __init__(self, as1, as2, upstream, tmp_path, session="", extra_top=""):
        self.as2 = as2
        super().__init__(as1, upstream, tmp_path, session=session, extra_route=ROUTES, extra_top=extra_top,
                         extra_issuers=f'  as2: {{ issuer: "{as2.issuer}", discovery: true, audiences: [api], algorithms: [ES256, RS256] }}',
                         extra_client=f"""  partners:
    issuer: as2
    client_id: partners
    secret: "{SECRET}"
    request_mode: plain
    scopes: [openid, profile, email, offline_access]
    extra: {{ prompt: consent }}
    post_logout_redirect_uri: http://127.0.0.1:{{PORT}}/bye""")
        base = f"http://127.0.0.1:{self.gw.port}"
        as2.add_client("partners", client_secret=SECRET, scopes=["openid", "profile", "email", "offline_access"],
                       redirect_uri=f"{base}/oauth2/callback", token_endpoint_auth_method="client_secret_basic",
                       post_logout_redirect_uri=f"{base}/bye")

    def choices(self, page):
        return dict(re.findall(r'<a href="([^"]+)" id="client-([^"]+)"', page.text))

    def login_with(self, path, client, a, user="alice", prompt="Choose how to sign in"):
        r = self.get(path)
        assert r.status_code == 200 and prompt in r.text, (r.status_code, r.text)
        links = {name: href.replace("&amp;", "&") for href, name in self.choices(r).items()}
        assert set(links) == {"web", "partners"}
        r = self.get(links[client])
        assert r.status_code == 302 and r.headers["Location"].startswith(a.url), r.headers
        location = a.login_with_form(self.browser, r.headers["Location"], user=user)
        r = self.get(location)
        assert r.status_code == 302 and r.headers["Location"] == path, (r.status_code, r.text)
        return self.get(path)


@pytest.fixture
def two(authserver_factory, upstream, tmp_path):
    as1 = authserver_factory(login="form", rotate_refresh_tokens=True)
    as2 = authserver_factory(login="form", rotate_refresh_tokens=True, access_token_lifetime=3)
    e = TwoClients(as1, as2, upstream, tmp_path, session=", refresh_margin: 1s")
    yield e
    e.stop()


def test_the_choice_page_then_a_login_with_the_chosen_client(two):
    r = two.login_with("/both/x?y=1", "partners", two.as2)
    assert r.status_code == 200, r.text
    # The code went to as2's token endpoint, nothing to as1.
    assert [t["grant_type"] for t in two.as2.token_requests] == ["authorization_code"]
    assert two.a.token_requests == []
    # The partners session serves the partners-only route too.
    assert two.get("/partners/z").status_code == 200


def test_a_session_of_one_client_does_not_open_a_route_of_another(two):
    assert two.login_with("/both/x", "partners", two.as2).status_code == 200
    # The catch-all route lists only web: an API call is refused, a page view logs in with web.
    r = two.browser.get(two.url("/orders/1"), headers=JSON, allow_redirects=False, timeout=10)
    assert r.status_code == 401 and r.json()["error"] == "login_required", r.text
    assert "tokengate_session=;" not in r.headers.get("Set-Cookie", ""), "the other app's session is not deleted"
    r = two.get("/orders/1")
    assert r.status_code == 302 and r.headers["Location"].startswith(two.a.url)
    # And the other way round: a web session does not open the partners-only route.
    two.browser = requests.Session()
    assert two.login_with("/both/x", "web", two.a).status_code == 200
    r = two.browser.get(two.url("/partners/z"), headers=JSON, allow_redirects=False, timeout=10)
    assert r.status_code == 401 and r.json()["error"] == "login_required"
    assert two.get("/orders/1").status_code == 200


def test_start_takes_client_and_refuses_an_unknown_one(two):
    r = two.get("/oauth2/start?client=partners&rd=/partners/p")
    assert r.status_code == 302 and r.headers["Location"].startswith(two.as2.url + "/authorization")
    r = two.get("/oauth2/start?rd=/both/q")
    assert r.status_code == 200 and set(two.choices(r).values()) == {"web", "partners"}
    assert "rd=%2Fboth%2Fq" in r.text
    evil = "<script>alert(1)</script>"
    two.browser = requests.Session()
    r = two.get("/oauth2/start?client=" + quote(evil))
    assert r.status_code == 400 and "This sign-in link names no sign-in configured here." in r.text, r.text
    # Finding 11: the client-chosen name is not echoed at all, escaped or not.
    assert "<script>" not in r.text and "alert(1)" not in r.text
    r = two.get("/oauth2/start?client=" + quote("Call +1-555-0100 to unlock your account"))
    # The page's request id is random and may hold any digits: it is not part of the check.
    shown = r.text.replace(r.headers["X-Request-Id"], "")
    assert r.status_code == 400 and "555" not in shown and "unlock" not in shown, r.text
    assert two.browser.cookies.get("tokengate_login") is None, "no login was begun"


def test_refresh_and_logout_go_to_the_sessions_issuer(two):
    assert two.login_with("/both/x", "partners", two.as2).status_code == 200
    sleep_into_second(time.time(), 2)  # as2's access tokens live 3 s: within the 1 s margin
    assert two.get("/both/x").status_code == 200
    assert two.as2.refresh_ok_count == 1 and two.a.refresh_count == 0
    r = two.get("/oauth2/logout")
    token = parse_qs_form(r.text)["token"]
    r = two.browser.post(two.url("/oauth2/logout"), data={"token": token}, allow_redirects=False, timeout=10)
    assert r.status_code == 302 and r.headers["Location"].startswith(two.as2.url + "/end_session"), r.headers
    assert "client_id=partners" in r.headers["Location"]
    # The revocation is sent after the browser is answered.
    wait_for(lambda: two.as2.revocations, 5, interval=0.05, what="the revocation")
    assert [x["token_type_hint"] for x in two.as2.revocations] == ["refresh_token"] and two.a.revocations == []


def test_backchannel_logout_ends_only_the_sessions_of_that_clients_issuer(two):
    r = two.login_with("/both/x", "partners", two.as2)
    sub = sent(r)["x-forwarded-user"]
    # as1 logging out the same sub for its client web ends nothing here.
    assert post(two, logout_token(two.a, sub=sub)).status_code == 200
    assert two.get("/both/x").status_code == 200
    # A token from as2 but for web's client_id names no client of as2: refused.
    assert post(two, logout_token(two.as2, sub=sub)).status_code == 400
    assert post(two, logout_token(two.as2, sub=sub, aud="partners")).status_code == 200
    r = two.browser.get(two.url("/both/x"), headers=JSON, allow_redirects=False, timeout=10)
    assert r.status_code == 401


@pytest.mark.parametrize("route,message", [
    ("    client: web\n    clients: [web]", "routes[1].clients: give client: NAME or clients: [A, B], not both"),
    ("    clients: [web, nope]", 'routes[1].clients[1]: "nope" is not defined; defined: partners, web'),
    ("    clients: [web, web]", 'routes[1].clients[1]: "web" is listed twice'),
    ("    clients: []", "routes[1].clients: is empty; list the login clients"),
])
def test_check_config_explains_clients_misuse(two, route, message):
    text = open(two.gw.config_path).read()
    bad = text.replace("""    auth: login
    clients: [web, partners]""", "    auth: login\n" + route, 1)
    assert bad != text
    path = two.gw.config_path + ".bad.yaml"
    open(path, "w").write(bad)  # "both" is routes[1] (after "bye")
    r = subprocess.run([BIN, "check-config", path], capture_output=True, text=True)
    assert r.returncode == 1 and message in r.stdout, r.stdout


def test_require_clients_scopes_a_route_to_one_idp(two, upstream):
    """Finding 6: a partners session (same sub as a corp user) does not meet require.clients: [web]."""
    assert two.login_with("/both/x", "partners", two.as2).status_code == 200
    seen = len(upstream.requests)
    r = two.browser.get(two.url("/corp-admin/x"), headers=JSON, allow_redirects=False, timeout=10)
    assert r.status_code == 403 and r.json()["error"] == "insufficient_scope", r.text
    assert two.gw.logged("vouched for by client partners, not one the rule names")
    assert len(upstream.requests) == seen
    two.browser = requests.Session()
    assert two.login_with("/both/x", "web", two.a).status_code == 200
    assert two.get("/corp-admin/x").status_code == 200


def test_check_config_warns_about_unscoped_rules_on_a_mixed_route(two):
    text = open(two.gw.config_path).read()
    bad = text.replace("require: { clients: [web] }", "require: { claims: { groups: { contains: admin } } }", 1)
    assert bad != text
    path = two.gw.config_path + ".warn.yaml"
    open(path, "w").write(bad)
    r = subprocess.run([BIN, "check-config", path], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
    assert "warning: routes[3].require: this route accepts callers from clients web, partners" in r.stdout, r.stdout
    r = subprocess.run([BIN, "check-config", two.gw.config_path], capture_output=True, text=True)
    assert r.returncode == 0 and "warning" not in r.stdout, r.stdout
    # Names the route does not list: refused.
    open(path, "w").write(text.replace("require: { clients: [web] }", "require: { clients: [corp] }", 1))
    r = subprocess.run([BIN, "check-config", path], capture_output=True, text=True)
    assert r.returncode == 1 and "routes[3].require.clients: corp is not a login client of this route (clients: web, partners)" in r.stdout, r.stdout


def test_check_config_refuses_clients_on_a_token_route(two):
    text = open(two.gw.config_path).read()
    bad = text.replace("""    auth: none""", "    auth: none\n    clients: [web]", 1)
    path = two.gw.config_path + ".bad.yaml"
    open(path, "w").write(bad)
    r = subprocess.run([BIN, "check-config", path], capture_output=True, text=True)
    assert r.returncode == 1 and "routes[0].clients: has no effect with auth: none (it names the client of a login)" in r.stdout, r.stdout


def test_the_shipped_choice_pages_work(authserver_factory, upstream, tmp_path):
    """config/pages/ (choose.html + choice.html) in use: the organisation chooser, then a login."""
    import os
    pages = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "config", "pages")
    as1, as2 = authserver_factory(login="form"), authserver_factory(login="form")
    e = TwoClients(as1, as2, upstream, tmp_path, extra_top=f"pages_dir: {pages}")
    try:
        assert e.login_with("/both/x", "web", as1, prompt="Choose your organisation").status_code == 200
    finally:
        e.stop()
