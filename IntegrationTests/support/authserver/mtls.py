"""Mutual TLS at the test AS (RFC 8705): a second listener, over TLS, that asks every client
for a certificate. The metadata names its endpoints as `mtls_endpoint_aliases` (§5), and says
`tls_client_certificate_bound_access_tokens` (§3.3).

- **Client authentication (§2).** A client registered with `tls_client_auth` must present a
  certificate from a CA the AS trusts (`trust_ca`) whose subject is its registered
  `tls_client_auth_subject_dn` (RFC 4514, compared as a string). One registered with
  `self_signed_tls_client_auth` must present a certificate that its JWK Set (`jwks_uri`,
  read at its first request) lists in an `x5c`. Only then does the request reach idpyoidc,
  which knows such a client by an internal secret the front adds; on the plain listener, or
  without the certificate, it is refused with 401 invalid_client.
- **Binding (§3).** A request on this listener carries its certificate's `x5t#S256` in the
  WSGI environ (`authserver.x5t`); while `bind` is set (the default) the AS puts it into the
  `cnf` of the access tokens it mints there, whatever the client authentication, and the
  userinfo endpoint checks it.

Python's ssl cannot take an unknown certificate and decide later: a self-signed client
certificate is added to the trust store when the client is registered (`trust_certificate`),
and matched against the JWK Set all the same."""
import base64
import hashlib
import io
import secrets
import socket
import ssl
import threading
from urllib.parse import parse_qsl, urlencode

import requests
from cryptography import x509

from ..tls_pki import make_pair

METHODS = ("tls_client_auth", "self_signed_tls_client_auth")
# Metadata name -> path of the endpoint on the TLS listener.
ALIASES = {"token_endpoint": "token", "pushed_authorization_request_endpoint": "par",
           "revocation_endpoint": "revocation", "userinfo_endpoint": "userinfo",
           "introspection_endpoint": "introspection"}


def x5t(der):
    """RFC 8705 §3.1: base64url of the SHA-256 of the certificate's DER."""
    return base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MutualTLSFront:
    def __init__(self, authserver):
        self.a = authserver
        self.port = _free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        # Self-signed: the gateway trusts it as its issuer's ca_file.
        self.cert, self.key = make_pair(authserver.dir, "as-tls", ["127.0.0.1"])
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(self.cert, self.key)
        self.ctx.verify_mode = ssl.CERT_OPTIONAL
        self.clients = {}  # client_id -> {"method", "subject_dn", "jwks_uri", "secret", "certificates"}
        # False: the certificate authenticates, but tokens are not bound to it (the plan's
        # mtls × dpop variant).
        self.bind = True
        self.refusals = []  # {"client_id", "path", "why"} of every refused client authentication
        self.requests = []  # {"path", "x5t"} of every request on this listener
        self._httpd = None
        self._thread = None

    def aliases(self):
        return {name: f"{self.url}/{path}" for name, path in ALIASES.items()}

    def trust_ca(self, path):
        """Client certificates issued by the CA in `path` (PEM) pass the handshake."""
        self.ctx.load_verify_locations(cafile=path)

    def trust_certificate(self, path):
        self.ctx.load_verify_locations(cafile=path)

    def register(self, client_id, method, subject_dn=None, jwks_uri=None):
        """The internal secret idpyoidc knows the client by."""
        assert method in METHODS, method
        secret = secrets.token_urlsafe(24)
        self.clients[client_id] = {"method": method, "subject_dn": subject_dn, "jwks_uri": jwks_uri,
                                   "secret": secret, "certificates": None}
        return secret

    def _refusal(self, client_id, der):
        """Why the certificate does not authenticate the client, or None."""
        reg = self.clients[client_id]
        if der is None:
            return "no client certificate"
        if reg["method"] == "tls_client_auth":
            subject = x509.load_der_x509_certificate(der).subject.rfc4514_string()
            if subject != reg["subject_dn"]:
                return f"subject {subject!r} is not the registered {reg['subject_dn']!r}"
            return None
        if reg["certificates"] is None:
            keys = requests.get(reg["jwks_uri"], timeout=5).json().get("keys", [])
            reg["certificates"] = [base64.b64decode(k["x5c"][0]) for k in keys if k.get("x5c")]
        if der not in reg["certificates"]:
            return "the certificate is not in the client's JWK Set (x5c)"
        return None

    def wsgi(self, environ, start_response):
        pem = environ.get("SSL_CLIENT_CERT")
        der = ssl.PEM_cert_to_DER_cert(pem) if pem else None
        environ["authserver.x5t"] = x5t(der) if der else None
        path = environ.get("PATH_INFO", "")
        self.requests.append({"path": path, "x5t": environ["authserver.x5t"]})
        if environ.get("REQUEST_METHOD") == "POST":
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            form = dict(parse_qsl(body.decode(errors="replace"), keep_blank_values=True))
            client_id = form.get("client_id")
            if client_id in self.clients and "HTTP_AUTHORIZATION" not in environ and "client_assertion" not in form:
                why = self._refusal(client_id, der)
                if why is not None:
                    self.refusals.append({"client_id": client_id, "path": path, "why": why})
                    return self._invalid_client(why, start_response)
                body += b"&" + urlencode({"client_secret": self.clients[client_id]["secret"]}).encode()
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
        return self.a.wsgi(environ, start_response)

    @staticmethod
    def _invalid_client(why, start_response):
        body = ('{"error": "invalid_client", "error_description": "%s"}' % why.replace('"', "'")).encode()
        start_response("401 Unauthorized", [("Content-Type", "application/json"),
                                             ("Content-Length", str(len(body)))])
        return [body]

    def start(self):
        from werkzeug.serving import make_server
        self._httpd = make_server("127.0.0.1", self.port, self.wsgi, threaded=True, ssl_context=self.ctx)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"authserver-mtls-{self.port}", daemon=True)
        self._thread.start()

    def stop(self):
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join(5)
            self._httpd = self._thread = None
