"""A raw HTTP/2 peer for conformance tests: it sends frames exactly as given (hyperframe
frames, or bytes built by `frame()` for what hyperframe refuses to build: a bad length, a
PRIORITY frame on stream 0), over plain TCP with prior knowledge or over TLS with ALPN `h2`,
and reads what the server answers as frames, each read bounded by a timeout. Header blocks
are encoded and decoded with one HPACK context per direction, as the server keeps (RFC 9113
§4.3)."""
import os
import socket
import ssl
import time

import hpack
from hyperframe.frame import HeadersFrame, PingFrame, SettingsFrame

from support.h2_client import frames

# Each read's bound, in seconds. A server on 127.0.0.1 answers within milliseconds; only a
# server that never answers waits it out, once per test: scripts/audit.sh, which runs the suite
# at nginx too, where many of these tests fail by waiting a read out, sets it shorter.
TIMEOUT = float(os.environ.get("H2_RAW_TIMEOUT", "5"))

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY_FLAG = 0x1, 0x1, 0x4, 0x8, 0x20


def frame(kind, flags, stream, payload=b""):
    """One frame's bytes (RFC 9113 §4.1), whatever its length or stream."""
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


class Listener:
    """Where a peer connects: a port, and the TLS context when it is a TLS listener."""

    def __init__(self, name, port, context=None):
        self.name, self.port, self.context = name, port, context

    def __repr__(self):
        return self.name


class Peer:
    """One client connection. `handshake()` sends the preface and SETTINGS, waits for the
    server's SETTINGS and acknowledges them (RFC 9113 §3.4, §6.5.3)."""

    def __init__(self, listener, timeout=TIMEOUT):
        raw = socket.create_connection(("127.0.0.1", listener.port), timeout=timeout)
        if listener.context is not None:
            raw = listener.context.wrap_socket(raw, server_hostname="127.0.0.1")
            assert raw.selected_alpn_protocol() == "h2"
        self.sock = raw
        self.sock.settimeout(timeout)
        self.encoder = hpack.Encoder()
        self.decoder = hpack.Decoder()
        self.pending = b""
        self.raw = b""
        self.received = []  # (type, flags, stream, payload), in order
        self.headers = {}  # stream -> the decoded fields of each header block, in order
        self.closed = False
        self.ping_count = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sock.close()

    # sending

    def send(self, *parts):
        """Frames (hyperframe objects or bytes) in one write; a server that closed already is
        noted, not raised (what it sent before closing is still read)."""
        data = b"".join(p if isinstance(p, bytes) else p.serialize() for p in parts)
        try:
            self.sock.sendall(data)
        except (OSError, ssl.SSLError):
            self.closed = True

    def handshake(self):
        self.send(PREFACE, SettingsFrame(0))
        assert self.read(lambda: any(f[0] == SETTINGS and not f[1] & ACK for f in self.received)), self.received
        self.send(SettingsFrame(0, flags=["ACK"]))
        return self

    def block(self, fields):
        """A header block encoded with this connection's HPACK context (names as given: the
        encoder does not lowercase them)."""
        return self.encoder.encode(fields)

    def request_fields(self, method="GET", path="/echo", extra=()):
        return [(":method", method), (":path", path), (":scheme", "https"), (":authority", "127.0.0.1")] + list(extra)

    def headers_frame(self, stream, fields=None, end_stream=True, end_headers=True):
        flags = (["END_STREAM"] if end_stream else []) + (["END_HEADERS"] if end_headers else [])
        return HeadersFrame(stream, self.block(fields or self.request_fields()), flags=flags)

    # reading

    def read(self, until, timeout=TIMEOUT):
        """Reads until `until()` holds, the server closes, or `timeout` passes; `until()`."""
        deadline = time.time() + timeout
        while not until() and not self.closed:
            left = deadline - time.time()
            if left <= 0:
                break
            self.sock.settimeout(min(left, 0.5))
            try:
                data = self.sock.recv(65536)
            except (socket.timeout, ssl.SSLWantReadError):
                continue
            except (OSError, ssl.SSLError):
                data = b""
            if not data:
                self.closed = True
                break
            self.take(data)
        return until()

    def take(self, data):
        self.raw += data
        self.pending += data
        got = frames(self.pending)
        self.pending = self.pending[sum(9 + len(f[3]) for f in got):]
        for f in got:
            self.received.append(f)
            if f[0] == HEADERS:
                # The server pads nothing and sends no priority; its blocks fit one frame.
                self.headers.setdefault(f[2], []).append(dict(self.decoder.decode(f[3])))

    def goaway(self):
        """(last stream id, error code) of the first GOAWAY, or None."""
        for kind, _, _, payload in self.received:
            if kind == GOAWAY:
                return int.from_bytes(payload[:4], "big") & 0x7FFFFFFF, int.from_bytes(payload[4:8], "big")
        return None

    def reset(self, stream):
        """The error code of the first RST_STREAM on `stream`, or None."""
        for kind, _, sid, payload in self.received:
            if kind == RST_STREAM and sid == stream:
                return int.from_bytes(payload, "big")
        return None

    def status(self, stream):
        blocks = self.headers.get(stream, [])
        return int(blocks[0][":status"]) if blocks and ":status" in blocks[0] else None

    def ended(self, stream):
        """The server ended `stream` (END_STREAM on its HEADERS or DATA)."""
        return any(f[2] == stream and f[0] in (DATA, HEADERS) and f[1] & END_STREAM for f in self.received)

    def alive(self, timeout=TIMEOUT):
        """A PING answered (RFC 9113 §6.7) and no GOAWAY: the connection goes on; every frame sent
        before the PING has been processed by then."""
        self.ping_count += 1
        opaque = self.ping_count.to_bytes(8, "big")
        self.send(PingFrame(0, opaque_data=opaque))
        answered = self.read(lambda: any(f[0] == PING and f[1] & ACK and f[3] == opaque for f in self.received),
                             timeout)
        return answered and self.goaway() is None

    def connection_error(self, timeout=TIMEOUT):
        """The GOAWAY's error code once the server has closed the connection (RFC 9113 §5.4.1:
        a GOAWAY, then the connection closes); None if it did not close in time."""
        self.read(lambda: False, timeout)
        assert self.closed, f"the connection stayed open; received {self.summary()}"
        found = self.goaway()
        return found[1] if found else None

    def summary(self):
        names = {DATA: "DATA", HEADERS: "HEADERS", PRIORITY: "PRIORITY", RST_STREAM: "RST_STREAM",
                 SETTINGS: "SETTINGS", PING: "PING", GOAWAY: "GOAWAY", WINDOW_UPDATE: "WINDOW_UPDATE"}
        return [(names.get(k, k), flags, sid, payload[:16].hex()) for k, flags, sid, payload in self.received]


def tls_context(cafile):
    context = ssl.create_default_context(cafile=cafile)
    context.set_alpn_protocols(["h2"])
    return context
