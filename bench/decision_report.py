#!/usr/bin/env python3
"""Decision mode figures from a bench/run.sh work directory (scenarios decision-*): the
nginx auth_request front (nginx → tokengate /_tokengate/auth → upstream) against plain nginx
proxying, and tokengate's CPU per decision against its CPU per proxied request on the same
token. Medians over the rounds. Standard library only.

usage: decision_report.py WORKDIR [OUT_JSON]   (the figures are added to OUT_JSON under "decision")
"""
import json
import statistics
import sys

from report import parse_wrk

FRONT = "nginx-auth_request"


def main(work, out_path=None):
    figures = {}
    runs = {}
    for line in open(f"{work}/runs.tsv"):
        name, target, rnd, path = line.rstrip("\n").split("\t")
        runs[(name, target, rnd)] = parse_wrk(path)
    cpu = {}
    for line in open(f"{work}/cpu.tsv"):
        name, rnd, ticks, hz = line.rstrip("\n").split("\t")[:4]
        cpu[(name, "tokengate", rnd)] = int(ticks) / int(hz)
    for line in open(f"{work}/cpu-decision.tsv"):
        name, target, rnd, ticks, hz = line.rstrip("\n").split("\t")
        cpu[(name, target, rnd)] = int(ticks) / int(hz)
    for name in sorted({k[0] for k in cpu if k[1] == FRONT}):
        def med(target, f):
            vals = [f(r, k) for k, r in runs.items() if k[0] == name and k[1] == target]
            return statistics.median(vals) if vals else float("nan")
        rps = {t: med(t, lambda r, k: r["rps"]) for t in ("nginx", "tokengate", FRONT)}
        us = {t: med(t, lambda r, k: cpu[k] / r["requests"] * 1e6) for t in ("tokengate", FRONT)}
        print(f"\n== decision mode: {name}")
        print(f"  req/s: nginx proxy {rps['nginx']:.0f}, tokengate proxy {rps['tokengate']:.0f}, "
              f"nginx auth_request -> tokengate {rps[FRONT]:.0f}")
        print(f"  nginx auth_request / plain nginx proxy req/s: {rps[FRONT] / rps['nginx']:.2f}x")
        print(f"  tokengate CPU per request: decision {us[FRONT]:.1f} us, proxied {us['tokengate']:.1f} us "
              f"(decision/proxied {us[FRONT] / us['tokengate']:.2f}; cheaper: {'yes' if us[FRONT] < us['tokengate'] else 'NO'})")
        figures[name] = {"rps": rps, "auth_request_vs_nginx_rps_ratio": rps[FRONT] / rps["nginx"],
                         "tokengate_cpu_us_per_decision": us[FRONT], "tokengate_cpu_us_per_proxied_request": us["tokengate"],
                         "decision_cheaper": us[FRONT] < us["tokengate"]}
    if out_path:
        result = json.load(open(out_path))
        result["decision"] = figures
        json.dump(result, open(out_path, "w"), indent=2)


if __name__ == "__main__":
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
