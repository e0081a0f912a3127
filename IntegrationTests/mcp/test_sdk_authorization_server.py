"""The official MCP Python SDK's OAuth client against tokengate's own authorization server
(docs/authorization-server.md): the client knows nothing but the MCP URL and its own Client ID
Metadata Document URL (served over https on 127.0.0.1). It follows the route's 401 to the
protected-resource metadata, then to tokengate's AS metadata, sees that CIMD is supported and
uses its document URL as `client_id`; the user signs in at the real IdP (idpyoidc, through the
gateway's login) and consents; the SDK trades the code with PKCE and RFC 8707's `resource`, and
calls a tool on the SDK's own server behind the route with a token whose `aud` is the resource."""
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

from test_authorization_server_login import REDIRECT, Env, claims_of
from test_login import login_as, login_env  # noqa: F401 — fixtures
from test_sdk import HTTP_TIMEOUT, READ_TIMEOUT, MemoryStorage, mcp_upstream, run, text  # noqa: F401


def test_the_sdk_signs_in_at_tokengate_s_as_with_a_metadata_document_and_calls_a_tool(
        login_env, login_as, mcp_upstream, tmp_path):  # noqa: F811
    env = Env(login_env, login_as, mcp_upstream, tmp_path)
    try:
        authorizations = []

        async def redirect_handler(url):
            authorizations.append(url)

        async def callback_handler():
            # The browser: /authorize, the IdP's login form, back, the consent page, Allow.
            def browse():
                r = env.sign_in(authorizations[-1])
                assert r.status_code == 200 and "Allow access?" in r.text, (r.status_code, r.text[:300])
                r = env.consent(r)
                assert r.status_code == 302, r.text[:300]
                return r.headers["Location"]
            location = await anyio.to_thread.run_sync(browse)
            q = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
            assert "code" in q, q
            return AuthorizationCodeResult(code=q["code"], state=q.get("state"), iss=q.get("iss"))

        metadata = OAuthClientMetadata(redirect_uris=[REDIRECT], grant_types=["authorization_code", "refresh_token"],
                                       token_endpoint_auth_method="none")
        provider = OAuthClientProvider(env.resource, metadata, MemoryStorage(None), redirect_handler,
                                       callback_handler, client_metadata_url=env.client_id)
        responses = []

        async def record(response):
            responses.append(response)

        async def scenario():
            async with httpx2.AsyncClient(auth=provider, timeout=HTTP_TIMEOUT,
                                          event_hooks={"response": [record]}) as http, \
                    streamable_http_client(env.resource, http_client=http) as (read, write), \
                    ClientSession(read, write, read_timeout_seconds=READ_TIMEOUT) as session:
                await session.initialize()
                return text(await session.call_tool("echo", {"text": "via tokengate's AS"}))

        assert run(scenario) == "via tokengate's AS"
        seen = [(r.request.method, r.request.url.path, r.status_code) for r in responses]
        assert seen[:4] == [("POST", "/mcp", 401), ("GET", "/.well-known/oauth-protected-resource/mcp", 200),
                            ("GET", "/.well-known/oauth-authorization-server", 200),
                            ("POST", "/oauth2/as/token", 200)], seen
        asked = {k: v[0] for k, v in parse_qs(urlsplit(authorizations[0]).query).items()}
        assert asked["client_id"] == env.client_id and asked["resource"] == env.resource
        assert asked["code_challenge_method"] == "S256"
        token = provider.context.current_tokens.access_token
        c = claims_of(token)
        assert c["aud"] == env.resource and c["client_id"] == env.client_id and c["iss"] == env.issuer
        assert mcp_upstream.calls() == ["echo"]
        # The client's document was fetched by the AS, over https, from the client's own host.
        assert env.host.hits.get("/clients/app.json", 0) >= 1
    finally:
        env.host.stop()
