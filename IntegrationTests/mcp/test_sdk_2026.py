"""The official MCP Python SDK at the 2026-07-28 revision on both sides of a real tokengate: its
`Client` (which finds the revision with server/discover, then sends every call as one POST
with its mirrored headers and `_meta`) in front, its server behind (support/mcp_upstream.py),
tokens from a real JWKS server. The 2025-11-25 session-based client is test_sdk.py's.
Covers: a list filtered to the caller's tools, a tool beyond the token's scope refused while
a broader scope (`scope_implies`) passes it, server/discover on a `default: deny` route, and
a `methods` rule on server/discover (which the SDK's client, refused there, would route
around by falling back to a 2025 `initialize`: that rule is checked on the wire)."""
import anyio
import httpx2
import pytest
import requests
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from test_bearer import idp, token as mint  # noqa: F401 — idp is a fixture
from test_sdk import mcp_upstream  # noqa: F401 — fixture


def config(up, idp, mcp):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
issuers:
  one:
    issuer: "https://idp.one"
    jwks_uri: "{idp.url}"
    algorithms: [ES256]
    audiences: [api]
    scope_implies: {{ "mcp:admin": ["mcp:write"], "mcp:write": ["mcp:deploy"] }}
upstreams:
  mcp: {{ url: "http://127.0.0.1:{up.port}" }}
routes:
  - name: mcp
    match: {{ path: /mcp }}
    upstream: mcp
    auth: bearer
    issuers: [one]
    require: {{ scopes: [mcp] }}
    mcp: {mcp}
"""


META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
TOOL_RULES = "{ tools: { deploy: { require: { scopes: [mcp:deploy] } } } }"


def session(gw, scope):
    """Runs `scenario(client)` with an SDK Client through the gateway, bounded in time."""
    token = mint(gw.idp.keys[0], scope=scope)

    def run(scenario):
        async def go():
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(10))
            async with http, Client(streamable_http_client(gw.url("/mcp"), http_client=http)) as client:
                return await scenario(client)

        async def bounded():
            with anyio.fail_after(30):
                return await go()
        return anyio.run(bounded)
    return run


@pytest.fixture
def gateway(mcp_upstream, idp, gateway_factory):
    def make(mcp=TOOL_RULES):
        gw = gateway_factory(config(mcp_upstream, idp, mcp))
        gw.idp = idp
        return gw
    return make


def test_the_list_holds_the_callers_tools_and_a_broader_scope_passes_a_narrow_tool(gateway, mcp_upstream):
    gw = gateway()

    async def names_and_calls(client):
        assert client.protocol_version == "2026-07-28", client.protocol_version
        listed = await client.list_tools()
        echoed = await client.call_tool("echo", {"text": "hi"})
        try:
            deployed = await client.call_tool("deploy", {"target": "prod"})
        except Exception as e:  # the SDK raises what the gateway's 403 means to it
            deployed = e
        return sorted(t.name for t in listed.tools), listed.cache_scope, echoed, deployed

    names, scope, echoed, deployed = session(gw, "mcp")(names_and_calls)
    assert "deploy" not in names and "echo" in names, names
    assert scope == "private"
    assert echoed.content[0].text == "hi"
    assert isinstance(deployed, Exception) or deployed.is_error, deployed
    assert "deploy" not in mcp_upstream.calls()
    # mcp:admin implies mcp:write, which implies mcp:deploy (transitive).
    names, _, _, deployed = session(gw, "mcp mcp:admin")(names_and_calls)
    assert "deploy" in names, names
    assert not isinstance(deployed, Exception) and deployed.content[0].text == "deployed prod", deployed
    assert mcp_upstream.calls().count("deploy") == 1


def test_discover_passes_a_default_deny_route_unless_a_methods_rule_names_it(gateway):
    """server/discover replaces initialize: it names no tool, so `default: deny` does not
    hide it; only a `methods` entry that names it judges it."""
    gw = gateway("{ default: deny, tools: { echo: { require: {} } } }")

    async def echo(client):
        return client.protocol_version, (await client.call_tool("echo", {"text": "through"})).content[0].text
    assert session(gw, "mcp")(echo) == ("2026-07-28", "through")
    gw = gateway('{ default: deny, methods: { "server/discover": { require: { scopes: [mcp:discover] } } }, '
                 'tools: { echo: { require: {} } } }')

    def discover(scope):
        body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}
        return requests.post(gw.url("/mcp"), json=body, timeout=10, headers={
            "Authorization": f"Bearer {mint(gw.idp.keys[0], scope=scope)}",
            "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "server/discover"})
    r = discover("mcp")
    assert r.status_code == 403 and 'scope="mcp mcp:discover"' in r.headers["WWW-Authenticate"], r.text
    assert discover("mcp mcp:discover").status_code == 200
    assert session(gw, "mcp mcp:discover")(echo) == ("2026-07-28", "through")
