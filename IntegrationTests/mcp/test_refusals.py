"""MCP routes from the attacker's side, as an outside test sent it: a JSON-RPC call in the body
of a method other than POST, a protected resource named in another spelling, a token bound to
an MCP route's resource tried on the issuer's other routes, a tools/list sent as a notification
and a tools/list answer that carries the response twice. Each over HTTP/1.1 and over HTTP/2
(h2c with prior knowledge) where both apply, against a real tokengate, the echo upstream or the
official MCP SDK's server (support/mcp_upstream.py), and tokens from a real JWKS server."""
import json
import subprocess

import pytest
import requests

from support.gateway import BIN, raw_request
from support.h2_client import H2Connection
from support.mcp_upstream import MCPUpstream
from support.waiting import wait_for
from test_bearer import idp, token as mint  # noqa: F401 — idp is a fixture
from test_sdk import connect, run, text

DEPLOY = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy"}}'
SECRETS = "file:///srv/secrets.txt"
# The spellings of SECRETS the test sent; each names the same file to a server that resolves it.
SPELLINGS = ["file:///srv/./secrets.txt", "file:///srv/x/../secrets.txt", "file://localhost/srv/secrets.txt",
             "FILE:///srv/secrets.txt", "file:///srv/secrets%2etxt", "file:/srv/secrets.txt",
             "file:///srv/%2E%2e/srv/secrets.txt", "file:///srv/secrets.txt?raw=1"]
# Spellings a server could read as another path: refused as invalid params.
UNREADABLE = ["file:///srv//secrets.txt", "file:///../srv/secrets.txt", "file:///srv%2Fsecrets.txt"]


def config(upstream_port, idp, extra_routes=""):
    return f"""
listen: {{ address: 127.0.0.1:{{PORT}}, http2: true }}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
issuers:
  one:
    issuer: "https://idp.one"
    jwks_uri: "{idp.url}"
    algorithms: [ES256]
    # The MCP resource listed too, as check-config once advised: still an audience of /mcp alone.
    audiences: [api, "http://127.0.0.1:{{PORT}}/mcp"]
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream_port}" }}
routes:
  - name: mcp
    match: {{ path_prefix: /mcp }}
    upstream: app
    auth: bearer
    issuers: [one]
    require: {{ scopes: [mcp] }}
    resource: http://127.0.0.1:{{PORT}}/mcp
    cors_preflight: allow
    mcp:
      # The web app that calls it from a browser (its CORS preflight included).
      allowed_origins: ["https://app.example"]
      tools: {{ deploy: {{ require: {{ scopes: [mcp:deploy] }} }} }}
      # Written in another spelling: the rule holds for every spelling of the file.
      resources: {{ "FILE://localhost/srv/./secrets.txt": {{ require: {{ scopes: [mcp:files] }} }} }}
  - name: api
    match: {{ path_prefix: /api/ }}
    upstream: app
    auth: bearer
    issuers: [one]
{extra_routes}"""


@pytest.fixture
def gw(upstream, idp, gateway_factory):
    return gateway_factory(config(upstream.port, idp))


@pytest.fixture
def sdk_upstream(tmp_path):
    up = MCPUpstream(str(tmp_path / "mcp-upstream.log"))
    try:
        up.wait_ready()
    except BaseException:
        up.stop()
        raise
    yield up
    up.stop()


def tok(idp, gw, scope="mcp", aud=None):
    return mint(idp.keys[0], aud=aud or f"http://127.0.0.1:{gw.port}/mcp", scope=scope)


def headers(token, content_type="application/json"):
    return {"Authorization": f"Bearer {token}", "Content-Type": content_type,
            "Accept": "application/json, text/event-stream"}


def reached(upstream):
    return len([r for r in upstream.requests if r["path"].startswith("/mcp")])


def h2(gw, method, path, token, body=None, extra=()):
    """One request over h2c with prior knowledge: the answer (status, headers, body)."""
    fields = [("authorization", f"Bearer {token}"), ("content-type", "application/json"),
              ("accept", "application/json, text/event-stream"), *extra]
    with H2Connection(gw.port) as c:
        return c.request(method, path, fields, body=None if body is None else body.encode())


def read_uri(uri, id=1):
    return json.dumps({"jsonrpc": "2.0", "id": id, "method": "resources/read", "params": {"uri": uri}})


# --- a call in another method's body ----------------------------------------------------------

@pytest.mark.parametrize("method", ["PUT", "PATCH", "OPTIONS"])
def test_a_call_in_another_methods_body_is_405_over_http1(gw, idp, upstream, method):
    before = reached(upstream)
    r = requests.request(method, gw.url("/mcp"), data=DEPLOY, headers=headers(tok(idp, gw)), timeout=10)
    assert r.status_code == 405, r.text
    assert r.headers["Allow"] == "GET, POST, DELETE"
    assert r.json()["error"] == "invalid_request"
    assert reached(upstream) == before
    # HEAD, whose answer has no body: the same status and Allow.
    r = requests.head(gw.url("/mcp"), headers=headers(tok(idp, gw)), timeout=10)
    assert r.status_code == 405 and r.headers["Allow"] == "GET, POST, DELETE"
    assert reached(upstream) == before


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_a_get_or_delete_with_content_is_400_over_http1(gw, idp, upstream, method):
    before = reached(upstream)
    r = requests.request(method, gw.url("/mcp"), data=DEPLOY, headers=headers(tok(idp, gw)), timeout=10)
    assert r.status_code == 400, r.text
    assert r.json()["error"] == "invalid_request"
    # Chunked, so no length says there is content until it comes.
    head = (f"{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {tok(idp, gw)}\r\n"
            f"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    status, reply = raw_request(gw.port, head + b"%x\r\n%s\r\n0\r\n\r\n" % (len(DEPLOY), DEPLOY.encode()))
    assert status == 400, reply
    assert b'"error":"invalid_request"' in reply
    assert reached(upstream) == before
    # Without content they pass on the route's requirement, as MCP's SSE stream and session end.
    r = requests.request(method, gw.url("/mcp"), headers={"Authorization": f"Bearer {tok(idp, gw)}"}, timeout=10)
    assert r.status_code == 200, r.text
    assert reached(upstream) == before + 1


@pytest.mark.parametrize("method,status", [("PUT", 405), ("PATCH", 405), ("OPTIONS", 405), ("DELETE", 400),
                                           ("GET", 400)])
def test_a_call_in_another_methods_body_is_refused_over_http2(gw, idp, upstream, method, status):
    before = reached(upstream)
    a = h2(gw, method, "/mcp", tok(idp, gw), body=DEPLOY)
    assert a.status == status, (a.headers, a.body)
    assert json.loads(a.body)["error"] == "invalid_request"
    if status == 405:
        assert a.header("allow") == "GET, POST, DELETE"
    assert reached(upstream) == before
    # The same call as a POST is judged: 403 for want of mcp:deploy.
    assert h2(gw, "POST", "/mcp", tok(idp, gw), body=DEPLOY).status == 403
    # A GET or DELETE that ends with its HEADERS frame passes.
    assert h2(gw, "DELETE", "/mcp", tok(idp, gw)).status == 200
    assert reached(upstream) == before + 1


def test_a_cors_preflight_still_passes_and_a_preflight_with_a_body_does_not(gw, idp, upstream):
    preflight = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST"}
    before = reached(upstream)
    r = requests.options(gw.url("/mcp"), headers=preflight, timeout=10)
    assert r.status_code == 200, r.text
    assert reached(upstream) == before + 1
    a = h2(gw, "OPTIONS", "/mcp", "x", extra=[("origin", "https://app.example"),
                                             ("access-control-request-method", "POST")])
    # Without its credential (which a forwarded preflight never carries) it still passes.
    assert a.status == 200, a.body
    # With a body it is no preflight: judged as any OPTIONS, 405 (or 401 without a token).
    r = requests.options(gw.url("/mcp"), data=DEPLOY, headers={**preflight, **headers(tok(idp, gw))}, timeout=10)
    assert r.status_code == 405, r.text
    r = requests.options(gw.url("/mcp"), data=DEPLOY, headers=preflight, timeout=10)
    assert r.status_code == 401, r.text
    assert reached(upstream) == before + 2


PREFLIGHT_H2 = [("origin", "https://app.example"), ("access-control-request-method", "POST"),
                ("content-type", "application/json")]


@pytest.mark.parametrize("length", [False, True])
def test_an_h2_options_with_data_frames_is_no_preflight(gw, idp, upstream, length):
    """Fetch §3.2.2: a preflight has no body. On HTTP/2 a body is DATA frames, with neither
    Content-Length nor Transfer-Encoding: such an OPTIONS once reached the MCP server with
    tools/call deploy in its body and no token. It is judged like any OPTIONS now."""
    body = DEPLOY.encode()
    fields = PREFLIGHT_H2 + ([("content-length", str(len(body)))] if length else [])
    before = reached(upstream)
    with H2Connection(gw.port) as c:
        a = c.request("OPTIONS", "/mcp", fields, body=body)
    assert a.status == 401, a.body
    assert b"Bearer" in (a.header("www-authenticate") or "").encode()
    with H2Connection(gw.port) as c:
        a = c.request("OPTIONS", "/mcp", fields + [("authorization", f"Bearer {tok(idp, gw)}")], body=body)
    assert a.status == 405, a.body
    assert reached(upstream) == before
    # The same preflight that ends with its HEADERS frame still passes.
    with H2Connection(gw.port) as c:
        a = c.request("OPTIONS", "/mcp", PREFLIGHT_H2)
    assert a.status == 200, a.body
    assert reached(upstream) == before + 1


def test_the_sdk_server_and_a_hand_written_one_never_run_a_call_sent_in_another_method(
        sdk_upstream, idp, gateway_factory):
    """The official MCP SDK's server at /mcp, and beside it (/any/mcp, on the same server) a
    hand-written endpoint that runs the tools/call it finds in any method's body."""
    gw = gateway_factory(config(sdk_upstream.port, idp, extra_routes="""
  - name: any
    match: { path: /any/mcp }
    upstream: app
    auth: bearer
    issuers: [one]
    mcp: { tools: { deploy: { require: { scopes: [mcp:deploy] } } } }
"""))
    # Straight to the server, the hand-written endpoint runs it: the attack is real.
    direct = requests.put(f"http://127.0.0.1:{sdk_upstream.port}/any/mcp", data=DEPLOY, timeout=10)
    assert direct.status_code == 200 and sdk_upstream.calls() == ["deploy"]
    token = tok(idp, gw, aud=["api", f"http://127.0.0.1:{gw.port}/mcp"])
    for path in ("/mcp", "/any/mcp"):
        for method in ("PUT", "PATCH", "DELETE", "GET", "OPTIONS"):
            want = 400 if method in ("GET", "DELETE") else 405
            r = requests.request(method, gw.url(path), data=DEPLOY, headers=headers(token), timeout=10)
            assert r.status_code == want, (path, method, r.text)
            assert r.json()["error"] == "invalid_request", (path, method)
            assert h2(gw, method, path, token, body=DEPLOY).status == want, (path, method)
    assert sdk_upstream.calls() == ["deploy"], "no call through the gateway ran"

    # The SDK's own session (initialize, its GET stream, the calls, the DELETE) is untouched.
    async def scenario():
        async with connect(gw, tok(idp, gw, scope="mcp mcp:deploy")) as (session, responses):
            said = text(await session.call_tool("echo", {"text": "still here"}))
            deployed = text(await session.call_tool("deploy", {"target": "prod"}))
        return said, deployed, [(r.request.method, r.status_code) for r in responses]

    said, deployed, seen = run(scenario)
    assert (said, deployed) == ("still here", "deployed prod")
    assert ("GET", 200) in seen and seen[-1] == ("DELETE", 200), seen
    assert sdk_upstream.calls() == ["deploy", "echo", "deploy"]


# --- a resource in another spelling -------------------------------------------------------------

@pytest.mark.parametrize("uri", SPELLINGS)
def test_another_spelling_of_a_protected_resource_needs_its_scope(gw, idp, upstream, uri):
    before = reached(upstream)
    for send in (lambda t: requests.post(gw.url("/mcp"), data=read_uri(uri), headers=headers(t), timeout=10),
                 lambda t: h2(gw, "POST", "/mcp", t, body=read_uri(uri))):
        r = send(tok(idp, gw))
        status = getattr(r, "status_code", None) or r.status
        assert status == 403, uri
        body = r.json() if hasattr(r, "json") else json.loads(r.body)
        assert body["error"] == "insufficient_scope"
        www = r.headers["WWW-Authenticate"] if hasattr(r, "status_code") else r.header("www-authenticate")
        assert 'scope="mcp mcp:files"' in www, www
    assert reached(upstream) == before
    # With the scope, the call passes, in the spelling the client chose.
    r = requests.post(gw.url("/mcp"), data=read_uri(uri), headers=headers(tok(idp, gw, "mcp mcp:files")), timeout=10)
    assert r.status_code == 200, r.text
    assert reached(upstream) == before + 1


@pytest.mark.parametrize("uri", UNREADABLE)
def test_a_resource_uri_a_server_could_read_otherwise_is_invalid_params(gw, idp, upstream, uri):
    before = reached(upstream)
    token = tok(idp, gw, "mcp mcp:files")
    r = requests.post(gw.url("/mcp"), data=read_uri(uri, id=9), headers=headers(token), timeout=10)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == -32602 and r.json()["id"] == 9
    a = h2(gw, "POST", "/mcp", token, body=read_uri(uri, id=9))
    assert a.status == 400 and json.loads(a.body)["error"]["code"] == -32602
    assert reached(upstream) == before


def test_a_rule_in_a_spelling_no_call_could_use_is_refused_by_check_config(upstream, idp, tmp_path):
    bad = config(upstream.port, idp).replace("FILE://localhost/srv/./secrets.txt", "file:///srv//secrets.txt")
    path = tmp_path / "bad.yaml"
    path.write_text(bad.replace("{PORT}", "8080").replace("{ADMIN}", "9901"))
    r = subprocess.run([BIN, "check-config", str(path)], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    assert "routes[0].mcp.resources.file:///srv//secrets.txt: a resource URI no call could name" in r.stdout + r.stderr


# --- a resource-bound token on the issuer's other routes ----------------------------------------

def test_a_token_for_the_mcp_resource_opens_no_other_route(gw, idp, upstream):
    bound = tok(idp, gw, "mcp")
    s = requests.Session()
    s.headers["Authorization"] = f"Bearer {bound}"
    # Accepted (and cached) where it belongs…
    assert s.get(gw.url("/mcp"), timeout=10).status_code == 200
    # …and refused on the same connection on the issuer's other route, though the issuer lists it.
    r = s.get(gw.url("/api/x"), timeout=10)
    assert r.status_code == 401, r.text
    assert 'error="invalid_token"' in r.headers["WWW-Authenticate"]
    assert r.json()["error"] == "invalid_token"
    with H2Connection(gw.port) as c:
        a = c.request("GET", "/mcp", [("authorization", f"Bearer {bound}")])
        assert a.status == 200
        a = c.request("GET", "/api/x", [("authorization", f"Bearer {bound}")])
        assert a.status == 401 and 'error="invalid_token"' in a.header("www-authenticate")
    # A token that names the API as well opens both: the rule is about what aud names.
    both = tok(idp, gw, "mcp", aud=["api", f"http://127.0.0.1:{gw.port}/mcp"])
    assert requests.get(gw.url("/api/x"), headers={"Authorization": f"Bearer {both}"}, timeout=10).status_code == 200
    api = tok(idp, gw, "mcp", aud="api")
    assert requests.get(gw.url("/api/x"), headers={"Authorization": f"Bearer {api}"}, timeout=10).status_code == 200


def test_a_resource_the_issuer_does_not_list_is_enough_on_its_route(upstream, idp, gateway_factory):
    gw = gateway_factory(config(upstream.port, idp).replace(', "http://127.0.0.1:{PORT}/mcp"]', "]"))
    bound = tok(idp, gw, "mcp")
    assert requests.get(gw.url("/mcp"), headers={"Authorization": f"Bearer {bound}"}, timeout=10).status_code == 200
    r = requests.get(gw.url("/api/x"), headers={"Authorization": f"Bearer {bound}"}, timeout=10)
    assert r.status_code == 401


def test_check_config_no_longer_advises_adding_the_resource_to_the_audiences(upstream, idp, tmp_path):
    yaml = config(upstream.port, idp).replace(', "http://127.0.0.1:{PORT}/mcp"]', "]")
    path = tmp_path / "gw.yaml"
    path.write_text(yaml.replace("{PORT}", "8080").replace("{ADMIN}", "9901"))
    r = subprocess.run([BIN, "check-config", str(path)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "audiences" not in r.stdout + r.stderr, r.stdout + r.stderr


# --- tools/list: a notification, and a response sent twice --------------------------------------

def test_a_tools_list_notification_is_invalid_request(gw, idp, upstream):
    before = reached(upstream)
    body = '{"jsonrpc":"2.0","method":"tools/list"}'
    r = requests.post(gw.url("/mcp"), data=body, headers=headers(tok(idp, gw)), timeout=10)
    assert r.status_code == 400, r.text
    assert r.json() == {"jsonrpc": "2.0", "id": None,
                        "error": {"code": -32600, "message": "tools/list is a request: it needs an id"}}
    a = h2(gw, "POST", "/mcp", tok(idp, gw), body=body)
    assert a.status == 400 and json.loads(a.body)["error"]["code"] == -32600
    assert reached(upstream) == before


def test_every_copy_of_a_tools_list_response_in_a_stream_is_filtered(sdk_upstream, idp, gateway_factory):
    gw = gateway_factory(config(sdk_upstream.port, idp, extra_routes="""
  - name: twice
    match: { path: /twice/mcp }
    upstream: app
    auth: bearer
    issuers: [one]
    mcp: { tools: { deploy: { require: { scopes: [mcp:deploy] } } } }
"""))
    token = mint(idp.keys[0], aud="api", scope="mcp")
    body = '{"jsonrpc":"2.0","id":3,"method":"tools/list"}'
    # Straight from the server: two copies, both listing deploy.
    direct = requests.post(f"http://127.0.0.1:{sdk_upstream.port}/twice/mcp", data=body, timeout=10)
    assert direct.content.count(b'"deploy"') == 2
    r = requests.post(gw.url("/twice/mcp"), data=body, headers=headers(token), timeout=10)
    a = h2(gw, "POST", "/twice/mcp", token, body=body)
    for status, content in ((r.status_code, r.content), (a.status, a.body)):
        assert status == 200
        answers = [json.loads(line[len(b"data: "):]) for line in content.splitlines() if line.startswith(b"data: ")]
        assert len(answers) == 2, content
        for answer in answers:
            assert answer["id"] == 3
            assert sorted(t["name"] for t in answer["result"]["tools"]) == ["count", "echo", "whoami"]
        assert b"deploy" not in content


# --- MCP 2026-07-28: the mirrored headers against the body (SEP-2243) --------------------------

V2026 = "2026-07-28"
READ_FILE_2026 = json.dumps({"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {
    "name": "read_file", "arguments": {}, "_meta": {"io.modelcontextprotocol/protocolVersion": V2026}}})


def mirrored(token, method="tools/call", name="read_file", version=V2026):
    h = headers(token)
    for field, value in (("MCP-Protocol-Version", version), ("Mcp-Method", method), ("Mcp-Name", name)):
        if value is not None:
            h[field] = value
    return h


@pytest.mark.parametrize("name", ["deploy", "=?base64?ZGVwbG95?="])
def test_a_call_whose_mcp_name_says_another_tool_is_refused_and_never_forwarded(gw, idp, upstream, name):
    """The server routes on Mcp-Name, the gateway judges the body: judged as read_file (which
    the token may call) while the server would run deploy (which it may not). 400 with the
    JSON-RPC error -32020 HeaderMismatch and the request's id; the server hears nothing."""
    before = reached(upstream)
    r = requests.post(gw.url("/mcp"), data=READ_FILE_2026, headers=mirrored(tok(idp, gw), name=name), timeout=10)
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["id"] == 41 and body["error"]["code"] == -32020, body
    assert "deploy" not in r.text
    assert reached(upstream) == before
    # The same over HTTP/2.
    a = h2(gw, "POST", "/mcp", tok(idp, gw), body=READ_FILE_2026, extra=[
        ("mcp-protocol-version", V2026), ("mcp-method", "tools/call"), ("mcp-name", name)])
    assert a.status == 400 and json.loads(a.body)["error"]["code"] == -32020
    assert reached(upstream) == before


@pytest.mark.parametrize("missing", ["MCP-Protocol-Version", "Mcp-Method", "Mcp-Name"])
def test_a_2026_request_without_a_mirrored_header_is_refused(gw, idp, upstream, missing):
    h = mirrored(tok(idp, gw))
    del h[missing]
    before = reached(upstream)
    r = requests.post(gw.url("/mcp"), data=READ_FILE_2026, headers=h, timeout=10)
    assert r.status_code == 400 and r.json()["error"]["code"] == -32020, r.text
    assert reached(upstream) == before


def test_headers_that_agree_pass_and_a_2025_client_needs_none(gw, idp, upstream):
    before = reached(upstream)
    h = mirrored(tok(idp, gw))
    h["mcp-name"] = h.pop("Mcp-Name") + "  "  # names in any case, values trimmed
    r = requests.post(gw.url("/mcp"), data=READ_FILE_2026, headers=h, timeout=10)
    assert r.status_code == 200, r.text
    sent = {k.lower(): v for k, v in r.json()["headers"]}
    assert sent["mcp-method"] == "tools/call" and sent["mcp-protocol-version"] == V2026
    # A 2025 request with no mirrored header passes as before; one with a header that
    # disagrees is refused at any revision.
    old = json.dumps({"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {"name": "read_file"}})
    assert requests.post(gw.url("/mcp"), data=old, headers=headers(tok(idp, gw)), timeout=10).status_code == 200
    r = requests.post(gw.url("/mcp"), data=old, headers={**headers(tok(idp, gw)), "Mcp-Name": "deploy"}, timeout=10)
    assert r.status_code == 400 and r.json()["error"]["code"] == -32020
    assert reached(upstream) == before + 2


ONLY_2026 = """  - name: mcp2026
    match: { path_prefix: /v2026/mcp }
    upstream: app
    auth: bearer
    issuers: [one]
    require: { scopes: [mcp] }
    mcp: { protocol_versions: [2026-07-28] }"""


def test_a_revision_the_route_does_not_take_is_refused_with_the_ones_it_does(upstream, idp, gateway_factory):
    gw = gateway_factory(config(upstream.port, idp, extra_routes=ONLY_2026))
    token = mint(idp.keys[0], aud="api", scope="mcp")
    before = len(upstream.requests)
    old = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
    r = requests.post(gw.url("/v2026/mcp"), data=old, timeout=10,
                      headers={**headers(token), "MCP-Protocol-Version": "2025-11-25"})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert r.json()["id"] == 5 and error["code"] == -32022
    assert error["data"] == {"supported": ["2026-07-28"], "requested": "2025-11-25"}
    # The default route takes the three revisions, and no other.
    r = requests.post(gw.url("/mcp"), data=old, timeout=10,
                      headers={**headers(tok(idp, gw)), "MCP-Protocol-Version": "2024-11-05"})
    assert r.status_code == 400 and r.json()["error"]["code"] == -32022
    assert len(upstream.requests) == before
    # A 2026-07-28 request with its mirrored headers passes.
    body = json.dumps({"jsonrpc": "2.0", "id": 6, "method": "tools/list",
                       "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": V2026}}})
    r = requests.post(gw.url("/v2026/mcp"), data=body, timeout=10,
                      headers=mirrored(token, method="tools/list", name=None))
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
def test_a_2026_only_route_takes_post_alone(upstream, idp, gateway_factory, method):
    """MCP 2026-07-28 has no session: no GET stream, no DELETE of a session."""
    gw = gateway_factory(config(upstream.port, idp, extra_routes=ONLY_2026))
    token = mint(idp.keys[0], aud="api", scope="mcp")
    r = requests.request(method, gw.url("/v2026/mcp"), headers=headers(token), timeout=10)
    assert r.status_code == 405 and r.headers["Allow"] == "POST", r.text
    assert not [x for x in upstream.requests if x["path"].startswith("/v2026/")]
    # The default route still serves a 2025 client's GET.
    assert requests.get(gw.url("/mcp"), headers=headers(tok(idp, gw)), timeout=10).status_code == 200


# --- DNS rebinding: Origin and Host ------------------------------------------------------------

def test_a_foreign_origin_is_refused_and_the_routes_own_or_a_listed_one_passes(gw, idp, upstream):
    before = reached(upstream)
    body = json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/list"})
    for origin in ("http://evil.example", "null", "https://app.example.evil.example", "file://x"):
        r = requests.post(gw.url("/mcp"), data=body, headers={**headers(tok(idp, gw)), "Origin": origin}, timeout=10)
        assert r.status_code == 403 and r.json()["error"] == "access_denied", (origin, r.text)
    assert reached(upstream) == before
    for origin in ("https://app.example", f"http://127.0.0.1:{gw.port}"):
        r = requests.post(gw.url("/mcp"), data=body, headers={**headers(tok(idp, gw)), "Origin": origin}, timeout=10)
        assert r.status_code == 200, (origin, r.text)
    assert reached(upstream) == before + 2


def test_a_rebound_name_is_refused_by_its_host(upstream, idp, gateway_factory):
    """DNS rebinding: a page at evil.example whose name now points at the gateway sends Host
    and Origin of evil.example, which agree with each other. The route knows its own name
    from public_url, so the Host gives it away: 403, and the server hears nothing."""
    text = config(upstream.port, idp).replace(
        "admin_listen:", "public_url: http://mcp.internal.example:8080\nadmin_listen:", 1)
    gw = gateway_factory(text)
    body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/list"})
    token = mint(idp.keys[0], aud="http://127.0.0.1:{}/mcp".format(gw.port), scope="mcp")
    before = reached(upstream)
    r = requests.post(gw.url("/mcp"), data=body, timeout=10, headers={
        **headers(token), "Host": "evil.example", "Origin": "http://evil.example"})
    assert r.status_code == 403, r.text
    r = requests.post(gw.url("/mcp"), data=body, timeout=10, headers={**headers(token), "Host": "evil.example"})
    assert r.status_code == 403, r.text
    assert reached(upstream) == before
    r = requests.post(gw.url("/mcp"), data=body, timeout=10, headers={
        **headers(token), "Host": "mcp.internal.example:8080", "Origin": "http://mcp.internal.example:8080"})
    assert r.status_code != 403, r.text


# --- Scope hierarchies ------------------------------------------------------------------------

def test_a_broader_scope_meets_a_tools_narrower_one_and_challenges_name_the_narrow(upstream, idp, gateway_factory):
    """issuers.NAME.scope_implies: mcp:admin implies mcp:deploy, so a token with mcp:admin calls
    deploy; one with neither is refused, and the challenge names mcp:deploy (the narrowest that
    does), never offline_access."""
    text = config(upstream.port, idp).replace(
        "    algorithms: [ES256]\n", '    algorithms: [ES256]\n    scope_implies: { "mcp:admin": ["mcp:deploy"] }\n', 1)
    gw = gateway_factory(text)
    before = reached(upstream)
    r = requests.post(gw.url("/mcp"), data=DEPLOY, headers=headers(tok(idp, gw, scope="mcp mcp:admin")), timeout=10)
    assert r.status_code == 200, r.text
    r = requests.post(gw.url("/mcp"), data=DEPLOY, headers=headers(tok(idp, gw, scope="mcp offline_access")),
                      timeout=10)
    assert r.status_code == 403, r.text
    challenge = r.headers["WWW-Authenticate"]
    assert 'scope="mcp mcp:deploy"' in challenge and "offline_access" not in challenge and "mcp:admin" not in challenge
    assert reached(upstream) == before + 1


def test_check_config_refuses_a_cycle_and_warns_of_offline_access_on_a_resource(upstream, idp, tmp_path):
    import subprocess
    from support.gateway import BIN
    cyclic = config(upstream.port, idp).replace(
        "    algorithms: [ES256]\n", '    algorithms: [ES256]\n    scope_implies: { a: [b], b: [a] }\n', 1)
    path = tmp_path / "cyclic.yaml"
    path.write_text(cyclic.replace("{PORT}", "1").replace("{ADMIN}", "2"))
    r = subprocess.run([BIN, "check-config", str(path)], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "a hierarchy has no cycle" in r.stdout + r.stderr, r.stdout + r.stderr
    offline = config(upstream.port, idp).replace("require: { scopes: [mcp] }", "require: { scopes: [mcp, offline_access] }", 1)
    path = tmp_path / "offline.yaml"
    path.write_text(offline.replace("{PORT}", "1").replace("{ADMIN}", "2"))
    r = subprocess.run([BIN, "check-config", str(path)], capture_output=True, text=True, timeout=30)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "offline_access grants a refresh token" in out, out


def test_the_access_log_says_the_calls_method_and_name(upstream, idp, gateway_factory):
    gw = gateway_factory(config(upstream.port, idp).replace("admin_listen:", "access_log: true\nadmin_listen:", 1))
    r = requests.post(gw.url("/mcp"), data=DEPLOY, headers=headers(tok(idp, gw, scope="mcp mcp:deploy")), timeout=10)
    assert r.status_code == 200, r.text
    r = requests.post(gw.url("/mcp"), data=READ_FILE_2026, headers=mirrored(tok(idp, gw), name="deploy"), timeout=10)
    assert r.status_code == 400

    def lines():
        return [json.loads(x) for x in gw.output().splitlines() if x.startswith("{") and '"access"' in x]
    wait_for(lambda: len([x for x in lines() if x.get("route") == "mcp"]) >= 2, 5, interval=0.05,
             what="two access lines of the mcp route")
    calls = [x for x in lines() if x.get("route") == "mcp"]
    assert [(x["status"], x.get("mcp.method"), x.get("mcp.name")) for x in calls] == [
        (200, "tools/call", "deploy"), (400, "tools/call", "read_file")], calls
    assert calls[1]["reason"] == "mcp_header_mismatch"
