"""A real WebSocket server (PyPI `websockets`, sync API) on 127.0.0.1 for the tunnel tests:
echoes every message, records the handshake heads it saw and the connections it accepted,
and can be told to send a big message or to vanish."""
import socket
import threading

from websockets.datastructures import Headers
from websockets.http11 import Response
from websockets.sync.server import serve


class WSUpstream:
    def __init__(self, max_size=8 << 20, pages=None):
        """pages: {path: html} served to plain (non-upgrade) GETs, e.g. a page whose script
        opens a WebSocket back to the same origin."""
        self.pages = pages or {}
        self.connections = 0
        self.requests = []
        self.closes = []  # (code, reason) the server saw from the gateway/client
        self.sent = 0  # bytes of the "send:N" answers whose send has returned
        self.lock = threading.Lock()
        self.server = serve(self._handler, "127.0.0.1", 0, max_size=max_size, compression=None,
                            process_request=self._process_request)
        self.port = self.server.socket.getsockname()[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _process_request(self, connection, request):
        with self.lock:
            self.requests.append(request)
        page = self.pages.get(request.path.split("?")[0])
        if page is not None and "upgrade" not in request.headers.get("Connection", "").lower():
            body = page.encode()
            return Response(200, "OK", Headers([("Content-Type", "text/html; charset=utf-8"),
                                                ("Content-Length", str(len(body)))]), body)
        return None

    def _handler(self, ws):
        with self.lock:
            self.connections += 1
        try:
            for message in ws:
                if message == "vanish":
                    # Gone without a Close frame. shutdown, not just close: the library's reader
                    # thread blocked in recv would keep a closed fd's socket open.
                    ws.socket.shutdown(socket.SHUT_RDWR)
                    ws.socket.close()
                    return
                if isinstance(message, str) and message.startswith("send:"):
                    ws.send(b"x" * int(message[5:]))
                    with self.lock:
                        self.sent += int(message[5:])
                    continue
                ws.send(message)
        except Exception:
            pass
        finally:
            with self.lock:
                rcvd = ws.protocol.close_rcvd
                self.closes.append((rcvd.code, rcvd.reason) if rcvd else None)

    def stop(self):
        self.server.shutdown()
