"""The authorization server MCP clients see (docs/authorization-server.md), its browser part: a
public client known only by its metadata document URL (served over https on 127.0.0.1) sends
the browser to /authorize with PKCE and a `resource`; the user signs in through the real IdP
(idpyoidc, the gateway's existing login), consents, and comes back with a code and `iss`; the
code buys an access token for that resource and a refresh token. The MCP route takes the token.
Each abuse is tried from the attacker's side: a code used twice (its tokens end), a refresh
token reused (its family ends), a stolen code without the verifier, redirect URIs and clients
in doubt (a page, never a redirect), a consent form posted from elsewhere or another session."""
import base64
import hashlib
import json
import os
import re
import time
from urllib.parse import parse_qs, urlencode, urlsplit

import subprocess

import pytest
import requests

from support.cimd_host import CIMDHost
from support.dpop_client import DPoPKey
from support.gateway import BIN
from support.waiting import wait_for
from test_login import login_as, login_env  # noqa: F401 — fixtures

REDIRECT = "http://127.0.0.1:7711/cb"  # a loopback redirect (RFC 8252 §7.3): any port
WEB_REDIRECT = "https://client.example/cb"  # never fetched: the test reads the code off the 302


def pkce():
    verifier = base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=").decode()
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def claims_of(token):
    return json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))


class Env:
    def __init__(self, login_env, login_as, upstream, tmp_path, consent=True, store="",  # noqa: F811
                 replica_of=None, registration=False, extra_top=""):
        """store: a `store:` line; replica_of: another Env whose client host, AS key and
        public URL this one shares (a second replica of the same gateway)."""
        self.host = replica_of.host if replica_of else CIMDHost(tmp_path)
        self.client_id = self.host.url("/clients/app.json")
        self.host.put("/clients/app.json", self.document())
        as_key = tmp_path / "as.jwk"
        if replica_of:
            as_key.write_bytes(replica_of.as_key.read_bytes())
        else:
            subprocess.run([BIN, "keys", "generate", "--alg", "ES256", "--kid", "as-1", "--out", str(as_key)],
                           capture_output=True, text=True, check=True)
        self.as_key = as_key
        top = f"""{store}
{extra_top}
authorization_server:
  login: web
  signing_keys: ["{as_key}"]
  access_token_ttl: 5m
  refresh_token_ttl: 1h
  consent: {"true" if consent else "false"}
  scopes:
    "mcp:read": {{}}
    "mcp:write": {{ claims: {{ groups: {{ contains: staff }} }} }}
  clients: {{ allowed_client_hosts: ["127.0.0.1"], ca_file: "{self.host.ca_file}", {registration or "registration: false"} }}
"""
        route = """  - name: mcp
    match: { path: /mcp }
    upstream: app
    auth: token
    issuers: [self]
    resource: "RESOURCE"
    require: { scopes: ["mcp:read"] }"""
        route = route.replace("RESOURCE", replica_of.resource if replica_of else "http://127.0.0.1:{PORT}/mcp")
        self.login = login_env(login_as, upstream, tmp_path, extra_top=top, extra_route=route,
                               share_client_of=replica_of.login if replica_of else None,
                               public_base=replica_of.issuer if replica_of else None)
        self.gw = self.login.gw
        self.a = login_as
        self.issuer = self.login.base
        self.resource = self.issuer + "/mcp"
        self.token_endpoint = self.issuer + "/oauth2/as/token"

    def document(self, **changes):
        d = {"client_id": self.host.url("/clients/app.json"), "client_name": "Test agent",
             "redirect_uris": ["http://127.0.0.1/cb", WEB_REDIRECT], "token_endpoint_auth_method": "none",
             "grant_types": ["authorization_code", "refresh_token"]}
        d.update(changes)
        return {k: v for k, v in d.items() if v is not None}

    def authorize_url(self, challenge, **over):
        q = {"client_id": self.client_id, "redirect_uri": REDIRECT, "response_type": "code",
             "code_challenge": challenge, "code_challenge_method": "S256", "resource": self.resource,
             "state": "st-1", "scope": "mcp:read mcp:write"}
        q.update(over)
        return self.issuer + "/oauth2/as/authorize?" + urlencode({k: v for k, v in q.items() if v is not None})

    def sign_in(self, url, user="alice"):
        """Opens /authorize; if the browser has no session, signs in at the IdP and comes back:
        the answer of /authorize with the session."""
        r = self.login.get(url)
        if r.status_code == 302 and "/oauth2/start" in r.headers["Location"]:
            start = self.login.get(r.headers["Location"])
            assert start.status_code == 302, start.text
            callback = self.a.login_with_form(self.login.browser, start.headers["Location"], user=user)
            back = self.login.get(callback)
            assert back.status_code == 302, (back.status_code, back.text[:300])
            r = self.login.get(back.headers["Location"])
        return r

    def consent(self, page, decision="allow", headers=None):
        ticket = re.search(r'name="ticket" value="([^"]+)"', page.text).group(1)
        return self.login.browser.post(self.issuer + "/oauth2/as/consent",
                                       data={"ticket": ticket, "decision": decision},
                                       headers={"Accept": "text/html", **(headers or {"Origin": self.issuer})},
                                       allow_redirects=False, timeout=10)

    def code(self, user="alice", **over):
        """The whole browser part: (code, verifier, the final redirect's query)."""
        verifier, challenge = pkce()
        r = self.sign_in(self.authorize_url(challenge, **over), user=user)
        if r.status_code == 200:
            assert "Allow access?" in r.text, r.text[:500]
            r = self.consent(r)
        assert r.status_code == 302, (r.status_code, r.text[:500])
        location = r.headers["Location"]
        assert location.startswith(over.get("redirect_uri", REDIRECT) + "?"), location
        q = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
        return q.get("code"), verifier, q

    def token(self, **form):
        data = {"client_id": self.client_id}
        data.update(form)
        return requests.post(self.token_endpoint, data={k: v for k, v in data.items() if v is not None},
                             timeout=10)

    def redeem(self, code, verifier, **over):
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                "code_verifier": verifier}
        form.update(over)
        return self.token(**form)

    def call(self, token):
        return requests.post(self.resource, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                             headers={"Authorization": f"Bearer {token}"}, timeout=5)


@pytest.fixture
def env(login_env, login_as, upstream, tmp_path):  # noqa: F811
    e = Env(login_env, login_as, upstream, tmp_path)
    yield e
    e.host.stop()


def error(r):
    return r.status_code, r.json()["error"]


def test_the_metadata_offers_the_code_flow(env):
    doc = requests.get(env.issuer + "/.well-known/oauth-authorization-server", timeout=5).json()
    assert doc["authorization_endpoint"] == env.issuer + "/oauth2/as/authorize"
    assert doc["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert doc["response_types_supported"] == ["code"] and doc["code_challenge_methods_supported"] == ["S256"]
    assert doc["token_endpoint_auth_methods_supported"] == ["none", "private_key_jwt"]
    assert doc["authorization_response_iss_parameter_supported"] is True
    assert "offline_access" not in doc["scopes_supported"]


def test_sign_in_consent_code_token_and_the_mcp_route(env):
    code, verifier, q = env.code()
    assert q["state"] == "st-1" and q["iss"] == env.issuer
    r = env.redeem(code, verifier)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["token_type"] == "Bearer" and body["scope"] == "mcp:read mcp:write" and body["refresh_token"]
    c = claims_of(body["access_token"])
    assert c["aud"] == env.resource and c["client_id"] == env.client_id and c["iss"] == env.issuer
    assert c["idp_iss"] == env.a.issuer and c["email"] == "alice@example.com" and c["sid"]
    assert env.call(body["access_token"]).status_code == 200
    # A loopback redirect URI may be any program's on the machine: asked again, with a warning
    # (RFC 8252 §8.6), though consent was given.
    _, challenge2 = pkce()
    again = env.login.get(env.authorize_url(challenge2))
    assert again.status_code == 200 and 'id="local-warning"' in again.text, again.status_code
    # To a web client's https redirect URI, once consented, it goes straight back with a code.
    env.code(redirect_uri=WEB_REDIRECT)
    _, challenge3 = pkce()
    straight = env.login.get(env.authorize_url(challenge3, redirect_uri=WEB_REDIRECT))
    assert straight.status_code == 302 and straight.headers["Location"].startswith(WEB_REDIRECT + "?code="), \
        straight.text[:300]
    # HEAD issues no code.
    assert env.login.browser.head(env.authorize_url(challenge3, redirect_uri=WEB_REDIRECT),
                                  allow_redirects=False, timeout=5).status_code == 405
    # bob is not staff: mcp:write is not his to grant; asked for nothing, he gets what he may.
    env.login.browser = requests.Session()
    code_b, verifier_b, _ = env.code(user="bob", scope=None)
    assert env.redeem(code_b, verifier_b).json()["scope"] == "mcp:read"
    metrics = requests.get(f"http://127.0.0.1:{env.gw.admin}/metrics", timeout=5).text
    assert 'tokengate_as_tokens_issued_total{grant="authorization_code"} 2' in metrics
    # The access log names no grant id or code.
    assert code not in env.gw.output()


def test_a_code_used_twice_ends_the_tokens_it_gave(env):
    code, verifier, _ = env.code()
    first = env.redeem(code, verifier)
    assert first.status_code == 200
    token = first.json()["access_token"]
    refresh = first.json()["refresh_token"]
    assert env.call(token).status_code == 200
    second = env.redeem(code, verifier)
    assert error(second) == (400, "invalid_grant") and "used before" in second.json()["error_description"]
    refused = env.call(token)
    assert refused.status_code == 401 and "invalid_token" in refused.headers["WWW-Authenticate"]
    assert error(env.token(grant_type="refresh_token", refresh_token=refresh)) == (400, "invalid_grant")


def test_a_refresh_rotates_and_a_reused_one_ends_the_family(env):
    code, verifier, _ = env.code()
    first = env.redeem(code, verifier).json()
    r1 = env.token(grant_type="refresh_token", refresh_token=first["refresh_token"])
    assert r1.status_code == 200, r1.text
    rotated = r1.json()
    assert rotated["refresh_token"] != first["refresh_token"] and env.call(rotated["access_token"]).status_code == 200
    # A refresh token the family never issued (its id and a guessed secret, or the access
    # token's sid and one): refused, and the family goes on.
    family = rotated["refresh_token"].split(".")[0]
    for guess in (family + "." + "A" * 43, claims_of(rotated["access_token"])["sid"] + "." + "A" * 43):
        assert error(env.token(grant_type="refresh_token", refresh_token=guess)) == (400, "invalid_grant")
    assert claims_of(rotated["access_token"])["sid"] != family
    assert env.call(rotated["access_token"]).status_code == 200
    # Fewer scopes may be asked; more may not.
    assert error(env.token(grant_type="refresh_token", refresh_token=rotated["refresh_token"],
                           scope="mcp:admin")) == (400, "invalid_scope")
    # The old one again: the whole family ends, and its access tokens with it.
    reused = env.token(grant_type="refresh_token", refresh_token=first["refresh_token"])
    assert error(reused) == (400, "invalid_grant")
    assert error(env.token(grant_type="refresh_token", refresh_token=rotated["refresh_token"])) == \
        (400, "invalid_grant")
    assert env.call(rotated["access_token"]).status_code == 401
    metrics = requests.get(f"http://127.0.0.1:{env.gw.admin}/metrics", timeout=5).text
    assert 'tokengate_as_tokens_issued_total{grant="refresh_token"} 1' in metrics


def test_every_refusal_at_the_token_endpoint(env):
    code, verifier, _ = env.code()
    other_verifier, _ = pkce()
    cases = [
        (env.redeem(code, other_verifier), (400, "invalid_grant")),  # a stolen code, no verifier
        (env.redeem("A" * 43, verifier), (400, "invalid_grant")),
        (env.token(grant_type="authorization_code", redirect_uri=REDIRECT, code_verifier=verifier),
         (400, "invalid_request")),
        (env.token(grant_type="refresh_token", refresh_token="not-a-refresh-token"), (400, "invalid_grant")),
        (env.token(grant_type="password", username="a", password="b"), (400, "unsupported_grant_type")),
        (env.token(grant_type="authorization_code", code="x", client_id="app"), (401, "invalid_client")),
    ]
    for response, expected in cases:
        assert error(response) == expected, (expected, response.text)
    # The code is spent by the wrong verifier: the right one now finds it used.
    assert error(env.redeem(code, verifier)) == (400, "invalid_grant")
    # Bound to its redirect URI and client.
    code2, verifier2, _ = env.code()
    assert error(env.redeem(code2, verifier2, redirect_uri="http://127.0.0.1/other")) == (400, "invalid_grant")
    code3, verifier3, _ = env.code()
    assert error(env.redeem(code3, verifier3, resource=env.issuer + "/other")) == (400, "invalid_grant")


def page_without_redirect(r):
    return r.status_code == 400 and "Location" not in r.headers and "cannot be completed" in r.text


def test_a_client_or_redirect_uri_in_doubt_gets_a_page_never_a_redirect(env):
    _, challenge = pkce()
    env.sign_in(env.authorize_url(challenge))  # signed in first: no login hop in the way
    env.host.put("/clients/other.json", env.document(client_id=env.host.url("/clients/not-this.json")))
    env.host.put("/clients/big.json", json.dumps(env.document(client_name="x" * 6000)).encode())
    env.host.put("/clients/moved.json", b"", status=302, headers={"Location": env.client_id})
    cases = [
        env.authorize_url(challenge, redirect_uri="https://evil.example/cb"),
        env.authorize_url(challenge, redirect_uri=None),
        env.authorize_url(challenge, client_id="https://evil.example/app.json"),
        env.authorize_url(challenge, client_id="http://127.0.0.1/plain-http.json"),
        env.authorize_url(challenge, client_id=env.host.url("/clients/other.json")),
        env.authorize_url(challenge, client_id=env.host.url("/clients/big.json")),
        env.authorize_url(challenge, client_id=env.host.url("/clients/moved.json")),
        env.authorize_url(challenge, client_id=env.host.url("/clients/missing.json")),
    ]
    for url in cases:
        r = env.login.get(url)
        assert page_without_redirect(r), (url, r.status_code, r.headers.get("Location"), r.text[:300])
    # The same parameter twice is in doubt too.
    twice = env.authorize_url(challenge) + "&redirect_uri=" + REDIRECT
    assert page_without_redirect(env.login.get(twice))


def test_other_errors_go_back_to_the_client_with_state_and_iss(env):
    _, challenge = pkce()
    env.sign_in(env.authorize_url(challenge))
    cases = [
        (dict(code_challenge=None), "invalid_request"),
        (dict(code_challenge_method="plain"), "invalid_request"),
        (dict(response_type="token"), "unsupported_response_type"),
        (dict(resource=None), "invalid_target"),
        (dict(resource="https://elsewhere.example/mcp"), "invalid_target"),
        (dict(scope="mcp:admin"), "invalid_scope"),
    ]
    for over, code in cases:
        r = env.login.get(env.authorize_url(challenge, **over))
        assert r.status_code == 302, (over, r.status_code, r.text[:300])
        q = {k: v[0] for k, v in parse_qs(urlsplit(r.headers["Location"]).query).items()}
        assert r.headers["Location"].startswith(REDIRECT + "?")
        assert (q["error"], q["state"], q["iss"]) == (code, "st-1", env.issuer), (over, q)


def test_the_consent_page_and_its_form_from_the_attacker_s_side(env):
    _, challenge = pkce()
    page = env.sign_in(env.authorize_url(challenge))
    assert page.status_code == 200
    csp = page.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in csp and "script" not in csp.replace("default-src 'none'", "")
    assert "Test agent" in page.text and "127.0.0.1" in page.text and env.resource in page.text
    assert "mcp:write" in page.text
    # Posted from another site: refused.
    assert env.consent(page, headers={"Origin": "https://evil.example"}).status_code == 403
    # A forged or altered ticket: refused.
    forged = env.login.browser.post(env.issuer + "/oauth2/as/consent", data={"ticket": "AAAA", "decision": "allow"},
                                    headers={"Origin": env.issuer, "Accept": "text/html"}, allow_redirects=False,
                                    timeout=10)
    assert page_without_redirect(forged)
    # A ticket shown to another session (the attacker's own page) posted from the victim's: refused.
    victim = env.login.browser
    env.login.browser = requests.Session()
    attacker_page = env.sign_in(env.authorize_url(challenge), user="bob")
    env.login.browser = victim
    assert env.consent(attacker_page).status_code == 403
    # Denied: back to the client with access_denied.
    denied = env.consent(page, decision="deny")
    q = parse_qs(urlsplit(denied.headers["Location"]).query)
    assert q["error"] == ["access_denied"] and q["state"] == ["st-1"]
    # A ticket is posted once: again, even as Allow, it is refused with a page.
    assert page_without_redirect(env.consent(page))


def test_without_consent_the_code_comes_at_once(login_env, login_as, upstream, tmp_path):  # noqa: F811
    e = Env(login_env, login_as, upstream, tmp_path, consent=False)
    try:
        verifier, challenge = pkce()
        r = e.sign_in(e.authorize_url(challenge))
        assert r.status_code == 302 and r.headers["Location"].startswith(REDIRECT + "?code="), r.text[:300]
    finally:
        e.host.stop()


def test_a_second_replica_on_redis_takes_the_token_and_ends_a_reused_code_s(login_env, login_as, upstream,  # noqa: F811
                                                                              tmp_path, redis):
    store = f'store: {{ url: "redis://127.0.0.1:{redis.port}/0", prefix: "tg:" }}'
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = Env(login_env, login_as, upstream, tmp_path / "a", store=store)
    b = Env(login_env, login_as, upstream, tmp_path / "b", store=store, replica_of=a)
    try:
        code, verifier, _ = a.code()
        first = a.redeem(code, verifier)
        assert first.status_code == 200, first.text
        token, refresh = first.json()["access_token"], first.json()["refresh_token"]
        on_b = requests.post(b.gw.url("/mcp"), json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                             headers={"Authorization": f"Bearer {token}"}, timeout=5)
        assert on_b.status_code == 200, on_b.text
        # The refresh token rotates on B; the old one, back on A, ends the family everywhere.
        rotated = requests.post(b.gw.url("/oauth2/as/token"), data={
            "grant_type": "refresh_token", "refresh_token": refresh, "client_id": a.client_id}, timeout=10)
        assert rotated.status_code == 200, rotated.text
        assert error(a.token(grant_type="refresh_token", refresh_token=refresh)) == (400, "invalid_grant")
        # The code again, at B: refused, and A's token ends on both replicas.
        again = requests.post(b.gw.url("/oauth2/as/token"), data={
            "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "code_verifier": verifier,
            "client_id": a.client_id}, timeout=10)
        assert error(again) == (400, "invalid_grant")

        def refused_everywhere():
            return all(requests.post(env.gw.url("/mcp"), json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                                     headers={"Authorization": f"Bearer {token}"}, timeout=5).status_code == 401
                       for env in (a, b))
        wait_for(refused_everywhere, timeout=3, what="the reused code's token refused on both replicas")
        # Nothing of the grant is in Redis in the clear.
        keys = redis.cli("KEYS", "tg:as:*").split()
        assert any(":as:code:" in k for k in keys) and any(":as:consents:" in k for k in keys), keys
        dump = " ".join(keys) + " ".join(redis.cli("GET", k) for k in keys)
        assert code not in dump and refresh.split(".")[1] not in dump and "alice" not in dump
    finally:
        a.host.stop()


def test_a_user_revokes_a_consent_and_its_tokens_end(env):
    code, verifier, _ = env.code(redirect_uri=WEB_REDIRECT)
    tokens = env.redeem(code, verifier, redirect_uri=WEB_REDIRECT).json()
    assert env.call(tokens["access_token"]).status_code == 200
    page = env.login.get("/oauth2/as/consents")
    assert page.status_code == 200 and env.client_id in page.text and env.resource in page.text, page.text[:300]
    ticket = re.search(r'name="ticket" value="([^"]+)"', page.text).group(1)
    # Another site's page cannot post it.
    evil = env.login.browser.post(env.issuer + "/oauth2/as/consents", data={"ticket": ticket},
                                  headers={"Origin": "https://evil.example", "Accept": "text/html"},
                                  allow_redirects=False, timeout=10)
    assert evil.status_code == 403
    done = env.login.browser.post(env.issuer + "/oauth2/as/consents", data={"ticket": ticket},
                                  headers={"Origin": env.issuer, "Accept": "text/html"}, allow_redirects=False,
                                  timeout=10)
    assert done.status_code == 302 and done.headers["Location"].endswith("/oauth2/as/consents")
    # The grant made under it ended: its refresh token and access token.
    assert error(env.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"])) == \
        (400, "invalid_grant")
    assert env.call(tokens["access_token"]).status_code == 401
    assert 'id="none"' in env.login.get("/oauth2/as/consents").text
    # The client must ask again: the page, though the redirect URI is https.
    _, challenge = pkce()
    assert env.login.get(env.authorize_url(challenge, redirect_uri=WEB_REDIRECT)).status_code == 200
    status = requests.get(f"http://127.0.0.1:{env.gw.admin}/status.json", timeout=5).json()["authorization_server"]
    row = [c for c in status["clients"] if c["client_id"] == env.client_id][0]
    assert (row["consents_given"], row["consents_revoked"]) == (1, 1), row


def test_what_ends_a_grant_is_only_its_own_client_s_or_key_s_word(env):
    # A code used again by another client: refused, and the first use's tokens go on.
    env.host.put("/clients/other.json", env.document(client_id=env.host.url("/clients/other.json")))
    code, verifier, _ = env.code(redirect_uri=WEB_REDIRECT)
    first = env.redeem(code, verifier, redirect_uri=WEB_REDIRECT).json()
    again = env.redeem(code, verifier, redirect_uri=WEB_REDIRECT, client_id=env.host.url("/clients/other.json"))
    assert error(again) == (400, "invalid_grant")
    assert env.call(first["access_token"]).status_code == 200
    assert env.token(grant_type="refresh_token", refresh_token=first["refresh_token"]).status_code == 200
    # A DPoP-bound family: its replaced token, sent without a proof of its key, ends nothing;
    # with a proof of its key it ends the family.
    key = DPoPKey()
    endpoint = env.token_endpoint
    code2, verifier2, _ = env.code(redirect_uri=WEB_REDIRECT)
    bound = requests.post(endpoint, data={"grant_type": "authorization_code", "code": code2, "client_id": env.client_id,
                                          "redirect_uri": WEB_REDIRECT, "code_verifier": verifier2},
                          headers={"DPoP": key.proof("POST", endpoint)}, timeout=10).json()
    assert bound["token_type"] == "DPoP", bound
    rotated = requests.post(endpoint, data={"grant_type": "refresh_token", "refresh_token": bound["refresh_token"],
                                            "client_id": env.client_id},
                            headers={"DPoP": key.proof("POST", endpoint)}, timeout=10)
    assert rotated.status_code == 200, rotated.text
    stolen = env.token(grant_type="refresh_token", refresh_token=bound["refresh_token"])
    assert error(stolen) == (400, "invalid_grant") and "DPoP" in stolen.json()["error_description"]
    current = rotated.json()["refresh_token"]
    again = requests.post(endpoint, data={"grant_type": "refresh_token", "refresh_token": current,
                                          "client_id": env.client_id},
                          headers={"DPoP": key.proof("POST", endpoint)}, timeout=10)
    assert again.status_code == 200, again.text
    reused = requests.post(endpoint, data={"grant_type": "refresh_token", "refresh_token": current,
                                           "client_id": env.client_id},
                           headers={"DPoP": key.proof("POST", endpoint)}, timeout=10)
    assert error(reused) == (400, "invalid_grant") and "used before" in reused.json()["error_description"]
