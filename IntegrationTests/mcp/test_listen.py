"""MCP 2026-07-28's `subscriptions/listen` through a real tokengate, in front of the official MCP
Python SDK's server (support/mcp_upstream.py), with tokens from a real JWKS server: the one
long POST whose SSE answer replaces the 2025 GET stream. The server acknowledges it, then
says nothing but a `: ping` comment every 15 s. The stream outlives the upstream's `timeout`
(2 s here), ends at the route's `mcp.listen_timeout`, and ends when the caller's token
expires, like a tunnel; each end is a stream's end, which the SDK's own client reads as the
subscription closing."""
import json
import time

import anyio
import httpx2
import pytest
import requests
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from support.waiting import wait_for
from test_bearer import idp, token as mint  # noqa: F401 — idp is a fixture
from test_sdk import mcp_upstream  # noqa: F401 — fixture

V2026 = "2026-07-28"
CLOSED = {"jsonrpc": "2.0", "id": 1, "result": {"_meta": {"io.modelcontextprotocol/subscriptionId": 1}}}
META = {"io.modelcontextprotocol/protocolVersion": V2026, "io.modelcontextprotocol/clientCapabilities": {}}


def config(up, idp, listen_timeout="1h"):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
access_log: true
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", algorithms: [ES256], audiences: [api] }}
upstreams:
  mcp: {{ url: "http://127.0.0.1:{up.port}", timeout: 2s }}
routes:
  - name: mcp
    match: {{ path: /mcp }}
    upstream: mcp
    auth: bearer
    issuers: [one]
    require: {{ scopes: [mcp] }}
    mcp: {{ listen_timeout: {listen_timeout}, methods: {{ "subscriptions/listen": {{ require: {{ scopes: [mcp:listen] }} }} }} }}
"""


def tok(idp, scope="mcp mcp:listen", lifetime=300):
    return mint(idp.keys[0], scope=scope, exp=int(time.time()) + lifetime)


def listen(gw, token):
    body = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
            "params": {"notifications": {"toolsListChanged": True}, "_meta": META}}
    return requests.post(gw.url("/mcp"), json=body, stream=True, timeout=(5, 30), headers={
        "Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": V2026, "Mcp-Method": "subscriptions/listen"})


def read_to_end(r):
    """The stream's data lines, and the seconds until it ended (a clean end: no exception)."""
    start = time.monotonic()
    data = [json.loads(line[5:]) for line in r.iter_lines() if line.startswith(b"data:")]
    return data, time.monotonic() - start


def access_detail(gw):
    lines = [json.loads(x) for x in gw.output().splitlines() if x.startswith("{") and '"access"' in x]
    return [x.get("detail") for x in lines if x.get("mcp.method") == "subscriptions/listen"]


def test_a_listen_outlives_the_upstream_timeout_and_ends_when_its_token_expires(mcp_upstream, idp, gateway_factory):
    gw = gateway_factory(config(mcp_upstream, idp))
    r = listen(gw, tok(idp, lifetime=6))
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/event-stream"), r.text
    data, seconds = read_to_end(r)
    assert data[0]["method"] == "notifications/subscriptions/acknowledged", data
    # The spec's graceful close, as the server itself would end it: the listen's result.
    assert data[-1] == CLOSED, data
    # Open through three of the upstream's 2 s timeouts with nothing said, then closed at exp.
    assert 4 <= seconds <= 9, seconds
    wait_for(lambda: access_detail(gw), 5, interval=0.05, what="the stream's access line")
    assert access_detail(gw) == ["stream ended: access token expired"], gw.output()[-2000:]


def test_the_route_s_listen_timeout_ends_a_stream_whose_token_still_holds(mcp_upstream, idp, gateway_factory):
    gw = gateway_factory(config(mcp_upstream, idp, listen_timeout="3s"))
    r = listen(gw, tok(idp))
    assert r.status_code == 200, r.text
    data, seconds = read_to_end(r)
    assert data[0]["method"] == "notifications/subscriptions/acknowledged" and data[-1] == CLOSED, data
    assert 2.5 <= seconds <= 6, seconds
    wait_for(lambda: access_detail(gw), 5, interval=0.05, what="the stream's access line")
    assert access_detail(gw) == ["stream ended: listen_timeout"]


def test_listen_is_judged_as_a_method(mcp_upstream, idp, gateway_factory):
    gw = gateway_factory(config(mcp_upstream, idp))
    r = listen(gw, tok(idp, scope="mcp"))
    assert r.status_code == 403 and 'scope="mcp mcp:listen"' in r.headers["WWW-Authenticate"], r.text


def test_the_sdk_client_listens_through_the_gateway_until_the_token_expires(mcp_upstream, idp, gateway_factory):
    """The SDK's Client discovers the server (server/discover), opens the subscription, gets
    its acknowledgment, and sees the stream close as a graceful end (no SubscriptionLost)
    when the token expires."""
    gw = gateway_factory(config(mcp_upstream, idp))
    token = tok(idp, lifetime=5)

    async def scenario():
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(10, read=30))
        async with http, Client(streamable_http_client(gw.url("/mcp"), http_client=http)) as client:
            start = time.monotonic()
            async with client.listen(tools_list_changed=True) as sub:
                honored = sub.honored
                events = [event async for event in sub]
            return honored, events, time.monotonic() - start

    async def bounded():
        with anyio.fail_after(30):
            return await scenario()
    honored, events, seconds = anyio.run(bounded)
    assert honored is not None and events == [], (honored, events)
    assert 2 <= seconds <= 9, seconds
