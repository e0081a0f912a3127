"""An MCP route with the official MCP Python SDK on both sides: the SDK's client (streamable
HTTP transport, ClientSession) talks through a real tokengate to the SDK's server
(support/mcp_upstream.py, no auth of its own), with tokens from a real JWKS server.

Proven here: the SDK's whole session passes the route (initialize and its session id, the
initialized notification's 202, the client's GET stream, tools/list, tools/call, the DELETE that
ends the session); tools/list shows the session only the tools its token may call; a tool the
token's scopes do not cover is refused before the server hears of it, as a 403 whose challenge
names the scopes to step up to and the resource metadata, and the SDK session survives it; a
stepped-up token calls the tool; a tool's progress notifications stream through the gateway one
by one, each reaching the client before the server sends the next, and all before the result;
the server never sees the Authorization field and sees the token's subject as X-Forwarded-User,
whatever the client sent; a token for another resource is refused at initialize with 401. And
the SDK's own OAuth client, starting with no token, finds the test AS
(IntegrationTests/support/authserver/, idpyoidc) through the gateway's 401 and resource
metadata, gets a token, and steps up when a tool's 403 asks for more scope, within one MCP
session. The attacker's side of MCP routes (framing, malformed messages, smuggling) is in
test_routes.py."""
import contextlib
import json
import re
import uuid
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
import requests
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata
from mcp.shared.exceptions import MCPError

from support.mcp_upstream import MCPUpstream
from test_bearer import idp, token as mint  # noqa: F401 — idp is a fixture

# Each scenario's bound; the SDK's own timeouts below are shorter, so a hang fails named.
SCENARIO_TIMEOUT = 60
HTTP_TIMEOUT = httpx2.Timeout(10, read=30)
READ_TIMEOUT = 20


def config(up, issuer, scopes="mcp"):
    """The MCP route in front of `up`; `issuer` is the YAML of the one issuer, `scopes` the route's."""
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
issuers:
  one: {issuer}
upstreams:
  mcp: {{ url: "http://127.0.0.1:{up.port}" }}
routes:
  - name: mcp
    match: {{ path: /mcp }}
    upstream: mcp
    auth: bearer
    issuers: [one]
    resource: http://127.0.0.1:{{PORT}}/mcp
    require: {{ scopes: [{scopes}] }}
    mcp: {{ tools: {{ deploy: {{ require: {{ scopes: [mcp:deploy] }} }} }} }}
"""


def jwks_issuer(idp):
    return (f'{{ issuer: "https://idp.one", jwks_uri: "{idp.url}", algorithms: [ES256], '
            f'audiences: [api, "http://127.0.0.1:{{PORT}}/mcp"] }}')


@pytest.fixture
def mcp_upstream(tmp_path):
    up = MCPUpstream(str(tmp_path / "mcp-upstream.log"))
    try:
        up.wait_ready()
    except BaseException:
        up.stop()
        raise
    yield up
    up.stop()


@pytest.fixture
def gw(mcp_upstream, idp, gateway_factory):
    return gateway_factory(config(mcp_upstream, jwks_issuer(idp)))


def tok(idp, gw, scope="mcp", sub="alice"):
    return mint(idp.keys[0], aud=f"http://127.0.0.1:{gw.port}/mcp", scope=scope, sub=sub)


def run(scenario, *args):
    """Runs an async scenario to its end, within SCENARIO_TIMEOUT seconds."""
    async def bounded():
        with anyio.fail_after(SCENARIO_TIMEOUT):
            return await scenario(*args)
    return anyio.run(bounded)


@contextlib.asynccontextmanager
async def connect(gw, token, headers=None, initialize=True):
    """An SDK ClientSession through the gateway whose HTTP client sends `Authorization: Bearer
    token` (and `headers`) on every request; yields the session and the list of the HTTP
    responses the transport received, in order."""
    responses = []

    async def record(response):
        responses.append(response)

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}", **(headers or {})},
                              timeout=HTTP_TIMEOUT, event_hooks={"response": [record]})
    async with http, streamable_http_client(gw.url("/mcp"), http_client=http) as (read, write), \
            ClientSession(read, write, read_timeout_seconds=READ_TIMEOUT) as session:
        if initialize:
            await session.initialize()
        yield session, responses


def exchanges(responses):
    """(method, status) of each recorded response."""
    return [(r.request.method, r.status_code) for r in responses]


def text(result):
    assert not result.is_error, result
    return result.content[0].text


def challenge(value):
    return dict(re.findall(r'(\w+)="([^"]*)"', value))


def raw_call(gw, token, name, arguments):
    """A tools/call as the SDK sends it, in one plain POST (no session: a refused call never
    reaches the server)."""
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    return requests.post(gw.url("/mcp"), json=body, timeout=10,
                         headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
                                  "MCP-Protocol-Version": "2025-11-25"})


def test_the_sdk_session_passes_the_route_whole(gw, idp):
    async def scenario():
        async with connect(gw, tok(idp, gw)) as (session, responses):
            # deploy needs mcp:deploy, which this token lacks: the list does not show it.
            tools = await session.list_tools()
            assert sorted(t.name for t in tools.tools) == ["count", "echo", "whoami"]
            said = "hé, through the gateway"
            assert text(await session.call_tool("echo", {"text": said})) == said
            session_id = responses[0].headers["mcp-session-id"]
        return responses, session_id

    responses, session_id = run(scenario)
    seen = exchanges(responses)
    # initialize first; then the initialized notification (202) and the client's GET stream,
    # in either order; the calls' answers are SSE streams.
    assert seen[0] == ("POST", 200), seen
    assert responses[0].headers["content-type"].startswith("text/event-stream")
    assert ("POST", 202) in seen, seen
    # The GET stream and the closing DELETE pass on the route's requirement alone.
    assert ("GET", 200) in seen, seen
    assert seen[-1] == ("DELETE", 200), seen
    assert responses[-1].request.headers["mcp-session-id"] == session_id
    assert all(status < 300 for _, status in seen), seen


def test_a_tool_beyond_the_scope_is_403_and_a_stepped_up_token_calls_it(gw, idp, mcp_upstream):
    async def refused():
        async with connect(gw, tok(idp, gw)) as (session, responses):
            with pytest.raises(MCPError):
                await session.call_tool("deploy", {"target": "prod"})
            refusal = next(r for r in responses if r.status_code == 403)
            # The session is intact: the gateway refused one message, not the session.
            assert text(await session.call_tool("echo", {"text": "still here"})) == "still here"
        return refusal

    refusal = run(refused)
    assert refusal.request.method == "POST"
    expected = {"error": "insufficient_scope", "scope": "mcp mcp:deploy",
                "resource_metadata": f"http://127.0.0.1:{gw.port}/.well-known/oauth-protected-resource/mcp"}
    www = refusal.headers["www-authenticate"]
    assert www.startswith("Bearer ") and expected.items() <= challenge(www).items(), www
    # The same call as a plain POST: the same challenge.
    r = raw_call(gw, tok(idp, gw), "deploy", {"target": "prod"})
    assert r.status_code == 403, r.text
    assert r.headers["WWW-Authenticate"].startswith("Bearer ")
    assert expected.items() <= challenge(r.headers["WWW-Authenticate"]).items()
    assert mcp_upstream.calls() == ["echo"]
    # The metadata it names lists the tool's scope, so a client knows it may ask for it.
    meta = requests.get(expected["resource_metadata"], timeout=10).json()
    assert meta["resource"] == f"http://127.0.0.1:{gw.port}/mcp"
    assert {"mcp", "mcp:deploy"} <= set(meta["scopes_supported"])

    async def stepped_up():
        async with connect(gw, tok(idp, gw, scope="mcp mcp:deploy")) as (session, _):
            listed = sorted(t.name for t in (await session.list_tools()).tools)
            return listed, text(await session.call_tool("deploy", {"target": "prod"}))

    # The stepped-up token sees deploy in the list, and calls it.
    assert run(stepped_up) == (["count", "deploy", "echo", "whoami"], "deployed prod")
    assert mcp_upstream.calls() == ["echo", "deploy"]


def test_progress_notifications_stream_through_one_by_one_before_the_result(gw, idp, mcp_upstream):
    run_id = uuid.uuid4().hex
    progress = []

    async def scenario():
        # Acknowledgements go straight to the server, not through the gateway: the server sends
        # progress i+1 (and at last the result) only after the client has received progress i.
        async with httpx2.AsyncClient(timeout=HTTP_TIMEOUT) as side, \
                connect(gw, tok(idp, gw)) as (session, responses):
            async def on_progress(value, total, message):
                progress.append((value, total, message))
                (await side.post(mcp_upstream.ack_url(run_id))).raise_for_status()

            result = await session.call_tool("count", {"n": 3, "run": run_id}, progress_callback=on_progress)
            # Nothing is awaited between the result and this line: all of it came first.
            assert len(progress) == 3
            call = next(r for r in responses if r.request.method == "POST" and b'"count"' in r.request.content)
            return text(result), call.headers["content-type"]

    result, content_type = run(scenario)
    assert result == "counted 3"
    assert content_type.startswith("text/event-stream")
    assert progress == [(1, 3, "step 1 of 3"), (2, 3, "step 2 of 3"), (3, 3, "step 3 of 3")]


def test_the_server_sees_the_tokens_subject_and_never_the_token(gw, idp):
    token = tok(idp, gw, sub="bob")

    async def scenario():
        async with connect(gw, token, headers={"X-Forwarded-User": "admin"}) as (session, _):
            return json.loads(text(await session.call_tool("whoami", {})))

    pairs = run(scenario)
    names = [name.lower() for name, _ in pairs]
    assert "authorization" not in names, pairs
    assert not any(token in value for _, value in pairs), pairs
    assert [v for name, v in pairs if name.lower() == "x-forwarded-user"] == ["bob"], pairs
    assert "mcp-session-id" in names


def test_a_token_for_another_resource_is_401_at_initialize(gw, idp):
    other = mint(idp.keys[0], aud="api", scope="mcp mcp:deploy")

    async def scenario():
        async with connect(gw, other, initialize=False) as (session, responses):
            with pytest.raises(MCPError):
                await session.initialize()
            return responses

    responses = run(scenario)
    assert exchanges(responses) == [("POST", 401)]
    www = responses[0].headers["www-authenticate"]
    assert www.startswith("Bearer ")
    c = challenge(www)
    assert c["error"] == "invalid_token"
    assert c["resource_metadata"] == f"http://127.0.0.1:{gw.port}/.well-known/oauth-protected-resource/mcp"


# --- the SDK's own OAuth flow against the test AS (idpyoidc) -----------------------------------

SDK_CLIENT = "mcp-sdk"
SDK_SECRET = "mcp-sdk-secret-0123456789abcdef0123456789"
SDK_REDIRECT = "http://127.0.0.1:1/cb/mcp-sdk"  # never fetched: the test reads the code off the 302


class MemoryStorage:
    """The SDK's TokenStorage in memory, holding a client registered at the AS beforehand
    (the test AS has no dynamic registration)."""

    def __init__(self, client_info):
        self.tokens, self.client_info = None, client_info

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


def test_the_sdk_oauth_flow_gets_a_token_and_steps_up_for_a_tool(mcp_upstream, authserver, gateway_factory):
    """The SDK's OAuthClientProvider, from nothing: the gateway's 401 names the resource
    metadata, which names the AS; the SDK reads the AS's metadata, runs the code flow with PKCE
    and RFC 8707's resource, and retries with the token. deploy's 403 insufficient_scope makes
    it authorize again for the union of scopes, and the call passes, in the same MCP session.
    idpyoidc's OIDC authorization endpoint refuses a request without openid, and the SDK asks
    for the scopes the challenge names, so this route requires openid too."""
    issuer = (f'{{ issuer: "{authserver.issuer}", discovery: true, access_token_type: at+jwt, algorithms: [ES256], '
              f'audiences: ["http://127.0.0.1:{{PORT}}/mcp"] }}')
    gw = gateway_factory(config(mcp_upstream, issuer, scopes="openid, mcp"))
    resource = gw.url("/mcp")
    # The AS mints the audience configured for the client (it does not read RFC 8707's resource).
    authserver.add_client(SDK_CLIENT, client_secret=SDK_SECRET, scopes=["openid", "mcp", "mcp:deploy"],
                          audience=[resource], redirect_uri=SDK_REDIRECT)
    authorizations = []

    async def redirect_handler(url):
        authorizations.append(url)

    async def callback_handler():
        # The AS logs alice in by itself (AutoLogin) and redirects with the code.
        url = authorizations[-1]
        r = await anyio.to_thread.run_sync(lambda: requests.get(url, allow_redirects=False, timeout=10))
        assert r.status_code == 302, r.text
        q = {k: v[0] for k, v in parse_qs(urlsplit(r.headers["Location"]).query).items()}
        assert "code" in q, q
        return AuthorizationCodeResult(code=q["code"], state=q.get("state"), iss=q.get("iss"))

    client = OAuthClientInformationFull(client_id=SDK_CLIENT, client_secret=SDK_SECRET, redirect_uris=[SDK_REDIRECT],
                                        token_endpoint_auth_method="client_secret_post",
                                        grant_types=["authorization_code"])
    metadata = OAuthClientMetadata(redirect_uris=[SDK_REDIRECT], grant_types=["authorization_code"],
                                   token_endpoint_auth_method="client_secret_post")
    provider = OAuthClientProvider(resource, metadata, MemoryStorage(client), redirect_handler, callback_handler)
    responses = []

    async def record(response):
        responses.append(response)

    async def scenario():
        hooks = {"response": [record]}
        async with httpx2.AsyncClient(auth=provider, timeout=HTTP_TIMEOUT, event_hooks=hooks) as http, \
                streamable_http_client(resource, http_client=http) as (read, write), \
                ClientSession(read, write, read_timeout_seconds=READ_TIMEOUT) as session:
            await session.initialize()
            said = text(await session.call_tool("echo", {"text": "signed in"}))
            deployed = text(await session.call_tool("deploy", {"target": "prod"}))
            return said, deployed

    assert run(scenario) == ("signed in", "deployed prod")
    seen = [(r.request.method, r.request.url.path, r.status_code) for r in responses]
    assert seen[:4] == [("POST", "/mcp", 401), ("GET", "/.well-known/oauth-protected-resource/mcp", 200),
                        ("GET", "/.well-known/oauth-authorization-server", 200), ("POST", "/token", 200)], seen
    posts = [x for x in seen if x[0] == "POST"]  # the GET stream may open at any point in between
    refused = posts.index(("POST", "/mcp", 403))
    assert posts[refused + 1:refused + 3] == [("POST", "/token", 200), ("POST", "/mcp", 200)], seen
    # One MCP session throughout: the step-up changed the token, not the session.
    sessions = {r.request.headers.get("mcp-session-id") for r in responses[5:] if r.request.url.path == "/mcp"}
    assert len(sessions) == 1 and None not in sessions, sessions
    asked = [{k: v[0] for k, v in parse_qs(urlsplit(u).query).items()} for u in authorizations]
    assert [a["scope"] for a in asked] == ["openid mcp", "openid mcp mcp:deploy"]
    assert all(a["resource"] == resource and a["code_challenge_method"] == "S256" for a in asked), asked
    assert [(t["grant_type"], t["status"]) for t in authserver.token_requests] == [("authorization_code", 200)] * 2
    assert mcp_upstream.calls() == ["echo", "deploy"]
