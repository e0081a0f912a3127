"""tools/list on an MCP route, from the caller's side: a real tokengate in front of the official
MCP SDK's server (support/mcp_upstream.py), tokens from a real JWKS server. A caller sees only
the tools it may call, whether the server answers with application/json or a text/event-stream;
`default: deny` hides every tool no rule names; in a stream, the events before the response
arrive as the server sent them, byte for byte and at once; an answer the gateway cannot read
(gzip) is refused, never passed unfiltered; and a client that closes the stream once it has its
answer is logged with the status it got, not 499. The SDK session's own tools/list is in
test_sdk.py."""
import json
import socket

import pytest
import requests

from support.mcp_upstream import COMMENT, PROGRESS_EVENT, MCPUpstream
from support.waiting import wait_for
from test_bearer import idp, token as mint  # noqa: F401 — idp is a fixture
from test_sdk import connect, run

ALL = ["count", "deploy", "echo", "whoami"]
DEPLOY_ONLY_WITH_SCOPE = '{ tools: { deploy: { require: { scopes: [mcp:deploy] } } } }'


def config(up, idp, mcp=DEPLOY_ONLY_WITH_SCOPE):
    route = """
  - name: {name}
    match: {{ path: {path} }}
    upstream: mcp
    auth: bearer
    issuers: [one]
    require: {{ scopes: [mcp] }}
    mcp: {mcp}"""
    routes = "".join(route.format(name=n, path=p, mcp=mcp)
                     for n, p in [("mcp", "/mcp"), ("progress", "/progress/mcp"), ("gzip", "/gzip/mcp")])
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
issuers:
  one:
    issuer: "https://idp.one"
    jwks_uri: "{idp.url}"
    algorithms: [ES256]
    audiences: ["http://127.0.0.1:{{PORT}}/mcp"]
upstreams:
  mcp: {{ url: "http://127.0.0.1:{up.port}" }}
routes:{routes}
"""


def upstream(tmp_path, json_response):
    up = MCPUpstream(str(tmp_path / f"mcp-upstream-{json_response}.log"), json_response=json_response)
    try:
        up.wait_ready()
    except BaseException:
        up.stop()
        raise
    return up


@pytest.fixture
def sse_upstream(tmp_path):
    up = upstream(tmp_path, json_response=False)
    yield up
    up.stop()


@pytest.fixture
def json_upstream(tmp_path):
    up = upstream(tmp_path, json_response=True)
    yield up
    up.stop()


def tok(idp, gw, scope="mcp"):
    return mint(idp.keys[0], aud=f"http://127.0.0.1:{gw.port}/mcp", scope=scope)


def tools_list(gw, token, id=1, path="/mcp", headers=None, raw_id=None):
    """A tools/list POST; `raw_id`: the id's JSON text as given (a number in another form)."""
    h = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
         "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    h.update(headers or {})
    body = json.dumps({"jsonrpc": "2.0", "id": id, "method": "tools/list"})
    if raw_id is not None:
        body = f'{{"jsonrpc": "2.0", "id": {raw_id}, "method": "tools/list"}}'
    return requests.post(gw.url(path), data=body, headers=h, timeout=10)


def sdk_tools(gw, token):
    """The tool names an SDK session lists through the gateway, and the tools/list answer's media type."""
    async def scenario():
        async with connect(gw, token) as (session, responses):
            names = sorted(t.name for t in (await session.list_tools()).tools)
            answer = next(r for r in responses if r.request.method == "POST" and b"tools/list" in r.request.content)
            return names, answer.headers["content-type"]
    return run(scenario)


def access_lines(gw):
    return [json.loads(line) for line in gw.output().splitlines()
            if line.startswith("{") and '"msg":"access"' in line.replace(" ", "")]


def test_an_sse_answer_lists_only_the_tools_the_token_may_call(sse_upstream, idp, gateway_factory):
    gw = gateway_factory(config(sse_upstream, idp))
    names, media = sdk_tools(gw, tok(idp, gw))
    assert media.startswith("text/event-stream")
    assert names == ["count", "echo", "whoami"]
    assert sdk_tools(gw, tok(idp, gw, "mcp mcp:deploy"))[0] == ALL


def test_a_json_answer_lists_only_the_tools_the_token_may_call(json_upstream, idp, gateway_factory):
    gw = gateway_factory(config(json_upstream, idp))
    names, media = sdk_tools(gw, tok(idp, gw))
    assert media.startswith("application/json")
    assert names == ["count", "echo", "whoami"]
    assert sdk_tools(gw, tok(idp, gw, "mcp mcp:deploy"))[0] == ALL
    # The same as plain POSTs, with a number and a string id: the length is the filtered body's,
    # and every field of a kept tool is as the server sent it.
    full = tools_list(gw, tok(idp, gw, "mcp mcp:deploy")).json()["result"]["tools"]
    for id in (41, "41"):
        r = tools_list(gw, tok(idp, gw), id=id, headers={"Accept-Encoding": "gzip, br"})
        assert r.status_code == 200, r.text
        assert "Content-Encoding" not in r.headers
        assert int(r.headers["Content-Length"]) == len(r.content)
        answer = r.json()
        assert answer["id"] == id and answer["jsonrpc"] == "2.0"
        assert answer["result"]["tools"] == [t for t in full if t["name"] != "deploy"]
        assert b"deploy" not in r.content
    # A number id in another form, which a server may echo as it reads it (this one answers
    # nothing, 202): never the hidden tool (the filter matches numbers by value).
    for raw_id in ("41.0", "4.1e1"):
        r = tools_list(gw, tok(idp, gw), raw_id=raw_id)
        assert r.status_code in (200, 202), r.text
        assert b"deploy" not in r.content, r.text


def test_default_deny_hides_every_tool_no_rule_names(json_upstream, idp, gateway_factory):
    deny = '{ default: deny, tools: { echo: { require: {} }, deploy: { require: { scopes: [mcp:deploy] } } } }'
    gw = gateway_factory(config(json_upstream, idp, mcp=deny))
    assert sdk_tools(gw, tok(idp, gw))[0] == ["echo"]
    assert sdk_tools(gw, tok(idp, gw, "mcp mcp:deploy"))[0] == ["deploy", "echo"]


def test_events_before_the_result_arrive_unchanged_and_at_once(sse_upstream, idp, gateway_factory):
    gw = gateway_factory(config(sse_upstream, idp))
    body = json.dumps({"jsonrpc": "2.0", "id": "list-1", "method": "tools/list",
                       "params": {"_meta": {"progressToken": "list"}}})
    r = requests.post(gw.url("/progress/mcp"), data=body, stream=True, timeout=10,
                      headers={"Authorization": f"Bearer {tok(idp, gw)}", "Content-Type": "application/json",
                               "Accept": "application/json, text/event-stream", "X-Ack-Run": "list-1"})
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/event-stream")
    # The progress event and the comment, byte for byte, before the server has even sent the
    # result: it sends it only once told that they are here.
    first = r.raw.read(len(PROGRESS_EVENT) + len(COMMENT))
    assert first == PROGRESS_EVENT + COMMENT, first
    for _ in range(2):  # the result, then the stream's end
        assert requests.post(sse_upstream.ack_url("list-1"), timeout=5).status_code == 200
    # Then the result rewritten: its id field kept, deploy gone.
    result = r.raw.read()
    assert result.startswith(b"event: message\nid: p2\ndata: "), result
    answer = json.loads(result.split(b"data: ", 1)[1].split(b"\n")[0])
    assert answer["id"] == "list-1"
    assert sorted(t["name"] for t in answer["result"]["tools"]) == ["count", "echo", "whoami"]
    assert b"deploy" not in result


def test_a_gzip_answer_is_refused_not_passed_unfiltered(sse_upstream, idp, gateway_factory):
    gw = gateway_factory(config(sse_upstream, idp))
    r = tools_list(gw, tok(idp, gw), path="/gzip/mcp", headers={"Accept-Encoding": "gzip, br"})
    assert r.status_code == 502, r.text
    assert r.json()["error"] == "bad_gateway"
    assert b"deploy" not in r.content and "Content-Encoding" not in r.headers
    # The gateway asked for no coding, whatever the client accepts; the server sent one anyway.
    assert sse_upstream.encodings() == ["identity"]
    gw.logged("the answer has a content coding the gateway cannot read (gzip)")


def test_a_client_closing_after_its_answer_is_logged_with_its_status(sse_upstream, idp, gateway_factory):
    gw = gateway_factory(config(sse_upstream, idp))
    body = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}).encode()
    request = (f"POST /progress/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {tok(idp, gw)}\r\n"
               f"Content-Type: application/json\r\nAccept: text/event-stream\r\nX-Ack-Run: close-5\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    with socket.create_connection(("127.0.0.1", gw.port), timeout=10) as s:
        s.sendall(request)
        assert requests.post(sse_upstream.ack_url("close-5"), timeout=5).status_code == 200  # the result may go
        got = b""
        while b"id: p2" not in got or not got.endswith(b"\n\r\n"):
            chunk = s.recv(65536)
            assert chunk, got
            got += chunk
        # The answer is in; the server holds the stream open until told: the client leaves.
    request_id = got.split(b"X-Request-Id: ", 1)[1].split(b"\r\n", 1)[0].decode()
    # Logged when the gateway finds the client gone, while the server still holds the stream.
    line = wait_for(lambda: next((a for a in access_lines(gw) if a["request_id"] == request_id), None),
                    what="the request's access line")
    assert requests.post(sse_upstream.ack_url("close-5"), timeout=5).status_code == 200  # the stream may end
    assert line["status"] == 200, line
    assert line["upstream_ms"] > 0, line
    assert "client closed" in line.get("detail", ""), line


@pytest.mark.parametrize("kind", ["json", "sse"])
def test_a_filtered_list_is_marked_private_for_every_cache(kind, tmp_path, idp, gateway_factory):  # noqa: F811
    """MCP 2026-07-28 (SEP-2549): a list filtered for one caller is marked `cacheScope:
    "private"` (a server's "public" would let a cache between client and gateway serve
    caller A's list to caller B), and the HTTP answer says `Cache-Control: private, no-store`,
    over JSON and over SSE."""
    up = upstream(tmp_path, json_response=kind == "json")
    try:
        gw = gateway_factory(config(up, idp))
        # The SSE answer from the hand-written stream (the SDK's SSE server wants a session).
        r = tools_list(gw, tok(idp, gw), id=9, path="/mcp" if kind == "json" else "/progress/mcp")
        assert r.status_code == 200, r.text
        assert r.headers["Cache-Control"] == "private, no-store"
        if kind == "json":
            answer = r.json()
        else:
            data = [line[5:].strip() for line in r.text.splitlines() if line.startswith("data:")]
            answer = next(json.loads(d) for d in data if d and '"result"' in d)
        assert answer["id"] == 9 and answer["result"]["cacheScope"] == "private", answer
        assert "deploy" not in [t["name"] for t in answer["result"]["tools"]]
        if kind == "sse":
            # The hand-written server said "public": the caller's list is private all the same,
            # and its ttlMs is kept.
            assert answer["result"]["ttlMs"] == 60000, answer
    finally:
        up.stop()


@pytest.mark.parametrize("method,params", [
    ("resources/list", {}),
    ("resources/read", {"uri": "file:///srv/readme.txt"}),
])
def test_every_cacheable_result_on_a_route_with_rules_is_marked_private(
        json_upstream, idp, gateway_factory, method, params):  # noqa: F811
    """SEP-2549: on a route whose rules differ by caller, what one caller may read another may
    not, so every cacheable result (server/discover, the lists, resources/read) is marked
    private and the answer says Cache-Control: private, no-store."""
    gw = gateway_factory(config(json_upstream, idp))
    body = json.dumps({"jsonrpc": "2.0", "id": 12, "method": method, "params": params})
    r = requests.post(gw.url("/mcp"), data=body, timeout=10, headers={
        "Authorization": f"Bearer {tok(idp, gw)}", "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"})
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["id"] == 12 and answer["result"]["cacheScope"] == "private", answer
    assert r.headers["Cache-Control"] == "private, no-store"
    if method == "resources/read":
        assert answer["result"]["contents"][0]["text"] == "hello from the server"
    # A call that is no cacheable result (tools/call) is left as the server wrote it.
    call = json.dumps({"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": {"name": "echo",
                                                                                     "arguments": {"text": "x"}}})
    r = requests.post(gw.url("/mcp"), data=call, timeout=10, headers={
        "Authorization": f"Bearer {tok(idp, gw)}", "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"})
    assert r.status_code == 200 and "cacheScope" not in r.json()["result"], r.text
