"""A scripted HTTP/2 upstream (h2c with prior knowledge) on python-hyper's `h2`, for what a
real server does only when it misbehaves. The request path picks the behaviour:

- `/ok`: 200 with body `ok`.
- `/reset-before-head`: RST_STREAM (INTERNAL_ERROR) before any response.
- `/reset-after-head`: a 200 head and 5 bytes of body, then RST_STREAM.
- `/refuse`: RST_STREAM (REFUSED_STREAM): the request was not processed (RFC 9113 §8.7).
- `/refuse-once`: REFUSED_STREAM the first time, then 200 with the body's length.
- `/goaway`: GOAWAY naming no stream processed, then the connection closes.
- `/slow`: no answer at all (the gateway's deadline, or the client's cancel, ends it).
- `/trailers`: a 200 head, body `data`, and a trailer section `x-checksum: 1234`.
- `/echo-trailers`: 200, the request's trailer section as the body (`name: value` lines).
- `/length`: 200 with the request body's length.

`window`: the upstream opens its windows that far at once (SETTINGS and a connection
WINDOW_UPDATE) and then never sends another, as a server with a large window does while a
request fits in it.

It records each request's path, its header fields (`heads`: (name, value) pairs, in order),
and each RST_STREAM it receives (`resets`: stream id → error code), and counts connections.
"""
import socket
import threading

import h2.config
import h2.connection
import h2.events
import h2.errors
import h2.settings


class H2Upstream:
    def __init__(self, window=None):
        self.window = window
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.paths = []
        self.heads = []
        self.resets = []
        self.connections = 0
        self.lock = threading.Lock()
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, sock):
        conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False))
        conn.initiate_connection()
        if self.window:
            conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: self.window})
            conn.increment_flow_control_window(self.window - 65535)
        sock.sendall(conn.data_to_send())
        paths = {}
        bodies = {}
        trailers = {}
        try:
            while not self.stopped:
                data = sock.recv(65536)
                if not data:
                    return
                for event in conn.receive_data(data):
                    if isinstance(event, h2.events.RequestReceived):
                        headers = {k.decode() if isinstance(k, bytes) else k: v.decode() if isinstance(v, bytes) else v
                                   for k, v in event.headers}
                        paths[event.stream_id] = headers[":path"]
                        with self.lock:
                            self.paths.append(headers[":path"])
                            self.heads.append([(k.decode() if isinstance(k, bytes) else k,
                                                v.decode() if isinstance(v, bytes) else v) for k, v in event.headers])
                        bodies[event.stream_id] = b""
                    elif isinstance(event, h2.events.DataReceived):
                        bodies[event.stream_id] = bodies.get(event.stream_id, b"") + event.data
                        if not self.window:
                            conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    elif isinstance(event, h2.events.TrailersReceived):
                        trailers[event.stream_id] = [(k.decode() if isinstance(k, bytes) else k,
                                                      v.decode() if isinstance(v, bytes) else v) for k, v in event.headers]
                    elif isinstance(event, h2.events.StreamEnded) and event.stream_id in paths:
                        # The whole request is in (h2 reports this after HEADERS that end it too).
                        if self._answer(conn, event.stream_id, paths[event.stream_id],
                                        bodies.pop(event.stream_id, b""),
                                        trailers.pop(event.stream_id, [])) == "close":
                            sock.sendall(conn.data_to_send())
                            return
                    elif isinstance(event, h2.events.StreamReset):
                        with self.lock:
                            self.resets.append((event.stream_id, event.error_code))
                sock.sendall(conn.data_to_send())
        except (OSError, h2.exceptions.ProtocolError):
            return
        finally:
            sock.close()

    def _answer(self, conn, sid, path, body, trailers):
        if path == "/refuse-once":
            with self.lock:
                first = self.paths.count(path) == 1
            if first:
                conn.reset_stream(sid, h2.errors.ErrorCodes.REFUSED_STREAM)
            else:
                conn.send_headers(sid, [(":status", "200")])
                conn.send_data(sid, b"%d" % len(body), end_stream=True)
        elif path == "/length":
            conn.send_headers(sid, [(":status", "200")])
            conn.send_data(sid, b"%d" % len(body), end_stream=True)
        elif path == "/ok":
            conn.send_headers(sid, [(":status", "200"), ("content-type", "text/plain")])
            conn.send_data(sid, b"ok", end_stream=True)
        elif path == "/reset-before-head":
            conn.reset_stream(sid, h2.errors.ErrorCodes.INTERNAL_ERROR)
        elif path == "/reset-after-head":
            conn.send_headers(sid, [(":status", "200"), ("content-length", "100")])
            conn.send_data(sid, b"hello")
            conn.reset_stream(sid, h2.errors.ErrorCodes.INTERNAL_ERROR)
        elif path == "/refuse":
            conn.reset_stream(sid, h2.errors.ErrorCodes.REFUSED_STREAM)
        elif path == "/goaway":
            conn.close_connection(last_stream_id=0)
            return "close"
        elif path == "/trailers":
            conn.send_headers(sid, [(":status", "200")])
            conn.send_data(sid, b"data")
            conn.send_headers(sid, [("x-checksum", "1234")], end_stream=True)
        elif path == "/echo-trailers":
            conn.send_headers(sid, [(":status", "200")])
            conn.send_data(sid, "".join(f"{k}: {v}\n" for k, v in trailers).encode() or b"none", end_stream=True)
        # /slow: nothing.
        return None

    def stop(self):
        self.stopped = True
        self.sock.close()
