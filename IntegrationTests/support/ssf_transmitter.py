"""A Shared Signals transmitter for the tests (SSF 1.0 with push delivery, RFC 8935, and poll
delivery, RFC 8936), on 127.0.0.1: its metadata at /.well-known/ssf-configuration, its JWKS,
stream management at /ssf/stream (GET lists, POST creates, PATCH updates; each needs
`Authorization: Bearer <management_token>`), and /ssf/verify, which delivers a verification SET
with the state it was given. Tests push events through `push()`, signed with the transmitter's
ES256 key unless they say otherwise, to the stream's endpoint_url with the stream's
authorization_header; or `enqueue()` them for a poll stream, whose endpoint
(/ssf/poll/<stream id>) holds a poll up to `hold` seconds while it has nothing (long polling),
drops what a poll acknowledges and delivers the rest again.

Records: `streams` (by id), `creates`, `patches`, `verifications` (the responses to the
verification pushes), `pushes` (status and body of every push it made), `polls` (each poll's
body), `acked` (jtis acknowledged) and `set_errs` (by jti)."""
import base64
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import requests
from joserfc import jws
from joserfc.jwk import ECKey

CAEP = "https://schemas.openid.net/secevent/caep/event-type/"
RISC = "https://schemas.openid.net/secevent/risc/event-type/"
SSF = "https://schemas.openid.net/secevent/ssf/event-type/"
PUSH = "urn:ietf:rfc:8935"
POLL = "urn:ietf:rfc:8936"


class Transmitter:
    def __init__(self, management_token="ssf-management-token"):
        self.key = ECKey.generate_key("P-256", parameters={"kid": "tx-1", "alg": "ES256"}, private=True)
        self.management_token = management_token
        self.streams = {}
        self.creates = 0
        self.patches = 0
        self.verifications = []
        self.pushes = []
        self.polls = []
        self.queue = {}
        self.acked = []
        self.set_errs = {}
        self.hold = 1.0
        # The SETs' `aud` for a poll stream (a push stream's is its endpoint's origin).
        self.audience = None
        self.lock = threading.Lock()
        self.queued = threading.Condition(self.lock)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _send(self, status, obj=None):
                data = b"" if obj is None else json.dumps(obj).encode()
                self.send_response(status)
                if obj is not None:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self):
                n = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(n) or b"{}")

            def _authorized(self):
                return self.headers.get("Authorization") == f"Bearer {outer.management_token}"

            def do_GET(self):
                if self.path == "/.well-known/ssf-configuration":
                    return self._send(200, outer.metadata())
                if self.path == "/jwks":
                    return self._send(200, {"keys": [outer.key.as_dict(private=False)]})
                if self.path.startswith("/ssf/stream"):
                    if not self._authorized():
                        return self._send(401, {"error": "unauthorized"})
                    with outer.lock:
                        return self._send(200, list(outer.streams.values()))
                self._send(404, {"error": "not_found"})

            def do_POST(self):
                if not self._authorized():
                    return self._send(401, {"error": "unauthorized"})
                body = self._body()
                if self.path.startswith("/ssf/poll/"):
                    return self._send(200, outer._poll(body))
                if self.path == "/ssf/stream":
                    stream_id = f"s-{len(outer.streams) + 1}"
                    delivery = dict(body["delivery"])
                    if delivery["method"] == POLL:
                        delivery["endpoint_url"] = f"{outer.issuer}/ssf/poll/{stream_id}"
                    stream = {"stream_id": stream_id, "iss": outer.issuer,
                              "aud": delivery["endpoint_url"], "delivery": delivery,
                              "description": body.get("description"),
                              "events_requested": body.get("events_requested", []),
                              "events_delivered": body.get("events_requested", [])}
                    with outer.lock:
                        outer.streams[stream["stream_id"]] = stream
                        outer.creates += 1
                    return self._send(201, stream)
                if self.path == "/ssf/verify":
                    stream_id, state = body.get("stream_id"), body.get("state")
                    self._send(204)
                    threading.Thread(target=outer._verify, args=(stream_id, state), daemon=True).start()
                    return None
                self._send(404, {"error": "not_found"})

            def do_PATCH(self):
                if not self._authorized():
                    return self._send(401, {"error": "unauthorized"})
                body = self._body()
                with outer.lock:
                    stream = outer.streams.get(body.get("stream_id"))
                    if stream is None:
                        return self._send(404, {"error": "not_found"})
                    if "delivery" in body:
                        stream["delivery"] = body["delivery"]
                    if "events_requested" in body:
                        stream["events_requested"] = body["events_requested"]
                    outer.patches += 1
                    return self._send(200, stream)

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.srv.server_address[1]
        self.issuer = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def metadata(self):
        return {"spec_version": "1_0", "issuer": self.issuer, "jwks_uri": f"{self.issuer}/jwks",
                "delivery_methods_supported": [PUSH, POLL], "configuration_endpoint": f"{self.issuer}/ssf/stream",
                "verification_endpoint": f"{self.issuer}/ssf/verify"}

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()

    def stream(self):
        """The one stream (a test waits for it to exist)."""
        with self.lock:
            assert len(self.streams) == 1, self.streams
            return next(iter(self.streams.values()))

    def _verify(self, stream_id, state):
        with self.lock:
            stream = self.streams.get(stream_id)
        if stream is None:
            return
        claims = self.claims(SSF + "verification", None, payload={"state": state})
        claims["sub_id"] = {"format": "opaque", "id": stream_id}
        if stream["delivery"]["method"] == POLL:
            self.enqueue_token(self.sign(claims), claims["jti"])
            return
        try:
            r = self.push_claims(claims, stream=stream)
        except requests.ConnectionError:
            # The receiver went away meanwhile (a test stopped or killed it): recorded as such.
            self.verifications.append(None)
            return
        self.verifications.append(r.status_code)

    def _poll(self, body):
        """RFC 8936 §2.4: acknowledgements and errors first, then what is queued (held up to
        `hold` seconds while nothing is, unless returnImmediately)."""
        with self.queued:
            self.polls.append(body)
            for jti in body.get("ack", []):
                self.queue.pop(jti, None)
                self.acked.append(jti)
            for jti, e in body.get("setErrs", {}).items():
                self.queue.pop(jti, None)
                self.set_errs[jti] = e
            if not self.queue and not body.get("returnImmediately", False):
                self.queued.wait(self.hold)
            n = int(body.get("maxEvents", 100))
            jtis = list(self.queue)[:n]
            return {"sets": {j: self.queue[j] for j in jtis}, "moreAvailable": len(self.queue) > n}

    def enqueue_token(self, token, jti):
        with self.queued:
            self.queue[jti] = token
            self.queued.notify_all()

    def enqueue(self, event, subject, payload=None, key=None, **over):
        """Queues one event for poll delivery; returns its jti."""
        claims = self.claims(event, subject, payload=payload, **over)
        self.enqueue_token(self.sign(claims, key=key), claims["jti"])
        return claims["jti"]

    def claims(self, event, subject, payload=None, **over):
        now = int(time.time())
        c = {"iss": self.issuer, "aud": self.stream_audience(), "iat": now,
             "jti": base64.urlsafe_b64encode(os.urandom(12)).decode(), "events": {event: payload or {}}}
        if subject is not None:
            c["sub_id"] = subject
        for k, v in over.items():
            if v is None:
                c.pop(k, None)
            else:
                c[k] = v
        return c

    def stream_audience(self):
        if self.audience:
            return self.audience
        with self.lock:
            streams = list(self.streams.values())
        if not streams:
            return None
        url = streams[0]["delivery"]["endpoint_url"]
        return url.split("/", 3)[0] + "//" + url.split("/", 3)[2]

    def sign(self, claims, key=None, alg="ES256", typ="secevent+jwt"):
        # A key without a kid (an HMAC key made for an attack) signs under the transmitter's.
        header = {"alg": alg, "kid": (key or self.key).kid or self.key.kid}
        if typ is not None:
            header["typ"] = typ
        return jws.serialize_compact(header, json.dumps(claims).encode(), key or self.key, algorithms=[alg])

    def push_claims(self, claims, stream=None, **kw):
        return self.push_token(self.sign(claims), stream=stream, **kw)

    def push_token(self, token, stream=None, content_type="application/secevent+jwt", authorization=True,
                   method="POST"):
        stream = stream or self.stream()
        headers = {"Content-Type": content_type}
        if authorization is True:
            headers["Authorization"] = stream["delivery"]["authorization_header"]
        elif authorization:
            headers["Authorization"] = authorization
        r = requests.request(method, stream["delivery"]["endpoint_url"], data=token, headers=headers, timeout=10)
        self.pushes.append((r.status_code, r.text))
        return r

    def push(self, event, subject, payload=None, **over):
        """Pushes one event about `subject` (an RFC 9493 identifier) and returns the response."""
        return self.push_claims(self.claims(event, subject, payload=payload, **over))
