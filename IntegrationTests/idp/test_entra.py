"""Multi-tenant Entra ID: an issuer template (`issuer: .../{tenant}/v2.0`, `tenants: [...]`).

API route: tokens minted here in Entra ID's v2 shape (iss with the tenant, tid, scp, roles),
keys from one common JWKS named by Entra ID's published /organizations discovery document
(fixtures/providers/entra-organizations.json): a token of an allowed
tenant reaches the upstream with its tenant as an identity header; another tenant's, a tid
that does not match iss, a token without tid and the template's own text are refused 401
invalid_token with a description that says why.

Login route: headless Chromium through the /organizations endpoints of a multi-tenant look-alike
(support/entra_front.py: one real idpyoidc AS per tenant behind Entra ID's URL layout and its
`{tenantid}` discovery issuer): the allowed tenant's user lands on the page with X-Tenant-Id,
the refused tenant's login ends with an error page and no session."""
import json
import subprocess

import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from support.browser import browser, LocalSite  # noqa: F401 — fixture
from support.entra_front import EntraFront
from support.gateway import BIN, Gateway, bearer_get
from support.published import published
from test_bearer import ec_key, token

TENANT_A = "72f988bf-86f1-41af-91ab-2d7cd011db47"
TENANT_B = "9188040d-6c67-4c5b-b112-36a304b66dad"
AUDIENCE = "api://orders"


class EntraKeys:
    """Entra ID's multi-tenant discovery document and common JWKS, on a LocalSite."""

    def __init__(self):
        self.site = LocalSite()
        self.key = ec_key("entra-common-1")
        base = self.site.url("")
        self.template = f"{base}/{{tenant}}/v2.0"
        # Entra ID's /organizations document as published: its issuer holds a literal {tenantid}.
        doc = published("entra-organizations", LOGIN=base, GRAPH=base)
        assert doc["issuer"] == f"{base}/{{tenantid}}/v2.0"
        self.site.page("/organizations/v2.0/.well-known/openid-configuration", json.dumps(doc),
                       content_type="application/json")
        assert doc["jwks_uri"] == self.site.url("/organizations/discovery/v2.0/keys")
        self.site.page("/organizations/discovery/v2.0/keys",
                       json.dumps({"keys": [self.key.as_dict(private=False)]}), content_type="application/json")

    def iss(self, tid):
        return self.site.url(f"/{tid}/v2.0")

    def token(self, tenant, iss_tenant=None, **over):
        claims = {"iss": self.iss(iss_tenant or tenant), "aud": AUDIENCE, "tid": tenant, "ver": "2.0",
                  "scp": "orders.read", "roles": ["Orders.Admin"], "oid": "00000000-0000-0000-0000-0000000000a1",
                  "azp": "client-app"}
        claims.update(over)
        return token(self.key, {k: v for k, v in claims.items() if v is not None}, typ="JWT", scope=None,
                     client_id=None, groups=None)


@pytest.fixture
def entra():
    e = EntraKeys()
    yield e
    e.site.close()


def api_gateway(entra, upstream, tenants=f"[{TENANT_A}]", more=""):
    g = Gateway(f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
issuers:
  entra:
    issuer: "{entra.template}"
    tenants: {tenants}
    discovery: true
    audiences: ["{AUDIENCE}"]
    algorithms: [ES256]
    scope_claim: scp
    {more}
upstreams: {{ app: {{ url: "http://127.0.0.1:{upstream.port}" }} }}
routes:
  - match: {{ path_prefix: /api/ }}
    upstream: app
    auth: bearer
    issuers: [entra]
    require: {{ scopes: [orders.read] }}
    headers: {{ X-Forwarded-User: sub, X-Tenant-Id: tid, X-Roles: roles }}
""")
    g.start()
    return g


def refusal(r):
    assert r.status_code == 401, (r.status_code, r.text)
    challenge = r.headers["WWW-Authenticate"]
    assert 'error="invalid_token"' in challenge, challenge
    return challenge


def test_allowed_tenant_reaches_the_upstream_with_its_tenant(entra, upstream):
    g = api_gateway(entra, upstream)
    try:
        r = bearer_get(g, entra.token(TENANT_A))
        assert r.status_code == 200, (r.status_code, r.text, g.output()[-2000:])
        h = {k.lower(): v for k, v in r.json()["headers"]}
        assert h["x-tenant-id"] == TENANT_A and h["x-roles"] == "Orders.Admin" and h["x-forwarded-user"] == "alice"
        # The discovery document was fetched under /organizations, its {tenantid} issuer taken.
        assert entra.site.hits("/organizations/v2.0/.well-known/openid-configuration")
    finally:
        g.stop()


def test_other_tenant_is_refused(entra, upstream):
    g = api_gateway(entra, upstream)
    try:
        before = len(upstream.requests)
        challenge = refusal(bearer_get(g, entra.token(TENANT_B)))
        assert "tenant is not accepted here" in challenge
        assert len(upstream.requests) == before
    finally:
        g.stop()


def test_tid_that_does_not_match_iss_is_refused(entra, upstream):
    g = api_gateway(entra, upstream)
    try:
        # Tenant B's token claiming tenant A's tid, and tenant A's issuer with B's tid.
        for t in (entra.token(TENANT_A, iss_tenant=TENANT_B), entra.token(TENANT_B, iss_tenant=TENANT_A)):
            assert "tid (tenant) claim does not match its issuer" in refusal(bearer_get(g, t))
    finally:
        g.stop()


def test_missing_tid_and_template_text_are_refused(entra, upstream):
    g = api_gateway(entra, upstream, tenants="any")
    try:
        assert "has no tid (tenant) claim" in refusal(bearer_get(g, entra.token(TENANT_A, tid=None)))
        literal = token(entra.key, {"iss": entra.template, "aud": AUDIENCE, "tid": "{tenant}", "scp": "orders.read"},
                        typ="JWT")
        assert "has no tid (tenant) claim" in refusal(bearer_get(g, literal))
        # tenants: any takes every tenant whose tid matches its iss.
        assert bearer_get(g, entra.token(TENANT_B)).status_code == 200
    finally:
        g.stop()


def test_v1_and_v2_issuers_in_one(entra, upstream):
    # Entra ID's v1 form (sts.windows.net/{tenant}/; here on the same test host) as a
    # template alias: the same tenants, the same keys.
    v1 = entra.site.url("/sts/{tenant}/")
    g = api_gateway(entra, upstream, more=f'issuer_aliases: ["{v1}"]')
    try:
        for iss in (entra.iss(TENANT_A), entra.site.url(f"/sts/{TENANT_A}/")):
            r = bearer_get(g, entra.token(TENANT_A, iss=iss))
            assert r.status_code == 200, (iss, r.status_code, r.headers.get("WWW-Authenticate"))
        assert "tenant is not accepted here" in refusal(
            bearer_get(g, entra.token(TENANT_B, iss=entra.site.url(f"/sts/{TENANT_B}/"))))
    finally:
        g.stop()


def test_tenants_any_is_a_check_config_warning(entra, tmp_path):
    path = tmp_path / "tg.yaml"
    path.write_text(f"""
issuers:
  entra: {{ issuer: "{entra.template}", tenants: any, discovery: true, audiences: ["{AUDIENCE}"] }}
upstreams: {{ app: {{ url: "http://127.0.0.1:9" }} }}
routes:
  - {{ match: {{ path_prefix: / }}, upstream: app, auth: bearer, issuers: [entra] }}
""")
    out = subprocess.run([BIN, "check-config", str(path)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "issuers.entra.tenants" in out.stdout and "anyone can create a tenant" in out.stdout


# --- Login through /organizations, in Chromium ---------------------------------------------

SECRET = "entra-web-secret-0123456789abcdef"
SESSION_KEY = "4sNLQw0hk6rV1oX2m1bq6yV0s3g1VtJ0N3u4n5c6d7A"


@pytest.fixture
def entra_front(authserver_factory):
    front = EntraFront(authserver_factory, [TENANT_A, TENANT_B]).start()
    yield front
    front.close()


def login_gateway(front, upstream):
    g = Gateway("")
    base = f"http://127.0.0.1:{g.port}"
    front.add_client("web", client_secret=SECRET, scopes=["openid", "profile", "email"],
                     redirect_uri=f"{base}/oauth2/callback", token_endpoint_auth_method="client_secret_basic")
    g.write_config(f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
public_url: {base}
session: {{ keys: ["{SESSION_KEY}"], secure_cookie: false }}
issuers:
  entra:
    issuer: "{front.template}"
    tenants: [{TENANT_A}]
    discovery: true
    audiences: [web]
    algorithms: [ES256, RS256]
clients:
  web:
    issuer: entra
    client_id: web
    auth: client_secret_basic
    secret: "{SECRET}"
    request_mode: plain
    scopes: [openid, profile, email]
upstreams: {{ app: {{ url: "http://127.0.0.1:{upstream.port}" }} }}
routes:
  - match: {{ path_prefix: / }}
    upstream: app
    auth: login
    client: web
    headers: {{ X-Forwarded-User: sub, X-Forwarded-Email: email, X-Tenant-Id: tid }}
""")
    g.start()
    return g


def test_multi_tenant_login_in_chromium(browser, entra_front, upstream):  # noqa: F811
    g = login_gateway(entra_front, upstream)
    try:
        wait = WebDriverWait(browser, 20)
        # Tenant A's user: allowed. /organizations sends the browser to tenant A's AS, which
        # logs alice in and sends her back with a code; the ID token says tid A.
        entra_front.home = TENANT_A
        browser.get(g.url("/orders?x=1"))
        wait.until(lambda d: d.current_url == g.url("/orders?x=1"))
        body = browser.find_element(By.TAG_NAME, "body").text
        headers = {k.lower(): v for k, v in json.loads(body[body.index("{"):])["headers"]}
        assert headers["x-tenant-id"] == TENANT_A and headers["x-forwarded-email"] == "alice@example.com"
        assert "/organizations/v2.0/.well-known/openid-configuration" in entra_front.hits
        assert "/organizations/oauth2/v2.0/authorize" in entra_front.hits
        assert browser.get_cookie("tokengate_session")

        # Tenant B's user, in a fresh browser session: the same endpoints, a valid ID token of
        # tenant B — refused, no session, the upstream never sees the request.
        browser.delete_all_cookies()
        entra_front.home = TENANT_B
        before = len(upstream.requests)
        browser.get(g.url("/orders?x=2"))
        wait.until(lambda d: "/oauth2/callback" in d.current_url and "sign-in" in d.page_source.lower())
        assert "could not be completed" in browser.page_source
        assert browser.get_cookie("tokengate_session") is None
        assert len(upstream.requests) == before
        assert g.logged("tenant is not accepted here")
        assert any(h.startswith(f"/{TENANT_B}/v2.0/") for h in entra_front.hits)
    finally:
        g.stop()
