"""Reads each audit tool's raw output into one row (or several) of the audit's table, as
JSON: {"row", "tokengate": SIDE, "nginx": SIDE or null}, where SIDE is {"findings": [{"key",
"text", "rank"}], "figures": text}. A finding's key is what the two sides are compared by;
rank orders findings of the same key (a testssl.sh severity). A report that is missing or
empty exits non-zero: the tool did not run, which is not the same as finding nothing.

usage: parse.py testssl ROW TOKENGATE_JSON NGINX_JSON
       parse.py conformance WORK_DIR RESULTS_DIR   (WORK_DIR/conformance-SIDE-LISTENER.xml)
       parse.py redbot TOKENGATE_JSON NGINX_JSON RESULTS_DIR
       parse.py slow ROW WORK_DIR ATTACK
       parse.py h2load WORK_DIR
       parse.py fuzz LOG EXIT_CODE"""
import glob
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

SIDES = ("tokengate", "nginx")


def finding(key, text=None, rank=0, label=None):
    """`label`: how the table's cell names it (the key by default); `text`: the whole finding."""
    return {"key": key, "text": text or key, "rank": rank, "label": label or key}


def side(findings, figures=""):
    return {"findings": findings, "figures": figures}


def emit(row, tokengate, nginx, out=None):
    text = json.dumps({"row": row, "tokengate": tokengate, "nginx": nginx}, indent=1)
    if out:
        with open(out, "w") as f:
            f.write(text)
    else:
        print(text)


# testssl.sh: every finding of severity LOW and above, but those that name the host, the
# certificate (self-signed here, the same file for both) or the run itself.
SEVERITY = {"LOW": 1, "MEDIUM": 2, "HIGH": 3, "CRITICAL": 4}
TESTSSL_SKIP = ("scanTime", "service", "engine_problem", "pre_", "scanProblem", "cert_", "intermediate_cert",
                "DNS_CAArecord", "certificate_transparency", "OCSP", "TLS_timestamp", "HTTP_", "banner_",
                "security_headers", "cookie_", "overall_grade", "clientsimulation", "chain_of_trust")


def testssl(row, *paths):
    sides = []
    for path in paths:
        report = json.load(open(path))
        if not any(f["id"] == "scanTime" for f in report):
            sys.exit(f"{path}: the scan did not finish")
        kept = [f for f in report if not f["id"].startswith(TESTSSL_SKIP) and f.get("severity") in SEVERITY]
        figures = f"{sum(1 for f in report if f.get('severity') in ('OK', 'INFO'))} checks OK or INFO"
        sides.append(side([finding(f["id"], f"{f['id']} {f['severity']}: {f['finding']}", SEVERITY[f["severity"]],
                                   f"{f['id']} {f['severity']}")
                           for f in kept], figures))
    emit(row, *sides)


def conformance(work, results):
    per = {listener: {name: {"passed": 0, "failed": []} for name in SIDES} for listener in ("tls", "h2c")}
    for name in SIDES:
        for path in glob.glob(os.path.join(work, f"conformance-{name}-*.xml")):
            for case in ET.parse(path).getroot().iter("testcase"):
                test = case.get("name")
                params = re.search(r"\[(.*)\]$", test)
                ids = params.group(1).split("-") if params else []
                listener = next((i for i in ids if i in ("tls", "h2c")), None)
                if listener is None:
                    continue
                rest = "-".join(i for i in ids if i != listener)
                key = re.sub(r"\[.*\]$", "", test) + (f"[{rest}]" if rest else "")
                problem = case.find("failure")
                if problem is None:
                    problem = case.find("error")
                if problem is None:
                    per[listener][name]["passed"] += 1
                else:
                    message = (problem.get("message") or "").splitlines()
                    per[listener][name]["failed"].append(finding(key, f"{key}: {message[0][:160] if message else ''}"))
    for i, listener in enumerate(("tls", "h2c")):
        sides = []
        for name in SIDES:
            r = per[listener][name]
            if r["passed"] + len(r["failed"]) == 0:
                sys.exit(f"{name}: no conformance test ran on {listener}")
            sides.append(side(r["failed"], f"{r['passed']} of {r['passed'] + len(r['failed'])} tests pass"))
        emit(f"HTTP/2 conformance, {'TLS' if listener == 'tls' else 'h2c'}", *sides,
             out=os.path.join(results, f"2-conformance-{i}-{listener}.json"))


def redbot(tg_json, ng_json, results):
    reports = [json.load(open(p)) for p in (tg_json, ng_json)]
    for i, answer in enumerate(reports[0]):
        sides = []
        for report in reports:
            r = report[answer]
            found = [finding(n["summary"], f"{n['level']}: {n['summary']}") for n in r["notes"]]
            if r["error"]:
                found.append(finding("no answer", f"no answer: {r['error']}"))
            sides.append(side(found, f"{r['status']}"))
        emit(f"REDbot: {answer}", *sides, out=os.path.join(results, f"5-redbot-{i}.json"))


ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def slow(row, work, attack):
    sides = []
    for name in SIDES:
        text = ANSI.sub("", open(os.path.join(work, f"slow-{attack}-{name}.txt"), errors="replace").read())
        available = re.findall(r"service available:\s*(YES|NO)", text)
        status = re.search(r"Exit status:\s*(.*)", text)
        if not available or not status:
            sys.exit(f"slowhttptest {attack} at {name}: no status in its output")
        probe = json.load(open(os.path.join(work, f"probe-{attack}-{name}.json")))
        found = []
        if "NO" in available:
            found.append(finding("slowhttptest saw the service unavailable",
                                 f"slowhttptest saw the service unavailable in {available.count('NO')} "
                                 f"of {len(available)} checks"))
        if probe["success"] < 0.9:
            found.append(finding("prober answered under 90%", f"prober answered {probe['success']:.0%}",
                                 label=f"prober answered {probe['success']:.0%}"))
        if probe["longest_outage_s"] > 2:
            found.append(finding("outage over 2 s", f"longest outage {probe['longest_outage_s']} s",
                                 label=f"outage of {probe['longest_outage_s']} s"))
        sides.append(side(found, f"prober {probe['success']:.0%} of {probe['probes']}, longest outage "
                                 f"{probe['longest_outage_s']} s; {status.group(1).strip()}"))
    emit(row, *sides)


def h2load(work):
    sides = []
    for name in SIDES:
        path = os.path.join(work, f"h2load-{name}.txt")
        text = open(path).read() if os.path.exists(path) else ""
        counts = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                           r"(\d+) errored, (\d+) timeout", text)
        codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text)
        rps = re.search(r"([0-9.]+) req/s", text)
        if not counts or not codes or not rps:
            sys.exit(f"{path}: no h2load summary")
        total, _, done, ok, failed, errored, timeout = map(int, counts.groups())
        found = []
        for key, n in (("failed requests", failed), ("errored requests", errored), ("timed-out requests", timeout),
                       ("non-2xx answers", sum(map(int, codes.groups()[1:])))):
            if n:
                found.append(finding(key, f"{n} {key} of {total}", label=f"{n} {key}"))
        log = os.path.join(work, f"h2load-{name}.log")
        lat = sorted(int(line.split("\t")[2]) for line in open(log) if line.strip()) if os.path.exists(log) else []
        p99 = f"{lat[max(int(len(lat) * 0.99) - 1, 0)] / 1000:.1f} ms" if lat else "?"
        sides.append(side(found, f"{float(rps.group(1)):.0f} req/s, p99 {p99}, {done} done"))
    emit("h2load, h2 over TLS", *sides)


def fuzz(log, code):
    text = open(log, errors="replace").read() if os.path.exists(log) else ""
    passed = re.search(r"Test run with (\d+) tests? (?:in \d+ suites? )?passed", text)
    failed = sorted(set(re.findall(r"✘ Test (\S+)\(.*?\) recorded an issue", text)))
    found = [finding(f"{t} failed") for t in failed]
    if code != "0" and not found:
        found.append(finding("the replay did not pass", f"the replay did not pass (exit {code}): "
                             + (text.strip().splitlines() or ["no output"])[-1][:160]))
    if not passed and not found:
        sys.exit(f"{log}: no test ran")
    figures = f"{passed.group(1)} replay tests pass" if passed else "failed"
    emit("fuzz corpus replay", side(found, figures), None)


if __name__ == "__main__":
    commands = {"testssl": testssl, "conformance": conformance, "redbot": redbot, "slow": slow, "h2load": h2load,
                "fuzz": fuzz}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    commands[sys.argv[1]](*sys.argv[2:])
