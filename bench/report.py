#!/usr/bin/env python3
"""Summarises a bench/run.sh work directory: parses wrk --latency outputs, takes medians
per scenario and target, prints the table and writes the JSON result.

usage: report.py WORKDIR OUT_JSON

WORKDIR holds meta.json (run parameters), runs.tsv (scenario, target, round, wrk output
file) and rss.tsv (scenario, target, peak RSS in kB). Standard library only.
"""
import json
import re
import statistics
import sys

# Targets from issue 2, checked for every scenario (a benchmark reports; it does not fail).
TARGET_RATIO = 1.0       # tokengate req/s / nginx req/s, at least
TARGET_P99_RATIO = 1.2   # tokengate p99 / nginx p99, at most
TARGET_RSS_MB = 40.0     # tokengate peak RSS, at most

UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}


def to_ms(text):
    m = re.fullmatch(r"([0-9.]+)(us|ms|s|m|h)", text.strip())
    if not m:
        raise ValueError(f"unparsable wrk time {text!r}")
    return float(m.group(1)) * UNITS[m.group(2)]


def parse_wrk(path):
    """requests/s, p50/p75/p90/p99 in ms, request count and error counts from one run."""
    text = open(path, encoding="utf-8", errors="replace").read()
    out = {}
    m = re.search(r"^Requests/sec:\s+([0-9.]+)", text, re.M)
    if not m:
        raise ValueError(f"{path}: no Requests/sec line; wrk said:\n{text}")
    out["rps"] = float(m.group(1))
    for pct in ("50", "75", "90", "99"):
        m = re.search(rf"^\s+{pct}%\s+(\S+)", text, re.M)
        if not m:
            raise ValueError(f"{path}: no {pct}% latency line (was wrk run with --latency?)")
        out[f"p{pct}_ms"] = to_ms(m.group(1))
    m = re.search(r"^\s+(\d+) requests in", text, re.M)
    out["requests"] = int(m.group(1)) if m else None
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    out["socket_errors"] = sum(int(g) for g in m.groups()) if m else 0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    out["non_2xx"] = int(m.group(1)) if m else 0
    return out


def fmt_ms(ms):
    return f"{ms * 1000:.0f}us" if ms < 1 else f"{ms:.2f}ms"


def verdict(ok):
    return "ok" if ok else "MISSED"


def main(workdir, out_path):
    meta = json.load(open(f"{workdir}/meta.json"))
    runs = {}
    for line in open(f"{workdir}/runs.tsv"):
        scenario, target, rnd, path = line.rstrip("\n").split("\t")
        r = parse_wrk(path)
        r["round"] = int(rnd)
        runs.setdefault(scenario, {}).setdefault(target, []).append(r)
    rss = {}
    try:
        for line in open(f"{workdir}/rss.tsv"):
            scenario, target, kb = line.rstrip("\n").split("\t")
            rss.setdefault(scenario, {})[target] = int(kb)
    except FileNotFoundError:
        pass

    result = {"meta": meta, "scenarios": {}}
    missed = False
    print()
    print(f"wrk -t{meta['threads']} -c{meta['connections']} -d{meta['duration_s']}s --latency, "
          f"{meta['rounds']} alternating rounds, medians; workers: {meta['workers']} "
          f"(nginx and tokengate), {meta['cpus']} CPUs")
    if meta.get("tokengate_env"):
        print(f"tokengate environment: {meta['tokengate_env']}")
    for scenario, targets in runs.items():
        summary = {}
        for target, rs in targets.items():
            summary[target] = {
                "rps": statistics.median(r["rps"] for r in rs),
                "p50_ms": statistics.median(r["p50_ms"] for r in rs),
                "p99_ms": statistics.median(r["p99_ms"] for r in rs),
                "errors": sum(r["socket_errors"] + r["non_2xx"] for r in rs),
                "rounds": rs,
            }
        s = {"targets": summary, "peak_rss_kb": rss.get(scenario, {})}
        nginx, tg = summary.get("nginx"), summary.get("tokengate")
        print()
        print(f"scenario {scenario}" + (f"  (wrk args: {meta['wrk_args'].get(scenario)})"
                                        if meta["wrk_args"].get(scenario) else ""))
        print(f"  {'':<16}{'req/s':>11}{'p50':>11}{'p99':>11}{'errors':>9}")
        for target in ("nginx", "tokengate"):
            if target in summary:
                t = summary[target]
                print(f"  {target:<16}{t['rps']:>11.0f}{fmt_ms(t['p50_ms']):>11}"
                      f"{fmt_ms(t['p99_ms']):>11}{t['errors']:>9}")
        if nginx and tg:
            ratio = tg["rps"] / nginx["rps"]
            p50_ratio = tg["p50_ms"] / nginx["p50_ms"]
            p99_ratio = tg["p99_ms"] / nginx["p99_ms"]
            s.update(rps_ratio=ratio, p50_ratio=p50_ratio, p99_ratio=p99_ratio)
            print(f"  {'tokengate/nginx':<16}{ratio:>10.2f}x{p50_ratio:>10.2f}x{p99_ratio:>10.2f}x")
        tg_kb = rss.get(scenario, {}).get("tokengate")
        if tg_kb is not None:
            print(f"  tokengate peak RSS (VmHWM): {tg_kb / 1024:.1f} MB")
        ng_kb = rss.get(scenario, {}).get("nginx")
        if ng_kb is not None:
            print(f"  nginx baseline peak RSS (VmHWM summed over master + workers): {ng_kb / 1024:.1f} MB")
        if nginx and tg and tg_kb is not None:
            checks = {
                f"req/s ratio >= {TARGET_RATIO}": s["rps_ratio"] >= TARGET_RATIO,
                f"p99 <= nginx p99 x {TARGET_P99_RATIO}": s["p99_ratio"] <= TARGET_P99_RATIO,
                f"peak RSS <= {TARGET_RSS_MB:.0f} MB": tg_kb / 1024 <= TARGET_RSS_MB,
                "no errors": nginx["errors"] == 0 and tg["errors"] == 0,
            }
            s["targets_met"] = checks
            missed |= not all(checks.values())
            print("  targets: " + "; ".join(f"{k}: {verdict(v)}" for k, v in checks.items()))
        result["scenarios"][scenario] = s
    with open(out_path, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print()
    print(f"results: {out_path}" + ("  (some targets missed)" if missed else ""))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
