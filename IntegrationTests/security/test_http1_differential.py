"""Differential test: tokengate's HTTP/1.1 request parser against llhttp (Node's parser,
through PyPI's httptools) on a seeded, generated corpus of requests.

Every request both parsers accept must parse to the same method, target, version, header
fields, body and trailer fields. Every disagreement must be a listed class: tokengate
refusing what llhttp accepts (tokengate is the stricter one, each class with its reason),
or, rarely and each with a justification, tokengate accepting what llhttp refuses. A class
that is not listed fails the test, and so does a listed class that no longer occurs (the
list stays true).

The tool (tokengate-http1-parse, a product of the root package) is found like tokengate
itself: $HTTP1_PARSE_TOOL, else next to $TOKENGATE_BIN.
"""
import collections
import json
import os
import random
import struct
import subprocess

import httptools

from support.gateway import BIN

TOOL = os.environ.get("HTTP1_PARSE_TOOL", os.path.join(os.path.dirname(BIN), "tokengate-http1-parse"))
SEED = 9112
COUNT = 12000

# tokengate refuses, llhttp accepts: tokengate's error code -> why tokengate is right to.
# (Refusals llhttp shares — bare LF/CR, NUL, obs-fold, CL+TE, bad CL, bad names and values,
# whitespace before colon, bad versions, chunk framing, the h2 preface — are agreements.)
TOKENGATE_STRICTER = {
    "multiple_host": "RFC 9112 §3.2: a server MUST answer 400 to a request with more than one Host",
    "missing_host": "RFC 9112 §3.2: a server MUST answer 400 to an HTTP/1.1 request without Host",
    "unsupported_expectation": "RFC 9110 §10.1.1: an expectation we cannot meet is answered 417",
    "leading_empty_lines": "RFC 9112 §2.2 asks to ignore at least one empty line; we ignore exactly one",
    "transfer_encoding_on_http_1_0": "RFC 9112 §6.1: TE in an HTTP/1.0 message means faulty framing",
    "unsupported_transfer_coding": "only exactly `chunked` is framed; llhttp lets a final `chunked` "
                                   "after other codings through (TE.TE smuggling)",
    "invalid_transfer_encoding": "a TE value that is not a token list is malformed framing "
                                 "(llhttp takes an empty element: \",chunked\")",
    "invalid_target": "request-line split on single SPs (llhttp takes \"GET /  HTTP/1.1\"), "
                      "request-target form per RFC 9112 §3.2 (asterisk only for OPTIONS, authority "
                      "only for CONNECT, absolute-form is scheme://authority)",
    "chunk_size_too_large": "more than 16 hex digits (leading zeros count): llhttp only bounds the value",
    "invalid_chunk_extension": "chunk-ext grammar of RFC 9112 §7.1.1 checked (llhttp skips extensions)",
    "forbidden_trailer_field": "RFC 9110 §6.5.1: Host (framing and routing fields) in trailers",
    "unsupported_version": "llhttp takes HTTP/0.9 and HTTP/2.0 request lines; only HTTP/1.0 and "
                           "HTTP/1.1 are spoken here (505)",
}

# tokengate accepts, llhttp refuses: llhttp's error class and message -> justification.
TOKENGATE_LENIENT = {
    "HttpParserInvalidMethodError: Invalid method encountered":
        "llhttp knows a fixed list of methods; RFC 9110 §9.1 makes a method any token, and an "
        "extension method is the gateway's to refuse (501), not the parser's",
    # RFC 9112 §7.1.1: chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
    # and RFC 9110 §5.6.3: "Recipients MUST parse for such bad whitespace and remove it". The
    # chunk size, and so the framing, is the same for both parsers; llhttp just refuses more.
    "HttpParserError: Invalid character in chunk size":
        "BWS before ';' in a chunk extension (RFC 9112 §7.1.1, RFC 9110 §5.6.3 MUST parse BWS)",
    "HttpParserError: Invalid character in chunk extensions":
        "BWS after ';' in a chunk extension (RFC 9112 §7.1.1, RFC 9110 §5.6.3 MUST parse BWS)",
    "HttpParserError: Invalid character in chunk extensions name":
        "BWS before '=' in a chunk extension (RFC 9112 §7.1.1, RFC 9110 §5.6.3 MUST parse BWS)",
}

# Accepted by both but parsed differently, and why that is not a disagreement: none.


# ---------------------------------------------------------------- generation

TCHAR = b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
PATH = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@/"
COMMON = [b"Accept", b"User-Agent", b"Cookie", b"X-Forwarded-For", b"Authorization", b"Accept-Encoding",
          b"Cache-Control", b"If-None-Match", b"Content-Type", b"Origin", b"Referer", b"DPoP"]
METHODS = [b"GET", b"GET", b"POST", b"POST", b"PUT", b"DELETE", b"PATCH", b"OPTIONS", b"HEAD", b"PURGE"]


def pick(rng, alphabet, lo, hi):
    return bytes(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))


def gen_target(rng):
    r = rng.random()
    path = b"/" + b"/".join(pick(rng, PATH, 0, 8) for _ in range(rng.randint(0, 4)))
    if rng.random() < 0.3:
        path += b"%" + bytes(rng.choice(b"0123456789ABCDEF") for _ in range(2))
    if rng.random() < 0.4:
        path += b"?" + pick(rng, PATH + b"?", 0, 20)
    if r < 0.08:
        return b"http://" + pick(rng, b"abcdefghij.", 1, 10) + path
    return path


def gen_value(rng):
    r = rng.random()
    if r < 0.5:
        value = pick(rng, bytes(range(0x21, 0x7F)), 0, 30)
    elif r < 0.8:
        value = b" ".join(pick(rng, bytes(range(0x21, 0x7F)), 1, 8) for _ in range(rng.randint(1, 4)))
    else:
        value = bytes(rng.choice(list(range(0x21, 0x7F)) + list(range(0x80, 0x100)) + [0x20, 0x09])
                      for _ in range(rng.randint(1, 20))).strip(b" \t")
    ows = [b"", b"", b" ", b"\t", b"  "]
    return rng.choice(ows[:3] + [b" "]) + value + rng.choice(ows)


def gen_name(rng):
    if rng.random() < 0.4:
        return rng.choice(COMMON)
    return b"X-" + pick(rng, TCHAR, 1, 12)


class Request:
    def __init__(self, rng):
        self.method = rng.choice(METHODS)
        self.target = gen_target(rng)
        self.version = b"HTTP/1.1" if rng.random() < 0.9 else b"HTTP/1.0"
        self.headers = []
        if self.version == b"HTTP/1.1" or rng.random() < 0.5:
            self.headers.append((b"Host", rng.choice([b"a.example", b"api.example.com:8443", b"127.0.0.1"])))
        for _ in range(rng.randint(0, 8)):
            self.headers.append((gen_name(rng), gen_value(rng)))
        rng.shuffle(self.headers)
        self.body = b""
        self.chunks = None
        self.trailers = []
        r = rng.random()
        if r < 0.35:
            self.body = bytes(rng.randrange(256) for _ in range(rng.randint(0, 40)))
            self.headers.append((b"Content-Length", str(len(self.body)).encode()))
        elif r < 0.65 and self.version == b"HTTP/1.1":
            self.headers.append((rng.choice([b"Transfer-Encoding", b"transfer-encoding"]),
                                 rng.choice([b"chunked", b"chunked", b"Chunked", b"CHUNKED"])))
            self.chunks = []
            for _ in range(rng.randint(0, 4)):
                data = bytes(rng.randrange(256) for _ in range(rng.randint(1, 20)))
                size = ("%x" if rng.random() < 0.5 else "%X") % len(data)
                if rng.random() < 0.2:
                    size = "0" * rng.randint(1, 3) + size
                ext = b""
                if rng.random() < 0.25:
                    ext = b";" + pick(rng, TCHAR, 1, 6)
                    if rng.random() < 0.5:
                        ext += b"=" + (pick(rng, TCHAR, 1, 6) if rng.random() < 0.6
                                       else b'"' + pick(rng, b"abc def=;,", 0, 8) + b'"')
                self.chunks.append([size.encode(), ext, data])
                self.body += data
            if rng.random() < 0.3:
                self.trailers = [(b"X-T" + pick(rng, TCHAR, 1, 4), gen_value(rng)) for _ in range(rng.randint(1, 3))]

    def wire(self):
        head = self.method + b" " + self.target + b" " + self.version + b"\r\n"
        head += b"".join(n + b":" + v + b"\r\n" for n, v in self.headers) + b"\r\n"
        if self.chunks is None:
            return head + self.body
        out = head + b"".join(s + e + b"\r\n" + d + b"\r\n" for s, e, d in self.chunks)
        return out + b"0\r\n" + b"".join(n + b": " + v + b"\r\n" for n, v in self.trailers) + b"\r\n"


def mutate(rng, req):
    """One entry of the smuggling catalogue, applied to a generated request."""
    kind = rng.randrange(22)
    h = req.headers
    if kind == 0:
        h.append((b"Content-Length", b"3")); h.append((b"Transfer-Encoding", b"chunked"))
    elif kind == 1:
        h[:] = [x for x in h if x[0].lower() not in (b"content-length", b"transfer-encoding")]
        h.append((b"Transfer-Encoding", rng.choice([b"xchunked", b"chunked, identity", b"identity", b'"chunked"',
                                                    b"chunked\x0b", b" chunked", b"chunked ", b"gzip, chunked",
                                                    b"\tchunked", b"chunked;x=1", b",chunked", b"chunked,chunked"])))
        req.chunks = req.chunks if req.chunks is not None else []
    elif kind == 2:
        h.append((b"Content-Length", rng.choice([b"0", str(len(req.body)).encode(), b"1"])))
        h.append((b"Content-Length", rng.choice([b"0", str(len(req.body)).encode()])))
    elif kind == 3:
        h[:] = [x for x in h if x[0].lower() not in (b"content-length", b"transfer-encoding")]
        req.chunks = None
        h.append((b"Content-Length", rng.choice([b"+5", b"-1", b" 5", b"5 5", b"0x5", b"", b"5,5", b"5, 5",
                                                 b"99999999999999999999", b"05", b"5\x0b"])))
        req.body = b"hello"
    elif kind == 4 and h:
        i = rng.randrange(len(h)); h[i] = (h[i][0], h[i][1] + b"\r\n " + b"folded")
    elif kind == 5:
        return replace_one(rng, req.wire(), b"\r\n", b"\n")
    elif kind == 6:
        return replace_one(rng, req.wire(), b"\r\n", b"\r")
    elif kind == 7 and h:
        i = rng.randrange(len(h)); v = h[i][1]; k = rng.randint(0, len(v))
        h[i] = (h[i][0], v[:k] + rng.choice([b"\x00", b"\x01", b"\x7f", b"\x0b", b"\x0c", b"\x1b", b"\r"]) + v[k:])
    elif kind == 8 and h:
        i = rng.randrange(len(h)); h[i] = (h[i][0] + rng.choice([b" ", b"\t"]), h[i][1])
    elif kind == 9:
        req.version = rng.choice([b"HTTP/1.7", b"HTTP/2.0", b"HTTP/1.10", b"http/1.1", b"HTTP/1", b"HTTP/0.9",
                                  b"HTTP/1.1 ", b"HTTP/11"])
    elif kind == 10:
        return b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    elif kind == 11:
        return b"\r\n" * rng.randint(1, 2) + req.wire()
    elif kind == 12:
        req.method = rng.choice([b"G@T", b"get", b"GET\t", b"FOO", b"M-SEARCH", b"GE T", b""])
    elif kind == 13:
        k = rng.randint(1, len(req.target))
        req.target = req.target[:k] + rng.choice([b" ", b"\t", b"\x01", b"\x7f", b"\xe9", b"#", b'"', b"{", b"\\"]) + req.target[k:]
    elif kind == 14:
        req.target = rng.choice([b"*", b"a/b", b"example.com:443", b"//x", b"http://h"])
    elif kind == 15:
        if rng.random() < 0.5:
            h[:] = [x for x in h if x[0] != b"Host"]
        else:
            h.append((b"host", b"other.example"))
    elif kind == 16 and req.chunks:
        c = rng.choice(req.chunks)
        c[0] = rng.choice([b"zz", b"-1", c[0] + b" ", c[0] + b"g", b"0" * 17 + c[0], b"", c[0] + b"\t"])
    elif kind == 17 and req.chunks:
        c = rng.choice(req.chunks)
        c[1] = rng.choice([b";", b"; a", b";a=\x01", b';a="b', b";a b", b";a=", b" ;a", b";a =b"])
    elif kind == 18 and req.chunks:
        c = rng.choice(req.chunks)
        c[2] = c[2] + rng.choice([b"x", b""]) if rng.random() < 0.5 else c[2][:-1]
    elif kind == 19:
        req.version = b"HTTP/1.0"
        h[:] = [x for x in h if x[0].lower() not in (b"content-length", b"transfer-encoding")]
        h.append((b"Transfer-Encoding", b"chunked"))
        req.chunks = req.chunks if req.chunks is not None else []
    elif kind == 20:
        h.append(rng.choice([(b"", b"v"), (b"X(Y)", b"v"), (b"X\xe9", b"v"), (b"Expect", b"100-continue"),
                             (b"Expect", b"nope")]))
    elif kind == 21 and req.chunks is not None:
        req.trailers.append(rng.choice([(b"Host", b"b"), (b"Content-Length", b"5"), (b"X T", b"v"), (b"X-T", b"a\r\n b")]))
    return req.wire()


def replace_one(rng, wire, old, new):
    end = wire.index(b"\r\n\r\n") + 4
    spots = [i for i in range(end) if wire.startswith(old, i)]
    i = rng.choice(spots)
    return wire[:i] + new + wire[i + len(old):]


def corpus():
    rng = random.Random(SEED)
    out = []
    for _ in range(COUNT):
        req = Request(rng)
        out.append(mutate(rng, req) if rng.random() < 0.4 else req.wire())
    return out


# ---------------------------------------------------------------- the two parsers

def rstrip_ows(v):
    return v.rstrip(b" \t")


class Llhttp:
    """httptools callbacks collecting each message (llhttp keeps a value's trailing OWS,
    which RFC 9110 §5.5 excludes from the value: stripped here before comparing)."""

    def __init__(self):
        self.messages, self.current, self.in_trailers = [], None, False

    def on_message_begin(self):
        self.current = {"target": b"", "headers": [], "trailers": [], "body": b""}
        self.in_trailers = False

    def on_url(self, url):
        self.current["target"] += url

    def on_header(self, name, value):
        self.current["trailers" if self.in_trailers else "headers"].append((name, rstrip_ows(value)))

    def on_headers_complete(self):
        self.in_trailers = True
        self.current["method"] = self.parser.get_method()
        self.current["version"] = self.parser.get_http_version()

    def on_body(self, body):
        self.current["body"] += body

    def on_message_complete(self):
        self.messages.append(self.current)
        self.current = None

    @classmethod
    def parse(cls, wire):
        p = cls()
        p.parser = httptools.HttpRequestParser(p)
        try:
            p.parser.feed_data(wire)
        except httptools.HttpParserUpgrade:
            return "accept", p.messages + ([p.current] if p.current else [])
        except httptools.HttpParserError as e:
            return "refuse", f"{type(e).__name__}: {e}"
        return ("incomplete", None) if p.current else ("accept", p.messages)


def tokengate_all(wires):
    frames = b"".join(struct.pack(">I", len(w)) + w for w in wires)
    out = subprocess.run([TOOL], input=frames, capture_output=True, check=True, timeout=300).stdout
    results = []
    for line in out.decode().splitlines():
        r = json.loads(line)
        b = lambda s: s.encode("latin-1")
        msgs = [{"method": b(m["method"]), "target": b(m["target"]), "version": m["version"],
                 "headers": [(b(n), b(v)) for n, v in m["headers"]], "body": b(m["body"]),
                 "trailers": [(b(n), b(v)) for n, v in m["trailers"]]} for m in r["messages"]]
        if r["error"]:
            results.append(("refuse", r["error"]))
        elif not r["idle"]:
            results.append(("incomplete", None))
        else:
            results.append(("accept", msgs))
    assert len(results) == len(wires)
    return results


def test_http1_parser_agrees_with_llhttp():
    assert os.path.exists(TOOL), f"{TOOL} is missing: build with `swift build --build-tests`"
    wires = corpus()
    ours = tokengate_all(wires)
    counts = collections.Counter()
    unexpected = collections.defaultdict(list)
    for wire, (tg, tg_detail), (ll, ll_detail) in zip(wires, ours, map(Llhttp.parse, wires)):
        if tg == ll == "accept":
            if tg_detail == ll_detail:
                counts["agree: accepted, same parse"] += 1
            else:
                unexpected["both accept, parsed differently"].append((wire, tg_detail, ll_detail))
        elif tg == ll:
            counts[f"agree: both {tg}"] += 1
        elif tg == "refuse" and ll in ("accept", "incomplete"):
            key = f"tokengate stricter: {tg_detail}"
            counts[key] += 1
            if tg_detail not in TOKENGATE_STRICTER:
                unexpected[key].append((wire, ll, ll_detail))
        elif tg == "accept" and ll == "refuse":
            key = f"tokengate lenient: {ll_detail}"
            counts[key] += 1
            if ll_detail not in TOKENGATE_LENIENT:
                unexpected[key].append((wire, tg_detail))
        else:
            unexpected[f"tokengate {tg} / llhttp {ll}"].append((wire, tg_detail, ll_detail))
    report = "\n".join(f"{n:6d}  {k}" for k, n in sorted(counts.items()))
    print(f"\n{len(wires)} requests (seed {SEED}):\n{report}")
    assert not unexpected, "unlisted disagreements:\n" + "\n".join(
        f"{k}: {len(v)}, e.g. {v[0]!r}" for k, v in unexpected.items())
    assert len(wires) >= 10000
    assert counts["agree: accepted, same parse"] >= 5000
    seen = {k.split(": ", 1)[1] for k in counts if k.startswith("tokengate")}
    stale = (set(TOKENGATE_STRICTER) | set(TOKENGATE_LENIENT)) - seen
    assert not stale, f"listed classes that no longer occur (update the lists): {stale}"
