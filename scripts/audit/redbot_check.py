"""REDbot (PyPI redbot) on one server's own answers: each request below, checked as REDbot's
command line checks a URL (its active checks included), with the request's headers, which
that command line cannot send. Prints a JSON object: for each answer its status and REDbot's
notes that are warnings or errors ({"level", "category", "summary"}).

usage: redbot_check.py BASE_URL ADMIN_URL NO_SCOPE_TOKEN"""
import json
import sys
from configparser import ConfigParser

import thor
from httplint.note import levels
from redbot.resource import HttpResource

base, admin, token = sys.argv[1:4]
BROWSER = [("Accept", "text/html"), ("Sec-Fetch-Mode", "navigate")]
ANSWERS = {
    "401 and its challenge": (f"{base}/api/orders", []),
    "403 insufficient_scope": (f"{base}/api/orders", [("Authorization", f"Bearer {token}")]),
    "429": (f"{base}/limited/", []),
    "protected-resource metadata": (f"{base}/.well-known/oauth-protected-resource/api/", []),
    "status page": (f"{admin}/status", []),
    "/metrics": (f"{admin}/metrics", []),
    "login start": (f"{base}/web/", BROWSER),
    "login: sign-in failed page": (f"{base}/oauth2/callback?state=unknown&code=x", BROWSER),
    "logout page": (f"{base}/oauth2/logout", BROWSER),
}

parser = ConfigParser()
parser.read_dict({"redbot": {"enable_local_access": "True"}})
config = parser["redbot"]
out = {}
pending = set()


def check(name, url, headers):
    resource = HttpResource(config)
    resource.set_request(url, headers=headers)
    pending.add(name)

    @thor.events.on(resource)
    def check_done():
        response = resource.response
        notes = [{"level": n.level.value, "category": n.category.value, "summary": n.summary}
                 for n in response.notes if n.level in (levels.WARN, levels.BAD)]
        error = str(resource.fetch_error) if resource.fetch_error else None
        out[name] = {"url": url, "status": response.status_code, "notes": notes, "error": error}
        pending.discard(name)
        if not pending:
            thor.stop()

    resource.check()


for name, (url, headers) in ANSWERS.items():
    check(name, url, headers)
thor.schedule(90, thor.stop)
thor.run()
for name in pending:
    out[name] = {"url": ANSWERS[name][0], "status": None, "notes": [], "error": "no answer within 90 s"}
json.dump({name: out[name] for name in ANSWERS}, sys.stdout, indent=1)
