"""API keys' callers beyond plain HTTP/1.1, from the caller's and the guesser's side: keys made by
`tokengate api-keys`, a real tokengate with an h2c listener, the echo upstream, a real gRPC
server (PyPI grpcio) behind it. An `ip` rate limit in front of a keys-only route cuts a guesser
before any key is looked up (the lookups stop counting, and the right key from that address
waits too); a key's caller over HTTP/2 and on a gRPC route passes with its identity while the
key's field never goes upstream, and an unknown key is refused in the shape each protocol
reads; an MCP route's per-tool scope rule judges a key's scopes as it judges a token's."""
import http.client
import json
import re
from types import SimpleNamespace

import grpc
import pytest
import requests

from support.gateway import sent_headers as sent
from support.grpc_upstream import channel, unary
from support.h2_client import H2Connection
from test_api_keys import keys
from test_grpc import grpc_upstream, seen_metadata  # noqa: F401 — grpc_upstream is a fixture
from test_grpc_refusals import metadata
from test_routes import call, challenge, forwarded

BURST = 5


def config(upstream, grpc_port, key_file):
    return f"""
listen: {{ address: 127.0.0.1:{{PORT}}, http2: true }}
admin_listen: 127.0.0.1:{{ADMIN}}
public_url: http://127.0.0.1:{{PORT}}
workers: 2
store: {{ url: "memory", prefix: "key-callers-test:" }}
session: {{ keys: ["q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE="] }}
rate_limits:
  guessing: {{ key: ip, rate: 1/m, burst: {BURST} }}
api_keys:
  partners: {{ file: "{key_file}" }}
  scripts: {{ file: "{key_file}", scheme: ApiKey }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
  rpc: {{ url: "http://127.0.0.1:{grpc_port}", protocol: h2c, timeout: 5s }}
routes:
  - name: guarded
    match: {{ path_prefix: /api/guarded/ }}
    upstream: app
    auth: api_key
    api_keys: partners
    rate_limit: guessing
    headers: {{ X-User: sub, X-Client: client_id }}
  - name: keys
    match: {{ path_prefix: /api/keys/ }}
    upstream: app
    auth: api_key
    api_keys: [partners, scripts]
    headers: {{ X-User: sub, X-Client: client_id }}
  - name: rpc
    match: {{ path_prefix: /test.Echo/ }}
    upstream: rpc
    auth: api_key
    api_keys: partners
    headers: {{ X-User: sub, X-Client: client_id }}
  - name: mcp
    match: {{ path: /mcp }}
    upstream: app
    auth: api_key
    api_keys: partners
    headers: {{ X-User: sub }}
    mcp:
      tools: {{ deploy: {{ require: {{ scopes: [orders:write] }} }} }}
"""


@pytest.fixture
def callers(tmp_path):
    """The set's keys, and well-formed keys it does not hold: made by the CLI in a throwaway
    file, so their check digits are right and only a lookup can tell them apart."""
    path = tmp_path / "keys.yaml"
    throwaway = tmp_path / "throwaway.yaml"
    return SimpleNamespace(
        path=path,
        reader=keys(path, "create", "--sub", "partner-acme", "--client-id", "acme-sync", "--scopes", "orders:read",
                    "--id", "k_reader"),
        writer=keys(path, "create", "--sub", "deployer", "--client-id", "ci", "--scopes", "orders:read,orders:write",
                    "--id", "k_writer"),
        unknown=[keys(throwaway, "create", "--sub", f"guess-{i}") for i in range(3)])


@pytest.fixture
def gw(upstream, grpc_upstream, callers, gateway_factory):  # noqa: F811 — a fixture
    return gateway_factory(config(upstream, grpc_upstream.port, callers.path))


def get(gw, path, key):
    return requests.get(gw.url(path), headers={"X-API-Key": key}, timeout=10)


def presented(gw, outcome, key_set="partners"):
    """tokengate_api_key_auth_total for one outcome, all workers added up; 0 before the first."""
    text = requests.get(f"http://127.0.0.1:{gw.admin}/metrics", timeout=5).text
    found = re.search(rf'^tokengate_api_key_auth_total{{set="{key_set}",outcome="{outcome}"}} (\d+)$', text, re.M)
    return int(found.group(1)) if found else 0


def from_address(source, gw, path, key):
    """One GET from another loopback address (its own client address to the gateway)."""
    c = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=10, source_address=(source, 0))
    try:
        c.request("GET", path, headers={"X-API-Key": key})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def mutated(key, at=12):
    """The key with one character changed: its check digits no longer fit (a typo)."""
    return key[:at] + ("a" if key[at] != "a" else "b") + key[at + 1:]


def test_an_ip_limit_cuts_key_guessing_before_any_key_is_looked_up(gw, callers, upstream):
    # A guesser's well-formed keys, one typo of a real key among them; burst 5, then 1 a minute.
    guesses = [*callers.unknown, mutated(callers.reader), callers.unknown[0]]
    answers = [get(gw, f"/api/guarded/{i}", key) for i, key in enumerate(guesses * 3)]
    statuses = [r.status_code for r in answers]
    assert statuses == [401] * BURST + [429] * (len(guesses) * 3 - BURST), statuses
    for r, why in zip(answers[:BURST], ["not known"] * 3 + ["malformed", "not known"]):
        assert r.json()["error"] == "invalid_token" and why in r.json()["error_description"], r.text
        assert r.headers["WWW-Authenticate"].startswith("ApiKey "), r.headers
    for r in answers[BURST:]:
        assert r.json()["error"] == "rate_limited" and int(r.headers["Retry-After"]) >= 1, (r.headers, r.text)
    # Only the guesses within the burst were looked up: past the limit nothing is checked.
    assert (presented(gw, "unknown"), presented(gw, "malformed")) == (4, 1)
    # The right key from the guesser's address waits out the window as well, unchecked.
    r = get(gw, "/api/guarded/right", callers.reader)
    assert r.status_code == 429 and r.json()["error"] == "rate_limited", r.text
    assert int(r.headers["Retry-After"]) >= 1, r.headers
    assert (presented(gw, "unknown"), presented(gw, "malformed"), presented(gw, "ok")) == (4, 1, 0)
    assert not [q for q in upstream.requests if q["path"].startswith("/api/guarded/")], "a refusal went upstream"
    # The limit is the address's, not the key's: from another address the same key passes.
    status, body = from_address("127.0.0.2", gw, "/api/guarded/elsewhere", callers.reader)
    assert status == 200, body
    seen = {k.lower(): v for k, v in json.loads(body)["headers"]}
    assert seen["x-user"] == "partner-acme" and "x-api-key" not in seen, seen
    assert presented(gw, "ok") == 1


def test_a_key_s_caller_over_http2_passes_with_its_identity_and_the_key_stays_at_the_gateway(gw, callers, upstream):
    with H2Connection(gw.port) as c:
        ok = c.request("GET", "/api/keys/1", headers=[("x-api-key", callers.reader), ("x-user", "mallory")])
        assert ok.status == 200, ok.body
        seen = {k.lower(): v for k, v in json.loads(ok.body)["headers"]}
        assert seen["x-user"] == "partner-acme" and seen["x-client"] == "acme-sync", seen
        assert "x-api-key" not in seen and callers.reader.encode() not in ok.body
        # In Authorization with the second set's scheme: that field goes no further either.
        ok = c.request("GET", "/api/keys/2", headers=[("authorization", f"ApiKey {callers.writer}")])
        assert ok.status == 200, ok.body
        seen = {k.lower(): v for k, v in json.loads(ok.body)["headers"]}
        assert seen["x-user"] == "deployer" and "authorization" not in seen, seen
        unknown = c.request("GET", "/api/keys/3", headers=[("x-api-key", callers.unknown[0])])
        assert unknown.status == 401, unknown.body
        assert unknown.header("www-authenticate").startswith("ApiKey "), unknown.headers
        assert 'error="invalid_token"' in unknown.header("www-authenticate"), unknown.headers
        body = json.loads(unknown.body)
        assert body["error"] == "invalid_token" and "not known" in body["error_description"], body
        # The field twice on one stream: two keys, refused rather than chosen between.
        two = c.request("GET", "/api/keys/4", headers=[("x-api-key", callers.unknown[1]),
                                                         ("x-api-key", callers.reader)])
        assert two.status == 400 and json.loads(two.body)["error"] == "invalid_request", two.body
    reached = sorted(q["path"] for q in upstream.requests if q["path"].startswith("/api/keys/"))
    assert reached == ["/api/keys/1", "/api/keys/2"], reached


def test_a_key_s_grpc_call_passes_with_its_identity_and_an_unknown_key_is_unauthenticated(gw, callers,
                                                                                           grpc_upstream):  # noqa: F811
    with channel(gw.port) as ch:
        reply, answered = unary(ch, b"hi", metadata=[("x-api-key", callers.reader), ("x-user", "mallory")])
        assert answered.code() == grpc.StatusCode.OK
        meta = seen_metadata(reply)
        assert meta["x-user"] == ["partner-acme"] and meta["x-client"] == ["acme-sync"], meta
        assert "x-api-key" not in meta and callers.reader not in reply.decode()
        calls = grpc_upstream.calls
        with pytest.raises(grpc.RpcError) as refused:
            unary(ch, b"guess", metadata=[("x-api-key", callers.unknown[0])])
    err = refused.value
    assert err.code() == grpc.StatusCode.UNAUTHENTICATED, (err.code(), err.details())
    assert err.details() == "the API key is not known"
    challenged = metadata(err)["www-authenticate"]
    assert challenged.startswith("ApiKey ") and 'error="invalid_token"' in challenged, challenged
    assert grpc_upstream.calls == calls, "the refused call reached the gRPC server"


def test_an_mcp_tool_s_scope_rule_judges_a_key_as_it_judges_a_token(gw, callers, upstream):
    def post(key, body):
        return requests.post(gw.url("/mcp"), data=body, timeout=10, headers={
            "X-API-Key": key, "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})

    deploy = call("tools/call", name="deploy", arguments={"target": "prod"})
    # A tool without a rule: the key's caller passes on the route's own requirement.
    r = post(callers.reader, call("tools/call", name="echo", arguments={"text": "hi"}))
    assert r.status_code == 200, r.text
    assert sent(r)["x-user"] == "partner-acme" and "x-api-key" not in sent(r)
    before = len(forwarded(upstream))
    refused = post(callers.reader, deploy)
    assert refused.status_code == 403, refused.text
    assert refused.json()["error"] == "insufficient_scope", refused.text
    assert len(forwarded(upstream)) == before, "the refused call reached the upstream"
    # A key made with the tool's scope may call it.
    r = post(callers.writer, deploy)
    assert r.status_code == 200, r.text
    assert sent(r)["x-user"] == "deployer" and r.json()["body_length"] == len(deploy.encode())
    # The refusal names the scope to ask for and, on a keys-only route, the keys' own scheme,
    # as the route's own `require` refusals do (docs/api-keys.md).
    c = challenge(refused)
    assert c["error"] == "insufficient_scope" and c["scope"] == "orders:write", refused.headers
    assert refused.headers["WWW-Authenticate"].startswith("ApiKey "), refused.headers
