#!/usr/bin/env python3
"""Writes the gRPC body of one ext_authz CheckRequest (a 5-byte prefix, then the message), as
Envoy sends it for `GET https://api.example/api/orders/1` with the headers given as NAME:VALUE
arguments. Protobuf's wire format written by hand (field numbers from proto/), so that the
bench needs nothing beyond Python: IntegrationTests/decision/test_ext_authz_protos.py checks that
those numbers are Envoy's.

usage: check_request.py OUT 'authorization:Bearer …' 'user-agent:h2load' …"""
import sys


def varint(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def field(number, payload):
    """A length-delimited field (wire type 2): strings, messages and map entries."""
    if isinstance(payload, str):
        payload = payload.encode()
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def check_request(path, headers):
    # AttributeContext.HttpRequest: id 1, method 2, headers 3 (map), path 4, host 5, scheme 6.
    http = field(1, "bench-request-1") + field(2, "GET")
    for name, value in headers:
        http += field(3, field(1, name) + field(2, value))
    http += field(4, path) + field(5, "api.example") + field(6, "https")
    # Peer.address 1 → Address.socket_address 1 → SocketAddress.address 2
    source = field(1, field(1, field(2, "203.0.113.7")))
    # AttributeContext: source 1, request 4 → Request.http 2
    attributes = field(1, source) + field(4, field(2, http))
    return field(1, attributes)  # CheckRequest: attributes 1


if __name__ == "__main__":
    headers = [tuple(a.split(":", 1)) for a in sys.argv[2:]]
    headers = [(":authority", "api.example"), (":method", "GET"), (":path", "/api/orders/1"), (":scheme", "https")] + headers
    message = check_request("/api/orders/1", headers)
    with open(sys.argv[1], "wb") as f:
        f.write(b"\0" + len(message).to_bytes(4, "big") + message)
