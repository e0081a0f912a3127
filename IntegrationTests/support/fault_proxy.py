"""A fault-injecting HTTP proxy on 127.0.0.1: it forwards each request to a real server (the
test AS) and, per request path, can break the answer the way a failing dependency does.

    proxy = FaultProxy(backend_port).start()
    proxy.faults["/jwks.json"] = "hang"     # per path; "*" for every path
    proxy.hits["/jwks.json"]                # requests seen per path, whatever the fault
    proxy.refuse()                          # stop listening: connections are refused
    proxy.start()                           # listen again on the same port

Faults (one per path):
  pass        forward, answer as the backend did
  reset       read the request, then close the connection with a RST, no answer
  hang        accept the request and never answer (the connection is held until the proxy
              stops or `hang_for` seconds pass)
  slow        forward, but hold the answer for `slow_for` seconds (a slow but healthy server)
  drip        forward, then send the answer one byte every `drip_every` seconds
  html        200 with an HTML error page that is not JSON
  truncated   the backend's status line and headers, then half of its body, then close
  wrongtype   200, Content-Type: text/html, a body that is not what was asked
  5xx         503 with a body full of internals (hostnames, a stack trace) that must not leak

Each connection serves one request ("Connection: close"), on a thread of its own.
"""
import socket
import threading

from .authserver.server import free_port

FAULTS = ("pass", "reset", "hang", "slow", "drip", "html", "truncated", "wrongtype", "5xx")
# What a 5xx answer carries: none of it may reach a client of the gateway.
LEAK_MARKERS = ("idp-internal.example", "Traceback", "psycopg2")


class FaultProxy:
    def __init__(self, backend_port, port=None):
        self.backend_port = backend_port
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.faults = {}
        self.hits = {}
        self.hang_for = 30.0
        self.slow_for = 0.3
        self.drip_every = 0.5
        self._lock = threading.Lock()
        self._sock = None
        self._stopped = threading.Event()
        self._conns = set()

    # -- control ---------------------------------------------------------------------------

    def start(self):
        assert self._sock is None, "already listening"
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(128)
        self._sock = s
        self._stopped.clear()
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()
        return self

    def refuse(self):
        """Closes the listener and every held connection: new connections are refused."""
        if self._sock is not None:
            # shutdown first: on Linux, close() alone leaves the socket listening while the
            # accept thread is blocked on it, and connections would still be accepted.
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._sock.close()
            self._sock = None
        self._stopped.set()
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    stop = refuse

    def fault(self, path):
        return self.faults.get(path, self.faults.get("*", "pass"))

    def count(self, path):
        with self._lock:
            return self.hits.get(path, 0)

    # -- serving ---------------------------------------------------------------------------

    def _accept(self, sock):
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        with self._lock:
            self._conns.add(conn)
        try:
            conn.settimeout(10)
            request = _read_request(conn)
            if request is None:
                return
            head, body = request
            path = head.split(b" ", 2)[1].split(b"?")[0].decode()
            with self._lock:
                self.hits[path] = self.hits.get(path, 0) + 1
            self._answer(conn, self.fault(path), head, body)
        except OSError:
            pass
        finally:
            with self._lock:
                self._conns.discard(conn)
            try:
                conn.close()
            except OSError:
                pass

    def _answer(self, conn, fault, head, body):
        if fault == "reset":
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            return
        if fault == "hang":
            self._stopped.wait(self.hang_for)
            return
        if fault == "html":
            return conn.sendall(_response(200, "text/html", b"<html><body>Service maintenance</body></html>"))
        if fault == "wrongtype":
            return conn.sendall(_response(200, "text/html", b"<!doctype html><title>portal</title>"))
        if fault == "5xx":
            page = (b"Internal error at idp-internal.example:8443\nTraceback (most recent call last):\n"
                    b"  File \"/srv/idp/app.py\", line 12\npsycopg2.OperationalError: connection refused\n")
            return conn.sendall(_response(503, "text/plain", page))
        answer = _forward(self.backend_port, head, body)
        if fault == "slow":
            # The hold is the fault (a slow but healthy server): nothing to wait for but the
            # proxy's own stop, which ends it early, as it ends a hang or a drip.
            if self._stopped.wait(self.slow_for):
                return
            conn.sendall(answer)
        elif fault == "drip":
            for i in range(len(answer)):
                if self._stopped.wait(self.drip_every):
                    return
                conn.sendall(answer[i:i + 1])
        elif fault == "truncated":
            top, _, rest = answer.partition(b"\r\n\r\n")
            conn.sendall(top + b"\r\n\r\n" + rest[: len(rest) // 2])
        else:
            conn.sendall(answer)


def _read_request(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head, body


def _forward(port, head, body):
    """The backend's whole answer to the request, asked on a connection of its own."""
    lines = [ln for ln in head.split(b"\r\n") if not ln.lower().startswith((b"connection:", b"keep-alive:"))]
    request = b"\r\n".join(lines + [b"Connection: close"]) + b"\r\n\r\n" + body
    with socket.create_connection(("127.0.0.1", port), timeout=10) as b:
        b.sendall(request)
        chunks = []
        while True:
            chunk = b.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


def _response(status, content_type, body):
    reason = {200: "OK", 503: "Service Unavailable"}[status]
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n\r\n").encode() + body
