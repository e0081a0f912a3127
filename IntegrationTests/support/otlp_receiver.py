"""A real OTLP/HTTP trace receiver for the tracing tests: it decodes each POST to /v1/traces
as an ExportTraceServiceRequest with the OpenTelemetry project's own generated messages (PyPI
`opentelemetry-proto`) and keeps the spans. `mode` makes it a faulty collector: `ok`, `hang`
(accepts, reads, never answers), `error` (503)."""
import http.server
import socketserver
import threading

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (ExportTraceServiceRequest,
                                                                      ExportTraceServiceResponse)


class Receiver:
    def __init__(self, mode="ok"):
        self.mode = mode
        self.requests = []  # (headers, ExportTraceServiceRequest)
        self.posts = 0
        self.lock = threading.Lock()
        self.release = threading.Event()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    receiver.posts += 1
                if receiver.mode == "hang":
                    receiver.release.wait(30)
                    return
                if receiver.mode == "error" or self.path != "/v1/traces":
                    self.send_response(503 if receiver.mode == "error" else 404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                with receiver.lock:
                    receiver.requests.append((dict(self.headers), request))
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.socket.setblocking(False)  # as support.gateway.JSONServer: no accept() that waits
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1/traces"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def spans(self):
        """Every span received, each as (resource attributes, span)."""
        out = []
        with self.lock:
            for _, request in self.requests:
                for rs in request.resource_spans:
                    resource = {kv.key: value(kv.value) for kv in rs.resource.attributes}
                    for ss in rs.scope_spans:
                        out.extend((resource, span) for span in ss.spans)
        return out


def value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def attributes(span):
    return {kv.key: value(kv.value) for kv in span.attributes}
