"""The audit's table: one row per tool (and per key type, listener, attack or answer), each
side's findings and figures, and a verdict. "regression": tokengate has a finding that nginx
lacks, or the same finding at a higher severity; "accepted": it has, but each is listed in
accepted.json with its reason; "ok": it has none nginx lacks ("same" when both have the same);
where there is no nginx side (the fuzz replay), any finding is a regression. Prints the table; exits 1 on a regression. --write PATH also writes the Markdown page
(docs/audit.md) with the table and how to read it.

usage: table.py RESULTS_DIR --mode quick|full --binary PATH --nginx VERSION [--write PATH]"""
import argparse
import glob
import json
import os
import shutil
import textwrap

parser = argparse.ArgumentParser()
parser.add_argument("results")
parser.add_argument("--mode", default="full")
parser.add_argument("--binary", default="tokengate")
parser.add_argument("--nginx", default="?")
parser.add_argument("--write")
args = parser.parse_args()

rows = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(args.results, "*.json")))]


# Findings of tokengate's alone that are kept on purpose, each with its reason (row, key, why):
# the verdict is then "accepted", and the reason is printed with the table.
ACCEPTED = {(a["row"], a["key"]): a["why"]
            for a in json.load(open(os.path.join(os.path.dirname(__file__), "accepted.json")))}
accepted_seen = []


def verdict(row):
    ours, theirs = row["tokengate"]["findings"], row["nginx"]
    peer = {} if theirs is None else {f["key"]: f["rank"] for f in theirs["findings"]}
    new = [f for f in ours if f["key"] not in peer or f["rank"] > peer[f["key"]]]
    kept = [f for f in new if (row["row"], f["key"]) in ACCEPTED]
    accepted_seen.extend((row["row"], f["text"], ACCEPTED[(row["row"], f["key"])]) for f in kept)
    if len(kept) < len(new):
        return "regression", [f["text"] for f in new if f not in kept]
    if kept:
        return "accepted", []
    if theirs is None:
        return "ok", []
    same = {f["key"] for f in ours} == set(peer) and all(peer[f["key"]] == f["rank"] for f in ours)
    return ("same" if ours and same else "ok"), []


def cell(s):
    if s is None:
        return "—"
    n = len(s["findings"])
    # The labels only (a finding's whole text is printed below the table for a regression).
    head = "none" if n == 0 else f"{n}: " + "; ".join(f["label"] for f in s["findings"][:3]) + ("; …" if n > 3 else "")
    return f"{head} ({s['figures']})" if s["figures"] else head


table = [(r["row"], cell(r["tokengate"]), cell(r["nginx"]), *verdict(r)) for r in rows]
regressions = [t for t in table if t[3] == "regression"]

# The terminal: fixed columns, findings wrapped.
width = max(shutil.get_terminal_size((160, 20)).columns, 120)
name_w, verdict_w = 36, 10
side_w = (width - name_w - verdict_w - 6) // 2
print(f"{'row':{name_w}} | {'tokengate':{side_w}} | {'nginx':{side_w}} | verdict")
print("-" * width)
for name, ours, theirs, v, _ in table:
    a = textwrap.wrap(ours, side_w) or [""]
    b = textwrap.wrap(theirs, side_w) or [""]
    for i in range(max(len(a), len(b))):
        print(f"{name if i == 0 else '':{name_w}} | {a[i] if i < len(a) else '':{side_w}} | "
              f"{b[i] if i < len(b) else '':{side_w}} | {v if i == 0 else ''}")
print("-" * width)
for name, text, why in accepted_seen:
    print(f"accepted   {name}: {text} ({why})")
for name, _, _, _, new in regressions:
    for text in new:
        print(f"REGRESSION {name}: {text}")
print(f"audit ({args.mode}): {len(table)} rows, {len(regressions)} regressions")

if args.write:
    md = lambda s: s.replace("|", "\\|")  # noqa: E731
    lines = [line.format(mode=args.mode, nginx=args.nginx, binary=os.path.relpath(args.binary),
                         n=len(table), r=len(regressions))
             for line in open(os.path.join(os.path.dirname(__file__), "audit.md.in")).read().splitlines()]
    at = lines.index("@TABLE@")
    body = ["| row | tokengate | nginx | verdict |", "|---|---|---|---|"]
    body += [f"| {md(n)} | {md(a)} | {md(b)} | {v} |" for n, a, b, v, _ in table]
    if accepted_seen:
        body += ["", "Accepted, each for its reason (`scripts/audit/accepted.json`):", ""]
        body += [f"- {n}: {md(t.rstrip('.'))}. {md(w)}" for n, t, w in accepted_seen]
    with open(args.write, "w") as f:
        f.write("\n".join(lines[:at] + body + lines[at + 1:]) + "\n")
raise SystemExit(1 if regressions else 0)
