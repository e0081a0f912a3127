#!/usr/bin/env python3
"""Writes the seeds of OAuthFuzz, RouteFuzz, LoginFuzz and StreamFuzz, taken from the unit
tests' own cases (Tests/GatewayTests/PathNormalizerTests, RouterTests, RouterTemplateTests, CookiesTests;
Tests/OAuthTests/HTUTests, LoginProtocolTests; Tests/ReactorTests/WebSocketFrameTrackerTests,
RedisProtocolTests), to corpus-<target>/ (or under the directory given). Each entry's first
byte picks what the rest is (see the entries' `all`)."""
import hashlib
import os
import struct
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = sys.argv[1] if len(sys.argv) > 1 else here

PATHS = [
    "/", "/a/b", "/a/b/", "//a///b", "/a/./b", "/a/b/.", "/a/b/..", "/a/b/../c", "/%7Euser", "/%41%62c",
    "/a%2e/b", "/a/%2e%2e/b", "/a/%2E/b", "/x%20y", "/x%3a", "/caf%C3%A9", "/a\"b", "/a|b{c}",
    "/.well-known/x", "/%2e", "/.", "/a/..", "/a/%2F/b", "/a%2fb", "/a\\b", "/a%5Cb", "/a%00",
    "/a%0d%0aX: y", "/a\x01", "/a b", "/a%", "/a%4", "/a%zz", "/..", "/../etc/passwd", "/a/../..",
    "/%2e%2e/x", "/a/..;/b", "/a;b=c", "/secret%3b", "/a#frag", "a/b", "http://evil/a", "*", "",
    "/a?b#c", "/a?x=%00", "/a?x=%G1", "/a?x y", "/a/../b?x=%2F&y=a/../b", "/api", "/api/", "/api/orders/1",
    "/api/orders/../../admin/x", "/apiary", "/public/../admin", "/public/%2e%2e/admin", "/public/./x",
    "/public/css/../img/a.png", "/x/../y", "/api/admin/users", "/api/admin/../health", "/login/",
    "/static/a/../../admin", "/caf%c3%a9/x", "/~user/a/../b", "/%7euser/", "/a.b/c", "/admin",
    "/" + "a/" * 40 + "../" * 33,
]
HOSTS = [
    "", "app.example.com", "API.Example.COM", "Example.COM:8080", "a.b.example.com", "x.apps.example.com",
    "127.0.0.1:65535", "[::1]:80", "[::FFFF:1.2.3.4]", "[::1", "[]", "a..b", "a:+80", "a:65536",
    "\u212a.com", "example.com.", "ex%41mple.com", "exa_mple.com",
]
HTUS = [
    ("HTTPS://API.Example.COM/Orders/1", "https://api.example.com/Orders/1"),
    ("https://a.example:443/x", "https://a.example/x"), ("http://a.example:80/x", "http://h:80"),
    ("https://h", "https://h/"), ("https://a.example:80/x", "http://a.example:443/x"),
    ("https://a.example:8443/x", "https://a.example:4430/x"), ("https://:443/x", "https://[::1]:443/x"),
    ("https://h/caf%C3%A9/\u00e9", "https://h/a/../b"), ("https://u@h/x", "https://h/x?q"),
    ("ftp://h/x", "https:/h/x"), ("https://h:/x", "https://h/%2e%2e/x"), ("https://h/./a", "https://H/a"),
]
# RouteFuzz's path templates (first byte xxxx0111, bits 4-6 the method), each with a target:
# accepted ones with a matching and a missing path, and each kind of refusal.
TEMPLATES = [
    (0x07, "/orders/{order_id}", "/orders/42"), (0x17, "/files/{path*}", "/files/a/b/c/"),
    (0x27, "/{a}/{b}", "/x/%2e%2e/y"), (0x07, "/api/{version}/health", "/api/v1/health/"),
    (0x07, "/orders/{id", "/orders/1"), (0x07, "/orders/id}", "/orders/1"), (0x07, "/{rest*}/x", "/a/x"),
    (0x07, "/files/{name}.json", "/files/a.json"), (0x07, "/caf%C3%A9/{x}", "/caf%c3%a9/%7e"),
    (0x47, "/a/{x}/{r*}", "/a/b/c"), (0x07, "/{x}/b/{y}", "/a/b/c?q=1"), (0x07, "/public/{p*}", "/public/"),
]
# Requests for the template routes of RouteFuzz's fixed table: (first byte, host, target).
TEMPLATE_REQUESTS = [
    (0x00, "gw.example", "/orders/7/items/8"), (0x00, "app.example.com", "/acme/admin/"), (0x08, "x", "/orders/5"),
    (0x00, "h", "/public/a/../b/c"), (0x00, "h", "/orders/1/items/2/../../3/items/4"), (0x00, "h", "/api/v%31/health"),
]
RETURNS = [
    "//evil.example", "/\\evil.example", "/%2F%2Fevil.example", "%2F%2Fevil.example", "/%5Cevil.example",
    "https:evil.example", "javascript:alert(1)", "data:text/html,x", "evil.example", "https://evil.example",
    "https://app.example.com.evil.example", "https://app.example.com@evil.example", "/a\r\nSet-Cookie: x=1",
    "/\t/evil.example", " /x", "/%0d%0aX: y", "/.//evil.example", "/./%2Fevil.example", "/%2e//evil.example",
    "/a/..//evil.example", "https://app.example.com/.//evil.example", "https://app.example.com:99999/",
    "https://app.example.com:0/", "https://app.example.com:/x", "/", "/orders/7?tab=2#top", "/a%20b",
    "https://app.example.com/x", "https://APP.example.com:8443/", "https://a.b.apps.example.com/",
    "/a/./b/../c?x=/../y#/./z", "/..//../orders", "/a/%2e%2e/b", "http://app.example.com/", "/%252F%252Fevil",
]
CALLBACKS = [
    "code=c&state=s&iss=https%3A%2F%2Fas.example", "code=c&state=s", "code=c&state=s&iss=https%3A%2F%2Fevil",
    "error=access_denied&state=s", "code=c&code=d&state=s", "code=c", "state=s", "code=%ZZ&state=s",
    "code=&state=s", "error=x&error_description=a+b%21&state=s&iss=https%3A%2F%2Fas.example", "a&&=&b=",
    # JARM: alg none, a forged ES256 signature, five parts (encrypted), a state that is a number.
    "response=eyJhbGciOiJub25lIn0.eyJzdGF0ZSI6InMiLCJjb2RlIjoiYyJ9.",
    "response=eyJhbGciOiJFUzI1NiIsImtpZCI6ImFzLTEifQ.eyJpc3MiOiJodHRwczovL2FzLmV4YW1wbGUiLCJhdWQiOiJhcHAxIiwiZXhwIjoxODAwMDAwNjAwLCJzdGF0ZSI6InMiLCJjb2RlIjoiYyJ9.AAAA",
    "response=a.b.c.d.e", "response=eyJhbGciOiJub25lIn0.eyJzdGF0ZSI6N30.&state=s",
]
COOKIES = [
    "s=abc; s_1=def\nother=1", "s=abc; x=1\ns=abc", "s=ours; s=tossed", "s=tossed; s=ours", "s=ours\ns=tossed",
    "s=ours; s_1=a; s_1=b", "  a=b;c;=d; e==f;", "tokengate_session=x; a=1",
]


def ws_frame(opcode=2, fin=True, payload=0, masked=False):
    out = bytes([(0x80 if fin else 0) | opcode])
    m = 0x80 if masked else 0
    if payload < 126:
        out += bytes([m | payload])
    elif payload <= 0xFFFF:
        out += bytes([m | 126]) + struct.pack(">H", payload)
    else:
        out += bytes([m | 127]) + struct.pack(">Q", payload)
    if masked:
        out += b"\x11\x22\x33\x44"
    return out + b"\x81" * min(payload, 300)


RESP = [
    b"+OK\r\n-ERR wrong\r\n:-42\r\n$3\r\na\0b\r\n$-1\r\n*-1\r\n*3\r\n:1\r\n$-1\r\n*1\r\n+x\r\n*0\r\n",
    b"$11\r\nhello world\r\n:7\r\n", b"*2\r\n:1\r\n", b"$abc\r\n", b"*1\r\n" * 9 + b":1\r\n",
    b"*3\r\n$3\r\nSET\r\n$3\r\n\0\r\n\r\n$0\r\n\r\n", b"*2\r\n*1\r\n$-1\r\n*0\r\n", b"$0\r\n\r\n",
]


def put(target, data):
    out = os.path.join(root, "corpus-" + target)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def utf8(s):
    return s.encode("utf-8", "surrogateescape")


for t, (a, b) in enumerate(HTUS):
    put("oauth", b"\x01" + utf8(a) + b"\n" + utf8(b))
for r in RETURNS:
    put("oauth", b"\x00" + utf8(r))
for q in CALLBACKS:
    put("oauth", b"\x02" + utf8(q))
    put("oauth", b"\x82" + utf8(q))
# A credential's numbers (OAuthFuzzEntry.signedNumbers): Int64's ends, the window's edges, the
# forms a JSON number can take, in each date claim and in expires_in.
NUMBERS = ["-9223372036854775808", "-9223372036000000000", "9223372036854775807", "-1", "0", "1780000000",
           "253402300799", "253402300800", "1e300", "-1e300", "9.2e18", "1.5", "-0"]
for n, v in enumerate(NUMBERS):
    for claim in ("exp", "nbf", "iat", "auth_time", "expires_in"):
        put("oauth", b"\x03" + utf8('{"acr":"mfa","%s":%s,"sub":"u%d"}' % (claim, v, n)))
put("oauth", b"\x03" + utf8('{"exp":1780000300,"iat":1780000000,"auth_time":1779999900,"expires_in":3600}'))
for n, p in enumerate(PATHS):
    host = HOSTS[n % len(HOSTS)]
    put("route", bytes([(n % 7) << 1 | (n & 1) << 4]) + utf8(host) + b"\n" + utf8(p))
for h in HOSTS:
    put("route", b"\x00" + utf8(h) + b"\n/api/x")
for a, b in HTUS:
    put("route", b"\x01" + utf8(a) + b"\n" + utf8(b))
for first, template, target in TEMPLATES:
    put("route", bytes([first]) + utf8(template) + b"\n" + utf8(target))
for first, host, target in TEMPLATE_REQUESTS:
    put("route", bytes([first]) + utf8(host) + b"\n" + utf8(target))
for c in COOKIES:
    put("login", b"\x00" + utf8(c))
for r in RETURNS:
    put("login", b"\x02rd=" + utf8(r).replace(b"%", b"%25").replace(b"&", b"%26") + b"&client=web")
    put("login", b"\x06rd=" + utf8(r).replace(b"%", b"%25").replace(b"&", b"%26"))
put("login", b"\x02rd=https%3A%2F%2Fgw.example.com%2Fa%2F..%2F%2Fevil")
for q in CALLBACKS:
    put("login", b"\x03" + utf8(q))
# Sealed session cookies: the whole cookie, its chunks in order, out of order, one missing,
# one doubled, a tossed copy, and a flipped bit.
for which in (0, 1):
    for template in [b"\xf0", b"\xf0; \xf1; \xf2", b"\xf2; \xf0; \xf1", b"\xf0; \xf2", b"\xf0\n\xf1; \xf1; \xf2",
                     b"\xf8=\xf4\xf5\xf6; other=1", b"\xf0; \xf8=x", b"\xf0; \xf1; \xf2; \xf9=\xf4"]:
        put("login", b"\x01" + bytes([which]) + b"\x00\x07" + template)
        put("login", b"\x01" + bytes([which | 2]) + b"\x01\x2a" + template)
for masked in (False, True):
    frames = [ws_frame(1, False, 5, masked), ws_frame(9, True, 0, masked), ws_frame(0, True, 125, masked),
              ws_frame(2, True, 126, masked), ws_frame(8, True, 2, masked)]
    stream = b"".join(frames)
    for mode in (0, 2, 4, 6):
        put("stream", bytes([mode]) + stream[:400])
    put("stream", b"\x00" + ws_frame(2, True, 65536, masked)[:40])
put("stream", b"\x00\x82\x7f\x80\x00\x00\x00\x00\x00\x00\x01\xaa")
put("stream", b"\x06\x82\x85\x11\x22\x33\x44hello\x82\x05hello")
for r in RESP:
    put("stream", b"\x01" + r)
