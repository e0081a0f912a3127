"""A small real HTTP/1.1 upstream (threaded, keep-alive): the quickstart's demo app and the
integration tests' upstream. Run directly: python3 scripts/echo_upstream.py [PORT].

Endpoints:
  /echo...          JSON of method, path, headers, body length, trailers; records the client port
  /big?size=N       N bytes with Content-Length, written in 64 KB pieces
  /chunked?size=N   N bytes with chunked transfer coding
  /slow?delay=S     waits S seconds, then answers
  /close            closes the connection without answering
  /hop              answers with hop-by-hop headers that must not reach the client
  /early            a 103 Early Hints interim response, then the final 200
  /poison           a complete response followed by stray bytes (a second "response")
  /reason           a reason phrase carrying a bare CR and a fake header
"""
import json
import socketserver
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class Upstream:
    def __init__(self, port=0, host="127.0.0.1"):
        self.connections = set()
        self.requests = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # TCP_NODELAY: the head and the body go out as two writes, and with Nagle the body
            # waits for the gateway's delayed ACK (40 ms a response on a kept-alive connection).
            disable_nagle_algorithm = True

            def log_message(self, *a):
                pass

            def _send(self, status, body, ctype="application/json", extra=()):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in extra:
                    self.send_header(k, v)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _read_chunked(self):
                # RFC 9112 §7.1: size line (extensions ignored), data, CRLF; then trailers.
                body = b""
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while (line := self.rfile.readline()) not in (b"\r\n", b"\n", b""):
                            name, _, value = line.decode("latin-1").partition(":")
                            self.trailers.append([name, value.strip()])
                        return body
                    body += self.rfile.read(size)
                    self.rfile.readline()

            def _handle(self):
                with outer.lock:
                    outer.connections.add(self.client_address[1])
                self.trailers = []
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    body = self._read_chunked()
                url = urlsplit(self.path)
                q = parse_qs(url.query)
                with outer.lock:
                    outer.requests.append({"path": self.path, "headers": self.headers.items()})
                if url.path.startswith("/big"):
                    size = int(q.get("size", ["0"])[0])
                    self.send_response(200)
                    self.send_header("Content-Type", "application/octet-stream")
                    self.send_header("Content-Length", str(size))
                    self.end_headers()
                    piece = b"x" * 65536
                    left = size
                    while left > 0:
                        n = min(left, len(piece))
                        self.wfile.write(piece[:n])
                        left -= n
                    return
                if url.path.startswith("/chunked"):
                    size = int(q.get("size", ["0"])[0])
                    self.send_response(200)
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    left = size
                    while left > 0:
                        n = min(left, 65536)
                        self.wfile.write(b"%x\r\n" % n + b"y" * n + b"\r\n")
                        left -= n
                    self.wfile.write(b"0\r\n\r\n")
                    return
                if url.path.startswith("/slow"):
                    time.sleep(float(q.get("delay", ["1"])[0]))
                    return self._send(200, b'{"slow":true}')
                if url.path.startswith("/close"):
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if url.path.startswith("/early"):
                    self.wfile.write(b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n")
                    return self._send(200, b'{"early":"final"}')
                if url.path.startswith("/poison"):
                    self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                                     b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nPOISON")
                    return
                if url.path.startswith("/reason"):
                    self.wfile.write(b"HTTP/1.1 200 OK\rSet-Cookie: session=attacker\r\nContent-Length: 2\r\n\r\nok")
                    return
                if url.path.startswith("/set-cookie/"):
                    # An upstream that tries to set a cookie of the given name (and one of its own).
                    name = url.path.rsplit("/", 1)[1]
                    return self._send(200, b"{}", extra=[("Set-Cookie", f"{name}=evil; Path=/"), ("Set-Cookie", "app=1; Path=/")])
                if url.path.endswith("/cacheable"):
                    return self._send(200, b"{}", extra=[("Cache-Control", "public, max-age=3600")])
                if url.path.endswith("/upstream-nonce"):
                    # An upstream that speaks DPoP itself (the gateway must not pass its nonces on).
                    return self._send(200, b"{}", extra=[("DPoP-Nonce", "from-the-upstream")])
                if url.path.startswith("/hop"):
                    return self._send(200, b"{}", extra=[("Connection", "X-Hop-Secret"), ("X-Hop-Secret", "1"),
                                                         ("Keep-Alive", "timeout=5"), ("X-End-To-End", "kept")])
                self._send(200, json.dumps({
                    "method": self.command, "path": self.path,
                    "headers": [[k, v] for k, v in self.headers.items()],
                    "body_length": len(body), "client_port": self.client_address[1],
                    "trailers": self.trailers,
                }).encode())

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = _handle

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True
            # socketserver's default backlog is 5: a proxy opening 128 connections at once
            # (HTTP/2 streams fanned out) had most wait out SYN retries of 1 s and more.
            request_queue_size = 1024

        self.server = Server((host, port), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        # Bounded: once, in a CI run, shutdown() waited 300 s for serve_forever to notice it
        # (its thread stuck outside the select loop). Closing the listening socket after 10 s
        # ends the loop either way, and a test's teardown never hangs on it.
        stopper = threading.Thread(target=self.server.shutdown, daemon=True)
        stopper.start()
        stopper.join(10)
        self.server.server_close()


if __name__ == "__main__":
    import sys
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    u = Upstream(port)
    print(f"echo upstream on http://127.0.0.1:{u.port}", flush=True)
    try:
        u.server.serve_forever()
    except KeyboardInterrupt:
        pass
