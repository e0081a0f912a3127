"""The app behind both proxies in bench/slow.sh: HTTP/1.1, at most CAP requests at a time
(a worker pool), each held until its answer is written or its body read. GET answers
SIZE bytes; POST reads the body and answers 200."""
import http.server
import sys
import threading

port, cap, size = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
slots = threading.BoundedSemaphore(cap)
body = b"x" * size


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        with slots:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                self.wfile.write(body)
            except OSError:
                pass

    def do_POST(self):
        with slots:
            n = int(self.headers.get("Content-Length", "0"))
            try:
                while n > 0:
                    got = self.rfile.read(min(n, 65536))
                    if not got:
                        return
                    n -= len(got)
            except OSError:
                return
            self.send_response(200)
            self.send_header("Content-Length", "3")
            self.end_headers()
            self.wfile.write(b"ok\n")

    def log_message(self, *a):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 4096

    def handle_error(self, request, client_address):
        pass  # a client the proxy cut (a slow body abandoned) is not news here


Server(("127.0.0.1", port), H).serve_forever()
