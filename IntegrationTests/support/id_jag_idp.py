"""An IdP that issues Identity Assertion JWT Authorization Grants (draft-ietf-oauth-identity-
assertion-authz-grant) by token exchange, for the tests of `token_exchange: { mode: id_jag }`,
on 127.0.0.1: it publishes OIDC discovery metadata and its keys, mints the callers' access
tokens (`access_token`), and at /token answers RFC 8693 requests with
`requested_token_type=urn:ietf:params:oauth:token-type:id-jag` from its one client (HTTP Basic)
whose subject token it signed: an ID-JAG for the `audience` (another AS) and `resource` asked,
naming the client registered at that AS (`clients_at`). A subject it refuses (`refused_subjects`)
gets `invalid_grant`. `exchanges` records each request's form."""
import base64
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

from joserfc import jwt
from joserfc.jwk import ECKey

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


class IDJAGIdP:
    def __init__(self, client_id="gateway", secret="gateway-secret-0123456789abcdef0123", clients_at=None):
        self.key = ECKey.generate_key("P-256", parameters={"kid": "idp-1", "alg": "ES256"}, private=True)
        self.client_id, self.secret = client_id, secret
        self.clients_at = dict(clients_at or {})  # the other AS's issuer → the client_id there
        self.refused_subjects = set()
        self.exchanges = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def reply(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/.well-known/openid-configuration":
                    return self.reply(200, {"issuer": outer.issuer, "jwks_uri": outer.issuer + "/jwks",
                                            "token_endpoint": outer.issuer + "/token",
                                            "grant_types_supported": [TOKEN_EXCHANGE]})
                if self.path == "/jwks":
                    return self.reply(200, {"keys": [outer.key.as_dict(private=False)]})
                self.reply(404, {"error": "not_found"})

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                outer.exchanges.append(form)
                status, body = outer.exchange(form, self.headers.get("Authorization", ""))
                self.reply(status, body)

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.issuer = f"http://127.0.0.1:{self.srv.server_address[1]}"
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def access_token(self, sub="alice", aud="api", scope="files"):
        now = int(time.time())
        return jwt.encode({"alg": "ES256", "kid": "idp-1", "typ": "at+jwt"},
                          {"iss": self.issuer, "sub": sub, "aud": aud, "scope": scope, "iat": now, "exp": now + 300,
                           "client_id": "app", "jti": base64.urlsafe_b64encode(os.urandom(9)).decode(),
                           "email": f"{sub}@example.com"}, self.key)

    def exchange(self, form, authorization):
        expected = "Basic " + base64.b64encode(f"{self.client_id}:{self.secret}".encode()).decode()
        if authorization != expected:
            return 401, {"error": "invalid_client"}
        if form.get("grant_type") != TOKEN_EXCHANGE or form.get("requested_token_type") != ID_JAG:
            return 400, {"error": "unsupported_grant_type"}
        try:
            subject = jwt.decode(form.get("subject_token", ""), self.key).claims
        except Exception:
            return 400, {"error": "invalid_grant"}
        audience, resource = form.get("audience"), form.get("resource")
        if subject.get("sub") in self.refused_subjects or subject.get("exp", 0) < time.time():
            return 400, {"error": "invalid_grant", "error_description": "the subject may not"}
        if audience not in self.clients_at or not resource:
            return 400, {"error": "invalid_target"}
        now = int(time.time())
        claims = {"iss": self.issuer, "sub": subject["sub"], "aud": audience, "client_id": self.clients_at[audience],
                  "resource": resource, "jti": base64.urlsafe_b64encode(os.urandom(12)).decode(), "iat": now,
                  "exp": now + 300, "email": subject.get("email")}
        if form.get("scope"):
            claims["scope"] = form["scope"]
        jag = jwt.encode({"alg": "ES256", "kid": "idp-1", "typ": "oauth-id-jag+jwt"}, claims, self.key)
        return 200, {"access_token": jag, "issued_token_type": ID_JAG, "token_type": "N_A", "expires_in": 300}

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()
