"""A prober beside the attack: GET every 100 ms with a 1 s timeout, for SECONDS; prints the
share answered 200 and the longest run of failures, in seconds, as JSON."""
import json
import sys
import time
import urllib.request

url, seconds = sys.argv[1], float(sys.argv[2])
ok = total = 0
outage = longest = 0.0
last_ok = time.time()
end = time.time() + seconds
while time.time() < end:
    started = time.time()
    try:
        with urllib.request.urlopen(url, timeout=1) as r:
            r.read()
            good = r.status == 200
    except Exception:
        good = False
    total += 1
    if good:
        ok += 1
        last_ok = time.time()
    else:
        longest = max(longest, time.time() - last_ok)
    time.sleep(max(0, 0.1 - (time.time() - started)))
print(json.dumps({"success": ok / max(total, 1), "probes": total, "longest_outage_s": round(longest, 2)}))
