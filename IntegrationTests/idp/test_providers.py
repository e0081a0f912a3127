"""Each identity provider's token shape through `provider:` presets: each provider's discovery
document as it publishes it (fixtures/providers/, its hosts and ids pointed at one 127.0.0.1
site per provider), tokens minted here with each provider's claims, issuers and header (RS256,
as they sign) by the key the site publishes at the document's jwks_uri.

For each: a valid token reaches the upstream with the identity headers its route maps, past a
`require` that reads the provider's scope claim or role claim through the preset. The quirk
that would break a naive config is covered: Entra ID v1 issuers (sts.windows.net, another
host than the keys), Okta's `scp` array, Auth0's `aud` array and `permissions`, Keycloak's
realm and client roles, Google's two `iss` spellings (and a spelling not in the list),
Cognito's access token without `aud` (and its ID token used as an access token)."""
import json
import subprocess
import time
from urllib.parse import urlsplit

import pytest
import requests
from joserfc import jwt
from joserfc.jwk import RSAKey

from support.browser import LocalSite
from support.gateway import BIN, Gateway, bearer_get
from support.published import published

TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"


class ProviderSite:
    """One provider host on 127.0.0.1: its discovery documents and key sets, as published."""

    def __init__(self):
        self.site = LocalSite()
        self.documents = {}
        self.key = RSAKey.generate_key(2048, parameters={"kid": f"k-{self.site.port}", "alg": "RS256", "use": "sig"},
                                       private=True)

    def url(self, path=""):
        return self.site.url(path)

    def serve(self, path, body):
        self.site.page(path, json.dumps(body), content_type="application/json")

    def keys(self, path):
        self.serve(path, {"keys": [self.key.as_dict(private=False)]})
        return self.url(path)

    def publish(self, path, name, **fill):
        """Serves the published document NAME at path, and this site's key set at its jwks_uri."""
        doc = published(name, **fill)
        self.documents[path] = doc
        self.serve(path, doc)
        jwks = urlsplit(doc["jwks_uri"])
        assert f"{jwks.scheme}://{jwks.netloc}" == self.url(""), doc["jwks_uri"]
        self.keys(jwks.path)
        return doc

    def discovered(self, path):
        """What an operator reads in the document served at path."""
        r = requests.get(self.url(path), timeout=10)
        assert r.status_code == 200, (path, r.status_code)
        return r.json()

    def token(self, claims, typ="JWT"):
        header = {"alg": "RS256", "kid": self.key.kid}
        if typ:
            header["typ"] = typ
        return jwt.encode(header, {k: v for k, v in claims.items() if v is not None}, self.key, algorithms=["RS256"])

    def close(self):
        self.site.close()


ENTRA_V2 = f"/{TENANT}/v2.0/.well-known/openid-configuration"
ENTRA_V1 = f"/{TENANT}/.well-known/openid-configuration"
OKTA_ORG = "/.well-known/openid-configuration"
OKTA_CUSTOM = "/oauth2/default/.well-known/openid-configuration"
AUTH0 = "/.well-known/openid-configuration"
KEYCLOAK = "/realms/acme/.well-known/openid-configuration"
GOOGLE = "/.well-known/openid-configuration"
POOL = "eu-west-1_Abc123"
COGNITO = f"/{POOL}/.well-known/openid-configuration"


@pytest.fixture(scope="module")
def providers():
    p = {name: ProviderSite() for name in ("entra", "sts", "okta", "auth0", "keycloak", "google", "cognito")}
    e = p["entra"]
    # Entra ID v2.0, one tenant; its userinfo (graph.microsoft.com) is pointed at the same site.
    e.publish(ENTRA_V2, "entra-v2", LOGIN=e.url(""), GRAPH=e.url(""), TENANT=TENANT)
    # Entra ID v1: the document is on login.microsoftonline.com, its issuer on sts.windows.net.
    e.publish(ENTRA_V1, "entra-v1", LOGIN=e.url(""), STS=p["sts"].url(""), TENANT=TENANT)
    o = p["okta"]
    # Okta: the org authorization server (issuer = the org URL) and a custom one (/oauth2/default).
    o.publish(OKTA_ORG, "okta-org", ORG=o.url(""))
    o.publish(OKTA_CUSTOM, "okta-custom", ORG=o.url(""))
    a = p["auth0"]
    a.publish(AUTH0, "auth0", DOMAIN=a.url(""))  # the issuer ends in a slash
    k = p["keycloak"]
    k.publish(KEYCLOAK, "keycloak", HOST=k.url(""), REALM="acme")
    g = p["google"]
    # Google: all four of its hosts on one site; the document still names https://accounts.google.com.
    g.publish(GOOGLE, "google", ACCOUNTS=g.url(""), OAUTH2=g.url(""), OPENIDCONNECT=g.url(""), WWW=g.url(""))
    c = p["cognito"]
    # Cognito: the pool's host (issuer, keys) and its domain (endpoints) on one site.
    c.publish(COGNITO, "cognito", IDP=c.url(""), POOL=POOL, DOMAIN=c.url(""))
    yield p
    for s in p.values():
        s.close()


@pytest.fixture(scope="module")
def gateway(providers):
    from echo_upstream import Upstream
    up = Upstream().start()
    p = providers
    routes = [
        ("entra", "entra2", "{ scopes: [Orders.Read], roles: [Orders.Admin] }", "X-Tenant-Id: tid, X-Roles: roles"),
        ("entra_v1", "entra1", "{ scopes: [user_impersonation] }", "X-Tenant-Id: tid, X-Upn: upn"),
        ("okta_org", "okta-org", "{ scopes: [okta.users.read] }", "X-Uid: uid"),
        ("okta", "okta", "{ scopes: [orders.read], roles: [Admins] }", "X-Groups: groups"),
        ("auth0", "auth0", "{ scopes: [read:orders], roles: [delete:orders] }", "X-Permissions: permissions"),
        ("keycloak", "keycloak", "{ roles: [user, orders-admin] }", "X-Username: preferred_username"),
        ("google", "google", "{ claims: { email_verified: true } }", "X-Forwarded-Email: email"),
        ("cognito", "cognito", "{ scopes: [orders/read], roles: [admins] }", "X-Username: username"),
    ]
    route_text = "".join(f"""
  - match: {{ path_prefix: /{path}/ }}
    upstream: app
    auth: bearer
    issuers: [{name}]
    require: {req}
    headers: {{ X-Forwarded-User: sub, {headers} }}""" for name, path, req, headers in routes)
    sts = p["sts"].url("/{tenant}/")
    # Entra ID v1 and Google keep jwks_uri (taken from their documents): tokengate reads an
    # issuer's document under the issuer's own URL, and neither publishes it there.
    v1_keys = p["entra"].discovered(ENTRA_V1)["jwks_uri"]
    google_keys = p["google"].discovered(GOOGLE)["jwks_uri"]
    g = Gateway(f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
issuers:
  entra: {{ provider: entra, issuer: "{p['entra'].url(f'/{TENANT}/v2.0')}", discovery: true, audiences: [api://orders] }}
  entra_v1:
    provider: entra
    issuer: "{sts}"
    tenants: [{TENANT}]
    jwks_uri: "{v1_keys}"
    audiences: [api://orders]
  okta_org: {{ provider: okta, issuer: "{p['okta'].url('')}", discovery: true, audiences: ["{p['okta'].url('')}"] }}
  okta: {{ provider: okta, issuer: "{p['okta'].url('/oauth2/default')}", discovery: true, audiences: [api://default] }}
  auth0: {{ provider: auth0, issuer: "{p['auth0'].url('/')}", discovery: true, audiences: [https://orders.example.com] }}
  keycloak: {{ provider: keycloak, issuer: "{p['keycloak'].url('/realms/acme')}", discovery: true, audiences: [orders] }}
  google:
    provider: google
    issuer: https://accounts.google.com
    jwks_uri: "{google_keys}"
    audiences: [123456789012-abc.apps.googleusercontent.com]
  cognito: {{ provider: cognito, issuer: "{p['cognito'].url(f'/{POOL}')}", discovery: true, audiences: [5r2g6example] }}
upstreams: {{ app: {{ url: "http://127.0.0.1:{up.port}" }} }}
routes:{route_text}
""")
    g.start()
    g.upstream = up
    yield g
    g.stop()
    up.stop()


def passes(g, path, tok):
    r = bearer_get(g, tok, path=path)
    assert r.status_code == 200, (path, r.status_code, r.headers.get("WWW-Authenticate"), g.output()[-1500:])
    return {k.lower(): v for k, v in r.json()["headers"]}


def refused(g, path, tok, status=401):
    r = bearer_get(g, tok, path=path)
    assert r.status_code == status, (path, r.status_code, r.text)
    return r.headers["WWW-Authenticate"]


def now():
    return int(time.time())


def entra_v2(p, **over):
    c = {"aud": "api://orders", "iss": p["entra"].url(f"/{TENANT}/v2.0"), "iat": now(), "nbf": now(), "exp": now() + 3600,
         "aio": "AWQAm/8", "azp": "6e74172b-be56-4843-9ff4-e66a39bb12e3", "azpacr": "0", "name": "Alice Adams",
         "oid": "690222be-ff1a-4d56-abd1-7e4f7d38e474", "preferred_username": "alice@contoso.com",
         "rh": "I", "roles": ["Orders.Admin"], "scp": "Orders.Read Orders.Write", "sub": "alice",
         "tid": TENANT, "uti": "fqiBqXLPj0eQa82S-IYFAA", "ver": "2.0"}
    c.update(over)
    return p["entra"].token(c)


def test_entra_v2_scp_and_roles(providers, gateway):
    h = passes(gateway, "/entra2/x", entra_v2(providers))
    assert h["x-tenant-id"] == TENANT and h["x-roles"] == "Orders.Admin" and h["x-forwarded-user"] == "alice"
    # roles: read from `roles` — the same role named in scp grants nothing.
    assert "insufficient_scope" in refused(gateway, "/entra2/x", entra_v2(providers, roles=None,
                                                                         scp="Orders.Read Orders.Admin"), 403)


def test_entra_v1_issuer_on_sts(providers, gateway):
    sts = providers["sts"].url(f"/{TENANT}/")
    c = {"aud": "api://orders", "iss": sts, "iat": now(), "exp": now() + 3600, "appid": "6e74172b",
         "scp": "user_impersonation", "sub": "alice", "tid": TENANT, "upn": "alice@contoso.com", "ver": "1.0"}
    h = passes(gateway, "/entra1/x", providers["entra"].token(c))
    assert h["x-tenant-id"] == TENANT and h["x-upn"] == "alice@contoso.com"
    # A v2 token on the v1 issuer's route, and a v1 token whose tid is another tenant's.
    assert "issuer is not accepted" in refused(gateway, "/entra1/x", entra_v2(providers))
    other = "9188040d-6c67-4c5b-b112-36a304b66dad"
    assert "does not match its issuer" in refused(gateway, "/entra1/x", providers["entra"].token(dict(c, tid=other)))


def test_okta_org_and_custom_authorization_servers(providers, gateway):
    o = providers["okta"]
    org = {"ver": 1, "jti": "AT.org", "iss": o.url(""), "aud": o.url(""), "iat": now(), "exp": now() + 3600,
           "cid": "0oa1", "uid": "00u1", "scp": ["okta.users.read", "openid"], "sub": "alice@example.com"}
    assert passes(gateway, "/okta-org/x", o.token(org))["x-uid"] == "00u1"
    custom = {"ver": 1, "jti": "AT.custom", "iss": o.url("/oauth2/default"), "aud": "api://default", "iat": now(),
              "exp": now() + 3600, "cid": "0oa1", "uid": "00u1", "scp": ["orders.read", "openid"],
              "auth_time": now(), "sub": "alice@example.com", "groups": ["Everyone", "Admins"]}
    h = passes(gateway, "/okta/x", o.token(custom))
    assert h["x-groups"] == "Everyone,Admins" and h["x-forwarded-user"] == "alice@example.com"
    # scp is an array at Okta: a `scope` string beside it grants nothing.
    assert "insufficient_scope" in refused(gateway, "/okta/x", o.token(dict(custom, scp=["openid"], scope="orders.read")),
                                           403)
    # The org AS's token is not the custom AS's.
    assert "issuer is not accepted" in refused(gateway, "/okta/x", o.token(dict(org, groups=["Admins"])))


def test_auth0_audience_array_and_permissions(providers, gateway):
    a = providers["auth0"]
    c = {"iss": a.url("/"), "sub": "auth0|abc123", "aud": ["https://orders.example.com", a.url("/userinfo")],
         "iat": now(), "exp": now() + 86400, "scope": "openid profile read:orders", "azp": "AbCdEf",
         "permissions": ["read:orders", "delete:orders"]}
    h = passes(gateway, "/auth0/x", a.token(c, typ="at+jwt"))
    assert h["x-permissions"] == "read:orders,delete:orders" and h["x-forwarded-user"] == "auth0|abc123"
    assert "insufficient_scope" in refused(gateway, "/auth0/x", a.token(dict(c, permissions=["read:orders"]),
                                                                        typ="at+jwt"), 403)
    # Auth0's issuer ends in "/": the same URL without it is another issuer.
    assert "issuer is not accepted" in refused(gateway, "/auth0/x", a.token(dict(c, iss=a.url(""))))


def test_keycloak_realm_and_client_roles(providers, gateway):
    k = providers["keycloak"]
    c = {"exp": now() + 300, "iat": now(), "jti": "onrtac:1", "iss": k.url("/realms/acme"), "aud": ["orders", "account"],
         "sub": "f7c3e1d2", "typ": "Bearer", "azp": "web", "sid": "s1", "acr": "1",
         "realm_access": {"roles": ["default-roles-acme", "user"]},
         "resource_access": {"orders": {"roles": ["orders-admin"]}, "account": {"roles": ["manage-account"]}},
         "scope": "openid profile email", "email_verified": True, "preferred_username": "alice"}
    assert passes(gateway, "/keycloak/x", k.token(c))["x-username"] == "alice"
    # The client role of another client is not this audience's.
    moved = dict(c, resource_access={"account": {"roles": ["orders-admin"]}})
    assert "insufficient_scope" in refused(gateway, "/keycloak/x", k.token(moved), 403)


def test_google_both_spellings_and_no_other(providers, gateway):
    g = providers["google"]
    c = {"iss": "https://accounts.google.com", "azp": "123456789012-abc.apps.googleusercontent.com",
         "aud": "123456789012-abc.apps.googleusercontent.com", "sub": "110169484474386276334",
         "email": "alice@gmail.com", "email_verified": True, "at_hash": "X", "iat": now(), "exp": now() + 3600}
    for iss in ("https://accounts.google.com", "accounts.google.com"):
        assert passes(gateway, "/google/x", g.token(dict(c, iss=iss)))["x-forwarded-email"] == "alice@gmail.com"
    for iss in ("http://accounts.google.com", "https://accounts.google.com/"):
        assert "issuer is not accepted" in refused(gateway, "/google/x", g.token(dict(c, iss=iss)))


def test_cognito_access_token_and_its_id_token(providers, gateway):
    cg = providers["cognito"]
    iss = cg.url(f"/{POOL}")
    access = {"sub": "aaaaaaaa-bbbb", "cognito:groups": ["admins"], "iss": iss, "version": 2, "client_id": "5r2g6example",
              "origin_jti": "o1", "event_id": "e1", "token_use": "access",
              "scope": "aws.cognito.signin.user.admin orders/read", "auth_time": now(), "exp": now() + 3600,
              "iat": now(), "jti": "j1", "username": "alice"}
    assert passes(gateway, "/cognito/x", cg.token(access, typ=None))["x-username"] == "alice"
    # Its ID token: aud is the app client, token_use id — no access token.
    id_token = {"sub": "aaaaaaaa-bbbb", "cognito:groups": ["admins"], "email_verified": True, "iss": iss,
                "cognito:username": "alice", "origin_jti": "o1", "aud": "5r2g6example", "event_id": "e1",
                "token_use": "id", "auth_time": now(), "exp": now() + 3600, "iat": now(), "jti": "j2",
                "email": "alice@example.com"}
    assert "not an access token" in refused(gateway, "/cognito/x", cg.token(id_token, typ=None))
    # Another app client of the pool.
    assert "another audience" in refused(gateway, "/cognito/x", cg.token(dict(access, client_id="other"), typ=None))


def test_keys_come_from_the_published_documents(providers, gateway):
    """The gateway read each discovery document where the provider publishes it and took the keys
    from its jwks_uri; Entra ID v1 and Google are configured with the jwks_uri of theirs."""
    p = providers
    for site, document in (("entra", ENTRA_V2), ("okta", OKTA_ORG), ("okta", OKTA_CUSTOM), ("auth0", AUTH0),
                           ("keycloak", KEYCLOAK), ("cognito", COGNITO)):
        assert p[site].site.hits(document), (site, document)
        assert p[site].site.hits(urlsplit(p[site].documents[document]["jwks_uri"]).path), (site, document)
    for site, document in (("entra", ENTRA_V1), ("google", GOOGLE)):
        assert p[site].site.hits(urlsplit(p[site].documents[document]["jwks_uri"]).path), (site, document)
    # Entra ID's own keys (v1 and v2.0) live on login.microsoftonline.com, never on sts.windows.net.
    assert not p["sts"].site.requests


def test_check_config_prints_the_presets(providers, gateway):
    out = subprocess.run([BIN, "check-config", gateway.config_path], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stdout
    assert "preset: issuers.cognito (provider: cognito): scope_claim: scope, role_claims: [cognito:groups], " \
           "audience_claim: client_id, token_use: access" in out.stdout
    assert "preset: issuers.keycloak (provider: keycloak)" in out.stdout and "resource_access.orders.roles" in out.stdout
    assert "issuer_aliases: [accounts.google.com]" in out.stdout
