"""A client's own web host for the authorization server tests: serves Client ID Metadata
Documents (and anything else a test puts there) over https on 127.0.0.1, with a self-signed
certificate for 127.0.0.1 (`ca_file` is its path). `documents` maps a path to (status, body,
headers); `hits` counts requests per path."""
import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from support.tls_pki import make_pair


class CIMDHost:
    def __init__(self, directory):
        self.ca_file, key = make_pair(str(directory), "cimd-host", ["127.0.0.1"])
        self.documents = {}
        self.hits = {}
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                outer.hits[self.path] = outer.hits.get(self.path, 0) + 1
                status, body, headers = outer.documents.get(self.path, (404, b"{}", {}))
                self.send_response(status)
                for k, v in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.ca_file, key)
        self.srv.socket = ctx.wrap_socket(self.srv.socket, server_side=True)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def url(self, path):
        return f"https://127.0.0.1:{self.port}{path}"

    def put(self, path, document, status=200, headers=None):
        body = document if isinstance(document, bytes) else json.dumps(document).encode()
        self.documents[path] = (status, body, headers or {})

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()
