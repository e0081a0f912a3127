#!/usr/bin/env python3
"""Writes the ExtAuthzFuzz seed corpus (fuzz/corpus-extauthz): CheckRequests as Envoy's own
generated messages (PyPI xds-protos, in IntegrationTests/requirements.txt) write them, accepted
and refused, with the fields tokengate reads and the ones it skips."""
import pathlib
import sys

from envoy.service.auth.v3 import external_auth_pb2 as ea

out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent / "corpus-extauthz")
out.mkdir(exist_ok=True)


def request(method="GET", scheme="https", host="api.example.com", path="/v1/items?x=1", headers=None, raw=None,
            source="203.0.113.7", extras=False):
    r = ea.CheckRequest()
    a = r.attributes
    h = a.request.http
    h.method, h.scheme, h.host, h.path = method, scheme, host, path
    h.id = "req-1"
    for k, v in (headers or {}).items():
        h.headers[k] = v
    for k, v in raw or []:
        hv = h.header_map.headers.add()
        hv.key = k
        hv.raw_value = v.encode()
    if source:
        a.source.address.socket_address.address = source
        a.source.address.socket_address.port_value = 50000
    if extras:
        a.request.time.seconds = 1764144000
        a.destination.address.socket_address.address = "10.0.0.2"
        a.context_extensions["route"] = "api"
        a.metadata_context.filter_metadata["envoy.filters.http.jwt_authn"].fields["k"].string_value = "v"
        a.tls_session.sni = host
        h.size = 12
        h.protocol = "HTTP/2"
    return r.SerializeToString()


seeds = {
    "bearer": request(headers={"authorization": "Bearer eyJhbGciOiJFUzI1NiJ9.e30.sig", ":path": "/v1/items?x=1",
                               ":authority": "api.example.com", ":method": "GET"}, extras=True),
    "dpop": request(method="POST", headers={"authorization": "DPoP tok", "dpop": "eyJ0eXAiOiJkcG9wK2p3dCJ9.e30.s"}),
    "cookie-raw": request(raw=[("cookie", "a=1"), ("cookie", "b=2"), ("x-b", "2")]),
    "no-source": request(source=None, headers={"x-a": "1"}),
    "http": request(scheme="http", path="/", headers={}),
    "encoded-path": request(path="/a/%2e%2e/admin?q=%0d", headers={"x": "y"}),
    "bad-method": request(method="GET /x"),
    "bad-scheme": request(scheme="ftp"),
    "bad-host": request(host="a\r\nx-user: admin"),
    "bad-name": request(headers={"X-User": "admin"}),
    "bad-value": request(headers={"x-a": "1\r\nx-user: admin"}),
    "pseudo": request(headers={":path": "/x", ":authority": "h"}),
    "empty": b"",
    "no-http": ea.CheckRequest().SerializeToString() + b"\x0a\x00",
}
for name, data in seeds.items():
    (out / name).write_bytes(data)
print(f"{len(seeds)} seeds in {out}")
