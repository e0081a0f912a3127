#!/usr/bin/env python3
"""Writes the hand-picked seeds of the HTTP1Fuzz target to a directory (default corpus-http1/).
The first byte picks the parser (HTTP1FuzzEntry.all): 0 request, 1 response, 3 response to HEAD."""
import hashlib
import os
import sys

GET = b"GET / HTTP/1.1\r\nHost: a\r\n"
POST = b"POST /p?q=1 HTTP/1.1\r\nHost: a\r\n"
REQUESTS = [
    GET + b"\r\n",
    b"\r\n" + GET + b"X-A:  v a l \t\r\nx-empty:\r\n\r\n",
    b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    POST + b"Content-Length: 5\r\n\r\nhello" + GET + b"\r\n",
    POST + b"Transfer-Encoding: chunked\r\n\r\n5;a=b;c=\"q \\\"x\\\"\"\r\nhello\r\n1 ; e\r\n!\r\n0\r\nX-T: 1\r\n\r\n",
    POST + b"Expect: 100-continue\r\nContent-Length: 2\r\n\r\nok",
    GET + b"Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
    b"GET http://example.com:80/a HTTP/1.1\r\nHost: example.com\r\n\r\n",
    b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
    b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
    GET + b"X-O: caf\xc3\xa9 \xff\r\n\r\n",
    POST + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    POST + b"Transfer-Encoding: xchunked\r\n\r\n",
    POST + b"Transfer-Encoding: chunked, identity\r\n\r\n",
    POST + b"Transfer-Encoding: \"chunked\"\r\n\r\n",
    POST + b"Transfer-Encoding: chunked\x0b\r\n\r\n",
    b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    POST + b"Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
    POST + b"Content-Length: +5\r\n\r\nhello",
    GET + b"X: a\r\n b\r\n\r\n",
    GET + b"X: a\x00\r\n\r\n",
    GET + b"X: a\rb\r\n\r\n",
    b"GET / HTTP/1.1\nHost: a\n\n",
    GET + b"X : a\r\n\r\n",
    b"GET / HTTP/1.7\r\nHost: a\r\n\r\n",
    b"GET /\r\n",
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    POST + b"Transfer-Encoding: chunked\r\n\r\n0000000000000000005\r\nhello\r\n0\r\n\r\n",
    POST + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhelloX0\r\n\r\n",
    POST + b"Transfer-Encoding: chunked\r\n\r\n0\r\nContent-Length: 1\r\n\r\n",
    b"GET / HTTP/1.1\r\nX: 1\r\n\r\n",
    GET + b"Host: b\r\n\r\n",
    POST + b"Content-Type: application/grpc-web-text+proto; x=1\r\nContent-Length: 0\r\n\r\n",
    POST + b"Content-Type: APPLICATION/GRPC+%\xc3\xa9\r\n\r\n",
    POST + b"Content-Type: application/grpcx\r\nContent-Type: application/grpc\r\n\r\n",
]
RESPONSES = [
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    b"HTTP/1.1 200\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nX-T: 1\r\n\r\n",
    b"HTTP/1.1 200 OK\r\n\r\nuntil close",
    b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
    b"HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n\x81\x05hello",
    b"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
    b"HTTP/2.0 200 OK\r\n\r\n",
    b"HTTP/1.1 099 X\r\n\r\n",
    b"HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n",
]
HEAD_RESPONSES = [b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus-http1")
    os.makedirs(out, exist_ok=True)
    seeds = [b"\x00" + r for r in REQUESTS] + [b"\x01" + r for r in RESPONSES] + [b"\x03" + r for r in HEAD_RESPONSES]
    for seed in seeds:
        with open(os.path.join(out, hashlib.sha1(seed).hexdigest()), "wb") as f:
            f.write(seed)
    print(f"{len(seeds)} seeds in {out}")


if __name__ == "__main__":
    main()
