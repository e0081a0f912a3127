"""An MCP route with token exchange (RFC 8693), with the official MCP Python SDK on both sides
and the real authorization server (idpyoidc): the client's token is issued for the gateway's
resource (RFC 8707, its aud), and the MCP server, which calls an API of its own, gets a token
exchanged for that API's audience instead — never the client's — exchanged once for the
whole session's calls."""
import json

import pytest

from support.authserver.server import TOKEN_EXCHANGE
from support.gateway import Gateway
from test_sdk import connect, mcp_upstream, run, text  # noqa: F401 — mcp_upstream is a fixture
from test_token_exchange import GW_SECRET, claims

API = "https://orders.internal/"


def config(a, up):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 1
clients:
  gw: {{ client_id: tokengate, auth: client_secret_basic, secret: "{GW_SECRET}" }}
issuers:
  as1:
    issuer: "{a.issuer}"
    discovery: true
    audiences: ["http://127.0.0.1:{{PORT}}/mcp"]
    algorithms: [ES256]
upstreams:
  mcp: {{ url: "http://127.0.0.1:{up.port}" }}
routes:
  - name: mcp
    match: {{ path: /mcp }}
    upstream: mcp
    auth: bearer
    issuers: [as1]
    resource: http://127.0.0.1:{{PORT}}/mcp
    require: {{ scopes: [orders:read] }}
    mcp: {{ tools: {{ deploy: {{ require: {{ scopes: [orders:write] }} }} }} }}
    token_exchange: {{ issuer: as1, client: gw, resource: "{API}", scope: orders:read }}
"""


@pytest.fixture
def setup(authserver, mcp_upstream):
    a = authserver
    a.add_client("tokengate", client_secret=GW_SECRET, token_endpoint_auth_method="client_secret_basic",
                 scopes=["openid", "orders:read"])
    g = Gateway(config(a, mcp_upstream))
    g.start()
    yield a, g
    g.stop()


def test_the_mcp_server_gets_an_exchanged_token_for_its_api_once_per_session(setup):
    a, g = setup
    resource = g.url("/mcp")
    # The client's token: for the gateway's resource (RFC 8707 at the authorization request).
    subject = a.post_token(a.authorize(scope="openid orders:read", resource=resource)).json()["access_token"]
    assert claims(subject)["aud"] == [resource]

    async def scenario():
        async with connect(g, subject) as (session, responses):
            tools = await session.list_tools()
            assert "whoami" in [t.name for t in tools.tools]
            seen = [json.loads(text(await session.call_tool("whoami", {}))) for _ in range(4)]
            assert text(await session.call_tool("echo", {"text": "hi"})) == "hi"
            return seen, responses
    seen, responses = run(scenario)
    tokens = set()
    for headers in seen:
        auth = [v for k, v in headers if k == "authorization"]
        assert len(auth) == 1 and auth[0].startswith("Bearer "), headers
        token = auth[0][len("Bearer "):]
        assert subject not in json.dumps(headers)
        tokens.add(token)
    assert len(tokens) == 1, "one exchanged token for the session's calls"
    c = claims(tokens.pop())
    assert c["aud"] == [API] and c["sub"] == claims(subject)["sub"] and c["scope"].split() == ["orders:read"]
    # Every request of the session (initialize, notifications, the GET stream, the calls)
    # passed; one exchange served them all (one worker).
    assert len(responses) >= 7 and all(r.status_code < 400 for r in responses)
    assert [t["status"] for t in a.token_requests if t["grant_type"] == TOKEN_EXCHANGE] == [200]
