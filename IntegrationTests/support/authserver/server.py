"""A real OAuth 2.0 / OpenID Connect authorization server for the end-to-end tests: idpyoidc
(pinned in IntegrationTests/requirements.txt) behind a small WSGI wrapper on werkzeug's dev
server (single-threaded; a thread per connection with the login form), on 127.0.0.1.

What it serves (issuer = http://127.0.0.1:PORT, compared by idpyoidc as an exact string, so
always 127.0.0.1 and never localhost):

  /.well-known/openid-configuration   OIDC discovery (also at /.well-known/oauth-authorization-server)
  /jwks.json                          the current public signing keys (live: rotation shows at once)
  /authorization                      code flow; the user is logged in automatically (AutoLogin), or
                                      on a login form (AuthServer(login="form")); plain, pushed (PAR:
                                      client_id + request_uri alone), or a request object (RFC 9101)
                                      by value (request=) or by reference (request_uri=http(s)://...,
                                      fetched with a GET); iss in every response (RFC 9207)
  /login                              login="form": where the form posts username and password
  /token                              authorization_code (PKCE S256 checked), client_credentials,
                                      refresh_token (rotating with rotate_refresh_tokens=True),
                                      token exchange (RFC 8693: idpyoidc's helper; subject tokens
                                      this AS issued; targets in EXCHANGE_TARGETS, which become
                                      the new token's aud); a code's access token has aud = the
                                      authorization's (or the token request's) RFC 8707 resource
  /introspection                      RFC 7662
  /revocation                         RFC 7009
  /end_session                        OIDC RP-Initiated Logout 1.0
  /userinfo                           OIDC userinfo
  /par                                RFC 9126 pushed authorization requests (plain or a request
                                      object); request_uri one-time, expiring after par_lifetime s

Client authentication at /token, /introspection, /par and /revocation: client_secret_basic,
client_secret_post, client_secret_jwt and private_key_jwt (an assertion's aud: the endpoint's
URL or the issuer).

Browser login (the AS as the OIDC provider of a web-app RP) — what the wrapper does and why:
  - the authorization request is resolved by the wrapper before idpyoidc sees it: a pushed
    request from the wrapper's own table (AuthServer.par_requests: one use, par_lifetime,
    the pushing client only), a request object verified here (below), or the query; idpyoidc's
    Authorization endpoint then gets plain parameters. Why: idpyoidc 5.0.0 still wants
    response_type/scope/redirect_uri next to a PAR request_uri, never expires PAR entries, and
    its request-object handling checks only the signature (any alg the key jar has a key for,
    HS256 with the client secret included), not aud, exp, typ, iss or client_id;
  - request objects: JWS with the client's registered public keys (add_client(jwks=...)), alg
    in REQUEST_OBJECT_ALGS (RS*, PS*, ES*, EdDSA; no HS*), typ oauth-authz-req+jwt when present,
    iss = client_id, aud ∋ issuer, exp in the future, nbf/iat sane, client_id = the outer
    client_id, no request/request_uri inside; the request object's parameters are the request
    (RFC 9101 §6.3). alg none is accepted unless require_signed_request_object. Refusals of a
    request object or request_uri answer 400 JSON, never a redirect (no trusted redirect_uri);
  - errors after that (require_par, PKCE plain, prompt=none without login, idpyoidc's own checks)
    redirect to the registered redirect_uri with error, state and iss (RFC 6749 §4.1.2.1,
    RFC 9207); idpyoidc sets iss (and client_id) only on success and answers errors as JSON;
  - offline_access: idpyoidc refuses it without prompt=consent; the wrapper adds consent (the
    clients here are pre-registered with the scope), or drops the scope with prompt=none
    (OIDC Core §11: ignore it);
  - the login form is idpyoidc's UserPassJinja2 user-authentication method (FormLogin below),
    with what 5.0.0 lacks around it: a template (templates/login.jinja2), the form's POST
    endpoint (/login: verify(), then idpyoidc's create_session + authz_part2), a login
    session of the AS (cookie authserver_login_PORT, all clients: SSO; prompt=login and max_age
    honoured) instead of idpyoidc's per-client session cookie, and a form token that expires;
  - PKCE at /token in the wrapper (AuthServer._pkce_check), not idpyoidc's pkce add-on: its
    token check breaks client_credentials requests (looks up request["code"]) and it defaults
    a missing code_challenge_method to plain. S256 only; a code_verifier for a code without
    code_challenge is refused too (RFC 9700 §2.1.1); a refused verifier does not spend the code;
  - refresh: idpyoidc's helper with revoke_refresh_on_issue for rotation; a spent, revoked or
    expired refresh token answers invalid_grant (idpyoidc: invalid_request) → RefreshGrant;
  - revocation: idpyoidc's TokenRevocation (works as is); the wrapper answers 200 with an empty
    body and records the calls;
  - end_session in the wrapper: idpyoidc's Session endpoint needs its own encrypted session
    cookie and an interactive confirmation step. id_token_hint must be an ID token signed by
    this AS (exp not checked: RP-Initiated Logout §2), its aud the client; a
    post_logout_redirect_uri must be registered (add_client(post_logout_redirect_uri=...)).
    Tokens are not revoked by a logout;
  - introspection answers inactive from a token's exp second on (idpyoidc: one second later);
  - an authentication's time (auth_time) is the login's: idpyoidc's create_session passes it as
    time_stamp=, which create_authn_event does not read (it takes authn_time= or timestamp=),
    so every authorization — an SSO one too — got the current second instead;
  - a request_uri by reference is fetched while the AS is busy with that request (the AS is
    one request at a time): the server hosting it must not need the AS to answer.

Access tokens are JWTs per RFC 9068: header typ "at+jwt", a kid, and claims iss, sub, aud
(the client's configured API audience), client_id, scope, iat, exp, jti, plus the user's
claims for the granted scopes (email, groups ...). idpyoidc needs one small hook for that:
RFC9068AccessToken below (its JWTToken signs with no typ and sets no aud by itself).

idpyoidc 5.0.0 facts met while setting this up (worked around here unless noted):
  - its client_credentials helper fails on a client's second token request (TypeError) →
    ClientCredentialsGrant below;
  - introspection refuses a caller that is not in the token's audience unless
    enforce_audience_restriction is off (it is: RFC 7662 callers are resource servers), and
    answers aud/sub from its session records → _introspection_claims overlays the token's;
  - client_secret_jwt needs the secret in the key jar under the client_id (add_client does);
  - offline_access (refresh tokens) needs prompt=consent (code_flow adds it);
  - PAR (/par) answers 201 {request_uri, expires_in}, but /authorization then still wants
    response_type, scope and redirect_uri in the query next to request_uri → the wrapper keeps
    pushed requests itself (see "Browser login" above);
  - DPoP (RFC 9449) is off unless AuthServer(dpop=True); then every /token request needs a
    proof (see below). Its add-on (idpyoidc.server.oauth2.add_on.dpop) needs these fixes:
    * add_support() appends userinfo_post_parse_request (the resource-side check: wants the
      access token in auth_info, hashes ath as hex) to the endpoints it is given, never
      token_post_parse_request → AuthServer swaps in _dpop_token_check, which calls
      token_post_parse_request, and puts it first in /token's post_parse_request list (before
      the grant helper looks at the code or refresh token);
    * token_post_parse_request lets a request without http_info through, and checks only the
      signature (with the proof's own jwk), htu and htm — not typ, not alg (an HS256 "proof"
      MACed with a symmetric jwk carried in its own header passes), not private members in
      the jwk, not iat, not jti → _dpop_token_check adds RFC 9449 §4.3's
      other checks (alg one of dpop_algs, asymmetric; iat within dpop_max_age/dpop_leeway;
      a jti only once) and answers any failure 400 invalid_dpop_proof (§5; idpyoidc's
      ValueErrors would otherwise come out as invalid_request);
    * the dpop_signing_alg_values_supported that add_support writes into the metadata is
      overwritten when Server() computes the metadata afterwards → set again (refresh_token's
      helper only binds tokens while that metadata key exists);
    * token_args() reads cdb[client_id]["dpop_jkt"], which nothing writes (KeyError for every
      client), and would bind per client rather than per proof → not registered. Binding goes
      through grant.extra["dpop_jkt"] instead: the authorization_code and refresh_token helpers
      set it from request["dpop_jkt"] (and answer token_type DPoP), Grant.payload_arguments
      turns it into cnf.jkt of the minted tokens, ClientCredentialsGrant does the same;
    * introspection answers token_type DPoP but no cnf → _introspection_claims adds the
      token's cnf (RFC 9449 §6.2);
    * Grant.payload_arguments puts cnf.jkt into every token it mints for the grant, so the
      code flow's ID token carries it too (not fixed: harmless);
    * add_support also registers a "dpop" client-authentication method (DPoPClientAuth) for
      the endpoints that list none (discovery, authorization): harmless, it only reacts to
      "Authorization: DPoP ...".
    The AS does not do DPoP-Nonce (§8): that is the gateway's job.

Use it in-process (tests): AuthServer(...).start(); .client_credentials_token(...),
.code_flow(...), .refresh(...), .post_token(...) (the raw /token response), .rotate_key(),
.stop()/.start() (same port), .url, .issuer, .token_endpoint. With dpop=True, pass
dpop_key=dpop_client.DPoPKey(...) to the token helpers (a fresh proof per request).
Browser-login helpers (a python-side RP; see the AuthServer docstring): .authorization_url(),
.request_object(), .push_authorization_request()/.par(), .login_page()/.submit_login()/
.login_with_form(), .exchange_code(), .revoke(), .end_session_url(), .verify_id_token(); and
pkce_pair(), redirect_params(), parse_form() here. What happened: .authorizations,
.request_objects, .request_uri_fetches, .par_requests, .login_attempts, .login_sessions,
.token_requests (.refresh_count, .refresh_ok_count), .revocations, .end_session_calls,
.client_assertions (path, grant_type, assertion and the status the AS answered).
Or standalone:  cd IntegrationTests && python3 -m support.authserver.server --port 9000
[--dpop] [--login form] [--require-par]
(prints the issuer and the demo clients; test hooks at POST /_test/rotate).
"""
import argparse
import base64
import copy
import html
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import tempfile
import threading
import time
from html.parser import HTMLParser
from urllib.parse import parse_qs, unquote, urlencode, urljoin, urlsplit

import requests
from cryptojwt import JWT
from cryptojwt.jwk.ec import new_ec_key
from cryptojwt.jwk.hmac import SYMKey
from cryptojwt.jwk.rsa import new_rsa_key
from cryptojwt.jws.jws import JWS
from cryptojwt.jws.utils import alg2keytype
from cryptojwt.key_bundle import KeyBundle
from cryptojwt.key_issuer import KeyIssuer
from cryptojwt.utils import b64d, b64e
from idpyoidc.message.oauth2 import JWTAccessToken, ResponseMessage
from idpyoidc.message.oidc import AccessTokenRequest
from idpyoidc.server import Server
from idpyoidc.server.configure import OPConfiguration
from idpyoidc.server.exception import ClientAuthenticationError, FailedAuthentication
from idpyoidc.server.oauth2 import authorization as idpyoidc_authorization
from idpyoidc.server.oauth2.add_on import dpop as dpop_addon
from idpyoidc.server.oauth2.token_helper.client_credentials import ClientCredentials
from idpyoidc.server.oidc.token import Token as TokenEndpoint
from idpyoidc.server.oidc.token_helper.refresh_token import RefreshTokenHelper
from idpyoidc.server.token.exception import UnknownToken
from idpyoidc.server.token.id_token import IDToken
from idpyoidc.server.token.jwt_token import JWTToken
from idpyoidc.server.user_authn.user import UserAuthnMethod, UserPassJinja2
from idpyoidc.time_util import utc_time_sans_frac
from werkzeug.serving import WSGIRequestHandler, make_server

from .mtls import METHODS as MTLS_METHODS, MutualTLSFront
from ..waiting import wait_for
from werkzeug.wrappers import Request, Response

log = logging.getLogger("authserver")


def _authn_event_at_login_time(create):
    """idpyoidc's create_authn_event with the time_stamp= its create_session passes honoured."""
    def patched(uid, **kwargs):
        stamp = kwargs.pop("time_stamp", None)
        if stamp and not kwargs.get("authn_time"):
            kwargs["authn_time"] = stamp
        return create(uid, **kwargs)
    return patched


idpyoidc_authorization.create_authn_event = _authn_event_at_login_time(idpyoidc_authorization.create_authn_event)

DEFAULT_AUDIENCE = "api"

# RFC 8693 token exchange: the grant, and the targets (resource URIs, audience names) the AS
# issues exchanged tokens for; another target is refused with invalid_target.
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
EXCHANGE_TARGETS = ("https://orders.internal/", "orders-backend")

# DPoP proof algorithms the AS accepts (AuthServer(dpop=True)): asymmetric only (RFC 9449 §4.2).
DPOP_ALGS = ("ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "RS256", "RS384", "RS512", "EdDSA")
# Private members of a JWK (RFC 7518 §6, RFC 8037 §2): none may be in a proof's jwk.
JWK_PRIVATE_MEMBERS = ("d", "p", "q", "dp", "dq", "qi", "oth", "k")

# The users the AutoLogin method can log in as, with the claims the AS releases for them.
USERS = {
    "alice": {"name": "Alice Adams", "preferred_username": "alice", "email": "alice@example.com", "email_verified": True,
              "groups": ["staff", "dev"]},
    "bob": {"name": "Bob Brown", "preferred_username": "bob", "email": "bob@example.com", "email_verified": True, "groups": ["dev"]},
    # Signed up with an address she never confirmed (self-registration): her email must not
    # become an identity header.
    "mallory": {"name": "Mallory", "preferred_username": "mallory", "email": "ceo@example.com", "email_verified": False,
                "groups": ["dev"]},
}

# The passwords of the login form (AuthServer(login="form")).
PASSWORDS = {"alice": "alice-password", "bob": "bob-password", "mallory": "mallory-password"}

# The second authentication method (AuthServer(login="form", mfa=True)): the acr it says,
# the password form's acr, and each user's one-time code (the second factor).
MFA_ACR = "mfa"
PASSWORD_ACR = "urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport"
OTP_CODES = {"alice": "246810", "bob": "135791", "mallory": "000000"}

TEMPLATE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")

# Request objects (RFC 9101): asymmetric signatures with the client's registered keys only.
REQUEST_OBJECT_ALGS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
REQUEST_OBJECT_TYP = "oauth-authz-req+jwt"
# JWT claims of a request object that are not authorization request parameters.
JWT_CLAIMS = ("iss", "aud", "exp", "iat", "nbf", "jti")
# Form fields that authenticate the client at /par (not authorization request parameters).
CLIENT_AUTH_FIELDS = ("client_secret", "client_assertion", "client_assertion_type")
PAR_URN_PREFIX = "urn:ietf:params:oauth:request_uri:"
# RFC 7636 §4.1: 43-128 characters of [A-Z] / [a-z] / [0-9] / "-" / "." / "_" / "~".
PKCE_VERIFIER_RE = re.compile(r"^[A-Za-z0-9\-._~]{43,128}$")
PKCE_CHALLENGE_RE = re.compile(r"^[A-Za-z0-9\-_]{43}$")  # base64url(SHA-256), no padding

# Demo clients. Tests add their own with AuthServer.add_client().
CLIENTS = {
    "app1": {"client_secret": "app1-secret-0123456789abcdef0123456789",
             "scopes": ["openid", "profile", "email", "offline_access", "orders:read", "orders:write"],
             "audience": [DEFAULT_AUDIENCE]},
    # A client of another API: its access tokens carry aud "other-api".
    "other": {"client_secret": "other-secret-0123456789abcdef01234567",
              "scopes": ["openid", "orders:read"], "audience": ["other-api"]},
}


def _qualname(obj):
    return f"{obj.__module__}.{obj.__qualname__}"


_given_ports = set()


def free_port():
    """A port free now, and not one this process has handed out before: the kernel may give
    the same port to two binds in a row once the first socket is closed (a gateway's listen
    and admin ports, or the AS's and a gateway's, would then collide)."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _given_ports:
            _given_ports.add(port)
            return port
    raise RuntimeError("no fresh free port")


class FixedClaimsIDToken(IDToken):
    """idpyoidc's ID token with claims every ID token of this AS carries (AuthServer(
    id_token_claims=...)): a provider's own, such as Entra ID's tenant id `tid`."""

    def payload(self, session_id, alg="RS256", code=None, access_token=None, extra_claims=None, user_info=None):
        extra = dict(self.kwargs.get("fixed_claims") or {}, **(extra_claims or {}))
        return super().payload(session_id, alg=alg, code=code, access_token=access_token, extra_claims=extra,
                               user_info=user_info)


class RFC9068AccessToken(JWTToken):
    """idpyoidc's JWT access-token class with the RFC 9068 profile completed: header typ
    "at+jwt" and kid of the AS's current signing key; aud = the client's configured audience
    (falls back to the handler's `aud` kwarg); sub = client_id for client_credentials
    tokens (RFC 9068 §2.2); client_id always set."""

    def _client_id(self, payload):
        if payload.get("client_id"):
            return payload["client_id"]
        try:
            _mngr = self.upstream_get("context").session_manager
            return _mngr.decrypt_branch_id(payload["sid"])[1]
        except Exception:  # noqa: BLE001 — best effort, the claim is then absent
            return None

    def load_custom_claims(self, payload=None):
        payload = dict(payload or {})
        client_id = self._client_id(payload)
        if client_id:
            payload["client_id"] = client_id
            payload.setdefault("sub", client_id)
        cinfo = self.cdb.get(client_id, {}) if client_id else {}
        aud = cinfo.get("access_token_audience") or self.def_aud or [DEFAULT_AUDIENCE]
        # A token for the resource the client asked for (RFC 8707: at the authorization or
        # the token request), or, from a token exchange, for its target (RFC 8693 §2.1):
        # AuthServer._token sets it for the length of that request.
        targeted = self.upstream_get("attribute", "minted_audience")
        payload["aud"] = list(targeted or aud)
        # An exchanged token is bound to the key of the proof it came with (RFC 9449 §5):
        # idpyoidc's helper answers token_type DPoP then, but mints the token without cnf.
        cnf = self.upstream_get("attribute", "exchange_cnf")
        if targeted is not None and cnf:
            payload["cnf"] = cnf
        # RFC 8705 §3: minted on the TLS listener, the token is bound to the client's certificate.
        x5t = self.upstream_get("attribute", "mtls_x5t")
        if x5t:
            payload["cnf"] = dict(payload.get("cnf") or {}, **{"x5t#S256": x5t})
        # Internal bookkeeping of idpyoidc, not for resource servers.
        payload.pop("token_class", None)
        return payload

    def __call__(self, session_id="", token_class="", usage_rules=None, profile=None, with_jti=None,
                 **payload):
        token_class = token_class or self.token_class or "access_token"
        payload.update({"sid": session_id, "token_class": token_class})
        payload = self.load_custom_claims(payload)
        lifetime = (usage_rules or {}).get("expires_in", self.lifetime)
        keyjar = self.upstream_get("attribute", "keyjar")
        signer = JWT(key_jar=keyjar, iss=self.issuer, lifetime=lifetime, sign_alg=self.alg)
        signer.with_jti = True
        payload = (profile or self.profile or JWTAccessToken)(**payload).to_dict()
        cinfo = self.cdb.get(payload.get("client_id"), {})
        if cinfo.get("access_token_format") == "opaque":
            # An opaque reference instead of the JWT: only introspection can tell what it is.
            now = utc_time_sans_frac()
            ref = "opq_" + secrets.token_urlsafe(32)
            self.opaque[ref] = dict(payload, iss=self.issuer, iat=now, exp=now + lifetime)
            return ref
        keys = self.upstream_get("attribute", "authserver_keys")
        return signer.pack(payload, kid=keys.current_kid(self.alg), jws_headers={"typ": "at+jwt"})

    @property
    def opaque(self):
        if not hasattr(self, "_opaque"):
            self._opaque = {}
        return self._opaque

    def get_payload(self, token):
        # Inside the AS (introspection, refresh): opaque references from the table, JWTs
        # verified with the AS's own keys.
        if token in self.opaque:
            p = dict(self.opaque[token])
        else:
            verifier = JWT(key_jar=self.upstream_get("attribute", "keyjar"), allowed_sign_algs=[self.alg])
            try:
                p = verifier.unpack(token)
            except Exception:  # noqa: BLE001 — not one of ours
                raise UnknownToken()
        p.setdefault("token_class", self.token_class)
        return p


class ClientCredentialsGrant(ClientCredentials):
    """idpyoidc 5.0.0's client_credentials helper fails on a client's second request
    (TypeError: 'ClientSessionInfo' object is not subscriptable, from reusing the previous
    session) and answers token_type "access_token". This one makes a new grant per request,
    grants the requested scope within the client's allowed scopes (all of them if none is
    asked for), refuses unauthenticated clients, and answers token_type "Bearer" — or "DPoP"
    with the access token bound to the proof's key (cnf.jkt) when the DPoP add-on is on and
    the request carried a verified proof (request["dpop_jkt"])."""

    def process_request(self, req, **kwargs):
        _context = self.endpoint.upstream_get("context")
        _mngr = _context.session_manager
        client_id = req["client_id"]
        if not req.get("authenticated", False):
            return self.error_cls(error="invalid_client", error_description="client authentication required")
        cinfo = _context.cdb[client_id]
        allowed = list(cinfo.get("allowed_scopes", []))
        asked = req.get("scope")
        if asked:
            asked = asked.split() if isinstance(asked, str) else list(asked)
            if not set(asked) <= set(allowed):
                return self.error_cls(error="invalid_scope", error_description="scope not allowed for this client")
            scope = asked
        else:
            scope = allowed
        branch_id = _mngr.add_grant(["client_credentials", client_id], scope=scope)
        info = _mngr.get_session_info(branch_id, grant=True)
        token_type = "Bearer"
        if _context.add_on.get("dpop") and req.get("dpop_jkt"):
            # As idpyoidc's authorization_code helper does: Grant.payload_arguments → cnf.jkt.
            info["grant"].extra["dpop_jkt"] = req["dpop_jkt"]
            token_type = "DPoP"
        token = self._mint_token(token_class="access_token", grant=info["grant"], session_id=branch_id,
                                 client_id=client_id, based_on=None, scope=scope, token_type=token_type)
        resp = {"access_token": token.value, "token_type": token_type, "scope": " ".join(scope)}
        if token.expires_at:
            resp["expires_in"] = token.expires_at - utc_time_sans_frac()
        return resp


class AutoLogin(UserAuthnMethod):
    """Logs the user in without a form: whoever AuthServer.login_user names (default alice)."""

    def __init__(self, user="alice", upstream_get=None, **kwargs):
        UserAuthnMethod.__init__(self, upstream_get=upstream_get)
        self.user = user

    def authenticated_as(self, client_id="", cookie=None, authorization="", **kwargs):
        return {"uid": self.user}, utc_time_sans_frac()


class RefreshGrant(RefreshTokenHelper):
    """idpyoidc's OIDC refresh_token helper, with RFC 6749 §5.2's error for a refresh token
    that is expired, revoked (RFC 7009) or already rotated away: invalid_grant (idpyoidc
    answers invalid_request "Refresh token inactive"). Whether a refresh rotates is the token
    endpoint's revoke_refresh_on_issue (AuthServer(rotate_refresh_tokens=True))."""

    def post_parse_request(self, request, client_id="", **kwargs):
        resp = super().post_parse_request(request, client_id, **kwargs)
        if isinstance(resp, self.error_cls) and resp.get("error_description") == "Refresh token inactive":
            return self.error_cls(error="invalid_grant",
                                  error_description="refresh token expired, revoked or already used")
        return resp


class FormLogin(UserPassJinja2):
    """The login form of AuthServer(login="form"): idpyoidc's UserPassJinja2 user-authentication
    method (the authn broker picks it, setup_auth calls authenticated_as and, without a login,
    __call__ for the page; verify() checks the password), completed where 5.0.0 falls short:
      - no template ships with idpyoidc → templates/login.jinja2 here;
      - its __call__ signs the hidden request token with RS256 (fails without an RS256 key), with
        no expiry, and warns OnlyForTestingWarning on every page → AuthServer._login_page;
      - there is no endpoint the form posts to (idpyoidc leaves that to the web framework) →
        AuthServer._login (POST /login): verify(), then create_session + authz_part2;
      - authenticated_as reads idpyoidc's own encrypted session cookie, which names one client's
        grant (no SSO for another client) and which the wrapper never sets → the AS's login
        session instead: AuthServer passes the browser's login cookie as `authn`, setup_auth
        hands it over as `authorization`."""

    url_endpoint = "/login"

    def __init__(self, db, template_handler, template="login.jinja2", upstream_get=None, **kwargs):
        super().__init__(db, template_handler, template=template, upstream_get=upstream_get,
                         verify_endpoint=self.url_endpoint, **kwargs)
        self.authserver = None  # set by AuthServer

    def __call__(self, **authn_args):
        return self.authserver._login_page(authn_args)

    def authenticated_as(self, client_id="", cookie=None, authorization="", max_age=0, **kwargs):
        return self.authserver._login_session_identity(authorization, max_age)

    def verify(self, *args, **kwargs):
        username, password = kwargs.get("username", ""), kwargs.get("password", "")
        want = self.user_db.get(username)
        if want is None or not hmac.compare_digest(want.encode(), password.encode()):
            raise FailedAuthentication()
        return username


class MFAFormLogin(FormLogin):
    """The second user-authentication method of AuthServer(login="form", mfa=True), acr "mfa"
    in idpyoidc's authn broker: a request whose acr_values name it gets it (pick_auth), others
    the password form. The same form with a one-time code (OTP_CODES) beside the password; a
    login session of the AS counts for it only when it was itself an "mfa" login within the
    request's max_age, so a password-only session, or an old one, logs in again with a fresh
    auth_time."""

    def authenticated_as(self, client_id="", cookie=None, authorization="", max_age=0, **kwargs):
        return self.authserver._login_session_identity(authorization, max_age, acr=MFA_ACR)


class PasswordDB(dict):
    """user → password, for UserPassJinja2's db."""


class AuthzError(Exception):
    """An authorization request refused: error code (RFC 6749 §4.1.2.1, RFC 9101 §7, RFC 9126)
    and description."""

    def __init__(self, error, description):
        super().__init__(f"{error}: {description}")
        self.error = error
        self.description = description


class _FormParser(HTMLParser):
    """The first <form> of a page: its action, method and <input>s (name → value)."""

    def __init__(self):
        super().__init__()
        self.form = None
        self._in_form = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form" and self.form is None:
            self.form = {"action": a.get("action", ""), "method": (a.get("method") or "get").lower(), "inputs": {},
                         "types": {}}
            self._in_form = True
        elif tag == "input" and self._in_form and a.get("name"):
            self.form["inputs"][a["name"]] = a.get("value") or ""
            self.form["types"][a["name"]] = (a.get("type") or "text").lower()

    def handle_endtag(self, tag):
        if tag == "form":
            self._in_form = False


def parse_form(page):
    """{"action", "method", "inputs": {name: value}, "types": {name: type}} of the first form
    of page (HTML text), or None."""
    p = _FormParser()
    p.feed(page)
    return p.form


def pkce_pair(verifier=None):
    """(code_verifier, code_challenge) for PKCE S256 (RFC 7636 §4.1, §4.2)."""
    verifier = verifier or secrets.token_urlsafe(48)[:64]
    challenge = b64e(hashlib.sha256(verifier.encode("ascii")).digest()).decode("ascii")
    return verifier, challenge


def redirect_params(location):
    """The query parameters of a redirect Location, one value each."""
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query, keep_blank_values=True).items()}


def _add_query(url, params):
    params = {k: v for k, v in params.items() if v is not None}
    if not params:
        return url
    return url + ("&" if "?" in url else "?") + urlencode(params)


def _jose_parts(token):
    """(header, claims) of a compact JWS, unverified; ValueError if it is not one."""
    parts = token.split(".") if isinstance(token, str) else []
    if len(parts) != 3:
        raise ValueError("not a compact JWS")
    try:
        header, claims = json.loads(b64d(parts[0].encode())), json.loads(b64d(parts[1].encode()))
    except Exception:  # noqa: BLE001
        raise ValueError("not a compact JWS")
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise ValueError("not a compact JWS")
    return header, claims


class SigningKeys:
    """The AS's signing keys, one current key per algorithm, kept in idpyoidc's key jar
    (under both owner "" and the issuer, as idpyoidc looks under either)."""

    def __init__(self, keyjar, issuer):
        self.keyjar = keyjar
        self.issuer = issuer
        self.keys = []  # current first
        self.serial = 0
        self.lock = threading.Lock()

    def _new(self, alg):
        self.serial += 1
        kid = f"{alg.lower()}-{self.serial}-{secrets.token_hex(4)}"
        if alg.startswith("ES"):
            k = new_ec_key(crv={"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}[alg], kid=kid, use="sig")
        else:
            k = new_rsa_key(key_size=2048, kid=kid, use="sig")
        k.alg = alg
        return k

    def _install(self):
        # A fresh KeyIssuer for both owners; other owners (clients' keys) are left alone.
        for owner in ("", self.issuer):
            ki = KeyIssuer(name=owner)
            kb = KeyBundle()
            for k in self.keys:
                kb.append(k)
            ki.add_kb(kb)
            self.keyjar[owner] = ki

    def init(self, algs):
        with self.lock:
            self.keys = [self._new(a) for a in algs]
            self._install()

    def current_kid(self, alg):
        with self.lock:
            for k in self.keys:
                if k.alg == alg:
                    return k.kid
        raise KeyError(alg)

    def rotate(self, alg="ES256", keep_old=False):
        """Adds a new key for alg and makes it current. keep_old=False removes the old key of
        that alg from the JWKS at once (a hard rotation); True keeps publishing it."""
        with self.lock:
            new = self._new(alg)
            old = [k for k in self.keys if k.alg == alg]
            others = [k for k in self.keys if k.alg != alg]
            self.keys = [new] + others + (old if keep_old else [])
            self._install()
            return new.kid

    def remove(self, kid):
        with self.lock:
            self.keys = [k for k in self.keys if k.kid != kid]
            self._install()

    def public_jwks(self):
        with self.lock:
            return {"keys": [dict(k.serialize(private=False), alg=k.alg) for k in self.keys]}

    def private_key(self, kid):
        with self.lock:
            return next(k for k in self.keys if k.kid == kid)


def op_config(issuer, audience, access_token_lifetime, dpop_algs=None, login="auto", id_token_lifetime=300,
              refresh_token_lifetime=3600, id_token_claims=None, mfa=False):
    authn = ["client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt"]
    conf = {
        "issuer": issuer,
        "httpc_params": {"verify": False, "timeout": 2},
        "keys": {"key_defs": [{"type": "EC", "crv": "P-256", "use": ["sig"]}], "uri_path": "jwks.json",
                 "read_only": False},
        "preference": {
            "grant_types_supported": ["authorization_code", "client_credentials", "refresh_token", TOKEN_EXCHANGE],
            "subject_types_supported": ["public"],
            "scopes_supported": ["openid", "profile", "email", "offline_access", "orders:read", "orders:write"],
        },
        "scopes_to_claims": {
            "openid": ["sub"],
            "profile": ["name", "preferred_username", "groups"],
            "email": ["email", "email_verified"],
            "offline_access": [],
            "orders:read": [],
            "orders:write": [],
        },
        "endpoint": {
            "provider_info": {"path": ".well-known/openid-configuration",
                              "class": "idpyoidc.server.oidc.provider_config.ProviderConfiguration",
                              "kwargs": {"client_authn_method": None}},
            "authorization": {"path": "authorization",
                              "class": "idpyoidc.server.oidc.authorization.Authorization",
                              "kwargs": {"client_authn_method": None,
                                         "response_types_supported": ["code"],
                                         "response_modes_supported": ["query"],
                                         "request_parameter_supported": True,
                                         "request_uri_parameter_supported": True}},
            "pushed_authorization": {"path": "par",
                                     "class": "idpyoidc.server.oauth2.pushed_authorization.PushedAuthorization",
                                     "kwargs": {"client_authn_method": authn}},
            "token": {"path": "token", "class": "idpyoidc.server.oidc.token.Token",
                      "kwargs": {"client_authn_method": authn,
                                 "grant_types_helpers": {
                                     "authorization_code": {"class": "idpyoidc.server.oidc.token_helper.access_token.AccessTokenHelper"},
                                     "refresh_token": {"class": _qualname(RefreshGrant)},
                                     "client_credentials": {"class": _qualname(ClientCredentialsGrant)},
                                     # RFC 8693, idpyoidc's helper: the subject token must be one
                                     # this AS issued; resource and audience within EXCHANGE_TARGETS.
                                     TOKEN_EXCHANGE: {
                                         "class": "idpyoidc.server.oauth2.token_helper.token_exchange.TokenExchangeHelper",
                                         "kwargs": {
                                             "requested_token_types_supported": [ACCESS_TOKEN_TYPE],
                                             "default_requested_token_type": ACCESS_TOKEN_TYPE,
                                             "policy": {"": {
                                                 "function": "idpyoidc.server.oauth2.token_helper.validate_token_exchange_policy",
                                                 "kwargs": {"resource": list(EXCHANGE_TARGETS),
                                                            "audience": list(EXCHANGE_TARGETS)}}}}},
                                 }}},
            "introspection": {"path": "introspection", "class": "idpyoidc.server.oauth2.introspection.Introspection",
                              "kwargs": {"client_authn_method": authn, "release": ["username"],
                                         # RFC 7662: the caller is a resource server, not
                                         # necessarily in the token's audience.
                                         "enforce_audience_restriction": False}},
            "userinfo": {"path": "userinfo", "class": "idpyoidc.server.oidc.userinfo.UserInfo",
                         "kwargs": {"client_authn_method": ["bearer_header"]}},
            # RFC 7009.
            "token_revocation": {"path": "revocation", "class": "idpyoidc.server.oauth2.token_revocation.TokenRevocation",
                                 "kwargs": {"client_authn_method": authn,
                                            "token_types_supported": ["access_token", "refresh_token"]}},
        },
        "authentication": ({
            "auto": {"acr": "urn:oasis:names:tc:SAML:2.0:ac:classes:InternetProtocolPassword",
                     "class": _qualname(AutoLogin), "kwargs": {"user": "alice"}},
        } if login == "auto" else {
            "form": {"acr": PASSWORD_ACR,
                     "class": _qualname(FormLogin),
                     "kwargs": {"template": "login.jinja2",
                                "db": {"class": _qualname(PasswordDB), "kwargs": dict(PASSWORDS)},
                                "page_header": "Sign in to the test authorization server"}},
            # First is the default: a request without acr_values gets the password form.
            **({"mfa": {"acr": MFA_ACR, "class": _qualname(MFAFormLogin),
                        "kwargs": {"template": "login.jinja2",
                                   "db": {"class": _qualname(PasswordDB), "kwargs": dict(PASSWORDS)},
                                   "page_header": "Sign in to the test authorization server"}}} if mfa else {}),
        }),
        "userinfo": {"class": "idpyoidc.server.user_info.UserInfo", "kwargs": {"db": USERS}},
        "claims_interface": {"class": "idpyoidc.server.session.claims.ClaimsInterface", "kwargs": {}},
        "authz": {
            "class": "idpyoidc.server.authz.AuthzHandling",
            "kwargs": {"grant_config": {
                "usage_rules": {
                    "authorization_code": {"supports_minting": ["access_token", "refresh_token", "id_token"],
                                           "max_usage": 1, "expires_in": 120},
                    # supports_minting: what a token exchange may issue on an access token.
                    "access_token": {"expires_in": access_token_lifetime, "supports_minting": ["access_token"]},
                    "refresh_token": {"supports_minting": ["access_token", "refresh_token", "id_token"],
                                      "expires_in": refresh_token_lifetime},
                },
                "expires_in": 3600,
            }},
        },
        "token_handler_args": {
            "code": {"kwargs": {"lifetime": 120}},
            "token": {"class": _qualname(RFC9068AccessToken),
                      "kwargs": {"lifetime": access_token_lifetime, "aud": list(audience), "alg": "ES256",
                                 "add_claims_by_scope": True}},
            "refresh": {"kwargs": {"lifetime": refresh_token_lifetime}},
            "id_token": {"class": _qualname(FixedClaimsIDToken),
                         "kwargs": {"lifetime": id_token_lifetime, "add_claims_by_scope": True,
                                    "fixed_claims": dict(id_token_claims or {})}},
        },
        "template_dir": TEMPLATE_DIR,
    }
    if dpop_algs:
        # idpyoidc's DPoP add-on on /token; AuthServer fixes its wiring (see the module docstring).
        conf["add_ons"] = {"dpop": {"function": "idpyoidc.server.oauth2.add_on.dpop.add_support",
                                    "kwargs": {"dpop_signing_alg_values_supported": list(dpop_algs),
                                               "dpop_endpoints": ["token"]}}}
    return conf


def new_client_key(kid=None, alg="ES256"):
    """A client key pair for private_key_jwt: (private cryptojwt key, public JWK Set dict)."""
    kid = kid or f"client-{secrets.token_hex(4)}"
    key = new_ec_key("P-256", kid=kid, use="sig") if alg == "ES256" else new_rsa_key(key_size=2048, kid=kid, use="sig")
    key.alg = alg
    return key, {"keys": [dict(key.serialize(private=False), alg=alg)]}


def _b64(s):
    return base64.b64encode(s.encode()).decode()


class AuthServer:
    """One idpyoidc authorization server on 127.0.0.1:port, served from a background thread.

    stop() closes the listening socket (connections are refused: the IdP is down); start()
    binds the same port again with the same state (keys, clients, sessions).

    dpop=True: every /token request (all grants) needs a DPoP proof (RFC 9449) for
    token_endpoint; the access tokens it issues (JWT or opaque) are bound to the proof's key,
    cnf {"jkt": thumbprint} (§6.1), the token response says token_type "DPoP" (§5),
    introspection answers cnf.jkt (§6.2), the metadata lists dpop_signing_alg_values_supported
    (= dpop_algs). A missing or bad proof: 400 {"error": "invalid_dpop_proof"}. Proof checks:
    one DPoP header, a JWS with typ dpop+jwt, alg in dpop_algs, a public jwk that verifies the
    signature, htm = the method, htu = token_endpoint exactly (no normalisation), iat within
    dpop_max_age seconds in the past / dpop_leeway in the future, jti unseen. No DPoP-Nonce.

    Browser login (module docstring for the details; each option fixed at construction):
      login="auto"            AutoLogin (login_user, default alice) — as always; "form": the
                              login form (users alice/alice-password, bob/bob-password) with a
                              login session (SSO across clients; prompt=login shows the form)
      require_par             metadata require_pushed_authorization_requests; requests that were
                              not pushed are refused (error redirect)
      require_signed_request_object
                              metadata require_signed_request_object; a plain request, an
                              unsigned (alg none) request object, a PAR body without one: refused
      require_pkce            an authorization request without code_challenge is refused
                              (S256 is always the only method; a challenge is always enforced)
      rotate_refresh_tokens   each refresh answers a new refresh token and spends the old one
      access_token_lifetime, id_token_lifetime, refresh_token_lifetime   seconds (3 works)
      par_lifetime            seconds a pushed request_uri lives (expires_in), default 60
      threaded                a thread per connection (requests still one at a time); default:
                              on with login="form" (a browser's idle pre-connected socket would
                              stall a single-threaded server), off otherwise
    id_token_claims         claims every ID token carries besides the user's (a provider's own,
                              e.g. Entra ID's {"tid": tenant})
    mfa                     with login="form": a second authentication method, acr "mfa"
                              (MFAFormLogin: password and one-time code, OTP_CODES), picked
                              by acr_values; the password form says acr PASSWORD_ACR. Both
                              honour max_age (an older login session logs in again). While
                              ignore_acr_values is set, requests' acr_values are dropped
                              before idpyoidc sees them (an AS that answers with less)
    issuer                  the URL it is reached by (default http://127.0.0.1:port): a
                              fault proxy's, so that every endpoint is reached through it
    add_client(..., jwks=, redirect_uri=str|list, post_logout_redirect_uri=str|list)."""

    def __init__(self, port=0, audience=(DEFAULT_AUDIENCE,), access_token_lifetime=300, algs=("ES256", "RS256"),
                 dpop=False, dpop_algs=DPOP_ALGS, login="auto", require_par=False,
                 require_signed_request_object=False, require_pkce=False, rotate_refresh_tokens=False,
                 id_token_lifetime=300, refresh_token_lifetime=3600, par_lifetime=60, threaded=None, issuer=None,
                 advertise_iss=True, id_token_alg="RS256", mtls=False, id_token_claims=None, mfa=False):
        if login not in ("auto", "form"):
            raise ValueError(f"login must be 'auto' or 'form', not {login!r}")
        if mfa and login != "form":
            raise ValueError("mfa=True needs login='form' (the second factor is on the form)")
        self.port = port or free_port()
        # issuer: the URL it is reached by when that is not its own port (a fault proxy in front:
        # the metadata's endpoints and every token's iss then name the proxy).
        self.issuer = issuer or f"http://127.0.0.1:{self.port}"
        self.url = self.issuer
        self.dir = tempfile.mkdtemp(prefix="tg-as-")
        self.lock = threading.Lock()  # idpyoidc is not thread-safe: one request at a time
        self.hits = {}  # path -> count
        self.headers_seen = {}  # path -> the last request's headers (lower-case names)
        self.down_status = None  # answer every request with this status (e.g. 503) while set
        # While cleared, a JWKS request waits (up to 10 s) for it: a test can watch the
        # gateway before its keys have loaded.
        self.jwks_gate = threading.Event()
        self.jwks_gate.set()
        self._httpd = None
        self._thread = None
        # A thread per connection (see start()): by default only with the login form, i.e. for
        # browsers; single-threaded otherwise, as it always was.
        self.threaded = (login == "form") if threaded is None else bool(threaded)
        self._conns = set()
        self.dpop = dpop
        self.dpop_algs = list(dpop_algs) if dpop else []
        self.dpop_max_age = 300  # seconds a proof's iat may lie in the past
        self.dpop_leeway = 60  # ... and in the future
        self._dpop_jtis = {}  # jti -> when it can be forgotten (iat outside the window by then)
        # Browser login (see the class docstring); fixed at construction (the metadata says so).
        self.login = login
        # False: the metadata does not say authorization_response_iss_parameter_supported
        # (RFC 9207 §3), though every response still carries iss.
        self.advertise_iss = advertise_iss
        self.id_token_alg = id_token_alg  # what ID tokens are signed with (a key of algs)
        self.require_par = require_par
        self.require_signed_request_object = require_signed_request_object
        self.require_pkce = require_pkce
        self.rotate_refresh_tokens = rotate_refresh_tokens
        self.par_lifetime = par_lifetime
        self.login_cookie_name = f"authserver_login_{self.port}"  # cookies ignore ports: one name per AS
        self.login_form_lifetime = 600  # seconds a login page (its signed hidden token) can be submitted
        # What happened, for tests to assert.
        self.par_requests = {}  # request_uri -> {"client_id", "params", "signed", "expires_at"}; popped when used
        self.authorizations = []  # one per /authorization request: client_id, via, signed, params, outcome ...
        self.request_objects = []  # every request object seen: via, header, claims, error (None when accepted)
        self.request_uri_fetches = []  # request_uri fetched by reference: url, status, content_type
        self.login_attempts = []  # /login form posts: user, ok
        self.login_sessions = {}  # login cookie value -> {"user", "auth_time", "active"}
        self._used_login_forms = set()
        self.token_requests = []  # /token: grant_type, client_id (as sent, if any), status
        # Every client_assertion that came (RFC 7523 §2.2): path, grant_type (at /token), the
        # assertion as sent — what a test of rotated assertion files checks each request carried.
        self.client_assertions = []
        # Faults a client must survive or refuse (the FAPI 2.0 RP test plan injects them at its
        # AS). token_response_fault: members of every successful /token answer replaced (None
        # removes one: {"expires_in": None}, {"token_type": "dpop"}). id_token_fault: every ID
        # token /token answers with is signed again after {"claims": {...} (None removes),
        # "alg": "RS256" | "none" | ...} (a key of that alg, which the JWKS publishes).
        # token_dpop_nonce: a DPoP proof at /token must carry this nonce (400 use_dpop_nonce
        # with DPoP-Nonce otherwise, RFC 9449 §8). metadata_issuer: the discovery document's
        # issuer says this instead.
        self.token_response_fault = None
        self.id_token_fault = None
        # RFC 9701: introspection answers as JWTs when asked; introspection_jwt_fault changes
        # them: claims replaced ({"aud": "x"}; None removes), "typ", "alg": "none", or
        # "foreign_key": True (signed by a key the JWKS does not publish).
        self.introspection_jwt_fault = None
        self.token_dpop_nonce = None
        self.metadata_issuer = None
        self.par_redirect = None  # set: /par answers 307 to this URL
        # JARM (FAPI 2.0 Message Signing §5.4): a request with response_mode jwt / query.jwt is
        # answered with one `response` JWT (iss, aud = the client, exp, and the parameters),
        # signed with jarm_alg; jarm_fault changes it as introspection_jwt_fault does.
        self.jarm_alg = "ES256"
        self.jarm_fault = None
        self._jarm_states = {}  # state -> client_id of a request that asked for JARM
        # Token exchange (RFC 8693): the aud its tokens get instead of the target asked for (a
        # misbehaving AS), and the subject tokens the exchanges were asked with.
        self.exchange_audience_override = None
        self.code_resources = {}  # code -> the RFC 8707 resources its authorization request named
        self.exchange_subjects = []
        self.revocations = []  # /revocation: client_id, token, token_type_hint, status
        self.end_session_calls = []  # /end_session: params, client_id, user, ended, status, location
        # /userinfo (OIDC Core §5.3) through idpyoidc, then shaped by the test: claims only
        # userinfo carries (user -> {claim: value}, e.g. groups the ID token lacks), or another
        # sub for every answer (a token-substitution attack the RP must catch, §5.3.2).
        self.userinfo_claims = {}
        self.userinfo_sub = None
        self.userinfo_requests = []  # scheme ("Bearer"/"DPoP"), dpop (proof checked), status
        self.userinfo_answer = None  # (status, content_type, body): answered instead (a broken AS)
        self.userinfo_dpop_nonce = None  # set: a DPoP proof at /userinfo must carry this nonce (RFC 9449 §9)
        self.server = Server(OPConfiguration(conf=op_config(self.issuer, audience, access_token_lifetime,
                                                            dpop_algs=self.dpop_algs, login=login,
                                                            id_token_lifetime=id_token_lifetime,
                                                            refresh_token_lifetime=refresh_token_lifetime,
                                                            id_token_claims=id_token_claims, mfa=mfa),
                                             base_path=self.dir), cwd=self.dir)
        self.keys = SigningKeys(self.server.keyjar, self.issuer)
        self.keys.init(algs)
        # RFC9068AccessToken finds the keys through idpyoidc's attribute lookup.
        self.server.authserver_keys = self.keys
        self.server.minted_audience = None  # RFC9068AccessToken: the resource / exchange target
        self.server.exchange_cnf = None  # ... and the key its proof named
        # mtls=True: a TLS listener asking for client certificates (authserver/mtls.py); the
        # x5t#S256 of the certificate a /token request came with, while it is served.
        self.mtls = MutualTLSFront(self) if mtls else None
        self.server.mtls_x5t = None
        ctx = self.server.context
        self.server.endpoint["introspection"].post_construct.append(self._introspection_claims)
        ctx.provider_info["id_token_signing_alg_values_supported"] = [a for a in algs if a != "ES256"] or list(algs)
        # A client assertion's aud may be the endpoint's URL or the issuer identifier (FAPI 2.0
        # Security Profile §5.3.3 wants the issuer, as a string; RFC 7523 allows either).
        for ep in self.server.endpoint.values():
            if "" not in ep.allowed_targets:
                ep.allowed_targets = list(ep.allowed_targets) + [""]
        token = self.server.endpoint["token"]
        token.post_parse_request.insert(0, self._pkce_check)  # before the grant helper (DPoP goes first)
        token.revoke_refresh_on_issue = rotate_refresh_tokens
        if login == "form":
            self._form_method.authserver = self
        self.mfa = mfa
        if mfa:
            self.server.context.authn_broker["mfa"]["method"].authserver = self
        # RFC 9470 / OIDC Core §3.1.2.1 tests: acr_values are recorded, then ignored (the AS
        # authenticates with its default method and says so in acr).
        self.ignore_acr_values = False
        self._browser_login_metadata()
        if self.mtls is not None:
            info = ctx.provider_info
            info["mtls_endpoint_aliases"] = self.mtls.aliases()  # RFC 8705 §5
            info["tls_client_certificate_bound_access_tokens"] = True  # §3.3
            info["token_endpoint_auth_methods_supported"] = (
                list(info.get("token_endpoint_auth_methods_supported", [])) + list(MTLS_METHODS))
        if dpop:
            self._wire_dpop()
        for cid, c in CLIENTS.items():
            self.add_client(cid, **c)

    def _introspection_claims(self, response, request, **kwargs):
        """idpyoidc answers introspection from its session records (aud = the grant's
        resources, no sub for client_credentials); make aud/sub/client_id those of the token."""
        if not response.get("active"):
            return response
        if isinstance(response.get("exp"), int) and response["exp"] <= time.time():
            # idpyoidc keeps a token active through its exp second (integer now > exp); RFC 7519
            # §4.1.4: not on or after exp.
            return type(response)(active=False)
        try:
            claims = self.server.context.session_manager.token_handler["access_token"].get_payload(request["token"])
        except Exception:  # noqa: BLE001 — a refresh token: leave idpyoidc's answer
            return response
        for k in ("aud", "sub", "client_id", "jti", "cnf"):
            if k in claims:
                response[k] = claims[k]
        response.pop("token_class", None)
        return response

    # -- DPoP (RFC 9449) ---------------------------------------------------------------

    @property
    def token_endpoint(self):
        """The URL of /token exactly as the AS compares a proof's htu with it (req.base_url)."""
        return f"{self.url}/token"

    def _wire_dpop(self):
        """Fixes idpyoidc 5.0.0's DPoP add-on wiring (module docstring): the token-endpoint
        check instead of the userinfo one, first in line; the metadata entry back."""
        ctx = self.server.context
        assert ctx.add_on.get("dpop"), "idpyoidc's DPoP add-on did not load"
        token = self.server.endpoint["token"]
        token.post_parse_request = [m for m in token.post_parse_request
                                    if m is not dpop_addon.userinfo_post_parse_request]
        token.post_parse_request.insert(0, self._dpop_token_check)
        ctx.provider_info["dpop_signing_alg_values_supported"] = list(self.dpop_algs)
        ctx.add_on["dpop"]["algs_supported"] = list(self.dpop_algs)

    def _dpop_token_check(self, request, client_id, context, **kwargs):
        """/token post_parse_request: the proof in the DPoP header, verified by idpyoidc's
        token_post_parse_request (signature with the proof's jwk, htu, htm; sets
        request["dpop_jkt"]) plus the checks it lacks. Any failure: invalid_dpop_proof."""
        error_cls = self.server.endpoint["token"].error_cls
        try:
            http_info = kwargs.get("http_info") or {}
            header, claims = self._dpop_precheck(http_info)
            request = dpop_addon.token_post_parse_request(request, client_id, context, **kwargs)
            if not request.get("dpop_jkt"):
                raise ValueError("proof not verified")
            self._dpop_freshness(claims)
        except Exception as e:  # noqa: BLE001 — idpyoidc raises ValueError, KeyError, bare Exception ...
            detail = str(e) or type(e).__name__
            log.info("authserver: DPoP proof refused: %s", detail)
            return error_cls(error="invalid_dpop_proof", error_description=f"invalid DPoP proof: {detail}")
        return request

    def _dpop_precheck(self, http_info):
        """What must hold before the signature is worth checking (RFC 9449 §4.3 steps 1-5, 7)."""
        value = (http_info.get("headers") or {}).get("dpop")
        if not value:
            raise ValueError("missing DPoP header")
        if "," in value:  # the WSGI server joins repeated headers with commas
            raise ValueError("more than one DPoP header")
        parts = value.split(".")
        if len(parts) != 3 or not all(parts[:2]):
            raise ValueError("not a compact JWS")
        try:
            header, claims = json.loads(b64d(parts[0].encode())), json.loads(b64d(parts[1].encode()))
        except Exception:  # noqa: BLE001
            raise ValueError("not a compact JWS")
        if not isinstance(header, dict) or not isinstance(claims, dict):
            raise ValueError("not a compact JWS")
        if header.get("typ") != "dpop+jwt":
            raise ValueError("typ is not dpop+jwt")
        if header.get("alg") not in self.dpop_algs:
            raise ValueError(f"alg {header.get('alg')!r} is not one of {self.dpop_algs}")
        jwk = header.get("jwk")
        if not isinstance(jwk, dict):
            raise ValueError("no jwk in the header")
        if any(m in jwk for m in JWK_PRIVATE_MEMBERS):
            raise ValueError("jwk holds private key material")
        for name in ("jti", "htm", "htu"):
            if not isinstance(claims.get(name), str) or not claims[name]:
                raise ValueError(f"missing claim {name}")
        if not isinstance(claims.get("iat"), int) or isinstance(claims["iat"], bool):
            raise ValueError("missing claim iat")
        return header, claims

    def _dpop_freshness(self, claims):
        """iat within the window; a jti only once while it would be fresh (§4.3 steps 11, 12)."""
        now = int(time.time())
        iat = claims["iat"]
        if iat < now - self.dpop_max_age:
            raise ValueError("iat too old")
        if iat > now + self.dpop_leeway:
            raise ValueError("iat in the future")
        self._dpop_jtis = {j: t for j, t in self._dpop_jtis.items() if t >= now}
        if claims["jti"] in self._dpop_jtis:
            raise ValueError("jti replayed")
        self._dpop_jtis[claims["jti"]] = iat + self.dpop_max_age + self.dpop_leeway

    # -- configuration -----------------------------------------------------------------

    def last_headers(self, path):
        """The headers of the last request to `path` (lower-case names); {} if none came."""
        with self.lock:
            return dict(self.headers_seen.get(path, {}))

    def add_client(self, client_id, client_secret=None, scopes=("openid", "orders:read"), audience=None,
                   jwks=None, redirect_uri=None, token_endpoint_auth_method=None, access_token_format="jwt",
                   post_logout_redirect_uri=None, tls_client_auth_subject_dn=None, jwks_uri=None):
        """Registers a client. jwks: its public JWK Set for private_key_jwt and for signed
        request objects (RFC 9101). access_token_format: "jwt" (RFC 9068) or "opaque" (a
        reference only introspection resolves). redirect_uri, post_logout_redirect_uri: one URL
        or a list (exact matches; the first redirect_uri is the default)."""
        redirect_uris = _as_list(redirect_uri) or [f"http://127.0.0.1:1/cb/{client_id}"]
        if token_endpoint_auth_method in MTLS_METHODS:
            # RFC 8705 §2: the certificate authenticates (checked by the TLS front), and
            # idpyoidc knows the client by a secret only the front adds.
            client_secret = self.mtls.register(client_id, token_endpoint_auth_method,
                                               subject_dn=tls_client_auth_subject_dn, jwks_uri=jwks_uri)
        entry = {
            "client_id": client_id,
            "client_salt": secrets.token_hex(8),
            "redirect_uris": [(u, {}) for u in redirect_uris],
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "client_credentials", "refresh_token", TOKEN_EXCHANGE],
            "allowed_scopes": list(scopes),
            "id_token_signed_response_alg": self.id_token_alg,
            "token_endpoint_auth_method": token_endpoint_auth_method,
        }
        if post_logout_redirect_uri:
            entry["post_logout_redirect_uris"] = _as_list(post_logout_redirect_uri)
        if client_secret:
            entry["client_secret"] = client_secret
            # client_secret_jwt: idpyoidc looks for the HMAC key in the key jar.
            self.server.keyjar.add_symmetric(client_id, client_secret, ["sig"])
        if access_token_format != "jwt":
            entry["access_token_format"] = access_token_format
        if audience:
            entry["access_token_audience"] = list(audience)
        if token_endpoint_auth_method is None:
            entry.pop("token_endpoint_auth_method")
        self.server.context.cdb[client_id] = entry
        if jwks:
            self.server.keyjar.import_jwks(jwks, client_id)
        return entry

    def redirect_uri(self, client_id):
        """The client's first (default) registered redirect_uri."""
        return self.server.context.cdb[client_id]["redirect_uris"][0][0]

    @property
    def login_user(self):
        """Who AutoLogin logs in (login="auto" only)."""
        return self.server.context.authn_broker["auto"]["method"].user

    @login_user.setter
    def login_user(self, user):
        self.server.context.authn_broker["auto"]["method"].user = user

    @property
    def _form_method(self):
        return self.server.context.authn_broker["form"]["method"]

    @property
    def refresh_count(self):
        """How many /token requests with grant_type=refresh_token came in (any outcome)."""
        return sum(1 for t in self.token_requests if t["grant_type"] == "refresh_token")

    @property
    def refresh_ok_count(self):
        """How many of them got a 200."""
        return sum(1 for t in self.token_requests if t["grant_type"] == "refresh_token" and t["status"] == 200)

    def end_login_sessions(self, user=None):
        """Ends the AS's login sessions (all, or user's): the next authorization request shows
        the login form again."""
        ended = []
        for sid, sess in self.login_sessions.items():
            if sess["active"] and (user is None or sess["user"] == user):
                sess["active"] = False
                ended.append(sid)
        return ended

    # -- keys --------------------------------------------------------------------------

    def rotate_key(self, alg="ES256", keep_old=False):
        """New signing key for alg (access tokens: ES256, ID tokens: RS256); returns its kid."""
        return self.keys.rotate(alg, keep_old=keep_old)

    def jwks(self):
        return self.keys.public_jwks()

    def sign(self, claims, alg="ES256", kid=None, typ="at+jwt"):
        """Signs claims with one of the AS's keys (for tests that need a token with a given
        key — e.g. one that has since been rotated out)."""
        key = self.keys.private_key(kid or self.keys.current_kid(alg))
        return JWS(json.dumps(claims), alg=alg).sign_compact([key], protected={"typ": typ, "kid": key.kid})

    # -- HTTP --------------------------------------------------------------------------

    def _endpoint_for(self, path):
        p = path.lstrip("/")
        if p in (".well-known/openid-configuration", ".well-known/oauth-authorization-server"):
            return self.server.endpoint["provider_config"]
        for name, ep in self.server.endpoint.items():
            if ep.endpoint_path == p:
                return ep
        return None

    def wsgi(self, environ, start_response):
        req = Request(environ)
        with self.lock:
            self.hits[req.path] = self.hits.get(req.path, 0) + 1
            self.headers_seen[req.path] = {k.lower(): v for k, v in req.headers.items()}
            assertion = None
            if req.method == "POST" and req.mimetype == "application/x-www-form-urlencoded" \
                    and req.form.get("client_assertion"):
                assertion = {"path": req.path, "grant_type": req.form.get("grant_type"),
                             "assertion": req.form["client_assertion"], "status": None}
                self.client_assertions.append(assertion)
            try:
                resp = self._handle(req)
            except Exception as e:  # noqa: BLE001 — any failure answers 500, the server lives on
                log.exception("authserver: %s %s", req.method, req.path)
                resp = _json({"error": "server_error", "error_description": str(e)}, 500)
            if assertion is not None:
                # The answer: a client authenticated by private_key_jwt gets a 2xx only once the
                # assertion's signature verified with the client's registered key.
                assertion["status"] = resp.status_code
        return resp(environ, start_response)

    def _handle(self, req):
        if self.down_status:
            return Response("down", status=self.down_status)
        if req.path == "/jwks.json":
            self.jwks_gate.wait(10)
            r = _json(self.keys.public_jwks())
            r.headers["Cache-Control"] = "max-age=300"
            return r
        if req.path == "/_test/rotate" and req.method == "POST":
            return _json({"kid": self.rotate_key(req.args.get("alg", "ES256"), req.args.get("keep_old") == "1")})
        if req.path == "/authorization":
            return self._authorization(req)
        if req.path == "/par":
            return self._par(req)
        if req.path == "/login":
            return self._login(req)
        if req.path == "/end_session":
            return self._end_session(req)
        if req.path == "/revocation":
            return self._revocation(req)
        if req.path == "/userinfo":
            return self._userinfo(req)
        ep = self._endpoint_for(req.path)
        if ep is None:
            return _json({"error": "not_found"}, 404)
        if req.path == "/token":
            return self._token(ep, req)
        resp = self._service(ep, req)
        if req.path == "/introspection" and "token-introspection+jwt" in req.headers.get("Accept", ""):
            resp = self._signed_introspection(req, resp)
        if self.metadata_issuer is not None and ep is self.server.endpoint["provider_config"]:
            body = json.loads(resp.get_data(as_text=True))
            body["issuer"] = self.metadata_issuer
            resp.set_data(json.dumps(body))
        return resp

    @staticmethod
    def _http_info(req):
        headers = {k.lower(): v for k, v in req.headers.items() if k.lower() not in ("cookie", "user-agent")}
        return {"headers": headers, "method": req.method, "url": req.base_url,
                "cookie": [{"name": k, "value": v} for k, v in req.cookies.items()]}

    def _service(self, endpoint, req, args=None):
        http_info = self._http_info(req)
        if args is not None:
            pass
        elif req.method == "GET":
            args = req.args.to_dict()
        elif req.mimetype == "application/x-www-form-urlencoded":
            args = req.form.to_dict()
        else:
            args = req.get_data(as_text=True)
        try:
            parsed = endpoint.parse_request(args, http_info=http_info)
        except ClientAuthenticationError as e:
            return _json({"error": "invalid_client", "error_description": str(e)}, 401)
        except Exception as e:  # noqa: BLE001 — idpyoidc raises many kinds for a bad request
            return _json({"error": "invalid_request", "error_description": str(e)}, 400)
        if isinstance(parsed, ResponseMessage) and "error" in parsed:
            status = 401 if parsed["error"] in ("invalid_client", "unauthorized_client") else 400
            return _json(parsed.to_dict(), status)
        try:
            if isinstance(endpoint, TokenEndpoint):
                parsed = AccessTokenRequest(**parsed)
            result = endpoint.process_request(parsed, http_info=http_info)
        except Exception as e:  # noqa: BLE001
            log.exception("process_request")
            return _json({"error": "invalid_request", "error_description": str(e)}, 400)
        if isinstance(result, ResponseMessage) and "error" in result:
            return _json(result.to_dict(), 400)
        if "redirect_location" in result:
            return Response(status=302, headers={"Location": result["redirect_location"]})
        if "http_response" in result:
            body = result["http_response"]
            if isinstance(body, dict):  # PAR: RFC 9126 §2.2 answers 201 with JSON
                return _json(body, 201 if endpoint.name == "pushed_authorization" else 200)
            return Response(body, status=200)
        info = endpoint.do_response(request=parsed, **result)
        placement = info.get("response_placement", endpoint.response_placement)
        if "error" in result:
            status = info.get("response_code", 400)
        else:
            status = info.get("response_code", 200)
        if placement == "url" and "error" not in result:
            resp = Response(status=302, headers={"Location": info["response"]})
        else:
            resp = Response(info["response"], status=status)
        for k, v in info["http_headers"]:
            resp.headers[k] = v
        return resp

    # -- browser login: authorization endpoint, PAR, JAR, login form, logout ------------

    def _browser_login_metadata(self):
        info = self.server.context.provider_info
        info["authorization_response_iss_parameter_supported"] = self.advertise_iss  # RFC 9207: iss in every response
        info["end_session_endpoint"] = f"{self.url}/end_session"  # RP-Initiated Logout 1.0
        info["revocation_endpoint"] = f"{self.url}/revocation"  # RFC 7009
        info["revocation_endpoint_auth_methods_supported"] = list(info.get("token_endpoint_auth_methods_supported", []))
        info["require_pushed_authorization_requests"] = bool(self.require_par)  # RFC 9126 §5
        info["require_signed_request_object"] = bool(self.require_signed_request_object)  # RFC 9101 §10.5
        info["request_parameter_supported"] = True
        info["request_uri_parameter_supported"] = True
        info["require_request_uri_registration"] = False
        info["request_object_signing_alg_values_supported"] = (
            list(REQUEST_OBJECT_ALGS) + ([] if self.require_signed_request_object else ["none"]))
        info["code_challenge_methods_supported"] = ["S256"]
        info["response_modes_supported"] = ["query", "jwt", "query.jwt"]  # JARM §3
        info["authorization_signing_alg_values_supported"] = ["ES256", "PS256"]

    def _authorization(self, req):
        """/authorization: resolves the request (PAR, request object, or the query), checks what
        the wrapper checks, then hands plain parameters to idpyoidc's authorization endpoint."""
        args = req.args.to_dict() if req.method == "GET" else req.form.to_dict()
        client_id = args.get("client_id")
        record = {"client_id": client_id, "via": None, "signed": False, "params": None, "outcome": None,
                  "error": None, "location": None}
        self.authorizations.append(record)
        if not client_id or client_id not in self.server.context.cdb:
            return self._authz_error_page(record, AuthzError(
                "invalid_request", "client_id missing" if not client_id else f"unknown client {client_id}"))
        try:
            params, via, signed = self._resolve_authorization_request(args, client_id)
            record.update(via=via, signed=signed, params=dict(params))
            redirect_uri = self._registered_redirect_uri(client_id, params.get("redirect_uri"))
        except AuthzError as e:
            # Not redirected: without a verified request there is no redirect_uri to trust.
            return self._authz_error_page(record, e)
        state = params.get("state")
        if params.get("response_mode") in ("jwt", "query.jwt"):
            # idpyoidc knows no JARM: it answers in the query, and the answer is wrapped here.
            params.pop("response_mode")
            self._jarm_states[state] = client_id
        try:
            self._check_authorization_params(params, via, signed)
        except AuthzError as e:
            return self._authz_error_redirect(record, redirect_uri, e, state)
        return self._run_authorization(req, record, params, redirect_uri, state)

    def _resolve_authorization_request(self, args, client_id):
        """(params, via, signed): the parameters of a pushed request (RFC 9126 §4: the query
        needs only client_id and request_uri), of a request object by reference or by value
        (RFC 9101 §6.3: the query's other parameters are ignored), or the query itself."""
        if "request_uri" in args:
            if "request" in args:
                raise AuthzError("invalid_request", "request and request_uri together")
            uri = args["request_uri"]
            if uri.startswith("urn:"):
                entry = self.par_requests.pop(uri, None)  # one-time use, whatever happens next
                if entry is None:
                    raise AuthzError("invalid_request_uri", "unknown or already used request_uri")
                if entry["expires_at"] <= time.time():
                    raise AuthzError("invalid_request_uri", "request_uri expired")
                if entry["client_id"] != client_id:
                    raise AuthzError("invalid_request_uri", "request_uri was pushed by another client")
                return dict(entry["params"]), "par", entry["signed"]
            if uri.startswith(("https://", "http://")):
                params, signed = self._verify_request_object(self._fetch_request_object(uri), client_id,
                                                             "request_uri")
                return params, "request_uri", signed
            raise AuthzError("invalid_request_uri", "request_uri is neither a pushed request's nor an http(s) URL")
        if "request" in args:
            params, signed = self._verify_request_object(args["request"], client_id, "request")
            return params, "request", signed
        return dict(args), "query", False

    def _fetch_request_object(self, uri):
        """RFC 9101 §5.2.3: GET the request_uri; its body is the request object."""
        if len(uri) > 512:  # RFC 9101 §5.2
            raise AuthzError("invalid_request_uri", "request_uri longer than 512 characters")
        fetch = {"url": uri, "status": None, "content_type": None, "error": None}
        self.request_uri_fetches.append(fetch)
        try:
            r = requests.get(uri, timeout=5, allow_redirects=False,
                             headers={"Accept": f"application/{REQUEST_OBJECT_TYP}"})
        except requests.RequestException as e:
            fetch["error"] = str(e)
            raise AuthzError("invalid_request_uri", f"request_uri could not be fetched: {e}")
        fetch.update(status=r.status_code, content_type=r.headers.get("Content-Type"))
        if r.status_code != 200:
            raise AuthzError("invalid_request_uri", f"request_uri answered {r.status_code}")
        return r.text.strip()

    def _verify_request_object(self, jwt, client_id, via):
        """(params, signed) of a request object (RFC 9101), recorded in request_objects."""
        seen = {"via": via, "client_id": client_id, "header": None, "claims": None, "error": None}
        self.request_objects.append(seen)
        try:
            return self._check_request_object(jwt, client_id, seen)
        except AuthzError as e:
            seen["error"] = e.description
            raise

    def _check_request_object(self, jwt, client_id, seen):
        def bad(why):
            return AuthzError("invalid_request_object", why)
        if not isinstance(jwt, str) or jwt.count(".") == 4:
            raise bad("encrypted request objects are not supported")
        try:
            header, claims = _jose_parts(jwt)
        except ValueError:
            raise bad("not a JWT")
        seen.update(header=header, claims=claims)
        typ = header.get("typ")
        if typ is not None and str(typ).lower() not in (REQUEST_OBJECT_TYP, f"application/{REQUEST_OBJECT_TYP}"):
            raise bad(f"typ {typ!r} is not {REQUEST_OBJECT_TYP}")
        if "crit" in header:
            raise bad("crit is not supported")
        alg = header.get("alg")
        if alg == "none":
            if self.require_signed_request_object:
                raise bad("request object not signed (require_signed_request_object)")
            if jwt.split(".")[2]:
                raise bad("alg none with a signature")
            signed = False
        elif alg in REQUEST_OBJECT_ALGS:
            self._verify_client_signature(jwt, header, alg, client_id)
            signed = True
        else:
            raise bad(f"alg {alg!r} is not one of {', '.join(REQUEST_OBJECT_ALGS)}")
        now = time.time()
        if claims.get("iss") != client_id:
            raise bad("iss is not the client_id")
        if self.issuer not in _as_list(claims.get("aud")):
            raise bad(f"aud does not name the issuer {self.issuer}")
        exp = claims.get("exp")
        if not isinstance(exp, (int, float)) or isinstance(exp, bool):
            raise bad("exp missing")
        if exp <= now:
            raise bad("request object expired")
        nbf = claims.get("nbf")
        if isinstance(nbf, (int, float)) and nbf > now + 5:
            raise bad("request object not valid yet (nbf)")
        iat = claims.get("iat")
        if isinstance(iat, (int, float)) and iat > now + 60:
            raise bad("iat in the future")
        if claims.get("client_id") != client_id:
            raise bad("client_id in the request object is not the request's client_id")
        if "request" in claims or "request_uri" in claims:
            raise bad("request or request_uri inside a request object")
        params = {}
        for k, v in claims.items():
            if k in JWT_CLAIMS:
                continue
            params[k] = json.dumps(v) if isinstance(v, dict) else v  # e.g. claims (OIDC Core §5.5)
        return params, signed

    def _verify_client_signature(self, jwt, header, alg, client_id):
        """The signature with one of the client's registered public keys (add_client(jwks=...))."""
        keys = self.server.keyjar.get_verify_key(key_type=alg2keytype(alg), issuer_id=client_id)
        kid = header.get("kid")
        if kid:
            keys = [k for k in keys if k.kid == kid]
        if not keys:
            raise AuthzError("invalid_request_object", f"no registered {alg2keytype(alg)} key of {client_id}"
                             + (f" with kid {kid}" if kid else ""))
        try:
            JWS(alg=alg).verify_compact(jwt, keys=keys, sigalg=alg)
        except Exception:  # noqa: BLE001 — cryptojwt raises several kinds
            raise AuthzError("invalid_request_object", "signature does not verify with the client's registered keys")

    def _registered_redirect_uri(self, client_id, redirect_uri):
        registered = [u for u, _ in self.server.context.cdb[client_id]["redirect_uris"]]
        if redirect_uri is None:
            if len(registered) == 1:
                return registered[0]
            raise AuthzError("invalid_request", "redirect_uri missing and more than one registered")
        if redirect_uri not in registered:
            raise AuthzError("invalid_request", "redirect_uri is not registered for the client")
        return redirect_uri

    def _check_authorization_params(self, params, via, signed):
        """What the AS requires of a verified request beyond idpyoidc's own checks."""
        if self.require_par and via != "par":
            raise AuthzError("invalid_request", "pushed authorization request required (RFC 9126 §5)")
        if self.require_signed_request_object and not signed:
            raise AuthzError("invalid_request", "signed request object required (RFC 9101 §10.5)")
        rt = params.get("response_type")
        if not rt:
            raise AuthzError("invalid_request", "response_type missing")
        if rt != "code":
            raise AuthzError("unsupported_response_type", f"response_type {rt!r}: only code")
        challenge, method = params.get("code_challenge"), params.get("code_challenge_method")
        if challenge is None:
            if method is not None:
                raise AuthzError("invalid_request", "code_challenge_method without code_challenge")
            if self.require_pkce:
                raise AuthzError("invalid_request", "code_challenge required (PKCE)")
        else:
            if method != "S256":
                raise AuthzError("invalid_request",
                                 f"code_challenge_method {method or 'plain (the default)'} not supported: S256 only")
            if not isinstance(challenge, str) or not PKCE_CHALLENGE_RE.match(challenge):
                raise AuthzError("invalid_request", "malformed code_challenge")

    def _run_authorization(self, req, record, params, redirect_uri, state):
        ep = self.server.endpoint["authorization"]
        params = {k: v for k, v in params.items() if k not in ("request", "request_uri")}
        if self.ignore_acr_values:
            params.pop("acr_values", None)
        scope = params.get("scope")
        if isinstance(scope, str) and "offline_access" in scope.split():
            # idpyoidc refuses offline_access without prompt=consent (OIDC Core §11 says to ignore
            # it then); the clients here are pre-registered with the scope: consent is given.
            prompt = str(params.get("prompt") or "").split()
            if "none" in prompt:  # no consent possible without interaction: ignored (§11)
                params["scope"] = " ".join(x for x in scope.split() if x != "offline_access")
            elif "consent" not in prompt:
                params["prompt"] = " ".join(prompt + ["consent"])
        http_info = self._http_info(req)
        try:
            parsed = ep.parse_request(params, http_info=http_info)
        except Exception as e:  # noqa: BLE001
            return self._authz_error_redirect(record, redirect_uri, AuthzError("invalid_request", str(e)), state)
        if isinstance(parsed, ResponseMessage) and "error" in parsed:
            return self._authz_error_redirect(record, redirect_uri, AuthzError(
                parsed["error"], parsed.get("error_description", "")), state)
        kwargs = {"authn": req.cookies.get(self.login_cookie_name, "")} if self.login == "form" else {}
        try:
            result = ep.process_request(parsed, http_info=http_info, **kwargs)
        except Exception as e:  # noqa: BLE001
            log.exception("authorization")
            return self._authz_error_redirect(record, redirect_uri, AuthzError("server_error", str(e)), state)
        return self._authorization_result(record, ep, parsed, result, redirect_uri, state)

    def _authorization_result(self, record, ep, request, result, redirect_uri, state):
        """idpyoidc's process_request / authz_part2 result as an HTTP response: the login
        page, or a redirect with the code (or an error), state and iss (RFC 9207)."""
        err = None
        if isinstance(result, ResponseMessage) and "error" in result:
            err = result
        elif "error" in result:
            err = result
        elif isinstance(result.get("response_args"), dict) and "error" in result["response_args"]:
            err = result["response_args"]
        if err is not None:
            return self._authz_error_redirect(record, redirect_uri, AuthzError(
                err["error"], err.get("error_description") or ""), state)
        if "http_response" in result:  # the login form
            record["outcome"] = "login_form"
            return Response(result["http_response"], status=200, content_type="text/html; charset=utf-8")
        info = ep.do_response(request=request, **result)
        if info.get("response_placement", ep.response_placement) != "url":  # response_mode=form_post
            record["outcome"] = "form_post"
            return Response(info["response"], status=200, content_type="text/html; charset=utf-8")
        location = info["response"]
        if "iss" not in redirect_params(location):
            location = _add_query(location, {"iss": self.issuer})
        location = self._jarm(location, state)
        record.update(outcome="code", location=location)
        resources = request.get("resource")
        if resources:
            # RFC 8707 §2.1: the token the code is exchanged for is for these resources.
            self.code_resources[redirect_params(location).get("code")] = _as_list(resources)
        return Response(status=302, headers={"Location": location, "Cache-Control": "no-store"})

    def _authz_error_redirect(self, record, redirect_uri, err, state):
        """RFC 6749 §4.1.2.1 with RFC 9207's iss."""
        location = self._jarm(_add_query(redirect_uri, {"error": err.error,
                                                        "error_description": err.description or None,
                                                        "state": state, "iss": self.issuer}), state)
        record.update(outcome="error", error=err.error, error_description=err.description, location=location)
        return Response(status=302, headers={"Location": location, "Cache-Control": "no-store"})

    def _authz_error_page(self, record, err):
        """An error the AS must not redirect (no trusted redirect_uri): 400 JSON."""
        record.update(outcome="error_page", error=err.error, error_description=err.description)
        return _json({"error": err.error, "error_description": err.description}, 400)

    @staticmethod
    def _claimed_client_id(req, form):
        """The client a /par request says it is (Basic user or the assertion's iss), unverified:
        only to pick the keys for the request object before idpyoidc authenticates the client."""
        auth = req.headers.get("Authorization", "")
        if auth[:6].lower() == "basic ":
            try:
                return unquote(base64.b64decode(auth[6:]).decode().split(":", 1)[0])
            except Exception:  # noqa: BLE001
                return None
        if form.get("client_assertion"):
            try:
                return _jose_parts(form["client_assertion"])[1].get("iss")
            except ValueError:
                return None
        return None

    def _par(self, req):
        """/par (RFC 9126): client authentication and request checks by idpyoidc's
        PushedAuthorization endpoint; a request object in the body verified here; the request
        kept by the wrapper for par_lifetime seconds, for one use."""
        if self.par_redirect is not None:  # a misbehaving AS: sends the request on elsewhere
            return Response(status=307, headers={"Location": self.par_redirect})
        if req.method != "POST":
            return _json({"error": "invalid_request", "error_description": "POST only"}, 405)
        ep = self.server.endpoint["pushed_authorization"]
        form = req.form.to_dict()
        if "request_uri" in form:
            return _json({"error": "invalid_request", "error_description": "request_uri in a pushed request"}, 400)
        signed = False
        if "request" in form:
            claimed = form.get("client_id") or self._claimed_client_id(req, form)
            if not claimed or claimed not in self.server.context.cdb:
                return _json({"error": "invalid_client", "error_description": "unknown client"}, 401)
            try:
                params, signed = self._verify_request_object(form["request"], claimed, "par")
            except AuthzError as e:
                return _json({"error": e.error, "error_description": e.description}, 400)
            args = dict(params, **{k: v for k, v in form.items() if k in CLIENT_AUTH_FIELDS})
        else:
            if self.require_signed_request_object:
                return _json({"error": "invalid_request",
                              "error_description": "signed request object required (RFC 9101 §10.5)"}, 400)
            args = form
            params = {k: v for k, v in form.items() if k not in CLIENT_AUTH_FIELDS}
        try:
            parsed = ep.parse_request(args, http_info=self._http_info(req))
        except ClientAuthenticationError as e:
            return _json({"error": "invalid_client", "error_description": str(e)}, 401)
        except Exception as e:  # noqa: BLE001
            return _json({"error": "invalid_request", "error_description": str(e)}, 400)
        if isinstance(parsed, ResponseMessage) and "error" in parsed:
            status = 401 if parsed["error"] in ("invalid_client", "unauthorized_client") else 400
            return _json(parsed.to_dict(), status)
        client_id = parsed.get("client_id")
        if not parsed.get("authenticated"):
            return _json({"error": "invalid_client", "error_description": "client authentication required"}, 401)
        if params.get("client_id", client_id) != client_id:
            return _json({"error": "invalid_request",
                          "error_description": "client_id is not the authenticated client"}, 400)
        params["client_id"] = client_id
        try:
            self._registered_redirect_uri(client_id, params.get("redirect_uri"))
            self._check_authorization_params(params, "par", signed)
        except AuthzError as e:
            return _json({"error": e.error, "error_description": e.description}, 400)
        uri = PAR_URN_PREFIX + secrets.token_urlsafe(32)
        self.par_requests[uri] = {"client_id": client_id, "params": params, "signed": signed,
                                  "expires_at": time.time() + self.par_lifetime}
        r = _json({"request_uri": uri, "expires_in": self.par_lifetime}, 201)
        r.headers["Cache-Control"] = "no-store"
        return r

    # The login form (login="form").

    def _login_token_alg(self):
        return self.keys.keys[0].alg

    def _login_page(self, authn_args, error=None, username="", token=None):
        """The form (FormLogin.__call__): the authorization request travels in a hidden,
        AS-signed token that expires after login_form_lifetime seconds."""
        if token is None:
            alg = self._login_token_alg()
            signer = JWT(key_jar=self.server.keyjar, iss=self.issuer, lifetime=self.login_form_lifetime, sign_alg=alg)
            signer.with_jti = True
            token = signer.pack(payload={"query": authn_args["query"],
                                         "authn_class_ref": authn_args.get("authn_class_ref")},
                                kid=self.keys.current_kid(alg), jws_headers={"typ": "login-form+jwt"})
        client_id = parse_qs(authn_args["query"]).get("client_id", [""])[0]
        m = self._form_method
        # The "mfa" method's page asks for the one-time code too (the token says which it is).
        otp = authn_args.get("authn_class_ref") == MFA_ACR or authn_args.get("otp", False)
        return m.template_handler.render(m.template, action=f"{self.url}{m.url_endpoint}", token=token,
                                         error=error, username=username, client_id=client_id, otp=otp, **m.kwargs)

    def _login_session_identity(self, value, max_age=0, acr=None):
        """FormLogin.authenticated_as: (identity, auth_time) of an active login session (of
        that acr, when one is named: MFAFormLogin)."""
        sess = self.login_sessions.get(value) if value else None
        if not sess or not sess["active"]:
            return None, 0
        if acr is not None and sess.get("acr") != acr:
            return None, 0
        if max_age and utc_time_sans_frac() > sess["auth_time"] + int(max_age):
            return None, 0
        return {"uid": sess["user"]}, sess["auth_time"]

    def _html_page(self, title, text, status):
        body = (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
                f"</head><body><h1>{html.escape(title)}</h1><p id=\"message\">{html.escape(text)}</p></body></html>")
        return Response(body, status=status, content_type="text/html; charset=utf-8")

    def _login(self, req):
        """POST /login: the form's username and password (FormLogin.verify); a wrong one shows
        the form again with an error; a right one starts a login session (cookie) and redirects
        to the client with the code (idpyoidc's create_session + authz_part2)."""
        if self.login != "form":
            return _json({"error": "not_found"}, 404)
        if req.method != "POST":
            return _json({"error": "invalid_request", "error_description": "POST only"}, 405)
        token = req.form.get("token", "")
        username, password = req.form.get("username", ""), req.form.get("password", "")
        try:
            info = JWT(key_jar=self.server.keyjar, allowed_sign_algs=[k.alg for k in self.keys.keys]).unpack(token)
            if info.get("iss") != self.issuer or not isinstance(info.get("exp"), int) or info["exp"] < time.time():
                raise ValueError("expired")
        except Exception:  # noqa: BLE001
            return self._html_page("Sign-in failed", "This sign-in form has expired or is not valid: start again.", 400)
        m = self._form_method
        acr = info.get("authn_class_ref")
        try:
            user = m.verify(username=username, password=password)
            # The second factor of the "mfa" method (MFAFormLogin).
            if acr == MFA_ACR and not hmac.compare_digest(OTP_CODES.get(user, "").encode(),
                                                          req.form.get("otp", "").encode()):
                raise FailedAuthentication()
        except FailedAuthentication:
            self.login_attempts.append({"user": username, "ok": False, **({"mfa": True} if acr == MFA_ACR else {})})
            error = "Wrong username, password or code." if acr == MFA_ACR else "Wrong username or password."
            page = self._login_page({"query": info["query"], "otp": acr == MFA_ACR}, error=error,
                                    username=username, token=token)
            return Response(page, status=200, content_type="text/html; charset=utf-8")
        if info.get("jti") in self._used_login_forms:
            return self._html_page("Sign-in failed", "This sign-in form was already used: start again.", 400)
        self._used_login_forms.add(info.get("jti"))
        self.login_attempts.append({"user": user, "ok": True, **({"mfa": True} if acr == MFA_ACR else {})})
        ep = self.server.endpoint["authorization"]
        request = ep.request_cls().from_urlencoded(info["query"])
        record = {"client_id": request.get("client_id"), "via": "login", "signed": None, "params": request.to_dict(),
                  "outcome": None, "error": None, "location": None, "user": user}
        self.authorizations.append(record)
        now = utc_time_sans_frac()
        cookie = secrets.token_urlsafe(32)
        self.login_sessions[cookie] = {"user": user, "auth_time": now, "active": True, "acr": acr}
        redirect_uri, state = request["redirect_uri"], request.get("state")
        try:
            session_id = ep.create_session(request, user, info.get("authn_class_ref"), now, m)
            result = ep.authz_part2(request=request, session_id=session_id)
        except Exception as e:  # noqa: BLE001
            log.exception("login")
            resp = self._authz_error_redirect(record, redirect_uri, AuthzError("server_error", str(e)), state)
        else:
            resp = self._authorization_result(record, ep, request, result, redirect_uri, state)
        resp.set_cookie(self.login_cookie_name, cookie, path="/", httponly=True, samesite="Lax")
        return resp

    # RP-Initiated Logout 1.0.

    def _end_session(self, req):
        """/end_session: id_token_hint (an ID token of this AS, expired or not — §2 allows that),
        client_id, post_logout_redirect_uri (registered for the client), state. Ends the
        browser's login session and every login session of the hint's user."""
        params = req.args.to_dict() if req.method == "GET" else req.form.to_dict()
        call = {"params": params, "client_id": None, "user": None, "ended": [], "status": None, "location": None,
                "error": None}
        self.end_session_calls.append(call)
        try:
            client_id, user = self._end_session_check(params)
        except AuthzError as e:
            call.update(status=400, error=e.error, error_description=e.description)
            return _json({"error": e.error, "error_description": e.description}, 400)
        ended = []
        cookie = req.cookies.get(self.login_cookie_name)
        if cookie in self.login_sessions and self.login_sessions[cookie]["active"]:
            self.login_sessions[cookie]["active"] = False
            ended.append(cookie)
        if user:
            ended += self.end_login_sessions(user)
        location = None
        if params.get("post_logout_redirect_uri"):
            location = _add_query(params["post_logout_redirect_uri"], {"state": params.get("state")})
            resp = Response(status=302, headers={"Location": location, "Cache-Control": "no-store"})
        else:
            resp = self._html_page("Signed out", "You are signed out.", 200)
        resp.delete_cookie(self.login_cookie_name, path="/")
        call.update(client_id=client_id, user=user, ended=ended, status=resp.status_code, location=location)
        return resp

    def _end_session_check(self, params):
        cdb = self.server.context.cdb
        hint, client_id, user = params.get("id_token_hint"), params.get("client_id"), None
        if hint:
            claims = self.verify_id_token(hint, check_exp=False)
            auds = [a for a in _as_list(claims.get("aud")) if a in cdb]
            if client_id:
                if client_id not in auds:
                    raise AuthzError("invalid_request", "client_id is not an audience of the id_token_hint")
            elif claims.get("azp") in auds:
                client_id = claims["azp"]
            elif len(auds) == 1:
                client_id = auds[0]
            else:
                raise AuthzError("invalid_request", "id_token_hint names no single registered client")
            if claims.get("sid"):
                try:
                    user = self.server.context.session_manager.decrypt_branch_id(claims["sid"])[0]
                except Exception:  # noqa: BLE001
                    raise AuthzError("invalid_request", "id_token_hint: unknown session")
        elif client_id and client_id not in cdb:
            raise AuthzError("invalid_request", f"unknown client {client_id}")
        uri = params.get("post_logout_redirect_uri")
        if uri:
            if not client_id:
                raise AuthzError("invalid_request", "post_logout_redirect_uri needs id_token_hint or client_id")
            if uri not in cdb[client_id].get("post_logout_redirect_uris", []):
                raise AuthzError("invalid_request", "post_logout_redirect_uri is not registered for the client")
        return client_id, user

    def verify_id_token(self, token, check_exp=True):
        """The claims of an ID token this AS signed (current keys), iss checked, exp too unless
        check_exp=False; AuthzError invalid_request otherwise."""
        def bad(why):
            return AuthzError("invalid_request", f"id_token_hint: {why}")
        try:
            header, claims = _jose_parts(token)
        except ValueError:
            raise bad("not a JWT")
        alg = header.get("alg")
        if header.get("typ") == "at+jwt" or alg not in REQUEST_OBJECT_ALGS:
            raise bad("not an ID token of this AS")
        keys = [k for k in self.server.keyjar.get_verify_key(key_type=alg2keytype(alg), issuer_id=self.issuer)
                if not header.get("kid") or k.kid == header["kid"]]
        try:
            JWS(alg=alg).verify_compact(token, keys=keys, sigalg=alg)
        except Exception:  # noqa: BLE001
            raise bad("signature does not verify with the AS's keys")
        if claims.get("iss") != self.issuer:
            raise bad("iss is not this AS")
        if check_exp and not (isinstance(claims.get("exp"), int) and claims["exp"] > time.time()):
            raise bad("expired")
        return claims

    # RFC 7009.

    def _revocation(self, req):
        """/revocation through idpyoidc's TokenRevocation (client authentication, the token's
        owner checked, the token revoked in its grant); success answers 200 with an empty body."""
        form = req.form.to_dict() if req.method == "POST" else {}
        call = {"client_id": None, "token": form.get("token"), "token_type_hint": form.get("token_type_hint"),
                "status": None, "error": None}
        self.revocations.append(call)

        def answer(resp, error=None):
            call.update(status=resp.status_code, error=error)
            return resp
        if req.method != "POST":
            return answer(_json({"error": "invalid_request", "error_description": "POST only"}, 405), "invalid_request")
        ep = self.server.endpoint["token_revocation"]
        try:
            parsed = ep.parse_request(form, http_info=self._http_info(req))
        except ClientAuthenticationError as e:
            return answer(_json({"error": "invalid_client", "error_description": str(e)}, 401), "invalid_client")
        except Exception as e:  # noqa: BLE001
            return answer(_json({"error": "invalid_request", "error_description": str(e)}, 400), "invalid_request")
        if isinstance(parsed, ResponseMessage) and "error" in parsed:
            status = 401 if parsed["error"] in ("invalid_client", "unauthorized_client") else 400
            return answer(_json(parsed.to_dict(), status), parsed["error"])
        call["client_id"] = parsed.get("client_id")
        if not parsed.get("authenticated"):
            return answer(_json({"error": "invalid_client", "error_description": "client authentication required"},
                                401), "invalid_client")
        try:
            result = ep.process_request(parsed)
        except Exception as e:  # noqa: BLE001 — RFC 7009 §2.2: an invalid token is no error
            log.info("revocation: %s", e)
            result = {}
        if isinstance(result, ResponseMessage) and "error" in result:
            return answer(_json(result.to_dict(), 400), result["error"])
        r = Response("", status=200)
        r.headers["Cache-Control"] = "no-store"
        return answer(r)

    # /token accounting and PKCE.

    def _userinfo(self, req):
        """/userinfo: Bearer, or DPoP with a proof for this GET bound to the token (RFC 9449
        §7.1: htm, htu, ath, the token's cnf.jkt) — idpyoidc's own userinfo then answers, and
        the test's userinfo_claims / userinfo_sub shape the JSON."""
        auth = req.headers.get("Authorization", "")
        scheme, _, token = auth.partition(" ")
        record = {"scheme": scheme, "dpop": False, "status": None}
        self.userinfo_requests.append(record)
        if self.userinfo_answer is not None:
            status, ctype, body = self.userinfo_answer
            record["status"] = status
            return Response(body, status=status, content_type=ctype)
        try:
            bound = json.loads(b64d(token.split(".")[1].encode())).get("cnf", {}).get("x5t#S256")
        except Exception:  # noqa: BLE001 — opaque or malformed: idpyoidc judges it
            bound = None
        if bound is not None and bound != req.environ.get("authserver.x5t"):
            # RFC 8705 §3: a certificate-bound token only with that certificate.
            record["status"], record["error"] = 401, "certificate mismatch"
            r = _json({"error": "invalid_token", "error_description": "not the token's certificate"}, 401)
            r.headers["WWW-Authenticate"] = 'Bearer error="invalid_token"'
            return r
        if scheme == "DPoP" and self.userinfo_dpop_nonce is not None:
            _, claims = self._dpop_precheck(self._http_info(req))
            if claims.get("nonce") != self.userinfo_dpop_nonce:
                record["status"], record["error"] = 401, "use_dpop_nonce"
                r = _json({"error": "use_dpop_nonce", "error_description": "a nonce is required"}, 401)
                r.headers["WWW-Authenticate"] = 'DPoP error="use_dpop_nonce", error_description="a nonce is required"'
                r.headers["DPoP-Nonce"] = self.userinfo_dpop_nonce
                return r
        if scheme == "DPoP":
            try:
                self._userinfo_dpop_check(req, token)
            except Exception as e:  # noqa: BLE001
                record["status"], record["error"] = 401, str(e)
                r = _json({"error": "invalid_dpop_proof", "error_description": str(e)}, 401)
                r.headers["WWW-Authenticate"] = 'DPoP error="invalid_dpop_proof"'
                return r
            record["dpop"] = True
            environ = dict(req.environ)
            environ["HTTP_AUTHORIZATION"] = "Bearer " + token
            environ.pop("HTTP_DPOP", None)
            req = Request(environ)
        resp = self._service(self.server.endpoint["userinfo"], req)
        record["status"] = resp.status_code
        if resp.status_code != 200:
            return resp
        data = json.loads(resp.get_data(as_text=True))
        data.update(self.userinfo_claims.get(data.get("preferred_username"), {}))
        if self.userinfo_sub is not None:
            data["sub"] = self.userinfo_sub
        return _json(data)

    def _userinfo_dpop_check(self, req, token):
        header, claims = self._dpop_precheck(self._http_info(req))
        from cryptojwt.jwk.jwk import key_from_jwk_dict
        key = key_from_jwk_dict(header["jwk"])
        JWS(alg=header["alg"]).verify_compact(req.headers["DPoP"], keys=[key], sigalg=header["alg"])
        if claims["htm"] != "GET" or claims["htu"] != f"{self.url}/userinfo":
            raise ValueError("htm/htu do not name this request")
        if claims.get("ath") != b64e(hashlib.sha256(token.encode()).digest()).decode():
            raise ValueError("ath is not the token's hash")
        self._dpop_freshness(claims)
        payload = json.loads(b64d(token.split(".")[1].encode()))
        if (payload.get("cnf") or {}).get("jkt") != key.thumbprint("SHA-256").decode():  # already base64url
            raise ValueError("the token is not bound to the proof's key")

    @staticmethod
    def _proof_cnf(proof):
        """cnf of a token bound to the key of this DPoP proof; the proof itself is checked by
        _dpop_token_check (a request whose proof fails gets no token at all)."""
        try:
            from cryptojwt.jwk.jwk import key_from_jwk_dict
            header = json.loads(b64d(proof.split(".")[0].encode()))
            return {"jkt": key_from_jwk_dict(header["jwk"]).thumbprint("SHA-256").decode()}
        except Exception:  # noqa: BLE001 — no proof, or not one: no binding
            return None

    def _token(self, ep, req):
        rec = {"grant_type": req.form.get("grant_type"), "client_id": req.form.get("client_id"), "status": None,
               "error": None}
        self.token_requests.append(rec)
        exchange = req.form.get("grant_type") == TOKEN_EXCHANGE
        if self.token_dpop_nonce is not None and req.headers.get("DPoP"):
            try:
                said = json.loads(b64d(req.headers["DPoP"].split(".")[1].encode())).get("nonce")
            except Exception:  # noqa: BLE001 — a malformed proof is refused by the check itself
                said = None
            if said != self.token_dpop_nonce:
                rec["status"], rec["error"] = 400, "use_dpop_nonce"
                r = _json({"error": "use_dpop_nonce", "error_description": "a nonce is required"}, 400)
                r.headers["DPoP-Nonce"] = self.token_dpop_nonce
                return r
        if req.form.get("grant_type") == "authorization_code":
            # RFC 8707 §2.2: a resource at the token request narrows; else the authorization's.
            resources = req.form.getlist("resource") or self.code_resources.get(req.form.get("code"))
            self.server.minted_audience = resources or None
        if exchange:
            self.exchange_subjects.append(req.form.get("subject_token"))
            targets = req.form.getlist("resource") + req.form.getlist("audience")
            self.server.minted_audience = self.exchange_audience_override or targets or None
            self.server.exchange_cnf = self._proof_cnf(req.headers.get("DPoP")) if self.dpop else None
        self.server.mtls_x5t = req.environ.get("authserver.x5t") if self.mtls and self.mtls.bind else None
        try:
            resp = self._service(ep, req)
        finally:
            self.server.minted_audience = self.server.exchange_cnf = self.server.mtls_x5t = None
        rec["status"] = resp.status_code
        if resp.status_code != 200:
            try:
                rec["error"] = json.loads(resp.get_data(as_text=True)).get("error")
            except Exception:  # noqa: BLE001
                pass
        elif self.token_response_fault is not None or self.id_token_fault is not None:
            body = json.loads(resp.get_data(as_text=True))
            for name, value in (self.token_response_fault or {}).items():
                if value is None:
                    body.pop(name, None)
                else:
                    body[name] = value
            if self.id_token_fault is not None and "id_token" in body:
                body["id_token"] = self._faulted_id_token(body["id_token"], self.id_token_fault)
            resp.set_data(json.dumps(body))
        return resp

    def _signed_introspection(self, req, resp):
        """The introspection answer as an RFC 9701 JWT: iss, aud = the authenticated client,
        iat, token_introspection = the JSON answer; typ token-introspection+jwt."""
        if resp.status_code != 200:
            return resp
        client = req.form.get("client_id")
        if req.authorization and req.authorization.type == "basic":
            client = req.authorization.username
        elif req.form.get("client_assertion"):
            client = json.loads(b64d(req.form["client_assertion"].split(".")[1].encode()))["iss"]
        claims = {"iss": self.issuer, "aud": client, "iat": int(time.time()),
                  "token_introspection": json.loads(resp.get_data(as_text=True))}
        fault = self.introspection_jwt_fault or {}
        for name, value in fault.get("claims", {}).items():
            if value is None:
                claims.pop(name, None)
            else:
                claims[name] = value
        body = self._sign_with_fault(claims, fault, "ES256", fault.get("typ", "token-introspection+jwt"))
        return Response(body, status=200, content_type="application/token-introspection+jwt")

    def _sign_with_fault(self, claims, fault, alg, typ):
        """claims signed with the AS's current key of `alg`, or as `fault` says: "alg": "none"
        (unsigned) or another alg, "foreign_key": True (the same kid, a key the JWKS lacks),
        "kid": a kid the JWKS does not publish (the right key)."""
        alg = fault.get("alg", alg)
        header = {"typ": typ} if typ else {}
        if alg == "none":
            enc = lambda o: base64.urlsafe_b64encode(json.dumps(o).encode()).rstrip(b"=").decode()  # noqa: E731
            return f"{enc({'alg': 'none', **header})}.{enc(claims)}."
        key = self.keys.private_key(self.keys.current_kid(alg))
        if fault.get("foreign_key"):
            key = new_ec_key(crv="P-256", kid=key.kid, use="sig")  # the same kid, another key
        if "kid" in fault:  # the header names the key by the kid (cryptojwt takes it from the key)
            key = copy.copy(key)
            key.kid = fault["kid"]
        return JWS(json.dumps(claims), alg=alg).sign_compact([key], protected={**header, "kid": key.kid})

    def _jarm(self, location, state):
        """location as a JARM response (JARM §2.3.1: the query is only `response`) when the
        request with this state asked for it; the claims are iss, aud, exp and the parameters,
        changed by jarm_fault["claims"] (None removes)."""
        client_id = self._jarm_states.get(state) if state else None
        if client_id is None:
            return location
        base, _, _ = location.partition("?")
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": client_id, "exp": now + 600, "iat": now}
        claims.update({k: v for k, v in redirect_params(location).items() if k != "iss"})
        fault = self.jarm_fault or {}
        for name, value in fault.get("claims", {}).items():
            if value is None:
                claims.pop(name, None)
            else:
                claims[name] = value
        return _add_query(base, {"response": self._sign_with_fault(claims, fault, self.jarm_alg, None)})

    def _faulted_id_token(self, token, fault):
        """The ID token with `fault` applied, signed again (see id_token_fault)."""
        header = json.loads(b64d(token.split(".")[0].encode()))
        claims = json.loads(b64d(token.split(".")[1].encode()))
        for name, value in fault.get("claims", {}).items():
            if value is None:
                claims.pop(name, None)
            else:
                claims[name] = value
        alg = fault.get("alg", header["alg"])
        if alg == "none":
            enc = lambda o: base64.urlsafe_b64encode(json.dumps(o).encode()).rstrip(b"=").decode()  # noqa: E731
            return f"{enc({'alg': 'none', 'typ': 'JWT'})}.{enc(claims)}."
        key = self.keys.private_key(self.keys.current_kid(alg))
        return JWS(json.dumps(claims), alg=alg).sign_compact([key], protected={"typ": "JWT", "kid": key.kid})

    def _pkce_check(self, request, client_id, context, **kwargs):
        """/token post_parse_request, before the grant helper spends the code: RFC 7636 §4.6
        (S256 only), and RFC 9700 §2.1.1's downgrade rule (a code_verifier for a code that had
        no code_challenge is refused). idpyoidc's pkce add-on is not used: its token check fails
        on client_credentials requests (it looks up request["code"]) and it defaults a missing
        code_challenge_method to plain."""
        if request.get("grant_type") != "authorization_code" or not request.get("code"):
            return request
        error_cls = self.server.endpoint["token"].error_cls
        try:
            info = context.session_manager.get_session_info_by_token(request["code"], grant=True,
                                                                     handler_key="authorization_code")
        except Exception:  # noqa: BLE001 — an unknown code: idpyoidc's helper answers that
            return request
        areq = info["grant"].authorization_request
        challenge, verifier = areq.get("code_challenge"), request.get("code_verifier")
        if challenge is None:
            if verifier is not None:
                return error_cls(error="invalid_grant", error_description="code_verifier for a code without code_challenge")
            return request
        if verifier is None:
            return error_cls(error="invalid_grant", error_description="code_verifier missing")
        if not PKCE_VERIFIER_RE.match(verifier):
            return error_cls(error="invalid_grant", error_description="malformed code_verifier")
        if areq.get("code_challenge_method") != "S256" or not hmac.compare_digest(pkce_pair(verifier)[1], challenge):
            return error_cls(error="invalid_grant", error_description="code_verifier does not match the code_challenge")
        return request

    # -- lifecycle ---------------------------------------------------------------------

    def start(self, timeout=5):
        assert self._httpd is None, "already running"
        handler = _QuietHandler
        if self.threaded:
            # One thread per connection (requests still run one at a time under self.lock), so
            # that a browser's idle pre-connected socket does not stall everyone else. HTTP/1.0
            # as single-threaded: a connection per request; stop() closes the open ones.
            conns = self._conns

            class handler(_QuietHandler):  # noqa: N801
                protocol_version = "HTTP/1.0"

                def setup(self):
                    super().setup()
                    conns.add(self.connection)

                def finish(self):
                    try:
                        super().finish()
                    finally:
                        conns.discard(self.connection)
        refused = [None]

        def bound():
            # A restart's port may still be held a moment by the last server's sockets.
            try:
                return make_server("127.0.0.1", self.port, self.wsgi, threaded=self.threaded,
                                   request_handler=handler)
            except OSError as e:
                refused[0] = e
                return None
        self._httpd = wait_for(bound, timeout, interval=0.05, what=lambda: f"port {self.port} to bind ({refused[0]})")
        self._httpd.timeout = 0.5
        # select() may report a connection its client resets before accept(): a blocking
        # accept() would then wait for the next client, and stop()'s shutdown() with it.
        # Non-blocking, that accept() fails at once and the loop goes on (accepted sockets
        # are still blocking: Python sets them so).
        self._httpd.socket.setblocking(False)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"authserver-{self.port}", daemon=True)
        self._thread.start()
        if self.mtls is not None:
            self.mtls.start()
        return self

    def stop(self):
        """Stops listening: connections to the port are refused until start()."""
        if self.mtls is not None:
            self.mtls.stop()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            for conn in list(self._conns):  # threaded: idle or pending connections end too
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self._thread.join(5)
            self._httpd = None
            self._thread = None

    @property
    def running(self):
        return self._httpd is not None

    def close(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- getting tokens (test clients) -------------------------------------------------

    # All token helpers: dpop_key (a dpop_client.DPoPKey) sends a fresh proof for POST
    # token_endpoint in the DPoP header; dpop_proof sends that exact header value instead.

    def client_credentials_token(self, client_id="app1", scope=None, auth="client_secret_basic", secret=None,
                                 key=None, dpop_key=None, dpop_proof=None):
        """Token response of a client_credentials grant: sub = client_id (RFC 9068 §2.2),
        scope = the requested scope (within the client's allowed ones) or all allowed ones."""
        data = {"grant_type": "client_credentials"}
        if scope:
            data["scope"] = scope
        return self._token_request(client_id, secret, auth, data, key=key, dpop_key=dpop_key,
                                   dpop_proof=dpop_proof)

    def code_flow(self, client_id="app1", user="alice", scope="openid profile email orders:read",
                  auth="client_secret_basic", secret=None, key=None, dpop_key=None, dpop_proof=None):
        """Authorization-code flow over HTTP, the login done by AutoLogin as `user`. Returns
        the token response: access_token, id_token, and refresh_token when the scope has
        offline_access."""
        data = self.authorize(client_id, user=user, scope=scope)
        return self._token_request(client_id, secret, auth, data, key=key, dpop_key=dpop_key,
                                   dpop_proof=dpop_proof)

    def authorize(self, client_id="app1", user="alice", scope="openid profile email orders:read", resource=None):
        """The front-channel half of code_flow: the /token form fields of the
        authorization_code grant (grant_type, code, redirect_uri, state, and code_verifier when
        the AS requires PKCE), for post_token. login="form": through the login form, as user
        with the user's password; require_par: pushed first (client_secret_basic). resource:
        RFC 8707's, the access token's aud."""
        redirect_uri = self.redirect_uri(client_id)
        state, nonce = secrets.token_urlsafe(8), secrets.token_urlsafe(8)
        params = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri, "scope": scope,
                  "state": state, "nonce": nonce}
        if resource:
            params["resource"] = resource
        if "offline_access" in scope.split():
            params["prompt"] = "consent"  # OIDC Core §11: offline_access needs prompt=consent
        grant = {}
        if self.require_pkce:
            grant["code_verifier"], params["code_challenge"] = pkce_pair()
            params["code_challenge_method"] = "S256"
        if self.require_par:
            params = {"client_id": client_id, "request_uri": self.par(params, client_id)}
        url = self.authorization_url(**params)
        if self.login == "form":
            loc = self.login_with_form(requests.Session(), url, user)
        else:
            self.login_user = user
            r = requests.get(url, allow_redirects=False, timeout=10)
            if r.status_code != 302:
                raise RuntimeError(f"authorization: {r.status_code} {r.text}")
            loc = r.headers["Location"]
        q = parse_qs(urlsplit(loc).query)
        if "code" not in q:
            raise RuntimeError(f"authorization: no code in {loc}")
        if q.get("state") != [state]:
            raise RuntimeError(f"authorization: state mismatch in {loc}")
        return dict({"grant_type": "authorization_code", "code": q["code"][0], "redirect_uri": redirect_uri,
                     "state": state}, **grant)

    # -- browser-login helpers (a python-side RP) --------------------------------------

    def authorization_url(self, **params):
        """{url}/authorization?params."""
        return f"{self.url}/authorization?{urlencode(params)}"

    def end_session_url(self, id_token_hint=None, post_logout_redirect_uri=None, state=None, client_id=None):
        params = {"id_token_hint": id_token_hint, "post_logout_redirect_uri": post_logout_redirect_uri,
                  "state": state, "client_id": client_id}
        return _add_query(f"{self.url}/end_session", params)

    def request_object(self, client_id, params, key=None, alg=None, typ=REQUEST_OBJECT_TYP, aud=None, iss=None,
                       lifetime=60, overrides=None, drop=()):
        """A request object (RFC 9101) for params: claims = params + client_id, iss (client_id),
        aud (the issuer), iat, nbf, exp (now + lifetime), jti; overrides replace claims, drop
        removes them. key: the client's private cryptojwt key (new_client_key()), signing with
        alg (default key.alg), kid = key.kid; key=None: unsigned (alg none). typ=None: no typ."""
        now = int(time.time())
        claims = dict(params)
        claims.setdefault("client_id", client_id)
        claims.update(iss=iss or client_id, aud=aud or self.issuer, iat=now, nbf=now, exp=now + lifetime,
                      jti=secrets.token_urlsafe(16))
        claims.update(overrides or {})
        for name in drop:
            claims.pop(name, None)
        header = {"typ": typ} if typ else {}
        if key is None:
            def enc(obj):
                return b64e(json.dumps(obj).encode()).decode()
            return f"{enc(dict(header, alg='none'))}.{enc(claims)}."
        header["kid"] = key.kid
        return JWS(json.dumps(claims), alg=alg or key.alg).sign_compact([key], protected=header)

    def push_authorization_request(self, params, client_id="app1", auth="client_secret_basic", secret=None,
                                   key=None):
        """POSTs params (an authorization request's parameters, or {"request": request object})
        to /par with client authentication (audience of an assertion: {url}/par). The raw
        requests.Response (201 {"request_uri", "expires_in"} when accepted)."""
        fields, headers = self.client_auth(client_id, auth, "par", secret=secret, key=key)
        data = dict({"client_id": client_id}, **params)
        data.update(fields)
        return requests.post(f"{self.url}/par", data=data, headers=headers, timeout=10)

    def par(self, params, client_id="app1", auth="client_secret_basic", secret=None, key=None):
        """push_authorization_request → the request_uri (RuntimeError unless 201)."""
        r = self.push_authorization_request(params, client_id, auth, secret=secret, key=key)
        if r.status_code != 201:
            raise RuntimeError(f"par: {r.status_code} {r.text}")
        return r.json()["request_uri"]

    def login_page(self, session, authorize_url):
        """GET authorize_url in session (a requests.Session: the browser's cookies), no
        redirects followed: 200 with the login form, or 302 (a login session: SSO; an error)."""
        return session.get(authorize_url, allow_redirects=False, timeout=10)

    def submit_login(self, session, page, user, password):
        """Fills page's (a login_page or submit_login response) form with user and password and
        submits it: 302 to the client (code, state, iss) or 200 with the form and an error."""
        form = parse_form(page.text)
        if form is None:
            raise RuntimeError(f"no form on the page: {page.status_code} {page.text[:300]}")
        data = dict(form["inputs"], username=user, password=password)
        if "otp" in form["inputs"]:  # the "mfa" method's form: the user's one-time code
            data["otp"] = OTP_CODES.get(user, "")
        return session.post(urljoin(page.url, form["action"]), data=data, allow_redirects=False, timeout=10)

    def login_with_form(self, session, authorize_url, user="alice", password=None):
        """Opens authorize_url, logs in on the form as user (password default: the user's
        right one, PASSWORDS) unless the session is still logged in, and returns the Location of
        the final redirect (the client's redirect_uri with code, state, iss — or an error)."""
        r = self.login_page(session, authorize_url)
        if r.status_code == 302:
            return r.headers["Location"]
        if r.status_code != 200:
            raise RuntimeError(f"authorization: {r.status_code} {r.text}")
        r = self.submit_login(session, r, user, PASSWORDS.get(user, "") if password is None else password)
        if r.status_code != 302:
            raise RuntimeError(f"login as {user}: {r.status_code}, no redirect")
        return r.headers["Location"]

    def exchange_code(self, code, client_id="app1", redirect_uri=None, code_verifier=None,
                      auth="client_secret_basic", secret=None, key=None, dpop_key=None):
        """The authorization_code grant at /token; the raw requests.Response."""
        data = {"grant_type": "authorization_code", "code": code,
                "redirect_uri": redirect_uri or self.redirect_uri(client_id)}
        if code_verifier is not None:
            data["code_verifier"] = code_verifier
        return self.post_token(data, client_id, auth, secret=secret, key=key, dpop_key=dpop_key)

    def revoke(self, token, client_id="app1", auth="client_secret_basic", secret=None, key=None,
               token_type_hint=None):
        """RFC 7009 revocation request; the raw requests.Response (200 when done)."""
        fields, headers = self.client_auth(client_id, auth, "revocation", secret=secret, key=key)
        data = {"token": token}
        if token_type_hint:
            data["token_type_hint"] = token_type_hint
        return requests.post(f"{self.url}/revocation", data=dict(data, **fields), headers=headers, timeout=10)

    def refresh(self, refresh_token, client_id="app1", auth="client_secret_basic", secret=None, key=None,
                dpop_key=None, dpop_proof=None):
        return self._token_request(client_id, secret, auth, {"grant_type": "refresh_token",
                                                            "refresh_token": refresh_token}, key=key,
                                   dpop_key=dpop_key, dpop_proof=dpop_proof)

    def client_assertion(self, client_id, endpoint="token", secret=None, key=None):
        """RFC 7523 client assertion for client_secret_jwt (HS256 with the secret) or
        private_key_jwt (key: the client's private cryptojwt key, see new_client_key())."""
        now = int(time.time())
        claims = {"iss": client_id, "sub": client_id, "aud": f"{self.url}/{endpoint}",
                  "jti": secrets.token_hex(16), "iat": now, "exp": now + 60}
        if key is not None:
            return JWS(json.dumps(claims), alg=key.alg).sign_compact([key], protected={"kid": key.kid})
        secret = secret or self.server.context.cdb[client_id]["client_secret"]
        return JWS(json.dumps(claims), alg="HS256").sign_compact([SYMKey(key=secret)])

    def client_auth(self, client_id, auth="client_secret_basic", endpoint="token", secret=None, key=None):
        """(extra form fields, headers) authenticating client_id at endpoint with auth method
        client_secret_basic | client_secret_post | client_secret_jwt | private_key_jwt."""
        if auth in ("client_secret_basic", "client_secret_post", "client_secret_jwt"):
            secret = secret or self.server.context.cdb[client_id]["client_secret"]
        if auth == "client_secret_basic":
            return {}, {"Authorization": "Basic " + _b64(f"{client_id}:{secret}")}
        if auth == "client_secret_post":
            return {"client_id": client_id, "client_secret": secret}, {}
        if auth in ("client_secret_jwt", "private_key_jwt"):
            assertion = self.client_assertion(client_id, endpoint, secret=secret,
                                              key=key if auth == "private_key_jwt" else None)
            return {"client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                    "client_assertion": assertion}, {}
        raise ValueError(f"unknown client authentication method {auth}")

    def post_token(self, data, client_id="app1", auth="client_secret_basic", secret=None, key=None,
                   dpop_key=None, dpop_proof=None):
        """POSTs the form fields data to /token with client authentication; dpop_key: a
        dpop_client.DPoPKey to sign a fresh proof for it, or dpop_proof: the DPoP header value
        as is. The raw response (a requests.Response), whatever its status."""
        fields, headers = self.client_auth(client_id, auth, "token", secret=secret, key=key)
        if dpop_proof is None and dpop_key is not None:
            dpop_proof = dpop_key.proof("POST", self.token_endpoint)
        if dpop_proof is not None:
            headers["DPoP"] = dpop_proof
        return requests.post(self.token_endpoint, data=dict(data, **fields), headers=headers, timeout=10)

    def _token_request(self, client_id, secret, auth, data, key=None, dpop_key=None, dpop_proof=None):
        r = self.post_token(data, client_id, auth, secret=secret, key=key, dpop_key=dpop_key, dpop_proof=dpop_proof)
        if r.status_code != 200:
            raise RuntimeError(f"token: {r.status_code} {r.text}")
        return r.json()

    def introspect(self, token, client_id="app1", client_secret=None, auth="client_secret_basic", key=None):
        """The raw RFC 7662 response (a requests.Response)."""
        fields, headers = self.client_auth(client_id, auth, "introspection", secret=client_secret, key=key)
        return requests.post(f"{self.url}/introspection", data=dict({"token": token}, **fields), headers=headers,
                             timeout=10)


class _QuietHandler(WSGIRequestHandler):
    def log_request(self, *args, **kwargs):
        pass


def _as_list(v):
    if not v:
        return []
    return [v] if isinstance(v, str) else list(v)


def _json(obj, status=200):
    return Response(json.dumps(obj), status=status, content_type="application/json")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=9000)
    ap.add_argument("--audience", action="append", help="default access-token audience (repeatable)")
    ap.add_argument("--dpop", action="store_true", help="require DPoP proofs at /token (RFC 9449)")
    ap.add_argument("--login", choices=("auto", "form"), default="auto",
                    help="form: a login form (alice/alice-password, bob/bob-password)")
    ap.add_argument("--require-par", action="store_true", help="refuse authorization requests not pushed")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO)
    srv = AuthServer(port=args.port, audience=tuple(args.audience or [DEFAULT_AUDIENCE]), dpop=args.dpop,
                     login=args.login, require_par=args.require_par)
    srv.start()
    print(f"issuer {srv.issuer}")
    print(f"discovery {srv.issuer}/.well-known/openid-configuration")
    for cid, c in CLIENTS.items():
        print(f"client {cid} secret {c['client_secret']} audience {','.join(c['audience'])}")
    print(f"try: curl -s -u app1:{CLIENTS['app1']['client_secret']} -d grant_type=client_credentials {srv.issuer}/token")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    srv.close()


if __name__ == "__main__":
    main()
