"""A resource server that checks DPoP (RFC 9449 §7.1) the way an API behind the gateway
would, for the tests where the gateway itself sends a DPoP-bound token upstream. Under /api/
it requires `Authorization: DPoP <token>` and exactly one `DPoP` proof, and checks the proof
with joserfc (no hand-written crypto): typ, an asymmetric alg, a public jwk, the signature,
htm, htu (its own URL, without query), iat within 60 s, ath = the token's hash, a jti never
seen before, and the token's cnf.jkt = the proof key's thumbprint. With `nonce` set it also
demands that nonce (§9): a proof without it gets 401 `use_dpop_nonce` and `DPoP-Nonce`.
Everything else answers 200 with the request's headers, as the echo upstream does.

With `tls=(cert, key, client_ca)` it serves HTTPS and asks for a client certificate from
`client_ca`; a token with `cnf.x5t#S256` is then taken only over a connection whose
certificate has that thumbprint (RFC 8705 §3), and with `bearer=True` a certificate-bound
`Bearer` token is accepted without a proof (the mutual-TLS sender constraint).

    rs = DPoPResource(); rs.start()
    rs.nonce = "n-1"          # nonces required from now on
    rs.checked                # one record per /api/ request: status, error, claims, method
"""
import base64
import hashlib
import json
import ssl
import threading
import time

import pytest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from joserfc import jws
from joserfc.jwk import JWKRegistry

ASYMMETRIC = {"ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "RS256", "EdDSA"}


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def payload(compact):
    part = compact.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


class DPoPResource:
    def __init__(self, tls=None, bearer=False):
        self.tls = tls
        self.bearer = bearer
        self.nonce = None
        # Set: every proof gets a nonce challenge, whatever it carries (a broken upstream).
        self.always_challenge = False
        self.checked = []
        self.jtis = set()
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *a):
                pass

            def send(self, status, obj, extra=()):
                body = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in extra:
                    self.send_header(k, v)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def handle_any(self):
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                url = urlsplit(self.path)
                if not url.path.startswith("/api/"):
                    return self.send(200, {"path": self.path, "headers": self.headers.items()})
                # Its own URL, as a server behind a proxy knows it: from the Host it was sent.
                origin = f"{'https' if outer.tls else 'http'}://{self.headers.get('Host', '')}"
                peer = self.connection.getpeercert(binary_form=True) if outer.tls else None
                certificate = b64(hashlib.sha256(peer).digest()) if peer else None
                status, error, claims = outer.check(self.command, url.path, self.headers, origin=origin,
                                                    certificate=certificate)
                with outer.lock:
                    outer.checked.append({"status": status, "error": error, "claims": claims,
                                          "method": self.command})
                if status == 200:
                    return self.send(200, {"path": self.path, "headers": self.headers.items(), "proof": claims})
                scheme = "Bearer" if outer.bearer else "DPoP"
                extra = [("WWW-Authenticate", f'{scheme} error="{error}"')]
                if error == "use_dpop_nonce":
                    extra.append(("DPoP-Nonce", outer.nonce))
                self.send(401, {"error": error}, extra)

            do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = handle_any

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(tls[0], tls[1])
            ctx.load_verify_locations(cafile=tls[2])
            ctx.verify_mode = ssl.CERT_OPTIONAL
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)

    def start(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def check(self, method, path, headers, origin=None, certificate=None):
        """(status, error, proof claims) for one request, per RFC 9449 §4.3 and §7.1; `headers`
        is the request's (or a dict of lists), `origin` where the resource is served (default:
        this server), `certificate` the x5t#S256 of the connection's client certificate."""
        if isinstance(headers, dict):
            authorization, proofs = headers.get("Authorization", []), headers.get("DPoP", [])
        else:
            authorization, proofs = headers.get_all("Authorization") or [], headers.get_all("DPoP") or []
        if len(authorization) == 1 and authorization[0].startswith("DPoP "):
            bound = payload(authorization[0][len("DPoP "):]).get("cnf", {}).get("x5t#S256")
        elif self.bearer and len(authorization) == 1 and authorization[0].startswith("Bearer "):
            # RFC 8705 §3: the mutual-TLS sender constraint, no proof.
            bound = payload(authorization[0][len("Bearer "):]).get("cnf", {}).get("x5t#S256")
            if bound is None or bound != certificate:
                return 401, "invalid_token", None
            return 200, None, None
        else:
            return 401, "invalid_token", None
        if bound is not None and bound != certificate:
            return 401, "invalid_token", None
        if len(authorization) != 1 or not authorization[0].startswith("DPoP "):
            return 401, "invalid_token", None
        token = authorization[0][len("DPoP "):]
        if len(proofs) != 1:
            return 401, "invalid_dpop_proof", None
        proof = proofs[0]
        try:
            header = json.loads(base64.urlsafe_b64decode(proof.split(".")[0] + "=="))
            if header.get("typ") != "dpop+jwt" or header.get("alg") not in ASYMMETRIC:
                return 401, "invalid_dpop_proof", None
            jwk = header["jwk"]
            if any(k in jwk for k in ("d", "p", "q")):
                return 401, "invalid_dpop_proof", None
            key = JWKRegistry.import_key(jwk)
            claims = json.loads(jws.deserialize_compact(proof, key, algorithms=[header["alg"]]).payload)
        except Exception:  # noqa: BLE001 - any failure to read or verify is a bad proof
            return 401, "invalid_dpop_proof", None
        htu = f"{origin or f'http://127.0.0.1:{self.port}'}{path}"
        if claims.get("htm") != method or claims.get("htu") != htu or abs(claims.get("iat", 0) - time.time()) > 60:
            return 401, "invalid_dpop_proof", claims
        if claims.get("ath") != b64(hashlib.sha256(token.encode()).digest()):
            return 401, "invalid_dpop_proof", claims
        with self.lock:
            if claims.get("jti") in self.jtis:
                return 401, "invalid_dpop_proof", claims
            self.jtis.add(claims.get("jti"))
        if payload(token).get("cnf", {}).get("jkt") != key.thumbprint():
            return 401, "invalid_token", claims
        if self.nonce is not None and (self.always_challenge or claims.get("nonce") != self.nonce):
            return 401, "use_dpop_nonce", claims
        return 200, None, claims


@pytest.fixture
def rs():
    """A started DPoPResource, stopped after the test."""
    r = DPoPResource().start()
    yield r
    r.stop()
