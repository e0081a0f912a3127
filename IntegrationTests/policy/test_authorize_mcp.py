"""tools/list on an MCP route with `authorize` (docs/policy.md, "MCP"): the PDP is asked
about the answer's tools in one `access/v1/evaluations` call (AuthZEN §7) and the caller
sees only those it allows, besides the route's own `mcp` rules, whether the server answers
with application/json or a text/event-stream; a PDP that gives no usable answer lets no
tool be listed. The official MCP SDK's server upstream, a real tokengate, the test PDP."""
import pytest

from support.authzen_pdp import PDP
from test_bearer import idp  # noqa: F401 — idp is a fixture
from test_tools_list import config as mcp_config, json_upstream, sdk_tools, sse_upstream, tok, tools_list  # noqa: F401,E501


def config(up, idp, pdp):  # noqa: F811
    text = mcp_config(up, idp)
    text = text.replace("upstreams:", f"""authorizers:
  pdp: {{ url: "{pdp.url}", timeout: 2s, subject: {{ id: sub }} }}
upstreams:""", 1)
    return text.replace("    mcp: {", "    authorize: pdp\n    mcp: {")


@pytest.fixture
def pdp():
    p = PDP()

    def decide(body):
        resource = body["resource"]
        if resource["type"] == "mcp_tool":
            return {"decision": resource["id"] != "echo"}
        return {"decision": True}
    p.decide = decide
    p.start()
    yield p
    p.stop()


@pytest.mark.parametrize("kind", ["sse", "json"])
def test_the_pdp_hides_the_tools_it_does_not_allow(kind, sse_upstream, json_upstream, idp, pdp,  # noqa: F811
                                                   gateway_factory):
    up = sse_upstream if kind == "sse" else json_upstream
    gw = gateway_factory(config(up, idp, pdp))
    names, media = sdk_tools(gw, tok(idp, gw))
    assert media.startswith("text/event-stream" if kind == "sse" else "application/json")
    # deploy: the route's rule (no mcp:deploy scope); echo: the PDP.
    assert names == ["count", "whoami"]
    assert sdk_tools(gw, tok(idp, gw, "mcp mcp:deploy"))[0] == ["count", "deploy", "whoami"]
    assert not pdp.schema_errors
    batches = [c for c in pdp.calls if c["path"] == "/access/v1/evaluations"]
    assert len(batches) == 2
    body = batches[0]["body"]
    assert body["action"] == {"name": "tools/call"}
    assert body["subject"]["id"] == "alice"
    assert sorted(e["resource"]["id"] for e in body["evaluations"]) == ["count", "deploy", "echo", "whoami"]
    assert all(e["resource"]["type"] == "mcp_tool" and e["resource"]["properties"] == {"route": "mcp"}
               for e in body["evaluations"])


@pytest.mark.parametrize("kind", ["sse", "json"])
def test_no_usable_answer_lists_no_tool(kind, sse_upstream, json_upstream, idp, pdp, gateway_factory):  # noqa: F811
    up = sse_upstream if kind == "sse" else json_upstream
    gw = gateway_factory(config(up, idp, pdp))
    token = tok(idp, gw, "mcp mcp:deploy")
    allow_all = pdp.decide

    def broken(body):
        if body["resource"]["type"] == "mcp_tool":
            return {"decision": "maybe"}
        return allow_all(body)
    pdp.decide = broken
    names, _ = sdk_tools(gw, token)
    assert names == []
    if kind == "json":
        r = tools_list(gw, token)
        assert r.status_code == 200 and r.json()["result"]["tools"] == []


def test_a_tools_call_is_asked_about_its_tool(json_upstream, idp, pdp, gateway_factory):  # noqa: F811
    import json
    import requests
    gw = gateway_factory(config(json_upstream, idp, pdp))
    token = tok(idp, gw)

    def call(name):
        body = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                           "params": {"name": name, "arguments": {"text": "hi"}}})
        return requests.post(gw.url("/mcp"), data=body, timeout=10, headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"})
    denied = call("echo")
    assert denied.status_code == 403 and denied.json()["error"] == "access_denied"
    assert call("count").status_code == 200
    asked = [c["body"] for c in pdp.evaluation_calls()]
    assert {"type": "mcp_tool", "id": "echo", "properties": {"route": "mcp"}} in [b["resource"] for b in asked]
    assert all(b["action"] == {"name": "tools/call"} for b in asked if b["resource"]["type"] == "mcp_tool")
