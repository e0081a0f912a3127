"""Mutual TLS towards the AS (RFC 8705) end to end: a login client that presents a certificate
(`clients.web.tls`) authenticates with it (`tls_client_auth`, `self_signed_tls_client_auth`)
at the AS's `mtls_endpoint_aliases`, and gets access tokens bound to it (`cnf.x5t#S256`),
also after a refresh; an introspection client authenticates with its certificate too. The AS is the project's test AS with its TLS front (authserver/mtls.py);
certificates come from a CA made with `openssl` (test_mtls.ClientPKI) or are self-signed."""
import base64
import json
import time

import pytest
import requests

from support.gateway import Gateway
from support.tls_pki import make_pair
from support.waiting import sleep_into_second
from test_login import API_ROUTE_FORWARDING_TOKEN, LoginEnv, login_env  # noqa: F401 (a fixture)
from test_mtls import ClientPKI, x5t

SUBJECT = "/O=Tokengate Test/CN=web-client"
SUBJECT_DN = "CN=web-client,O=Tokengate Test"  # RFC 4514: the most specific first


def claims(token):
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


@pytest.fixture
def pki(tmp_path):
    return ClientPKI(str(tmp_path))


def mtls_authserver(authserver_factory, pki, **kw):
    a = authserver_factory(login="form", mtls=True, **kw)
    a.mtls.trust_ca(pki.crt)
    return a


@pytest.fixture
def mtls_as(authserver_factory, pki):
    return mtls_authserver(authserver_factory, pki)


def env(login_env, a, upstream, tmp_path, cert, key, auth="tls_client_auth", subject_dn=SUBJECT_DN, **kw):
    kw.setdefault("extra_route", API_ROUTE_FORWARDING_TOKEN)
    return login_env(a, upstream, tmp_path, auth=auth, client_tls=(cert, key, subject_dn),
                     issuer_options=f'algorithms: [ES256, RS256], ca_file: "{a.mtls.cert}"', **kw)


def forwarded_token(e):
    r = e.get("/api/orders")
    assert r.status_code == 200, (r.status_code, r.text, e.gw.output()[-2000:])
    scheme, _, token = dict(r.json()["headers"])["Authorization"].partition(" ")
    assert scheme == "Bearer"
    return token


def test_tls_client_auth_login_gets_certificate_bound_tokens(login_env, mtls_as, pki, upstream, tmp_path):
    crt, key = pki.issue("web", SUBJECT)
    e = env(login_env, mtls_as, upstream, tmp_path, crt, key, extra_client="    userinfo: true")
    assert e.login().status_code == 200
    # PAR, the code exchange and userinfo went to the aliases, each with the certificate; the
    # plain endpoints were not asked.
    seen = [(r["path"], r["x5t"]) for r in mtls_as.mtls.requests]
    assert ("/par", x5t(crt)) in seen and ("/token", x5t(crt)) in seen and ("/userinfo", x5t(crt)) in seen, seen
    assert len([t for t in mtls_as.token_requests if t["status"] == 200]) == 1
    assert mtls_as.mtls.refusals == []
    # The token the upstream gets is bound to the client's certificate (RFC 8705 §3).
    assert claims(forwarded_token(e))["cnf"] == {"x5t#S256": x5t(crt)}


def test_a_refresh_keeps_the_binding(login_env, authserver_factory, pki, upstream, tmp_path):
    mtls_as = mtls_authserver(authserver_factory, pki, access_token_lifetime=3)
    crt, key = pki.issue("web", SUBJECT)
    e = env(login_env, mtls_as, upstream, tmp_path, crt, key, session=", refresh_margin: 1s")
    e.login()
    logged_in = time.time()
    first = forwarded_token(e)
    sleep_into_second(logged_in, 2)  # the access token (3 s) is within the 1 s margin
    second = forwarded_token(e)
    assert second != first
    assert [t["grant_type"] for t in mtls_as.token_requests if t["status"] == 200] == [
        "authorization_code", "refresh_token"]
    assert claims(second)["cnf"] == {"x5t#S256": x5t(crt)}
    assert [r["x5t"] for r in mtls_as.mtls.requests if r["path"] == "/token"] == [x5t(crt)] * 2


def test_self_signed_tls_client_auth_publishes_its_certificate(login_env, mtls_as, upstream, tmp_path):
    crt, key = make_pair(str(tmp_path), "self-signed-client", ["web-client"])
    mtls_as.mtls.trust_certificate(crt)  # the handshake; the AS matches the JWKS's x5c
    e = env(login_env, mtls_as, upstream, tmp_path, crt, key, auth="self_signed_tls_client_auth", subject_dn=None)
    published = requests.get(e.gw.url("/.well-known/jwks.json"), timeout=5).json()["keys"]
    with_cert = [k for k in published if "x5c" in k]
    assert len(with_cert) == 1 and "d" not in with_cert[0]
    assert x5t(crt) == base64.urlsafe_b64encode(
        __import__("hashlib").sha256(base64.b64decode(with_cert[0]["x5c"][0])).digest()).rstrip(b"=").decode()
    assert e.login().status_code == 200
    assert claims(forwarded_token(e))["cnf"] == {"x5t#S256": x5t(crt)}


def test_private_key_jwt_with_a_certificate_gets_bound_tokens(login_env, mtls_as, pki, upstream, tmp_path):
    """The certificate binds whatever authenticates: here a client assertion does (the
    private_key_jwt × mtls variant of the FAPI 2.0 plan)."""
    crt, key = pki.issue("web", SUBJECT)
    # The assertion names the issuer: the AS knows its aliases by the plain endpoints' URLs.
    e = env(login_env, mtls_as, upstream, tmp_path, crt, key, auth="private_key_jwt", assertion_audience="issuer")
    assert e.login().status_code == 200
    assert claims(forwarded_token(e))["cnf"] == {"x5t#S256": x5t(crt)}


# --- refusals, from the attacker's side -------------------------------------------------------

def test_another_clients_certificate_does_not_authenticate(login_env, mtls_as, pki, upstream, tmp_path):
    """A certificate from the trusted CA, with another subject: the AS refuses the PAR, and no
    login starts."""
    crt, key = pki.issue("mallory", "/O=Tokengate Test/CN=mallory")
    e = env(login_env, mtls_as, upstream, tmp_path, crt, key)
    r = e.get("/orders")
    assert r.status_code == 503, r.text
    assert mtls_as.mtls.refusals[-1]["path"] == "/par" and "mallory" in mtls_as.mtls.refusals[-1]["why"]
    assert mtls_as.authorizations == []


def test_a_certificate_from_an_untrusted_ca_ends_the_handshake(login_env, mtls_as, upstream, tmp_path):
    other = ClientPKI(str(tmp_path), name="other-ca")
    crt, key = other.issue("web", SUBJECT)
    e = env(login_env, mtls_as, upstream, tmp_path, crt, key)
    assert e.get("/orders").status_code == 503
    assert mtls_as.mtls.requests == [] and mtls_as.authorizations == []


def test_without_the_certificate_the_client_cannot_authenticate(mtls_as, pki):
    """The AS's side of the contract the gateway relies on: the alias without a certificate,
    and the plain endpoint, both refuse a tls_client_auth client."""
    mtls_as.add_client("web", token_endpoint_auth_method="tls_client_auth", tls_client_auth_subject_dn=SUBJECT_DN)
    form = {"grant_type": "client_credentials", "client_id": "web"}
    r = requests.post(mtls_as.mtls.url + "/token", data=form, verify=mtls_as.mtls.cert, timeout=5)
    assert r.status_code == 401 and r.json()["error"] == "invalid_client"
    assert requests.post(mtls_as.url + "/token", data=form, timeout=5).status_code == 401


def test_a_bound_token_without_its_certificate_is_refused_at_userinfo(login_env, mtls_as, pki, upstream, tmp_path):
    """A token the gateway forwarded, replayed by whoever read it: without the certificate the
    AS's userinfo refuses it (what an upstream checking RFC 8705 §3 does too)."""
    crt, key = pki.issue("web", SUBJECT)
    e = env(login_env, mtls_as, upstream, tmp_path, crt, key)
    e.login()
    token = forwarded_token(e)
    r = requests.get(mtls_as.mtls.url + "/userinfo", headers={"Authorization": f"Bearer {token}"},
                     verify=mtls_as.mtls.cert, timeout=5)
    assert r.status_code == 401 and r.json()["error"] == "invalid_token"
    ok = requests.get(mtls_as.mtls.url + "/userinfo", headers={"Authorization": f"Bearer {token}"},
                      verify=mtls_as.mtls.cert, cert=(crt, key), timeout=5)
    assert ok.status_code == 200, ok.text


# --- introspection with a mutual-TLS client ---------------------------------------------------

OPAQUE_SECRET = "opq-secret-0123456789abcdef0123456789ab"


def introspecting_gateway(a, upstream, crt, key):
    """test_introspection_idp's gateway, its introspection client authenticating by certificate."""
    from test_introspection_idp import config as introspection_config
    block = f'auth: tls_client_auth, tls: {{ cert_file: "{crt}", key_file: "{key}" }}'
    text = introspection_config(a, block).replace("@UPSTREAM@", str(upstream.port))
    return Gateway(text.replace("algorithms: [ES256]", f'algorithms: [ES256]\n    ca_file: "{a.mtls.cert}"', 1))


@pytest.mark.parametrize("subject,expected", [(SUBJECT, 200), ("/O=Tokengate Test/CN=mallory", 503)],
                         ids=["its-certificate", "another-subject"])
def test_introspection_authenticates_with_the_certificate(authserver_factory, pki, upstream, subject, expected):
    """The gateway's introspection client is tls_client_auth: the alias is called with the
    certificate, and a certificate with another subject gets no answer (503, nothing cached)."""
    a = mtls_authserver(authserver_factory, pki)
    a.add_client("opq", client_secret=OPAQUE_SECRET, scopes=["orders:read"], audience=["api"],
                 access_token_format="opaque")
    a.add_client("tokengate", token_endpoint_auth_method="tls_client_auth", tls_client_auth_subject_dn=SUBJECT_DN,
                 scopes=["openid"])
    crt, key = pki.issue("gw", subject)
    g = introspecting_gateway(a, upstream, crt, key)
    g.start()
    try:
        token = a.client_credentials_token("opq", scope="orders:read", secret=OPAQUE_SECRET)["access_token"]
        r = requests.get(g.url("/api/orders/1"), headers={"Authorization": f"Bearer {token}"}, timeout=10)
        assert r.status_code == expected, r.text + g.output()[-2000:]
        assert ("/introspection", x5t(crt)) in [(q["path"], q["x5t"]) for q in a.mtls.requests]
        if expected == 503:
            assert a.mtls.refusals[-1]["path"] == "/introspection"
    finally:
        g.stop()


def test_token_exchange_authenticates_with_the_certificate(authserver_factory, pki, upstream):
    """RFC 8693 at the token endpoint's alias, by a tls_client_auth client: the exchanged token
    the upstream gets is bound to the gateway's certificate."""
    from test_token_exchange import TARGET, config as exchange_config, get, upstream_authorization
    a = mtls_authserver(authserver_factory, pki)
    a.add_client("tokengate", token_endpoint_auth_method="tls_client_auth", tls_client_auth_subject_dn=SUBJECT_DN,
                 scopes=["openid", "orders:read"])
    crt, key = pki.issue("gw", SUBJECT)
    block = f'auth: tls_client_auth, tls: {{ cert_file: "{crt}", key_file: "{key}" }}'
    text = exchange_config(a, block, f"resource: {TARGET}, scope: orders:read", upstream.port, workers=1)
    g = Gateway(text.replace("algorithms: [ES256]", f'algorithms: [ES256]\n    ca_file: "{a.mtls.cert}"', 1))
    g.start()
    try:
        r = get(g, a.code_flow()["access_token"])
        assert r.status_code == 200, r.text + g.output()[-2000:]
        assert claims(upstream_authorization(r))["cnf"] == {"x5t#S256": x5t(crt)}
        assert ("/token", x5t(crt)) in [(q["path"], q["x5t"]) for q in a.mtls.requests]
    finally:
        g.stop()


# --- FAPI 2.0 with the certificate as the sender constraint ------------------------------------

FAPI_CERT_CLIENT = "    profile: fapi2"


def fapi_cert_env(login_env, a, upstream, tmp_path, crt, key):
    return login_env(a, upstream, tmp_path, auth="tls_client_auth", client_tls=(crt, key, SUBJECT_DN),
                     extra_client=FAPI_CERT_CLIENT, extra_route=API_ROUTE_FORWARDING_TOKEN,
                     issuer_options=f'profile: fapi2, ca_file: "{a.mtls.cert}"', assertion_audience="issuer")


def test_fapi2_takes_only_tokens_bound_to_its_certificate(login_env, authserver_factory, pki, upstream, tmp_path):
    """Without DPoP, the profile's sender constraint is the certificate: an AS that issues
    unbound tokens over mutual TLS ends the login at the token endpoint's answer."""
    a = authserver_factory(login="form", mtls=True, algs=("ES256", "PS256"), id_token_alg="PS256")
    a.mtls.trust_ca(pki.crt)
    crt, key = pki.issue("web", SUBJECT)
    a.mtls.bind = False
    e = fapi_cert_env(login_env, a, upstream, tmp_path, crt, key)
    r = e.get(e.to_callback("/api/orders"))
    assert r.status_code == 400 and e.session_cookie() is None, r.text
    assert e.gw.logged("not bound to the client certificate")
    a.mtls.bind = True
    assert e.login("/api/orders").status_code == 200


def test_fapi2_needs_an_as_that_says_it_binds(login_env, authserver_factory, pki, upstream, tmp_path):
    a = authserver_factory(login="form", mtls=True, algs=("ES256", "PS256"), id_token_alg="PS256")
    a.mtls.trust_ca(pki.crt)
    a.server.context.provider_info["tls_client_certificate_bound_access_tokens"] = False
    crt, key = pki.issue("web", SUBJECT)
    e = fapi_cert_env(login_env, a, upstream, tmp_path, crt, key)
    r = e.get("/api/orders")
    assert r.status_code == 503 and a.authorizations == [] and a.par_requests == {}, r.text
    assert e.gw.logged("tls_client_certificate_bound_access_tokens")


def test_authorization_server_calls_do_not_follow_redirects(login_env, mtls_as, pki, upstream, tmp_path):
    """A PAR answered with a redirect (to a plain-http URL here) is not followed: the request,
    its credentials and the certificate go nowhere else."""
    crt, key = pki.issue("web", SUBJECT)
    e = env(login_env, mtls_as, upstream, tmp_path, crt, key)
    mtls_as.par_redirect = f"http://127.0.0.1:{upstream.port}/stolen"
    assert e.get("/orders").status_code == 503
    assert [q for q in upstream.requests if q["path"].startswith("/stolen")] == []
