#!/usr/bin/env python3
"""Lists the tests that started and never finished, from `swift test` output (Swift Testing's
"◇ Test X started." / "✔|✘ Test X passed|failed" lines): what a hung run was doing when it was
stopped. Usage: scripts/unfinished-tests.py LOG"""
import re
import sys

started, ended = {}, set()
with open(sys.argv[1], errors="replace") as log:
    for line in log:
        if m := re.search(r"◇ Test (?!case passing )(.+?) started\.", line):
            started.setdefault(m.group(1), line.strip())
        elif m := re.search(r"[✔✘] Test (.+?) (?:with \d+ test cases? )?(?:passed|failed)", line):
            ended.add(m.group(1))
unfinished = [name for name in started if name not in ended]
print(f"{len(unfinished)} test(s) started and never finished:" if unfinished else "every test that started finished")
for name in unfinished:
    print("   ", name)
