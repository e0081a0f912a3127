"""Slow request bodies must not pin upstream connections, from the attacker's side: a
trickled body is cut at limits.body_min_rate (after its grace) or limits.body_deadline, and
its upstream connection is closed, never reused; an upstream's connections stay under
upstreams.NAME.max_connections, requests past its queue (max_pending) get 503 with
Retry-After, and a wait past pending_timeout does too. A recording upstream says what it
received and how many connections it saw. All on 127.0.0.1, each test bounded in time."""
import json
import socket
import threading
import time

import pytest
import requests

from support.gateway import Gateway, RawServer
from support.pacing import paced, during
from support.waiting import wait_for


class RecordingUpstream(RawServer):
    """Keep-alive HTTP/1.1 upstream that records its connections: how many it accepted, how
    many the gateway held open at once (peak), how many requests it answered and how many
    connections were closed in the middle of a body. Answers once a request's whole
    Content-Length body is in, after `delay` seconds."""

    def __init__(self, delay=0.0):
        self.delay = delay
        self.lock = threading.Lock()
        self.accepted = self.peak = self.answered = self.cut = 0
        self.body_bytes = 0
        self.conns = set()
        super().__init__()

    @property
    def open(self):
        """Connections still being served."""
        with self.lock:
            return len(self.conns)

    @staticmethod
    def held(conn):
        """Whether the gateway still holds `conn` open: its TCP state is ESTABLISHED, not
        CLOSE_WAIT. A connection the gateway has closed counts as closed at once, before
        the thread serving it wakes up to its end of file (which a loaded machine may run
        after the gateway's next connection is accepted)."""
        try:
            return conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0] == 1  # TCP_ESTABLISHED
        except OSError:
            return False

    def serve(self, conn):
        with self.lock:
            self.accepted += 1
            self.peak = max(self.peak, 1 + sum(1 for c in self.conns if self.held(c)))
            self.conns.add(conn)
        try:
            buf = b""
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                head, _, buf = buf.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(buf) < length:
                    chunk = conn.recv(65536)
                    if not chunk:
                        with self.lock:
                            self.cut += 1
                            self.body_bytes += len(buf)
                        return
                    buf += chunk
                body, buf = buf[:length], buf[length:]
                with self.lock:
                    self.body_bytes += len(body)
                if self.delay:
                    # A slow upstream is the input: no event to wait for.
                    time.sleep(self.delay)
                out = json.dumps({"received": len(body)}).encode()
                # Counted before the answer goes: a client holding it may look at once.
                with self.lock:
                    self.answered += 1
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(out), out))
        except OSError:
            return
        finally:
            with self.lock:
                self.conns.discard(conn)
            conn.close()


def gateway(upstream_port, limits="", upstream="", workers=1, extra="", routes="", buffering=False, http2=False):
    g = Gateway(f"""
listen: {{ address: 127.0.0.1:{{PORT}}, http2: {"true" if http2 else "false"} }}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: {workers}
access_log: false
limits: {{ shutdown_grace: 1s {limits} }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream_port}", timeout: 30s {upstream} }}
{extra}
routes:
{routes}
  - match: {{ path_prefix: / }}
    upstream: app
    auth: none
    request_buffering: {"true" if buffering else "false"}
""", workers=workers)
    g.start_no_wait()
    return g


def trickle(port, length=1000, every=0.25, limit=15, extra=b""):
    """An anonymous client sending a Content-Length body one byte at a time. Returns the
    response bytes, the seconds to the first response byte, and whether the gateway then
    closed the connection."""
    s = socket.create_connection(("127.0.0.1", port), timeout=limit)
    s.sendall(b"POST /upload HTTP/1.1\r\nHost: a\r\n%sContent-Length: %d\r\n\r\n" % (extra, length))
    s.settimeout(every)
    started, resp, sent = time.time(), b"", 0
    try:
        while time.time() - started < limit and sent < length:
            try:
                data = s.recv(65536)
                if not data:
                    break
                resp += data
                break
            except socket.timeout:
                try:
                    s.sendall(b"x")
                    sent += 1
                except OSError:
                    break
        took = time.time() - started
        s.settimeout(3)
        closed = False
        try:
            while True:
                data = s.recv(65536)
                if not data:
                    closed = True
                    break
                resp += data
        except (socket.timeout, OSError):
            closed = isinstance(s, socket.socket) and False
        return resp, took, closed
    finally:
        s.close()


def status_of(resp):
    return int(resp.split(b" ", 2)[1]) if resp.startswith(b"HTTP/") else 0


def test_a_trickled_body_is_cut_at_the_minimum_rate_and_its_upstream_connection_closed():
    up = RecordingUpstream()
    g = gateway(up.port, limits=", body_min_rate: 1KB/s, body_min_rate_grace: 1s, body_timeout: 30s")
    try:
        resp, took, closed = trickle(g.port)
        # Cut when the grace ends (under 1 KB/s), far before the 30 s silence bound.
        assert resp.startswith(b"HTTP/1.1 4"), resp[:200]
        assert 0.9 <= took < 3, took
        assert b"Connection: close" in resp and closed
        # The upstream got a few bytes of the body, then its connection was closed, never
        # reused: it answered nothing.
        wait_for(lambda: up.cut == 1 and up.open == 0, what="the upstream connection to be cut")
        assert up.answered == 0
        assert up.body_bytes < 10
        # The gateway still serves the next client at once.
        assert requests.post(g.url("/ok"), data=b"y" * 5000, timeout=5).json() == {"received": 5000}
    finally:
        g.stop()
        up.stop()


def test_a_body_the_gateway_reads_itself_is_answered_408_at_the_rate_bound():
    """A token_in_body route reads the form before deciding (RFC 6750 §2.2): a trickled
    form is cut at the rate bound with 408 and never reaches the upstream."""
    up = RecordingUpstream()
    g = gateway(
        up.port, limits=", body_min_rate: 1KB/s, body_min_rate_grace: 1s",
        routes="""  - match: { path_prefix: /form/ }
    upstream: app
    auth: bearer
    issuers: [one]
    token_in_body: true""",
        extra="""issuers:
  one: { issuer: "https://idp.one", jwks_file: "/dev/null", audiences: [api] }""")
    try:
        s = socket.create_connection(("127.0.0.1", g.port), timeout=10)
        s.sendall(b"POST /form/x HTTP/1.1\r\nHost: a\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                  b"Content-Length: 1000\r\n\r\naccess_token=")
        s.settimeout(0.25)
        started, resp = time.time(), b""
        while time.time() - started < 10:
            try:
                resp = s.recv(65536)
                break
            except socket.timeout:
                s.sendall(b"a")
        took = time.time() - started
        s.close()
        assert status_of(resp) == 408, resp[:300]
        assert b"Connection: close" in resp
        assert 0.9 <= took < 3, took
        assert up.accepted == 0
    finally:
        g.stop()
        up.stop()


def test_a_trickled_body_is_answered_408():
    up = RecordingUpstream()
    g = gateway(up.port, limits=", body_min_rate: 1KB/s, body_min_rate_grace: 1s")
    try:
        resp, _, _ = trickle(g.port)
        assert status_of(resp) == 408, resp[:200]
    finally:
        g.stop()
        up.stop()


@pytest.mark.parametrize("extra", [b"", b"Content-Type: application/grpc\r\n"])
def test_a_trickled_body_on_a_buffering_route_is_answered_408_and_never_reaches_the_upstream(extra):
    # gRPC's content type does not let an HTTP/1.1 client stream past the buffering.
    up = RecordingUpstream()
    g = gateway(up.port, limits=", body_min_rate: 1KB/s, body_min_rate_grace: 1s", buffering=True)
    try:
        resp, took, closed = trickle(g.port, extra=extra)
        # A gRPC client hears it as gRPC does (200, grpc-status UNKNOWN and the reason).
        assert (status_of(resp) == 408 or b"grpc-message: the request body came too slowly" in resp) and closed, resp[:200]
        assert 0.9 <= took < 3, took
        # A body that comes at a real pace goes up whole, by length; the one worker forwards
        # it after anything of the cut request, which never reached the upstream.
        assert requests.post(g.url("/ok"), data=b"y" * 300_000, timeout=5).json() == {"received": 300_000}
        assert up.accepted == 1 and up.body_bytes == 300_000
        # Past limits.request_buffer (64KB) it went to a temp file, given back since.
        metrics = requests.get(f"http://127.0.0.1:{g.admin}/metrics", timeout=5).text
        assert "tokengate_spools_total 1" in metrics and "tokengate_spool_bytes 0" in metrics
    finally:
        g.stop()
        up.stop()


def test_a_body_past_the_request_spool_budget_is_answered_503_and_never_sent():
    up = RecordingUpstream()
    g = gateway(up.port, limits=", request_spool_total: 100KB", buffering=True)
    try:
        # Chunked: its size shows only as it comes, past the budget.
        r = requests.post(g.url("/big"), data=iter([b"b" * 100_000] * 3), timeout=5)
        assert r.status_code == 503 and r.headers["Retry-After"] == "1"
        assert r.json()["error"] == "temporarily_unavailable"
        assert up.accepted == 0
        # What fits in memory (limits.request_buffer) needs no disk.
        assert requests.post(g.url("/small"), data=b"s" * 10_000, timeout=5).json() == {"received": 10_000}
        # A body announced larger than the whole budget streams, as without buffering.
        assert requests.post(g.url("/huge"), data=b"h" * 200_000, timeout=5).json() == {"received": 200_000}
        metrics = requests.get(f"http://127.0.0.1:{g.admin}/metrics", timeout=5).text
        assert "tokengate_spool_failures_total 1" in metrics and "tokengate_spool_bytes 0" in metrics
    finally:
        g.stop()
        up.stop()


def test_a_body_past_the_deadline_is_cut_even_at_a_good_rate():
    up = RecordingUpstream()
    g = gateway(up.port, limits=", body_deadline: 2s, body_min_rate: off, max_body_size: 64MB")
    try:
        s = socket.create_connection(("127.0.0.1", g.port), timeout=10)
        s.sendall(b"POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n" % (32 << 20))
        s.settimeout(0.05)
        started, resp = time.time(), b""
        # 20 KB/s: well above any rate floor, but 32 MB would take half an hour.
        while time.time() - started < 10:
            try:
                resp = s.recv(65536)
                break
            except socket.timeout:
                s.sendall(b"z" * 1024)
        took = time.time() - started
        s.close()
        assert resp.startswith(b"HTTP/1.1 4"), resp[:200]
        assert 1.9 <= took < 4, took
        wait_for(lambda: up.cut == 1 and up.open == 0, what="the upstream connection to be cut")
        assert up.answered == 0
    finally:
        g.stop()
        up.stop()


def fire(url, n, method="get"):
    """n requests at once; returns the responses (or exceptions) and each one's seconds."""
    out = [None] * n

    def one(i):
        t = time.time()
        try:
            r = getattr(requests, method)(url, timeout=15)
        except requests.RequestException as e:
            r = e
        out[i] = (r, time.time() - t)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_upstream_connections_stay_under_the_cap_and_past_the_queue_503_with_retry_after():
    up = RecordingUpstream(delay=1.0)
    g = gateway(up.port, upstream=", max_connections: 2, max_pending: 2, pending_timeout: 5s")
    try:
        results = fire(g.url("/work"), 8)
        statuses = sorted(r.status_code for r, _ in results)
        # Two at once on the two connections, two waiting their turn, four refused at once.
        assert statuses == [200] * 4 + [503] * 4, statuses
        refused = [(r, t) for r, t in results if r.status_code == 503]
        for r, t in refused:
            assert r.headers["Retry-After"] == "1"
            assert r.json()["error"] == "temporarily_unavailable"
            assert t < 0.8, t
        waited = sorted(t for r, t in results if r.status_code == 200)
        assert waited[1] < 1.8 and waited[3] >= 1.9, waited
        assert up.peak <= 2 and up.accepted <= 2, (up.peak, up.accepted)
        assert up.answered == 4
    finally:
        g.stop()
        up.stop()


def test_a_request_that_waits_past_pending_timeout_gets_503():
    up = RecordingUpstream(delay=1.5)
    g = gateway(up.port, upstream=", max_connections: 1, max_pending: 5, pending_timeout: 300ms")
    try:
        first = threading.Thread(target=requests.get, args=(g.url("/slow"),), kwargs={"timeout": 10})
        first.start()
        wait_for(lambda: up.accepted == 1, 5, interval=0.01, what="the first request at the upstream")
        t = time.time()
        r = requests.get(g.url("/waits"), timeout=10)
        took = time.time() - t
        first.join()
        assert r.status_code == 503 and r.headers["Retry-After"] == "1"
        assert 0.25 <= took < 1.2, took
        assert up.peak == 1 and up.answered == 1
    finally:
        g.stop()
        up.stop()


def test_a_slow_body_client_holds_its_upstream_place_only_until_the_rate_bound():
    """At a cap of one connection, a trickling client holds it until the grace ends; the
    next request then gets it."""
    up = RecordingUpstream()
    g = gateway(
        up.port, limits=", body_min_rate: 1KB/s, body_min_rate_grace: 1s",
        upstream=", max_connections: 1, max_pending: 4, pending_timeout: 5s")
    try:
        th = threading.Thread(target=trickle, args=(g.port,), daemon=True)
        th.start()
        wait_for(lambda: up.accepted == 1, 5, interval=0.01, what="the trickling request at the upstream")
        t = time.time()
        r = requests.post(g.url("/next"), data=b"n" * 100, timeout=10)
        took = time.time() - t
        assert r.status_code == 200 and r.json() == {"received": 100}
        assert 0.5 <= took < 2.5, took
        assert up.peak == 1 and up.cut == 1
    finally:
        g.stop()
        up.stop()


def rss_kb(g):
    with open(f"/proc/{g.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


@pytest.mark.parametrize("buffering", [False, True])
def test_load_200_slow_body_clients_leave_upstream_connections_bounded_and_others_served(buffering):
    """200 anonymous clients trickling bodies at a route whose upstream is slow (0.5 s per
    answer), with the default body pace; meanwhile other clients are served in under 1 s.
    Streaming the bodies, the upstream's connections stay under its cap; reading them first
    (request buffering), the upstream never hears of them."""
    slow_up = RecordingUpstream(delay=0.5)
    fast_up = RecordingUpstream()
    g = Gateway(f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
access_log: false
limits: {{ shutdown_grace: 1s }}
upstreams:
  slow: {{ url: "http://127.0.0.1:{slow_up.port}", timeout: 30s, max_connections: 32, max_pending: 32 }}
  fast: {{ url: "http://127.0.0.1:{fast_up.port}" }}
routes:
  - match: {{ path_prefix: /slow/ }}
    upstream: slow
    auth: none
    request_buffering: {"true" if buffering else "false"}
  - match: {{ path_prefix: / }}
    upstream: fast
    auth: none
""", workers=2)
    g.start()
    try:
        for _ in range(20):
            requests.get(g.url("/warm"), timeout=5)
        base = rss_kb(g)
        results = []
        lock = threading.Lock()

        def slow_client():
            s = socket.create_connection(("127.0.0.1", g.port), timeout=15)
            s.sendall(b"POST /slow/up HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n")
            s.settimeout(1.0)
            started, resp = time.time(), b""
            try:
                while time.time() - started < 15:
                    try:
                        data = s.recv(65536)
                        resp = data
                        break
                    except socket.timeout:
                        s.sendall(b"x")
            except OSError:
                pass
            with lock:
                results.append((status_of(resp), time.time() - started))
            s.close()

        started = time.time()
        threads = [threading.Thread(target=slow_client, daemon=True) for _ in range(200)]
        for t in threads:
            t.start()
        latencies = []
        peak_seen = 0
        for _ in paced(during(7, since=started), 0.05):
            t = time.time()
            r = requests.get(g.url("/other"), timeout=5)
            latencies.append(time.time() - t)
            assert r.status_code == 200
            metrics = requests.get(f"http://127.0.0.1:{g.admin}/metrics", timeout=5).text
            for line in metrics.splitlines():
                if line.startswith('tokengate_upstream_connections{upstream="slow"}'):
                    peak_seen = max(peak_seen, int(float(line.split()[-1])))
        for t in threads:
            t.join(timeout=15)
        grown = (rss_kb(g) - base) / 1024
        statuses = sorted(set(s for s, _ in results))
        cut = sum(1 for s, _ in results if s in (400, 408))
        busy = sum(1 for s, _ in results if s == 503)
        print(f"200 slow clients: upstream peak {slow_up.peak} connections seen upstream, {peak_seen} in the gateway (cap 32), {cut} cut at the rate bound, "
              f"{busy} refused 503; other clients: {len(latencies)} requests, max {max(latencies) * 1000:.0f} ms, "
              f"median {sorted(latencies)[len(latencies) // 2] * 1000:.0f} ms; RSS peak +{grown:.1f} MB")
        assert len(results) == 200, len(results)
        assert max(latencies) < 1.0, max(latencies)
        if buffering:
            assert slow_up.accepted == 0 and peak_seen == 0
            assert statuses == [408], statuses
            return
        assert set(statuses) <= {400, 408, 503}, statuses
        # The gateway's own count never passes the cap; the upstream's threads notice a
        # closed connection a moment late, so its view may briefly count a few more.
        assert peak_seen <= 32, peak_seen
        assert slow_up.peak <= 32 + 16 and slow_up.answered == 0
        assert max(latencies) < 1.0, max(latencies)
        assert cut >= 32 and busy >= 100
    finally:
        g.stop()
        slow_up.stop()
        fast_up.stop()


# --- one client's share of the request spool ------------------------------------------------

SHARE_LIMITS = ", request_buffer: 16KB, request_spool_total: 2MB, request_spool_per_client: 25%"


def hold_body(port, source, sent=300_000, length=400_000, extra=b""):
    """A client from `source` that announces `length` bytes, sends `sent` of them at once and
    then holds on (as a trickler at body_min_rate would): its spooled part stays held."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    s.sendall(b"POST /upload HTTP/1.1\r\nHost: a\r\n%sContent-Length: %d\r\n\r\n" % (extra, length))
    try:
        s.sendall(b"h" * sent)
    except OSError:
        pass  # refused and closed before the body was taken
    return s


def spool_bytes(g):
    """tokengate_spool_bytes: what every spool holds now."""
    for line in requests.get(f"http://127.0.0.1:{g.admin}/metrics", timeout=5).text.splitlines():
        if line.startswith("tokengate_spool_bytes "):
            return float(line.split()[1])
    return 0


def refused_at_once(s, timeout=0.5):
    s.settimeout(timeout)
    try:
        return s.recv(65536).startswith(b"HTTP/1.1 503")
    except (socket.timeout, ConnectionError):
        return False


def test_one_client_holds_at_most_its_share_of_the_request_spool():
    """Eight connections from one address each send most of a 400 KB body and hold on: the
    first's spooled part fits its 25% share (512 KB of 2 MB), the later ones get 503 at
    once, and a body from another address is still held and sent whole."""
    up = RecordingUpstream()
    g = gateway(up.port, limits=SHARE_LIMITS + ", body_min_rate: off", buffering=True)
    held = []
    try:
        held = [hold_body(g.port, "127.0.0.2")]
        wait_for(lambda: spool_bytes(g) >= 280_000, what="the first body spooled")
        held += [hold_body(g.port, "127.0.0.2") for _ in range(7)]
        assert [refused_at_once(s) for s in held] == [False] + [True] * 7
        r = requests.post(g.url("/victim"), data=b"v" * 300_000, timeout=10)
        assert r.status_code == 200 and r.json() == {"received": 300_000}, r.text
    finally:
        for s in held:
            s.close()
        g.stop()
        up.stop()


def test_a_share_is_per_client_address_through_trusted_proxies_only():
    """Behind a trusted proxy the share is the X-Forwarded-For client's; from an untrusted
    peer a forged X-Forwarded-For changes nothing: one address, one share."""
    up = RecordingUpstream()
    g = gateway(up.port, limits=SHARE_LIMITS + ", body_min_rate: off", buffering=True,
                extra="trusted_proxies: [127.0.0.1/32]")
    held = []
    try:
        # Through the trusted proxy (127.0.0.1): two clients, two shares.
        held.append(hold_body(g.port, "127.0.0.1", extra=b"X-Forwarded-For: 203.0.113.7\r\n"))
        held.append(hold_body(g.port, "127.0.0.1", extra=b"X-Forwarded-For: 203.0.113.8\r\n"))
        wait_for(lambda: spool_bytes(g) >= 560_000, what="both bodies spooled")
        assert not refused_at_once(held[0]) and not refused_at_once(held[1])
        third = hold_body(g.port, "127.0.0.1", extra=b"X-Forwarded-For: 203.0.113.7\r\n")
        held.append(third)
        assert refused_at_once(third)
        # An untrusted peer rotating forged X-Forwarded-For values is one client.
        forged = [hold_body(g.port, "127.0.0.3", extra=b"X-Forwarded-For: 198.51.100.1\r\n")]
        wait_for(lambda: spool_bytes(g) >= 840_000, what="the untrusted peer's body spooled")
        forged += [hold_body(g.port, "127.0.0.3", extra=b"X-Forwarded-For: 198.51.100.%d\r\n" % i) for i in range(2, 5)]
        held += forged
        assert [refused_at_once(s) for s in forged] == [False, True, True, True]
    finally:
        for s in held:
            s.close()
        g.stop()
        up.stop()


def test_one_client_holds_at_most_its_share_over_http2():
    """The same share on HTTP/2: streams on one connection from one address, each holding
    most of a 400 KB body; past the share, 503 on each further stream, while a client from
    another address is served."""
    from support.h2_client import H2Connection
    up = RecordingUpstream()
    g = gateway(up.port, limits=SHARE_LIMITS + ", body_min_rate: off", buffering=True, http2=True)
    try:
        sock = socket.create_connection(("127.0.0.1", g.port), timeout=10, source_address=("127.0.0.2", 0))
        with H2Connection(g.port, sock=sock) as c:
            c.pump(0.5)  # the gateway's SETTINGS and window updates
            ids = []
            for n in range(6):
                sid = c.send_request("POST", "/upload", [("content-length", "400000")], end_stream=False)
                # 240 KB now (within the stream's 256 KB window), the rest never.
                left, deadline = 240_000, time.time() + 5
                while left > 0 and time.time() < deadline and not c.answers[sid].done:
                    window = min(c.conn.local_flow_control_window(sid), c.conn.max_outbound_frame_size, left)
                    if window <= 0:
                        c.pump(0.1)
                        continue
                    c.conn.send_data(sid, b"h" * window)
                    c.flush()
                    left -= window
                ids.append(sid)
                if n == 0:
                    wait_for(lambda: spool_bytes(g) >= 200_000, what="the first stream's body spooled")
            deadline = time.time() + 5
            while time.time() < deadline and sum(c.answers[i].status == 503 for i in ids) < 5:
                c.pump(0.2)
            statuses = [c.answers[i].status for i in ids]
            assert statuses.count(503) == 5 and statuses[0] == 0, statuses
            assert json.loads(c.answers[ids[1]].body)["error"] == "temporarily_unavailable"
            with H2Connection(g.port) as other:
                a = other.request("POST", "/victim", [("content-length", "300000")], body=b"v" * 300_000)
            assert a.status == 200 and json.loads(a.body) == {"received": 300_000}, a.body
    finally:
        g.stop()
        up.stop()
