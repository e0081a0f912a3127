"""Compares two testssl.sh JSON reports: the findings whose severity or text differs, and
the count of findings per severity for each side."""
import collections
import json
import sys

ORDER = ["CRITICAL", "HIGH", "MEDIUM", "LOW", "WARN", "INFO", "OK"]
# Findings that name the host, port, time or the run itself, never the TLS set-up.
SKIP = ("scanTime", "service", "engine_problem", "pre_", "scanProblem", "cert_", "intermediate_cert",
        "DNS_CAArecord", "certificate_transparency", "OCSP", "TLS_timestamp", "HTTP_", "banner_",
        "security_headers", "cookie_", "overall_grade", "clientsimulation")


def load(path):
    out = {}
    for f in json.load(open(path)):
        if f["id"].startswith(SKIP):
            continue
        out[f["id"]] = (f.get("severity", ""), f.get("finding", ""))
    return out


kind, ours_path, theirs_path = sys.argv[1:]
ours, theirs = load(ours_path), load(theirs_path)
print(f"== {kind} certificate: tokengate vs nginx (Mozilla intermediate)")
for side, report in (("tokengate", ours), ("nginx", theirs)):
    counts = collections.Counter(s for s, _ in report.values())
    print(f"  {side:9} " + ", ".join(f"{s} {counts[s]}" for s in ORDER if counts[s]))
differ = sorted(k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k))
for k in differ:
    a, b = ours.get(k, ("-", "absent")), theirs.get(k, ("-", "absent"))
    print(f"  {k}: tokengate {a[0]} \"{a[1]}\" | nginx {b[0]} \"{b[1]}\"")
if not differ:
    print("  no finding differs")
