"""A small blocking HTTP/2 client over a raw socket, on the `h2` library (python-hyper), for
tests that need what curl does not expose: many streams on one connection, request bodies
under flow control, stream resets, GOAWAY, and frames a conforming client would not send."""
import socket
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions


class Answer:
    def __init__(self):
        self.headers = []
        self.body = b""
        self.ended = False
        self.reset = None
        self.trailers = []
        self.interim = []  # each 1xx head, in order

    @property
    def status(self):
        return int(self.header(":status") or 0)

    def header(self, name):
        for k, v in self.headers:
            if k == name:
                return v
        return None

    @property
    def done(self):
        return self.ended or self.reset is not None


class H2Connection:
    """One HTTP/2 connection with prior knowledge to 127.0.0.1:port (or an already connected
    socket, such as a TLS one that chose h2)."""

    def __init__(self, port=None, sock=None, timeout=10):
        self.sock = sock or socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.authority = f"127.0.0.1:{port}" if port else "127.0.0.1"
        self.sock.settimeout(timeout)
        self.conn = h2.connection.H2Connection(config=h2.config.H2Configuration(
            client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.answers = {}
        self.pending = {}  # stream id -> body bytes still to send
        self.trailers = {}  # stream id -> the trailer section sent after the body
        self.goaway = None
        self.closed = False
        self.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sock.close()

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def send_request(self, method, path, headers=(), body=None, validate=True, end_stream=True, trailers=None,
                     flush=True):
        """Opens a stream; `flush=False` leaves its frames queued for the next flush (many
        streams then go in one write)."""
        sid = self.conn.get_next_available_stream_id()
        pseudo = [(":method", method), (":path", path), (":scheme", "http"), (":authority", self.authority)]
        self.conn.config.validate_outbound_headers = validate
        self.conn.config.normalize_outbound_headers = validate
        self.conn.send_headers(sid, pseudo + list(headers), end_stream=body is None and end_stream)
        self.conn.config.validate_outbound_headers = True
        self.conn.config.normalize_outbound_headers = True
        self.answers[sid] = Answer()
        if body is not None:
            self.pending[sid] = body
            if trailers:
                self.trailers[sid] = list(trailers)
        self.send_pending()
        if flush:
            self.flush()
        return sid

    def send_pending(self):
        for sid in list(self.pending):
            body = self.pending[sid]
            if self.answers[sid].done:
                del self.pending[sid]
                continue
            try:
                window = min(self.conn.local_flow_control_window(sid), self.conn.max_outbound_frame_size)
            except h2.exceptions.StreamClosedError:
                del self.pending[sid]
                continue
            while window > 0 and body:
                chunk, body = body[:window], body[window:]
                self.conn.send_data(sid, chunk, end_stream=not body and sid not in self.trailers)
                window = min(self.conn.local_flow_control_window(sid), self.conn.max_outbound_frame_size)
            if body:
                self.pending[sid] = body
            else:
                del self.pending[sid]
                if sid in self.trailers:
                    # RFC 9113 §8.1: a HEADERS frame with END_STREAM after the body.
                    self.conn.send_headers(sid, self.trailers.pop(sid), end_stream=True)

    def pump(self, timeout):
        """Reads once (at most `timeout` seconds) and handles what came; False when closed."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return True
        except ConnectionError:
            data = b""
        if not data:
            self.closed = True
            return False
        for event in self.conn.receive_data(data):
            a = self.answers.get(getattr(event, "stream_id", None))
            if isinstance(event, h2.events.ResponseReceived) and a:
                a.headers = list(event.headers)
            elif isinstance(event, h2.events.InformationalResponseReceived) and a:
                a.interim.append(list(event.headers))
            elif isinstance(event, h2.events.DataReceived):
                if a:
                    a.body += event.data
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.TrailersReceived) and a:
                a.trailers = list(event.headers)
            elif isinstance(event, h2.events.StreamEnded) and a:
                a.ended = True
            elif isinstance(event, h2.events.StreamReset) and a:
                a.reset = event.error_code
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.goaway = event.error_code
        self.send_pending()
        try:
            self.flush()
        except OSError:
            self.closed = True
        return True

    def collect(self, ids, timeout=20):
        deadline = time.time() + timeout
        while not all(self.answers[i].done for i in ids):
            if time.time() > deadline:
                raise AssertionError(f"streams {[i for i in ids if not self.answers[i].done]} not answered in time")
            if not self.pump(min(1.0, max(0.01, deadline - time.time()))):
                break
        return {i: self.answers[i] for i in ids}

    def request(self, method, path, headers=(), body=None, validate=True, timeout=20, trailers=None):
        sid = self.send_request(method, path, headers, body, validate, trailers=trailers)
        return self.collect([sid], timeout)[sid]

    def wait_goaway(self, timeout=10):
        deadline = time.time() + timeout
        while self.goaway is None and not self.closed and time.time() < deadline:
            self.pump(0.2)
        return self.goaway

    def wait_closed(self, timeout=10):
        """Reads until the server closes the connection; True if it did in time."""
        deadline = time.time() + timeout
        while not self.closed and time.time() < deadline:
            self.pump(0.2)
        return self.closed


def frames(data):
    """The whole frames in `data` as (type, flags, stream id, payload), for tests that read
    the server's bytes raw (RFC 9113 §4.1)."""
    out, i = [], 0
    while i + 9 <= len(data):
        length = int.from_bytes(data[i:i + 3], "big")
        if i + 9 + length > len(data):
            break
        stream = int.from_bytes(data[i + 5:i + 9], "big") & 0x7FFFFFFF
        out.append((data[i + 3], data[i + 4], stream, data[i + 9:i + 9 + length]))
        i += 9 + length
    return out
