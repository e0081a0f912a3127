"""MCP routes from the attacker's side: a real tokengate in front of the echo upstream, tokens
from a real JWKS server. Each JSON-RPC call in a POST is read and judged by the route's
`mcp` rules before the upstream hears of it: wrong media types, oversized and malformed
bodies, duplicate members, batches and calls the token does not cover never reach it, and
each refusal has the shape a client can act on (415, 413, a JSON-RPC error object, 403
insufficient_scope with the scope to ask for). The MCP SDK's own client and server are in
test_sdk.py."""
import json
import re
import socket
import time

import pytest
import requests

from support.gateway import raw_request, sent_headers as sent
from support.pacing import paced
from test_bearer import idp, token as mint  # noqa: F401 — idp is a fixture


def config(upstream, idp, extra=""):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
trusted_proxies: [127.0.0.1/32]
decision: {{}}
issuers:
  one:
    issuer: "https://idp.one"
    jwks_uri: "{idp.url}"
    algorithms: [ES256]
    audiences: [api, "http://127.0.0.1:{{PORT}}/mcp"]
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - name: mcp
    match: {{ path: /mcp }}
    upstream: app
    auth: bearer
    issuers: [one]
    require: {{ scopes: [mcp] }}
    resource: http://127.0.0.1:{{PORT}}/mcp
    mcp:
      max_request_bytes: 4KB
      methods: {{ "tools/list": {{ require: {{ scopes: [mcp:list] }} }} }}
      tools:
        deploy: {{ require: {{ scopes: [mcp:deploy] }} }}
        audit: {{ require: {{ claims: {{ groups: {{ contains: auditors }} }} }} }}
      resources: {{ "file:///etc/secret": {{ require: {{ scopes: [mcp:files] }} }} }}
      prompts: {{ triage: {{ require: {{ scopes: [mcp:triage] }} }} }}
  - name: strict
    match: {{ path: /strict/mcp }}
    upstream: app
    auth: bearer
    issuers: [one]
    mcp: {{ default: deny, tools: {{ echo: {{ require: {{}} }} }} }}
{extra}"""


@pytest.fixture
def gw(upstream, idp, gateway_factory):
    return gateway_factory(config(upstream, idp))


def tok(idp, gw, scope="mcp", **claims):
    return mint(idp.keys[0], aud=f"http://127.0.0.1:{gw.port}/mcp", scope=scope, claims=claims or None)


def call(method, id=1, **params):
    m = {"jsonrpc": "2.0", "id": id, "method": method}
    if params:
        m["params"] = params
    return json.dumps(m)


def post(gw, token, body, path="/mcp", content_type="application/json", headers=None):
    h = {"Authorization": f"Bearer {token}", "Content-Type": content_type,
         "Accept": "application/json, text/event-stream"}
    h.update(headers or {})
    return requests.post(f"http://127.0.0.1:{gw.port}{path}", data=body, headers=h, timeout=10)


def challenge(r):
    return dict(re.findall(r'(\w+)="([^"]*)"', r.headers.get("WWW-Authenticate", "")))


def forwarded(upstream):
    return [r for r in upstream.requests if r["path"].endswith("mcp")]


def test_an_allowed_call_reaches_the_upstream_whole(gw, idp, upstream):
    body = call("tools/call", name="echo", arguments={"text": "hé" * 100})
    r = post(gw, tok(idp, gw), body)
    assert r.status_code == 200, r.text
    assert r.json()["body_length"] == len(body.encode())
    assert "authorization" not in sent(r)
    assert sent(r)["x-forwarded-user"] == "alice"
    # GET (the server's SSE stream) and DELETE (session end) need only the route's rule.
    for method in ("GET", "DELETE"):
        r = requests.request(method, f"http://127.0.0.1:{gw.port}/mcp",
                             headers={"Authorization": f"Bearer {tok(idp, gw)}", "Mcp-Session-Id": "s-1"}, timeout=10)
        assert r.status_code == 200, (method, r.text)
        assert sent(r)["mcp-session-id"] == "s-1"


def test_a_tool_beyond_the_tokens_scope_is_403_with_the_scope_to_ask_for(gw, idp, upstream):
    before = len(forwarded(upstream))
    r = post(gw, tok(idp, gw), call("tools/call", name="deploy", arguments={}))
    assert r.status_code == 403, r.text
    c = challenge(r)
    assert r.headers["WWW-Authenticate"].startswith("Bearer ")
    assert c["error"] == "insufficient_scope"
    # The route's scope and the tool's: one step-up is enough (MCP 2025-11-25).
    assert c["scope"] == "mcp mcp:deploy"
    assert c["resource_metadata"] == f"http://127.0.0.1:{gw.port}/.well-known/oauth-protected-resource/mcp"
    assert r.json()["error"] == "insufficient_scope"
    assert len(forwarded(upstream)) == before
    # Stepped up: the same call passes.
    r = post(gw, tok(idp, gw, scope="mcp mcp:deploy"), call("tools/call", name="deploy", arguments={}))
    assert r.status_code == 200, r.text
    assert gw.logged('"rejection":"insufficient_scope"')


@pytest.mark.parametrize("body,scope", [
    (call("tools/list"), "mcp mcp:list"),
    (call("resources/read", uri="file:///etc/secret"), "mcp mcp:files"),
    (call("resources/subscribe", uri="file:///etc/secret"), "mcp mcp:files"),
    (call("prompts/get", name="triage"), "mcp mcp:triage"),
])
def test_methods_resources_and_prompts_have_their_own_rules(gw, idp, body, scope):
    r = post(gw, tok(idp, gw), body)
    assert r.status_code == 403, r.text
    assert challenge(r)["scope"] == scope
    assert post(gw, tok(idp, gw, scope=scope), body).status_code == 200


def test_a_claim_rule_on_a_tool(gw, idp):
    body = call("tools/call", name="audit")
    r = post(gw, tok(idp, gw), body)
    assert r.status_code == 403 and challenge(r)["error"] == "insufficient_scope"
    assert post(gw, tok(idp, gw, groups=["auditors"]), body).status_code == 200


def test_default_deny_refuses_unnamed_tools_without_a_challenge(gw, idp):
    # This route has no resource: a token bound to /mcp's is no audience here.
    t = mint(idp.keys[0], aud="api", scope="mcp")
    assert post(gw, t, call("tools/call", name="echo"), path="/strict/mcp").status_code == 200
    r = post(gw, t, call("tools/call", name="Echo"), path="/strict/mcp")
    assert r.status_code == 403
    assert r.json()["error"] == "access_denied"
    assert "WWW-Authenticate" not in r.headers
    # Methods are not tools: initialize passes on the route's rule.
    assert post(gw, t, call("initialize", protocolVersion="2025-11-25"), path="/strict/mcp").status_code == 200


@pytest.mark.parametrize("content_type", [
    "text/plain", "application/x-www-form-urlencoded", "application/json; charset=utf-16",
    "application/json;charset=latin1", "application/jsonx", "multipart/form-data; boundary=x",
])
def test_a_call_in_another_media_type_is_415(gw, idp, upstream, content_type):
    before = len(forwarded(upstream))
    r = post(gw, tok(idp, gw), call("tools/call", name="deploy"), content_type=content_type)
    assert r.status_code == 415, r.text
    assert r.json()["error"] == "invalid_request"
    assert len(forwarded(upstream)) == before


def test_a_content_coding_or_a_second_content_type_is_415(gw, idp):
    t = tok(idp, gw)
    body = call("tools/call", name="deploy").encode()
    r = post(gw, t, body, headers={"Content-Encoding": "gzip"})
    assert r.status_code == 415
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {t}\r\n"
            f"Content-Type: application/json\r\nContent-Type: text/plain\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    status, _ = raw_request(gw.port, head + body)
    assert status == 415


def test_an_oversized_body_is_413_and_never_buffered(gw, idp, upstream):
    before = len(forwarded(upstream))
    big = call("tools/call", name="echo", arguments={"text": "x" * 5000})
    r = post(gw, tok(idp, gw), big)
    assert r.status_code == 413, r.text
    # Chunked, with no length announced: cut off at the limit all the same.
    r = post(gw, tok(idp, gw), iter([big[:3000].encode(), big[3000:].encode()]))
    assert r.status_code == 413, r.text
    assert len(forwarded(upstream)) == before


@pytest.mark.parametrize("body,code", [
    ('{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{"name":"deploy"}}', -32700),
    ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"deploy"}}', -32700),
    ('[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy"}}]', -32600),
    ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":["deploy"]}}', -32602),
    ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":null}}', -32602),
    ('{"jsonrpc":"2.0","id":1,"method":"tools/call"}', -32602),
    ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}} {}', -32700),
    ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"de\\u0070loy"}', -32700),
    ('not json', -32700),
])
def test_malformed_json_rpc_is_400_with_an_error_object(gw, idp, upstream, body, code):
    before = len(forwarded(upstream))
    r = post(gw, tok(idp, gw, scope="mcp mcp:deploy"), body)
    assert r.status_code == 400, r.text
    assert r.headers["Content-Type"].startswith("application/json")
    err = r.json()
    assert err["jsonrpc"] == "2.0" and err["error"]["code"] == code
    assert len(forwarded(upstream)) == before


def test_an_escaped_tool_name_is_the_same_tool(gw, idp):
    """JSON escapes do not hide a tool: "de\\u0070loy" is deploy, judged as deploy."""
    r = post(gw, tok(idp, gw), '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"de\\u0070loy"}}')
    assert r.status_code == 403 and challenge(r)["scope"] == "mcp mcp:deploy"


def test_a_call_split_across_slow_chunks_is_judged_whole(gw, idp, upstream):
    t = tok(idp, gw)
    body = call("tools/call", name="deploy", arguments={"a": 1}).encode()
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {t}\r\n"
            f"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", gw.port), timeout=10) as s:
        s.sendall(head)
        for i in paced(range(0, len(body), 7), 0.02):
            piece = body[i:i + 7]
            s.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        s.sendall(b"0\r\n\r\n")
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 403"), reply[:200]
    assert b'error="insufficient_scope"' in reply


def test_the_metadata_lists_the_rules_scopes(gw):
    r = requests.get(f"http://127.0.0.1:{gw.port}/.well-known/oauth-protected-resource/mcp", timeout=10)
    assert r.status_code == 200
    assert r.json()["scopes_supported"] == ["mcp", "mcp:list", "mcp:deploy", "mcp:files", "mcp:triage"]


def test_a_decision_for_an_mcp_post_is_refused(gw, idp):
    """An ingress's auth subrequest carries no body: the call cannot be judged, so a POST
    is refused instead of passing on the route's rule alone; a GET is decided as usual."""
    t = tok(idp, gw, scope="mcp mcp:deploy")
    url = f"http://127.0.0.1:{gw.port}/_tokengate/auth"
    headers = {"Authorization": f"Bearer {t}", "X-Original-URL": f"http://127.0.0.1:{gw.port}/mcp"}
    r = requests.get(url, headers={**headers, "X-Original-Method": "POST"}, timeout=10)
    assert r.status_code == 403, r.text
    assert r.json()["error"] == "access_denied"
    r = requests.get(url, headers={**headers, "X-Original-Method": "GET"}, timeout=10)
    assert r.status_code == 200, r.text


def test_a_token_for_another_resource_is_401(gw, idp):
    t = mint(idp.keys[0], aud="api", scope="mcp mcp:deploy")
    r = post(gw, t, call("tools/call", name="echo"))
    assert r.status_code == 401
    assert challenge(r)["error"] == "invalid_token"


def test_a_spoofed_identity_header_never_arrives(gw, idp):
    r = post(gw, tok(idp, gw), call("tools/call", name="echo"), headers={"X-Forwarded-User": "admin"})
    assert r.status_code == 200
    assert sent(r)["x-forwarded-user"] == "alice"


ONLY_2026 = """  - name: mcp2026
    match: { path: /v2026/mcp }
    upstream: app
    auth: bearer
    issuers: [one]
    require: { scopes: [mcp] }
    mcp:
      protocol_versions: [2026-07-28]
      tools: { deploy: { require: { scopes: [mcp:deploy] } } }
  - name: mcp2026deny
    match: { path: /v2026/deny/mcp }
    upstream: app
    auth: bearer
    issuers: [one]
    require: { scopes: [mcp] }
    mcp: { protocol_versions: [2026-07-28], default: deny }"""


def test_a_decision_for_a_2026_post_is_judged_on_its_mirrored_headers(upstream, idp, gateway_factory):
    """MCP 2026-07-28 (SEP-2243): an ingress's auth subrequest has no body, but the call is
    named in Mcp-Method and Mcp-Name; on a route that takes 2026-07-28 only (its server must
    refuse a body that disagrees with them), the route's rules judge it as they judge a body.
    On a route that still takes a 2025 revision the server may run the body whatever the
    headers say: 403 there, whatever the client claims."""
    gw = gateway_factory(config(upstream, idp, extra=ONLY_2026))
    url = f"http://127.0.0.1:{gw.port}/_tokengate/auth"

    def decide(scope, path="/v2026/mcp", **mirrored):
        headers = {"Authorization": f"Bearer {mint(idp.keys[0], aud='api', scope=scope)}",
                   "X-Original-URL": f"http://127.0.0.1:{gw.port}{path}", "X-Original-Method": "POST",
                   "MCP-Protocol-Version": "2026-07-28"}
        headers.update({f"Mcp-{k.capitalize()}": v for k, v in mirrored.items()})
        return requests.get(url, headers=headers, timeout=10)
    assert decide("mcp mcp:deploy", method="tools/call", name="deploy").status_code == 200
    r = decide("mcp", method="tools/call", name="deploy")
    assert r.status_code == 403 and 'scope="mcp mcp:deploy"' in r.headers["WWW-Authenticate"], r.text
    assert decide("mcp", method="tools/call", name="echo").status_code == 200
    # The name in its Base64 form is the same name; a plain one with a comma (two names an
    # ingress joined) is refused.
    assert decide("mcp", method="tools/call", name="=?base64?ZGVwbG95?=").status_code == 403
    assert decide("mcp mcp:deploy", method="tools/call", name="deploy,deploy").status_code == 400
    assert decide("mcp", method="tools/call").status_code == 400
    # A list the rules would filter cannot be filtered here.
    assert decide("mcp", method="tools/list").status_code == 403
    # A method 2026-07-28 removed names nothing without its Mcp-Name: it passes where no rule
    # could refuse a resource, and needs the name where one could (default: deny below).
    assert decide("mcp", method="resources/subscribe").status_code == 200
    assert decide("mcp", path="/v2026/deny/mcp", method="resources/subscribe").status_code == 400
    assert decide("mcp", path="/v2026/deny/mcp", method="resources/subscribe",
                  name="file:///etc/secret").status_code == 403
    # The default route takes 2025 revisions too: 403, whatever the headers claim.
    r = requests.get(url, timeout=10, headers={
        "Authorization": f"Bearer {tok(idp, gw, scope='mcp mcp:deploy')}",
        "X-Original-URL": f"http://127.0.0.1:{gw.port}/mcp", "X-Original-Method": "POST",
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "ping"})
    assert r.status_code == 403, r.text
