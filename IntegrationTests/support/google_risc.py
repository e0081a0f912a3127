"""Google's RISC transmitter (Cross-Account Protection) as the tests need it, on 127.0.0.1:
its own discovery document (/.well-known/risc-configuration, with `update_configuration_endpoint`
and no SSF `configuration_endpoint`), its keys, `stream:update` and `stream:verify` (each needs a
bearer JWT signed with the service account's key: iss and sub its email, aud the RISC management
service), and pushes the way Google makes them: RS256 SETs with no `typ`, `iss` with a trailing
slash, `aud` the app's client ID, the subject inside the event as `subject_type: iss-sub`, and
no Authorization header.

Records: `updates` (each stream:update body), `verifications` (the responses to the
verification pushes), `management_tokens_refused`."""
import base64
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from joserfc import jws, jwt
from joserfc.jwk import RSAKey

RISC = "https://schemas.openid.net/secevent/risc/event-type/"
OAUTH = "https://schemas.openid.net/secevent/oauth/event-type/"
MANAGEMENT_AUDIENCE = "https://risc.googleapis.com/google.identity.risc.v1beta.RiscManagementService"
GOOGLE_ISS = "https://accounts.google.com/"


def service_account(path):
    """Writes a service account key file as the Cloud console gives it; returns its public key."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    path.write_text(json.dumps({"type": "service_account", "project_id": "p", "private_key_id": "sa-key-1",
                                "private_key": pem, "client_email": "risc@p.iam.gserviceaccount.com",
                                "client_id": "1"}))
    return RSAKey.import_key(pem)


class GoogleRISC:
    def __init__(self, service_account_key, client_id):
        self.key = RSAKey.generate_key(2048, parameters={"kid": "google-1", "alg": "RS256"}, private=True)
        self.service_account_key = service_account_key
        self.client_id = client_id
        self.stream = None
        self.updates = []
        self.verifications = []
        self.management_tokens_refused = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _send(self, status, obj=None):
                data = b"" if obj is None else json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _authorized(self):
                auth = self.headers.get("Authorization", "")
                if not auth.startswith("Bearer "):
                    return False
                try:
                    token = jwt.decode(auth[7:], outer.service_account_key, algorithms=["RS256"])
                except Exception:
                    outer.management_tokens_refused += 1
                    return False
                c, now = token.claims, time.time()
                ok = (c["iss"] == c["sub"] == "risc@p.iam.gserviceaccount.com" and c["aud"] == MANAGEMENT_AUDIENCE
                      and c["iat"] <= now + 5 and c["exp"] - c["iat"] <= 3600 and c["exp"] > now
                      and token.header.get("kid") == "sa-key-1")
                if not ok:
                    outer.management_tokens_refused += 1
                return ok

            def do_GET(self):
                if self.path == "/.well-known/risc-configuration":
                    return self._send(200, outer.metadata())
                if self.path == "/certs":
                    return self._send(200, {"keys": [outer.key.as_dict(private=False)]})
                self._send(404, {"error": "not_found"})

            def do_POST(self):
                if not self._authorized():
                    return self._send(401, {"error": {"code": 401, "status": "UNAUTHENTICATED"}})
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                if self.path == "/v1beta/stream:update":
                    outer.updates.append(body)
                    outer.stream = body
                    return self._send(200, {})
                if self.path == "/v1beta/stream:verify":
                    self._send(200, {})
                    threading.Thread(target=outer._verify, args=(body.get("state"),), daemon=True).start()
                    return None
                self._send(404, {"error": "not_found"})

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.issuer = f"http://127.0.0.1:{self.srv.server_address[1]}"
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def metadata(self):
        # As Google's: the issuer without the slash its SETs carry, its own endpoint names.
        return {"issuer": self.issuer, "jwks_uri": f"{self.issuer}/certs",
                "delivery_methods_supported": ["http://schemas.openid.net/secevent/risc/delivery-method/push"],
                "add_subject_endpoint": f"{self.issuer}/v1beta/subjects:add",
                "update_configuration_endpoint": f"{self.issuer}/v1beta/stream:update",
                "verification_endpoint": f"{self.issuer}/v1beta/stream:verify"}

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()

    def _verify(self, state):
        try:
            r = self.push(RISC + "verification", None, payload={"state": state})
        except requests.ConnectionError:
            self.verifications.append(None)
            return
        self.verifications.append(r.status_code)

    def sign(self, event, sub, payload=None, typ=None, **over):
        claims = {"iss": self.issuer + "/", "aud": self.client_id, "iat": int(time.time()),
                  "jti": base64.urlsafe_b64encode(os.urandom(12)).decode(), "events": {event: dict(payload or {})}}
        if sub is not None:
            claims["events"][event]["subject"] = {"subject_type": "iss-sub", "iss": GOOGLE_ISS, "sub": sub}
        claims.update(over)
        header = {"alg": "RS256", "kid": self.key.kid}
        if typ:
            header["typ"] = typ
        return jws.serialize_compact(header, json.dumps(claims).encode(), self.key, algorithms=["RS256"])

    def push(self, event, sub, payload=None, typ=None, **over):
        """Pushes as Google does: to the stream's url, no Authorization."""
        url = self.stream["delivery"]["url"]
        return requests.post(url, data=self.sign(event, sub, payload, typ=typ, **over), timeout=10,
                             headers={"Content-Type": "application/secevent+jwt"})
