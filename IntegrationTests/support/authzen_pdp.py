"""An OpenID AuthZEN Authorization API 1.0 policy decision point for the tests, on
127.0.0.1: it checks every request body against JSON schemas written from the
specification's information model (§5: subject, resource, action, context; §6.1 the
evaluation request; §7.1 the evaluations request), records each call with its headers, and
answers from a table the test sets. It can also answer badly: an error status, a decision
that is not a boolean, or no answer at all (a hang)."""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jsonschema

from support.authserver.server import free_port

ENTITY = {
    "type": "object",
    "required": ["type", "id"],
    "properties": {
        "type": {"type": "string", "minLength": 1},
        "id": {"type": "string", "minLength": 1},
        "properties": {"type": "object"},
    },
}
ACTION = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": {"type": "string", "minLength": 1}, "properties": {"type": "object"}},
}
CONTEXT = {"type": "object"}
EVALUATION = {
    "type": "object",
    "required": ["subject", "action", "resource"],
    "properties": {"subject": ENTITY, "action": ACTION, "resource": ENTITY, "context": CONTEXT},
}
EVALUATIONS = {
    "type": "object",
    "required": ["evaluations"],
    "properties": {
        "subject": ENTITY, "action": ACTION, "resource": ENTITY, "context": CONTEXT,
        "evaluations": {
            "type": "array", "minItems": 1,
            "items": {
                "type": "object",
                "properties": {"subject": ENTITY, "action": ACTION, "resource": ENTITY, "context": CONTEXT},
            },
        },
        "options": {"type": "object"},
    },
}


class PDP:
    """`decide(body) -> dict` makes each answer (default: allow). `mode` overrides it:
    "500", "nonbool", "hang", or None."""

    def __init__(self, evaluation_path="/access/v1/evaluation", evaluations_path="/access/v1/evaluations",
                 metadata=None, token=None):
        self.port = free_port()
        self.calls = []
        self.schema_errors = []
        self.mode = None
        self.decide = lambda body: {"decision": True}
        self.evaluation_path = evaluation_path
        self.evaluations_path = evaluations_path
        self.metadata = metadata
        self.token = token  # the Bearer token required, or a check of the Authorization value
        self.unauthorized = []  # the Authorization values refused with 401
        self.lock = threading.Lock()
        self.release = threading.Event()
        pdp = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def send(self, status, body):
                data = json.dumps(body).encode() if not isinstance(body, bytes) else body
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if self.headers.get("X-Request-ID"):
                    self.send_header("X-Request-ID", self.headers["X-Request-ID"])
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/.well-known/authzen-configuration" and pdp.metadata is not None:
                    return self.send(200, pdp.metadata(pdp))
                self.send(404, {"error": "not found"})

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                sent = self.headers.get("Authorization")
                if pdp.token is not None and not (pdp.token(sent) if callable(pdp.token) else sent == "Bearer " + pdp.token):
                    with pdp.lock:
                        pdp.unauthorized.append(sent)
                    return self.send(401, {"error": "unauthorized"})
                schema = {pdp.evaluation_path: EVALUATION, pdp.evaluations_path: EVALUATIONS}.get(self.path)
                if schema is None:
                    return self.send(404, {"error": "not found"})
                body = json.loads(raw)
                try:
                    jsonschema.validate(body, schema)
                except jsonschema.ValidationError as e:
                    pdp.schema_errors.append(str(e))
                    return self.send(400, {"error": "invalid request"})
                with pdp.lock:
                    pdp.calls.append({"path": self.path, "body": body, "headers": dict(self.headers),
                                      "at": time.monotonic()})
                if pdp.mode == "hang":
                    pdp.release.wait(30)
                    return
                if pdp.mode == "500":
                    return self.send(500, {"error": "internal"})
                if pdp.mode == "nonbool":
                    return self.send(200, {"decision": "yes"})
                if self.path == pdp.evaluations_path:
                    answers = []
                    for item in body["evaluations"]:
                        merged = {k: item.get(k, body.get(k)) for k in ("subject", "action", "resource", "context")}
                        answers.append(pdp.decide(merged))
                    return self.send(200, {"evaluations": answers})
                self.send(200, pdp.decide(body))

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/"

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def evaluation_calls(self):
        with self.lock:
            return [c for c in self.calls if c["path"] == self.evaluation_path]
