"""MCP calls judged in decision mode with the body the ingress sends, from the attacker's side:
Envoy's HTTP ext_authz (`with_request_body`: the body on the check request), Envoy's gRPC
ext_authz (the body in the CheckRequest, as text or as `raw_body`; Envoy's own messages from
PyPI xds-protos over grpcio) and Traefik's forwardAuth (`forwardBody`), against a real
tokengate and tokens from a real JWKS server. Each refuses what the request path refuses, with
the same status and the same JSON-RPC error, and lets through what it lets through: a
mirrored header unlike the body, a tool beyond the token's scope, a message that is no JSON,
a list the request path would filter. A body the ingress cut at its limit is never judged."""
import json

import grpc
import pytest
import requests
from envoy.service.auth.v3 import external_auth_pb2 as ext

from test_bearer import idp, token as mint  # noqa: F401 — idp is a fixture

CHECK = "/envoy.service.auth.v3.Authorization/Check"
V2026 = "2026-07-28"
# The gRPC form sends the body as bytes (`pack_as_bytes`, raw_body): its text form is refused.
INGRESSES = ["ext_authz_http", "forward_auth", "ext_authz_grpc"]


def config(upstream, idp):
    return f"""
listen: {{ address: 127.0.0.1:{{PORT}}, http2: true }}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
trusted_proxies: [127.0.0.1/32]
decision: {{ ext_authz_grpc: true }}
issuers:
  one:
    issuer: "https://idp.one"
    jwks_uri: "{idp.url}"
    algorithms: [ES256]
    audiences: [api]
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - name: mcp
    match: {{ path: /mcp }}
    upstream: app
    auth: bearer
    issuers: [one]
    require: {{ scopes: [mcp] }}
    mcp:
      max_request_bytes: 4KB
      tools: {{ deploy: {{ require: {{ scopes: [mcp:deploy] }} }} }}
  - name: api
    match: {{ path_prefix: /api/ }}
    upstream: app
    auth: bearer
    issuers: [one]
"""


def call(method, id=1, version=None, **params):
    if version:
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": version}
    m = {"jsonrpc": "2.0", "id": id, "method": method}
    if params:
        m["params"] = params
    return json.dumps(m)


def mirrored(method, name=None, version=V2026):
    h = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    if name is not None:
        h["Mcp-Name"] = name
    return h


class Verdict:
    """What a decision said, in the terms the request path's answer is compared in."""

    def __init__(self, status, body):
        self.status, self.body = status, body

    def json(self):
        return json.loads(self.body)


def decide(gw, ingress, token, body, headers=None, path="/mcp"):
    """The decision on POST `path` carrying `body`, asked as `ingress` asks it."""
    h = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
         "Accept": "application/json, text/event-stream", **(headers or {})}
    base = f"http://127.0.0.1:{gw.port}"
    if ingress == "ext_authz_http":
        # Envoy's HTTP service: the original method and path under the prefix, the allowed
        # headers, the body.
        r = requests.post(f"{base}/_tokengate/ext_authz{path}", data=body, headers=h, timeout=10)
        return Verdict(r.status_code, r.text)
    if ingress == "forward_auth":
        # Traefik forwards the client's headers and, with forwardBody, its body.
        r = requests.post(f"{base}/_tokengate/forward-auth", data=body, timeout=10, headers={
            **h, "X-Forwarded-Method": "POST", "X-Forwarded-Proto": "http",
            "X-Forwarded-Host": f"127.0.0.1:{gw.port}", "X-Forwarded-Uri": path})
        return Verdict(r.status_code, r.text)
    req = ext.CheckRequest()
    http = req.attributes.request.http
    http.method, http.scheme, http.host, http.path = "POST", "http", f"127.0.0.1:{gw.port}", path
    http.headers.update({k.lower(): v for k, v in h.items()})
    if ingress == "ext_authz_grpc_text":
        http.body = body
    else:
        http.raw_body = body.encode() if isinstance(body, str) else body
    # The request's size; the "cut" form sends a body shorter than it (Envoy's partial message).
    http.size = len(http.raw_body or http.body.encode()) + (100 if ingress == "ext_authz_grpc_cut" else 0)
    with grpc.insecure_channel(f"127.0.0.1:{gw.port}") as channel:
        stub = channel.unary_unary(CHECK, request_serializer=ext.CheckRequest.SerializeToString,
                                   response_deserializer=ext.CheckResponse.FromString)
        resp = stub(req, timeout=10)
    if resp.status.code == 0:
        return Verdict(200, "")
    return Verdict(resp.denied_response.status.code, resp.denied_response.body)


def proxied(gw, token, body, headers=None):
    h = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
         "Accept": "application/json, text/event-stream", **(headers or {})}
    return requests.post(f"http://127.0.0.1:{gw.port}/mcp", data=body, headers=h, timeout=10)


@pytest.fixture
def gw(upstream, idp, gateway_factory):
    return gateway_factory(config(upstream, idp))


def tok(idp, scope="mcp"):
    return mint(idp.keys[0], aud="api", scope=scope)


CASES = [
    # (what, scope, body, headers, status, JSON-RPC code or None)
    ("a 2025 call the token covers", "mcp", call("tools/call", name="read_file"), None, 200, None),
    ("a tool beyond the scope", "mcp", call("tools/call", name="deploy"), None, 403, None),
    ("the same tool with its scope", "mcp mcp:deploy", call("tools/call", name="deploy"), None, 200, None),
    ("Mcp-Name says deploy, the body read_file", "mcp", call("tools/call", name="read_file", version=V2026),
     mirrored("tools/call", "deploy"), 400, -32020),
    ("a 2026 call without Mcp-Name", "mcp", call("tools/call", name="read_file", version=V2026),
     mirrored("tools/call"), 400, -32020),
    ("headers that agree", "mcp", call("tools/call", name="read_file", version=V2026),
     mirrored("tools/call", "read_file"), 200, None),
    ("no JSON", "mcp", "{not json", None, 400, -32700),
    ("a revision the route does not take", "mcp", call("tools/list", id=2),
     {"MCP-Protocol-Version": "2024-11-05"}, 400, -32022),
]


@pytest.mark.parametrize("ingress", INGRESSES)
def test_a_body_sent_by_the_ingress_gets_the_request_paths_verdict(gw, idp, upstream, ingress):
    for what, scope, body, headers, status, code in CASES:
        token = tok(idp, scope)
        before = len(upstream.requests)
        p = proxied(gw, token, body, headers)
        assert p.status_code == status, (what, p.text)
        assert len(upstream.requests) == before + (1 if status == 200 else 0), what
        d = decide(gw, ingress, token, body, headers)
        assert d.status == status, (what, ingress, d.body)
        if code is not None:
            assert d.json()["error"]["code"] == code == p.json()["error"]["code"], (what, d.body)
        if status == 403:
            assert p.json()["error"] == "insufficient_scope" and d.json()["error"] == "insufficient_scope", what
    # The decisions reached no upstream: nothing goes there in decision mode.
    assert all(r["path"] == "/mcp" for r in upstream.requests)


@pytest.mark.parametrize("ingress", INGRESSES)
def test_a_list_the_request_path_would_filter_is_not_let_through(gw, idp, ingress):
    """tools/list on a route with tool rules is filtered per caller on its way back through
    the gateway; in decision mode the answer never comes back through it."""
    d = decide(gw, ingress, tok(idp), call("tools/list", id=3))
    assert d.status == 403 and d.json()["error"] == "access_denied", d.body


@pytest.mark.parametrize("ingress", ["ext_authz_http", "ext_authz_grpc"])
def test_a_body_the_ingress_cut_is_never_judged(gw, idp, ingress):
    """Envoy's allow_partial_message sends the first max_request_bytes and says so: the part
    may parse as a call the whole is not."""
    body = call("tools/call", name="read_file")
    d = decide(gw, ingress, tok(idp), body, {"x-envoy-auth-partial-body": "true"})
    assert d.status == 413, d.body
    d = decide(gw, ingress, tok(idp), body, {"x-envoy-auth-partial-body": "false"})
    assert d.status == 200, d.body


@pytest.mark.parametrize("ingress", INGRESSES)
def test_a_body_past_the_routes_limit_or_in_another_media_type_is_refused(gw, idp, ingress):
    big = call("tools/call", name="read_file", arguments={"pad": "x" * 5000})
    assert decide(gw, ingress, tok(idp), big).status == 413
    d = decide(gw, ingress, tok(idp), call("tools/call", name="read_file"), {"Content-Type": "text/plain"})
    assert d.status == 415, d.body


@pytest.mark.parametrize("ingress", INGRESSES)
def test_a_body_on_a_route_that_judges_none_changes_nothing(gw, idp, ingress):
    """Only MCP routes read a body: another route's request is decided on its head, whatever
    body the ingress sends along, however large."""
    for body in ("{not json", "x" * 20000):
        d = decide(gw, ingress, tok(idp), body, {"Content-Type": "text/plain"}, path="/api/upload")
        assert d.status == 200, (ingress, len(body), d.body)


def test_a_body_as_text_is_refused_and_a_cut_one_is_never_judged(gw, idp):
    """Envoy's gRPC `body` is text: each byte that is not UTF-8 replaced, so the judged call
    may not be the bytes the server gets; `pack_as_bytes` sends them whole. A raw_body shorter
    than the request's `size` was cut."""
    d = decide(gw, "ext_authz_grpc_text", tok(idp), call("tools/call", name="read_file"))
    assert d.status == 400 and "pack_as_bytes" in d.json()["error_description"], d.body
    d = decide(gw, "ext_authz_grpc_cut", tok(idp), call("tools/call", name="read_file"))
    assert d.status == 413, d.body
