"""Logs in once through tokengate (a scripted browser: every redirect followed by hand, the
AS logs the user in by itself) and prints the session cookie's value.

usage: cookie.py TOKENGATE_URL"""
import sys

import requests

base = sys.argv[1].rstrip("/")
s = requests.Session()
url = base + "/bench-login"
for _ in range(10):
    r = s.get(url, headers={"Accept": "text/html"}, allow_redirects=False, timeout=10)
    if r.status_code != 302:
        break
    url = r.headers["Location"] if r.headers["Location"].startswith("http") else base + r.headers["Location"]
cookie = s.cookies.get("tokengate_session")
if r.status_code != 200 or not cookie:
    sys.exit(f"login failed: {r.status_code} {r.text[:300]}")
print(cookie)
