"""A real OAuth 2.0 / OpenID Connect authorization server for the end-to-end tests:
idpyoidc (pinned in tests/requirements.txt) behind a small WSGI wrapper on werkzeug's
single-threaded dev server, on 127.0.0.1.

What it serves (issuer = http://127.0.0.1:PORT, compared by idpyoidc as an exact string, so
always 127.0.0.1 and never localhost):

  /.well-known/openid-configuration   OIDC discovery (also at /.well-known/oauth-authorization-server)
  /jwks.json                          the current public signing keys (live: rotation shows at once)
  /authorization                      code flow; the user is logged in automatically (AutoLogin)
  /token                              authorization_code, client_credentials, refresh_token grants
  /introspection                      RFC 7662
  /userinfo                           OIDC userinfo
  /par                                RFC 9126 pushed authorization requests

Client authentication at /token and /introspection: client_secret_basic, client_secret_post,
client_secret_jwt and private_key_jwt.

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
    response_type, scope and redirect_uri in the query next to request_uri (not fixed here);
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
Or standalone:  cd tests/integration && python3 -m authserver.server --port 9000 [--dpop]
(prints the issuer and the demo clients; test hooks at POST /_test/rotate).
"""
import argparse
import base64
import json
import logging
import secrets
import shutil
import signal
import socket
import tempfile
import threading
import time
from urllib.parse import parse_qs, urlsplit

import requests
from cryptojwt import JWT
from cryptojwt.jwk.ec import new_ec_key
from cryptojwt.jwk.hmac import SYMKey
from cryptojwt.jwk.rsa import new_rsa_key
from cryptojwt.key_bundle import KeyBundle
from cryptojwt.jws.jws import JWS
from cryptojwt.key_issuer import KeyIssuer
from cryptojwt.utils import b64d
from idpyoidc.message.oauth2 import JWTAccessToken, ResponseMessage
from idpyoidc.message.oidc import AccessTokenRequest
from idpyoidc.server import Server
from idpyoidc.server.configure import OPConfiguration
from idpyoidc.server.exception import ClientAuthenticationError
from idpyoidc.server.oauth2.add_on import dpop as dpop_addon
from idpyoidc.server.oauth2.token_helper.client_credentials import ClientCredentials
from idpyoidc.server.oidc.token import Token as TokenEndpoint
from idpyoidc.server.token.exception import UnknownToken
from idpyoidc.server.token.jwt_token import JWTToken
from idpyoidc.server.user_authn.user import UserAuthnMethod
from idpyoidc.time_util import utc_time_sans_frac
from werkzeug.serving import WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

log = logging.getLogger("authserver")

DEFAULT_AUDIENCE = "api"

# DPoP proof algorithms the AS accepts (AuthServer(dpop=True)): asymmetric only (RFC 9449 §4.2).
DPOP_ALGS = ("ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "RS256", "RS384", "RS512", "EdDSA")
# Private members of a JWK (RFC 7518 §6, RFC 8037 §2): none may be in a proof's jwk.
JWK_PRIVATE_MEMBERS = ("d", "p", "q", "dp", "dq", "qi", "oth", "k")

# The users the AutoLogin method can log in as, with the claims the AS releases for them.
USERS = {
    "alice": {"name": "Alice Adams", "preferred_username": "alice", "email": "alice@example.com", "email_verified": True,
              "groups": ["staff", "dev"]},
    "bob": {"name": "Bob Brown", "preferred_username": "bob", "email": "bob@example.com", "email_verified": True, "groups": ["dev"]},
}

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


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
        payload["aud"] = list(aud)
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


def op_config(issuer, audience, access_token_lifetime, dpop_algs=None):
    authn = ["client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt"]
    conf = {
        "issuer": issuer,
        "httpc_params": {"verify": False, "timeout": 2},
        "keys": {"key_defs": [{"type": "EC", "crv": "P-256", "use": ["sig"]}], "uri_path": "jwks.json",
                 "read_only": False},
        "preference": {
            "grant_types_supported": ["authorization_code", "client_credentials", "refresh_token"],
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
                                     "refresh_token": {"class": "idpyoidc.server.oidc.token_helper.refresh_token.RefreshTokenHelper"},
                                     "client_credentials": {"class": _qualname(ClientCredentialsGrant)},
                                 }}},
            "introspection": {"path": "introspection", "class": "idpyoidc.server.oauth2.introspection.Introspection",
                              "kwargs": {"client_authn_method": authn, "release": ["username"],
                                         # RFC 7662: the caller is a resource server, not
                                         # necessarily in the token's audience.
                                         "enforce_audience_restriction": False}},
            "userinfo": {"path": "userinfo", "class": "idpyoidc.server.oidc.userinfo.UserInfo",
                         "kwargs": {"client_authn_method": ["bearer_header"]}},
        },
        "authentication": {
            "auto": {"acr": "urn:oasis:names:tc:SAML:2.0:ac:classes:InternetProtocolPassword",
                     "class": _qualname(AutoLogin), "kwargs": {"user": "alice"}},
        },
        "userinfo": {"class": "idpyoidc.server.user_info.UserInfo", "kwargs": {"db": USERS}},
        "claims_interface": {"class": "idpyoidc.server.session.claims.ClaimsInterface", "kwargs": {}},
        "authz": {
            "class": "idpyoidc.server.authz.AuthzHandling",
            "kwargs": {"grant_config": {
                "usage_rules": {
                    "authorization_code": {"supports_minting": ["access_token", "refresh_token", "id_token"],
                                           "max_usage": 1, "expires_in": 120},
                    "access_token": {"expires_in": access_token_lifetime},
                    "refresh_token": {"supports_minting": ["access_token", "refresh_token", "id_token"],
                                      "expires_in": 3600},
                },
                "expires_in": 3600,
            }},
        },
        "token_handler_args": {
            "code": {"kwargs": {"lifetime": 120}},
            "token": {"class": _qualname(RFC9068AccessToken),
                      "kwargs": {"lifetime": access_token_lifetime, "aud": list(audience), "alg": "ES256",
                                 "add_claims_by_scope": True}},
            "refresh": {"kwargs": {"lifetime": 3600}},
            "id_token": {"class": "idpyoidc.server.token.id_token.IDToken",
                         "kwargs": {"lifetime": 300, "add_claims_by_scope": True}},
        },
        "template_dir": "templates",
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
    dpop_max_age seconds in the past / dpop_leeway in the future, jti unseen. No DPoP-Nonce."""

    def __init__(self, port=0, audience=(DEFAULT_AUDIENCE,), access_token_lifetime=300, algs=("ES256", "RS256"),
                 dpop=False, dpop_algs=DPOP_ALGS):
        self.port = port or free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.url = self.issuer
        self.dir = tempfile.mkdtemp(prefix="tg-as-")
        self.lock = threading.Lock()  # idpyoidc is not thread-safe: one request at a time
        self.hits = {}  # path -> count
        self.down_status = None  # answer every request with this status (e.g. 503) while set
        # While cleared, a JWKS request waits (up to 10 s) for it: a test can watch the
        # gateway before its keys have loaded.
        self.jwks_gate = threading.Event()
        self.jwks_gate.set()
        self._httpd = None
        self._thread = None
        self.dpop = dpop
        self.dpop_algs = list(dpop_algs) if dpop else []
        self.dpop_max_age = 300  # seconds a proof's iat may lie in the past
        self.dpop_leeway = 60  # ... and in the future
        self._dpop_jtis = {}  # jti -> when it can be forgotten (iat outside the window by then)
        self.server = Server(OPConfiguration(conf=op_config(self.issuer, audience, access_token_lifetime,
                                                            dpop_algs=self.dpop_algs),
                                             base_path=self.dir), cwd=self.dir)
        self.keys = SigningKeys(self.server.keyjar, self.issuer)
        self.keys.init(algs)
        # RFC9068AccessToken finds the keys through idpyoidc's attribute lookup.
        self.server.authserver_keys = self.keys
        ctx = self.server.context
        self.server.endpoint["introspection"].post_construct.append(self._introspection_claims)
        ctx.provider_info["id_token_signing_alg_values_supported"] = [a for a in algs if a != "ES256"] or list(algs)
        if dpop:
            self._wire_dpop()
        for cid, c in CLIENTS.items():
            self.add_client(cid, **c)

    def _introspection_claims(self, response, request, **kwargs):
        """idpyoidc answers introspection from its session records (aud = the grant's
        resources, no sub for client_credentials); make aud/sub/client_id those of the token."""
        if not response.get("active"):
            return response
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

    def add_client(self, client_id, client_secret=None, scopes=("openid", "orders:read"), audience=None,
                   jwks=None, redirect_uri=None, token_endpoint_auth_method=None, access_token_format="jwt"):
        """Registers a client. jwks: its public JWK Set for private_key_jwt.
        access_token_format: "jwt" (RFC 9068) or "opaque" (a reference only introspection
        resolves)."""
        redirect_uri = redirect_uri or f"http://127.0.0.1:1/cb/{client_id}"
        entry = {
            "client_id": client_id,
            "client_salt": secrets.token_hex(8),
            "redirect_uris": [(redirect_uri, {})],
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "client_credentials", "refresh_token"],
            "allowed_scopes": list(scopes),
            "id_token_signed_response_alg": "RS256",
            "token_endpoint_auth_method": token_endpoint_auth_method,
        }
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

    @property
    def login_user(self):
        return self.server.context.authn_broker["auto"]["method"].user

    @login_user.setter
    def login_user(self, user):
        self.server.context.authn_broker["auto"]["method"].user = user

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
            try:
                resp = self._handle(req)
            except Exception as e:  # noqa: BLE001 — any failure answers 500, the server lives on
                log.exception("authserver: %s %s", req.method, req.path)
                resp = _json({"error": "server_error", "error_description": str(e)}, 500)
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
        ep = self._endpoint_for(req.path)
        if ep is None:
            return _json({"error": "not_found"}, 404)
        return self._service(ep, req)

    def _service(self, endpoint, req):
        headers = {k.lower(): v for k, v in req.headers.items() if k.lower() not in ("cookie", "user-agent")}
        http_info = {"headers": headers, "method": req.method, "url": req.base_url,
                     "cookie": [{"name": k, "value": v} for k, v in req.cookies.items()]}
        if req.method == "GET":
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

    # -- lifecycle ---------------------------------------------------------------------

    def start(self, timeout=5):
        assert self._httpd is None, "already running"
        deadline = time.time() + timeout
        while True:
            try:
                self._httpd = make_server("127.0.0.1", self.port, self.wsgi, threaded=False,
                                          request_handler=_QuietHandler)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        self._httpd.timeout = 0.5
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"authserver-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        """Stops listening: connections to the port are refused until start()."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
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

    def authorize(self, client_id="app1", user="alice", scope="openid profile email orders:read"):
        """The front-channel half of code_flow: the /token form fields of the
        authorization_code grant (grant_type, code, redirect_uri, state), for post_token."""
        redirect_uri = self.server.context.cdb[client_id]["redirect_uris"][0][0]
        self.login_user = user
        state, nonce = secrets.token_urlsafe(8), secrets.token_urlsafe(8)
        params = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri, "scope": scope,
                  "state": state, "nonce": nonce}
        if "offline_access" in scope.split():
            params["prompt"] = "consent"  # OIDC Core §11: offline_access needs prompt=consent
        r = requests.get(f"{self.url}/authorization", allow_redirects=False, timeout=10, params=params)
        if r.status_code != 302:
            raise RuntimeError(f"authorization: {r.status_code} {r.text}")
        loc = r.headers["Location"]
        q = parse_qs(urlsplit(loc).query)
        if "code" not in q:
            raise RuntimeError(f"authorization: no code in {loc}")
        if q.get("state") != [state]:
            raise RuntimeError(f"authorization: state mismatch in {loc}")
        return {"grant_type": "authorization_code", "code": q["code"][0], "redirect_uri": redirect_uri,
                "state": state}

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


def _json(obj, status=200):
    return Response(json.dumps(obj), status=status, content_type="application/json")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=9000)
    ap.add_argument("--audience", action="append", help="default access-token audience (repeatable)")
    ap.add_argument("--dpop", action="store_true", help="require DPoP proofs at /token (RFC 9449)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO)
    srv = AuthServer(port=args.port, audience=tuple(args.audience or [DEFAULT_AUDIENCE]), dpop=args.dpop)
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
