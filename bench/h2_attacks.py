#!/usr/bin/env python3
"""The HTTP/2 attack table, tokengate beside nginx: each attack of
IntegrationTests/support/h2_attacks.py (rapid reset, CONTINUATION flood, HPACK bomb, SETTINGS
and PING floods, a zero-window reader, 1,000 streams at once, MadeYouReset, empty DATA frames, a
WINDOW_UPDATE flood) against tokengate's h2c listener
(`http2: true`, tokengate/h2-attacks.yaml) and against nginx as an h2c proxy
(h2/attacks.conf.in), both in front of the same counting HTTP/1.1 upstream
(scripts/echo_upstream.py, in this process). A fresh proxy for every attack, so each starts
from the same RSS.

Per attack and proxy: RSS growth (peak over the attack less the start, all the proxy's
processes: nginx's master and workers), a second client's latency (a GET on a new h2c
connection every 50 ms: max and median), the upstream requests the attack got through
(rapid reset: of 20,000), whether and when the attacker's connection was cut, and the
proxy's CPU seconds. The bounds: RSS < 32 MB, every probe < 1 s, rapid reset < 2,000.

    TOKENGATE_BIN=.build-release/release/tokengate python3 bench/h2_attacks.py [ATTACK…]

Environment: TOKENGATE_BIN (required), WORKERS (2), ROUNDS (1), PORT_BASE (18380),
OUT (/tmp/tokengate-bench-h2-attacks.json), KEEP_WORK (keep the logs: nginx's error.log says
at info level why it cut a connection). Everything on 127.0.0.1, from a temp dir."""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path[:0] = [os.path.join(ROOT, "IntegrationTests"), os.path.join(ROOT, "scripts")]
from echo_upstream import Upstream  # noqa: E402
from support import h2_attacks  # noqa: E402

BIN = os.environ.get("TOKENGATE_BIN") or sys.exit("bench/h2_attacks: set TOKENGATE_BIN")
WORKERS = int(os.environ.get("WORKERS", "2"))
ROUNDS = int(os.environ.get("ROUNDS", "1"))
PORT_BASE = int(os.environ.get("PORT_BASE", "18380"))
OUT = os.environ.get("OUT", "/tmp/tokengate-bench-h2-attacks.json")
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def render(src, dest, **values):
    with open(src) as f:
        text = f.read()
    for k, v in values.items():
        text = text.replace(f"@{k}@", str(v))
    with open(dest, "w") as f:
        f.write(text)


def ready(port, proc):
    deadline = time.time() + 10
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"bench/h2_attacks: the proxy on {port} exited ({proc.returncode})")
        if h2_attacks.probe(port, timeout=1) is not None:
            return
        time.sleep(0.1)
    sys.exit(f"bench/h2_attacks: nothing answers h2c on {port}")


def start(target, work, upstream_port):
    port = PORT_BASE + (0 if target == "tokengate" else 2)
    d = os.path.join(work, target)
    os.makedirs(d, exist_ok=True)
    log = open(os.path.join(d, "out.log"), "ab")
    if target == "tokengate":
        conf = os.path.join(d, "tokengate.yaml")
        render(os.path.join(ROOT, "bench", "tokengate", "h2-attacks.yaml"), conf, PORT=port,
               ADMIN_PORT=PORT_BASE + 1, UPSTREAM_PORT=upstream_port, WORKERS=WORKERS)
        proc = subprocess.Popen([BIN, "serve", "--config", conf], stdout=log, stderr=subprocess.STDOUT)
    else:
        conf = os.path.join(d, "nginx.conf")
        render(os.path.join(ROOT, "bench", "h2", "attacks.conf.in"), conf, DIR=d, PORT=port,
               UPSTREAM_PORT=upstream_port, WORKERS=WORKERS, USER_LINE="user root;" if os.getuid() == 0 else "")
        proc = subprocess.Popen([NGINX, "-p", d, "-c", conf, "-e", os.path.join(d, "error.log")],
                                stdout=log, stderr=subprocess.STDOUT)
    ready(port, proc)
    return proc, port


def stop(proc):
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def verdict(r):
    missed = []
    if r["rss_growth_mb"] >= h2_attacks.RSS_BOUND_MB:
        missed.append("rss")
    if r["probes_failed"] or (r["probe_max_s"] or 0) >= h2_attacks.PROBE_BOUND_S:
        missed.append("probe")
    if r["attack"] == "rapid_reset" and r["upstream_requests"] >= h2_attacks.RAPID_RESET_UPSTREAM_BOUND:
        missed.append("upstream")
    return "ok" if not missed else "MISSED " + ",".join(missed)


def detail(r):
    keys = ("pairs_sent", "continuations_sent", "streams_sent", "settings_sent", "pings_sent",
            "streams_reset", "refused", "answered")
    return " ".join(f"{k}={r[k]}" for k in keys if k in r)


def summary(results):
    """One line per attack and proxy over all rounds: the worst RSS growth and probe, the
    median probe, the most upstream requests, and when the attacker was cut (a range)."""
    print(f"\n{'attack':19} {'proxy':9} {'rounds':>6} {'RSS +MB max':>11} {'probe max':>9} {'median':>7} "
          f"{'upstream':>8}  cut")
    for name in dict.fromkeys(r["attack"] for r in results):
        for target in ("tokengate", "nginx"):
            rs = [r for r in results if r["attack"] == name and r["target"] == target]
            if not rs:
                continue
            cuts = [r["cut_at_s"] for r in rs if r["cut"]]
            cut = f"{len(cuts)}/{len(rs)} at {min(cuts)}-{max(cuts)} s" if cuts else "never"
            print(f"{name:19} {target:9} {len(rs):6} {max(r['rss_growth_mb'] for r in rs):11.1f} "
                  f"{max(r['probe_max_s'] for r in rs):9.3f} {statistics.median(r['probe_median_s'] for r in rs):7.3f} "
                  f"{max(r['upstream_requests'] for r in rs):8}  {cut}")


def main():
    names = sys.argv[1:] or list(h2_attacks.ATTACKS)
    work = tempfile.mkdtemp(prefix="tokengate-bench-h2-attacks.")
    upstream = Upstream().start()
    print(f"== load average {open('/proc/loadavg').read().split()[0]} (other work on the machine skews the "
          f"latencies)", file=sys.stderr)
    results = []
    try:
        for rnd in range(ROUNDS):
            for name in names:
                order = ["tokengate", "nginx"] if rnd % 2 == 0 else ["nginx", "tokengate"]
                for target in order:
                    proc, port = start(target, work, upstream.port)
                    try:
                        r = h2_attacks.run(name, port, proc.pid, lambda: h2_attacks.attack_requests(upstream))
                    finally:
                        stop(proc)
                    r.update(target=target, round=rnd + 1, verdict=verdict(r))
                    results.append(r)
                    print(f"== {name} {target}: {json.dumps(r)}", file=sys.stderr)
    finally:
        upstream.stop()
        if os.environ.get("KEEP_WORK"):
            print(f"== logs kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{'attack':19} {'proxy':9} {'RSS +MB':>7} {'probe max':>9} {'median':>7} {'failed':>6} "
          f"{'upstream':>8} {'CPU s':>5}  {'cut':24} verdict  detail")
    for r in results:
        cut = f"{r['cut']} at {r['cut_at_s']} s" if r["cut"] else "no (attack ended)"
        if r["goaway"] is not None:
            cut += f", code {r['goaway']:#x}"
        print(f"{r['attack']:19} {r['target']:9} {r['rss_growth_mb']:7.1f} {r['probe_max_s']:9.3f} "
              f"{r['probe_median_s']:7.3f} {r['probes_failed']:6} {r['upstream_requests']:8} {r['cpu_s']:5.2f}  "
              f"{cut:24} {r['verdict']:8} {detail(r)}")
    summary(results)
    with open(OUT, "w") as f:
        json.dump({"load_average": open("/proc/loadavg").read().split()[:3], "workers": WORKERS,
                   "nginx": subprocess.run([NGINX, "-v"], capture_output=True, text=True).stderr.strip(),
                   "results": results}, f, indent=1)
    print(f"(the whole record in {OUT})")


if __name__ == "__main__":
    main()
