"""MCP calls as an operator sees them, and the methods MCP 2026-07-28 removed, against a real
tokengate, the echo upstream, a real OTLP receiver and tokens from a real JWKS server:
`tokengate_mcp_calls_total{route,method,outcome}` counts each judged message by what became of
it (a client's made-up method is `other`), the server span names the call, and a method the
request's revision no longer has is judged only by what it still names."""
import json

import requests

from support.otlp_receiver import attributes
from test_access_log import metric
from test_bearer import idp, token as mint  # noqa: F401 — idp is a fixture
from test_refusals import DEPLOY, READ_FILE_2026, V2026, config, headers, mirrored, reached, tok
from test_tracing import SERVER, receiver, spans_of  # noqa: F401 — receiver is a fixture

DENY_UNLISTED = """  - name: mcpdeny
    match: { path_prefix: /deny/mcp }
    upstream: app
    auth: bearer
    issuers: [one]
    require: { scopes: [mcp] }
    mcp: { default: deny }"""


def subscribe(version=None, uri="file:///srv/unlisted.txt"):
    params = {"uri": uri} if uri else {}
    if version:
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": version}
    return json.dumps({"jsonrpc": "2.0", "id": 9, "method": "resources/subscribe", "params": params})


def test_a_method_the_2026_revision_removed_reaches_the_server_unjudged(upstream, idp, gateway_factory):
    """At 2025-11-25 a resources/subscribe is a read of the resource's updates, and
    `default: deny` hides an unnamed resource from it. At 2026-07-28 the method is gone: it
    needs no Mcp-Name, one without a uri reaches the server (whose -32601 is the answer), and
    one that still names a resource is judged by it."""
    gw = gateway_factory(config(upstream.port, idp, extra_routes=DENY_UNLISTED))
    token = mint(idp.keys[0], aud="api", scope="mcp")
    before = len(upstream.requests)
    r = requests.post(gw.url("/deny/mcp"), data=subscribe(), timeout=10,
                      headers={**headers(token), "MCP-Protocol-Version": "2025-11-25"})
    assert r.status_code == 403, r.text
    r = requests.post(gw.url("/deny/mcp"), data=json.dumps({"jsonrpc": "2.0", "id": 9,
                      "method": "resources/subscribe"}), headers=headers(token), timeout=10)
    assert r.status_code == 400 and r.json()["error"]["code"] == -32602, r.text
    assert len(upstream.requests) == before
    # At 2026-07-28 one without a uri names nothing: not refused for it, no Mcp-Name needed,
    # and it goes to the server as sent.
    body = subscribe(V2026, uri=None)
    r = requests.post(gw.url("/deny/mcp"), data=body, timeout=10,
                      headers=mirrored(token, method="resources/subscribe", name=None))
    assert r.status_code == 200, r.text
    assert r.json()["body_length"] == len(body)
    assert len(upstream.requests) == before + 1
    # One that names a resource is judged by it all the same: a server that speaks 2025 too
    # may honour it, whatever revision the request claims.
    r = requests.post(gw.url("/deny/mcp"), data=subscribe(V2026), timeout=10,
                      headers=mirrored(token, method="resources/subscribe", name=None))
    assert r.status_code == 403, r.text
    # A present Mcp-Name must still say what the body says.
    r = requests.post(gw.url("/deny/mcp"), data=subscribe(V2026), timeout=10,
                      headers=mirrored(token, method="resources/subscribe", name="file:///srv/other.txt"))
    assert r.status_code == 400 and r.json()["error"]["code"] == -32020, r.text
    assert len(upstream.requests) == before + 1


def test_each_judged_call_is_counted_by_method_and_outcome(upstream, idp, gateway_factory):
    gw = gateway_factory(config(upstream.port, idp))
    read_only = tok(idp, gw)
    send = [
        (READ_FILE_2026, mirrored(read_only), 200),                   # allowed
        (READ_FILE_2026, mirrored(read_only, name="deploy"), 400),    # header_mismatch
        (DEPLOY, headers(read_only), 403),                            # denied: no mcp:deploy
        (DEPLOY, {**headers(read_only), "MCP-Protocol-Version": "2024-11-05"}, 400),  # unsupported_version
        ("{not json", headers(read_only), 400),                       # invalid
        (json.dumps({"jsonrpc": "2.0", "id": 3, "method": "x/made-up"}), headers(read_only), 200),
    ]
    for body, h, status in send:
        r = requests.post(gw.url("/mcp"), data=body, headers=h, timeout=10)
        assert r.status_code == status, (body, r.text)
    counts = metric(gw, "tokengate_mcp_calls_total")
    want = {
        ("tools/call", "allowed"): 1, ("tools/call", "header_mismatch"): 1, ("tools/call", "denied"): 1,
        ("tools/call", "unsupported_version"): 1, ("-", "invalid"): 1, ("other", "allowed"): 1,
    }
    got = {}
    for series, n in counts.items():
        labels = dict(part.split("=", 1) for part in series[series.index("{") + 1:-1].split(","))
        assert labels['route'] == '"mcp"', series
        got[(labels["method"].strip('"'), labels["outcome"].strip('"'))] = n
    assert got == want, counts


def test_the_server_span_names_the_call(upstream, idp, receiver, gateway_factory):
    text = config(upstream.port, idp).replace(
        "admin_listen:", f'tracing: {{ otlp_endpoint: "{receiver.url}" }}\nadmin_listen:', 1)
    gw = gateway_factory(text)
    before = reached(upstream)
    r = requests.post(gw.url("/mcp"), data=READ_FILE_2026, headers=mirrored(tok(idp, gw), name="deploy"), timeout=10)
    assert r.status_code == 400
    assert reached(upstream) == before
    servers = [attributes(s) for s in spans_of(receiver, count=1) if s.kind == SERVER]
    assert len(servers) == 1, servers
    span = servers[0]
    # The body's call (what the gateway judged), not the header's.
    assert (span["mcp.method"], span["mcp.name"]) == ("tools/call", "read_file"), span
    assert span["http.response.status_code"] == 400
