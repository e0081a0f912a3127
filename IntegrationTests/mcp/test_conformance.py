"""The server-side checks of the official MCP conformance suite (modelcontextprotocol/conformance,
requirements/2026-07-28.yaml) that concern an intermediary, run at the 2026-07-28 wire against
the official MCP Python SDK's server twice: alone, and through a real tokengate (tokens from a
real JWKS server). Every check the server passes alone must pass through the gateway.

The suite itself is a Node program whose npm dependencies this project cannot install (the
npm registry is out of reach of its machines and CI), and its reference server is a Node
program too; so its checks are restated here, one function each, from the scenarios named:
- `server-stateless` (SEP-2575, SEP-2243): server/discover, errors carrying the request's id,
  an unsupported revision (400, -32022 with `data.supported` and `data.requested`), a
  mirrored header unlike the body (400, -32020), each removed method and an unknown one
  (404, -32601), a `_meta` without `clientInfo` served;
- `caching` (SEP-2549): `ttlMs` (an integer >= 0) and `cacheScope` (`public` or `private`) on
  the results of server/discover, tools/list, prompts/list, resources/list,
  resources/templates/list and resources/read;
- `dns-rebinding-protection`: a request whose Host and Origin name another site gets a 4xx;
  one from the server's own name is served."""
import json

import pytest
import requests

from test_bearer import idp, token as mint  # noqa: F401 — idp is a fixture
from test_sdk import mcp_upstream  # noqa: F401 — fixture

V2026 = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": V2026, "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "conformance-checks", "version": "1.0.0"}}
REMOVED = ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"]
CACHEABLE = [("server/discover", {}), ("tools/list", {}), ("prompts/list", {}), ("resources/list", {}),
             ("resources/templates/list", {}), ("resources/read", {"uri": "file:///srv/readme.txt"})]


def config(up, idp):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
public_url: http://127.0.0.1:{{PORT}}
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", algorithms: [ES256], audiences: [api] }}
upstreams:
  mcp: {{ url: "http://127.0.0.1:{up.port}" }}
routes:
  - name: mcp
    match: {{ path: /mcp }}
    upstream: mcp
    auth: bearer
    issuers: [one]
    require: {{ scopes: [mcp] }}
    mcp: {{ tools: {{ deploy: {{ require: {{ scopes: [mcp:deploy] }} }} }} }}
"""


class Target:
    """Where the checks send their requests: the server alone, or the gateway in front of it."""

    def __init__(self, name, url, host, headers=None):
        self.name, self.url, self.host, self.headers = name, url, host, headers or {}

    def post(self, method, params=None, id=1, headers=None, name=None, meta=META):
        body = {"jsonrpc": "2.0", "id": id, "method": method, "params": {**(params or {}), "_meta": meta}}
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
             "MCP-Protocol-Version": V2026, "Mcp-Method": method, **self.headers}
        if name is not None:
            h["Mcp-Name"] = name
        h.update(headers or {})
        r = requests.post(self.url, data=json.dumps(body), headers=h, timeout=10)
        return r.status_code, message(r, id)


def message(r, id):
    """The JSON-RPC message answering `id`: the body, or its event in an SSE answer."""
    if r.headers.get("Content-Type", "").startswith("text/event-stream"):
        for line in r.text.splitlines():
            if line.startswith("data:"):
                m = json.loads(line[5:])
                if m.get("id") == id:
                    return m
        return None
    try:
        return r.json()
    except ValueError:
        return None


def error_code(m):
    return (m or {}).get("error", {}).get("code")


# --- the checks: each returns None when it passes, else what it saw ------------------------

def check_discover(t):
    status, m = t.post("server/discover")
    ok = status == 200 and V2026 in (m or {}).get("result", {}).get("supportedVersions", [])
    return None if ok else (status, m)


def check_unsupported_version(t):
    status, m = t.post("tools/list", id=11, headers={"MCP-Protocol-Version": "2099-01-01"},
                       meta={**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"})
    data = (m or {}).get("error", {}).get("data", {})
    ok = (status == 400 and error_code(m) == -32022 and m.get("id") == 11
          and V2026 in data.get("supported", []) and data.get("requested") == "2099-01-01")
    return None if ok else (status, m)


def check_header_mismatch(t):
    status, m = t.post("tools/call", {"name": "echo", "arguments": {"text": "hi"}}, id=12, name="deploy")
    return None if status == 400 and error_code(m) == -32020 and m.get("id") == 12 else (status, m)


def check_removed_methods(t):
    seen = {}
    for i, method in enumerate(REMOVED):
        status, m = t.post(method, {"uri": "file:///srv/readme.txt"} if "subscribe" in method else {}, id=20 + i)
        if not (status == 404 and error_code(m) == -32601 and m.get("id") == 20 + i):
            seen[method] = (status, m)
    return seen or None


def check_unknown_method(t):
    status, m = t.post("x/unknown", id=30)
    return None if status == 404 and error_code(m) == -32601 and m.get("id") == 30 else (status, m)


def check_no_client_info(t):
    meta = {k: v for k, v in META.items() if not k.endswith("clientInfo")}
    status, m = t.post("tools/list", id=31, meta=meta)
    return None if status == 200 and "tools" in (m or {}).get("result", {}) else (status, m)


def check_caching_hints(t):
    seen = {}
    for i, (method, params) in enumerate(CACHEABLE):
        status, m = t.post(method, params, id=40 + i, name=params.get("uri"))
        result = (m or {}).get("result", {})
        ttl, scope = result.get("ttlMs"), result.get("cacheScope")
        if not (status == 200 and isinstance(ttl, int) and not isinstance(ttl, bool) and ttl >= 0
                and scope in ("public", "private")):
            seen[method] = (status, ttl, scope)
    return seen or None


def check_rebinding_rejected(t):
    status, _ = t.post("server/discover", headers={"Host": "evil.example", "Origin": "http://evil.example"})
    return None if 400 <= status < 500 else status


def check_own_name_accepted(t):
    status, _ = t.post("server/discover", headers={"Host": t.host, "Origin": f"http://{t.host}"})
    return None if status == 200 else status


CHECKS = [check_discover, check_unsupported_version, check_header_mismatch, check_removed_methods,
          check_unknown_method, check_no_client_info, check_caching_hints, check_rebinding_rejected,
          check_own_name_accepted]


@pytest.fixture
def targets(mcp_upstream, idp, gateway_factory):
    gw = gateway_factory(config(mcp_upstream, idp))
    token = mint(idp.keys[0], scope="mcp")
    alone = Target("server", f"http://127.0.0.1:{mcp_upstream.port}/mcp", f"localhost:{mcp_upstream.port}")
    through = Target("gateway", gw.url("/mcp"), f"127.0.0.1:{gw.port}", {"Authorization": f"Bearer {token}"})
    return alone, through


@pytest.mark.parametrize("check", CHECKS, ids=[c.__name__[len("check_"):] for c in CHECKS])
def test_what_the_server_passes_alone_it_passes_through_the_gateway(targets, check):
    alone, through = targets
    # The reference passes it alone (the SDK's server passes every check listed here)...
    assert check(alone) is None, (check.__name__, "the server alone", check(alone))
    # ...and so through the gateway.
    assert check(through) is None, (check.__name__, "through the gateway", check(through))


def test_the_gateway_marks_a_filtered_list_private_where_the_server_said_public(targets):
    """The caching scenario's hints through a route whose tool rules differ by caller: kept
    as hints, and `private` whatever the server said (SEP-2549)."""
    alone, through = targets
    _, direct = alone.post("tools/list", id=50)
    _, proxied = through.post("tools/list", id=50)
    assert direct["result"]["cacheScope"] in ("public", "private")
    assert proxied["result"]["cacheScope"] == "private" and proxied["result"]["ttlMs"] == direct["result"]["ttlMs"]
