"""A multi-tenant Entra ID look-alike on 127.0.0.1: one real idpyoidc authorization server per
tenant (support/authserver), behind a front that gives them Entra ID's URL layout and its
multi-tenant endpoints.

  /{tid}/v2.0/...                                   tenant tid's own AS (issuer
                                                    http://127.0.0.1:PORT/{tid}/v2.0, every ID
                                                    token with "tid": tid), its path passed on
  /organizations/v2.0/.well-known/openid-configuration
                                                    the multi-tenant discovery document in Entra
                                                    ID's published form: issuer
                                                    http://127.0.0.1:PORT/{tenantid}/v2.0 (the
                                                    literal placeholder), no PAR, no JAR by
                                                    reference, no RFC 9207 iss
  /organizations/discovery/v2.0/keys                the common JWKS: every tenant's keys
  /organizations/oauth2/v2.0/authorize              home-realm discovery: a redirect to the
                                                    tenant of `home` (the account the user
                                                    signs in with), query unchanged
  /organizations/oauth2/v2.0/token                  the code is redeemed at the tenant it came from

As Entra ID does, authorization responses carry no `iss` (the tenant AS's is taken out of its
redirect). Use: EntraFront(authserver_factory, ["t-a", "t-b"]).start(); .home = "t-b"; .issuer(tid);
.add_client(...) registers a client at every tenant; .close()."""
import http.server
import json
import threading
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import requests

from .authserver.server import free_port


class EntraFront:
    def __init__(self, authserver_factory, tenants, **as_kwargs):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.tenants = {t: authserver_factory(issuer=self.issuer(t), id_token_claims={"tid": t}, **as_kwargs)
                        for t in tenants}
        self.home = tenants[0]
        self.hits = []
        self._httpd = None

    def issuer(self, tid):
        return f"{self.base}/{tid}/v2.0"

    @property
    def template(self):
        return f"{self.base}/{{tenant}}/v2.0"

    def add_client(self, *args, **kwargs):
        for a in self.tenants.values():
            a.add_client(*args, **kwargs)

    def discovery(self):
        org = f"{self.base}/organizations"
        return {
            "token_endpoint": f"{org}/oauth2/v2.0/token",
            "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt", "client_secret_basic"],
            "jwks_uri": f"{org}/discovery/v2.0/keys",
            "response_modes_supported": ["query", "fragment", "form_post"],
            "subject_types_supported": ["pairwise"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "response_types_supported": ["code", "id_token", "code id_token", "id_token token"],
            "scopes_supported": ["openid", "profile", "email", "offline_access"],
            "issuer": f"{self.base}/{{tenantid}}/v2.0",
            "request_uri_parameter_supported": False,
            "userinfo_endpoint": f"{org}/oidc/userinfo",
            "authorization_endpoint": f"{org}/oauth2/v2.0/authorize",
            "device_authorization_endpoint": f"{org}/oauth2/v2.0/devicecode",
            "http_logout_supported": True,
            "frontchannel_logout_supported": True,
            "end_session_endpoint": f"{org}/oauth2/v2.0/logout",
            "claims_supported": ["sub", "iss", "cloud_instance_name", "cloud_instance_host_name", "cloud_graph_host_name",
                                 "msgraph_host", "aud", "exp", "iat", "auth_time", "acr", "nonce",
                                 "preferred_username", "name", "tid", "ver", "at_hash", "c_hash", "email"],
            "kerberos_endpoint": f"{org}/kerberos",
            "tenant_region_scope": None,
            "cloud_instance_name": "microsoftonline.com",
            "cloud_graph_host_name": "graph.windows.net",
            "msgraph_host": "graph.microsoft.com",
            "rbac_url": "https://pas.windows.net",
        }

    def jwks(self):
        keys = []
        for a in self.tenants.values():
            keys += requests.get(f"http://127.0.0.1:{a.port}/jwks.json", timeout=5).json()["keys"]
        return {"keys": keys}

    def start(self):
        front = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def answer(self, status, body=b"", headers=()):
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def json(self, obj):
                self.answer(200, json.dumps(obj).encode(), [("Content-Type", "application/json")])

            def forward(self, tid, path):
                a = front.tenants.get(tid)
                if a is None:
                    return self.answer(400, b'{"error":"invalid_tenant"}', [("Content-Type", "application/json")])
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "content-length", "connection")}
                r = requests.request(self.command, f"http://127.0.0.1:{a.port}{path}", data=body or None,
                                     headers=headers, allow_redirects=False, timeout=10)
                out = []
                for k, v in r.headers.items():
                    if k.lower() in ("content-length", "transfer-encoding", "connection", "content-encoding"):
                        continue
                    if k.lower() == "location":
                        v = front.without_iss(v)
                    out.append((k, v))
                self.answer(r.status_code, r.content, out)

            def route(self):
                url = urlsplit(self.path)
                front.hits.append(url.path)
                if url.path == "/organizations/v2.0/.well-known/openid-configuration":
                    return self.json(front.discovery())
                if url.path == "/organizations/discovery/v2.0/keys":
                    return self.json(front.jwks())
                if url.path == "/organizations/oauth2/v2.0/authorize":
                    return self.answer(302, headers=[("Location", f"{front.issuer(front.home)}/authorization?{url.query}")])
                if url.path == "/organizations/oauth2/v2.0/token":
                    return self.forward(front.home, "/token")
                parts = url.path.split("/", 3)
                if len(parts) >= 3 and parts[2] == "v2.0":
                    rest = "/" + (parts[3] if len(parts) > 3 else "")
                    return self.forward(parts[1], rest + (f"?{url.query}" if url.query else ""))
                self.answer(404)

            do_GET = route
            do_POST = route

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    @staticmethod
    def without_iss(location):
        """Entra ID sends no RFC 9207 iss with an authorization response."""
        u = urlsplit(location)
        query = [(k, v) for k, v in parse_qsl(u.query, keep_blank_values=True) if k != "iss"]
        return urlunsplit((u.scheme, u.netloc, u.path, urlencode(query), u.fragment))

    def close(self):
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
