"""Request bodies over a TLS listener that arrive in many writes, with pauses between them:
the connection's input fills while whole records still wait inside OpenSSL, and the gateway
must come back for them (a server that only waits for the socket to become readable again
never does: the client has nothing more to send until it is answered)."""
import json
import os
import socket
import ssl
import time

import pytest

from support.pacing import paced
from test_http2 import cert, tls_listener  # noqa: F401 (cert is a fixture)


def upload(port, cafile, body, piece, pause):
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.set_alpn_protocols(["http/1.1"])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            s.sendall(f"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: {len(body)}\r\n"
                      "Connection: close\r\n\r\n".encode())
            for at in paced(range(0, len(body), piece), pause):
                s.sendall(body[at:at + piece])
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
    head, _, rest = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), rest


@pytest.mark.parametrize("piece", [100_000, 16_384 + 1, 70_000])
def test_a_body_in_spaced_pieces_is_read_to_its_end(upstream, gateway_factory, cert, piece):  # noqa: F811
    g = gateway_factory(tls_listener(upstream, cert))
    body = os.urandom(3 << 20)
    for _ in range(3):
        status, rest = upload(g.port, cert[0], body, piece, pause=0.001)
        assert status == 200, rest[:200]
        assert json.loads(rest)["body_length"] == len(body)
