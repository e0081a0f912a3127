#!/usr/bin/env python3
"""Writes the seeds of the H2Fuzz target to a directory (default corpus-h2/): client request
sequences built with python-hyper's hyperframe and hpack (IntegrationTests/requirements.txt),
each after a flag byte (HTTP2FuzzEntry.all): bit 0 prepends the client preface, bit 1 small
limits, bits 2-3 pick how the gateway answers stream 1, bit 4 a GOAWAY from the server after the
first read, bit 5 the same answer for every stream."""
import hashlib
import os
import sys

from hpack import Encoder
from hyperframe.frame import (ContinuationFrame, DataFrame, GoAwayFrame, HeadersFrame, PingFrame,
                              PriorityFrame, RstStreamFrame, SettingsFrame, WindowUpdateFrame)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
BASE = [(":method", "GET"), (":scheme", "https"), (":authority", "api.example"), (":path", "/")]


SETTING_IDS = {"header_table_size": 1, "max_concurrent_streams": 3, "initial_window_size": 4,
               "max_frame_size": 5, "max_header_list_size": 6}


def settings(**values):
    f = SettingsFrame(0)
    f.settings = {SETTING_IDS[k]: v for k, v in values.items()}
    return f.serialize()


def ack():
    return SettingsFrame(0, flags=["ACK"]).serialize()


def headers(enc, sid, fields, end=True, padding=0, priority=False, huffman=True):
    f = HeadersFrame(sid)
    f.data = enc.encode(fields, huffman=huffman)
    f.flags.add("END_HEADERS")
    if end:
        f.flags.add("END_STREAM")
    if padding:
        f.flags.add("PADDED")
        f.pad_length = padding
    if priority:
        f.flags.add("PRIORITY")
        f.depends_on, f.stream_weight, f.exclusive = 0, 15, False
    return f.serialize()


def data(sid, payload, end=True, padding=0):
    f = DataFrame(sid, payload)
    if end:
        f.flags.add("END_STREAM")
    if padding:
        f.flags.add("PADDED")
        f.pad_length = padding
    return f.serialize()


def continued(enc, sid, fields, pieces, end=True):
    block = enc.encode(fields)
    step = max(1, len(block) // pieces)
    parts = [block[i:i + step] for i in range(0, len(block), step)]
    first = HeadersFrame(sid, parts[0])
    if end:
        first.flags.add("END_STREAM")
    out = first.serialize()
    for i, part in enumerate(parts[1:], 1):
        f = ContinuationFrame(sid, part)
        if i == len(parts) - 1:
            f.flags.add("END_HEADERS")
        out += f.serialize()
    if len(parts) == 1:
        out = headers(Encoder(), sid, fields, end)
    return out


def seeds():
    out = []

    def add(flags, *frames, preface=True):
        body = b"".join(frames)
        out.append(bytes([flags | (1 if preface else 0)]) + (b"" if preface else PREFACE) + body)

    e = Encoder
    add(0, settings(), headers(e(), 1, BASE))
    add(0, settings(), headers(e(), 1, BASE), preface=False)
    add(0, settings(), ack(), headers(e(), 1, BASE + [("accept", "*/*"), ("cookie", "a=1"), ("cookie", "b=2")]))
    post = [(":method", "POST"), (":scheme", "http"), (":authority", "a"), (":path", "/p?q=1"),
            ("content-type", "application/x-www-form-urlencoded"), ("content-length", "11")]
    for answer in range(4):
        add(answer << 2, settings(), headers(e(), 1, post, end=False), data(1, b"hello", end=False), data(1, b" world"))
        add(answer << 2, settings(), headers(e(), 1, post[:5], end=False), data(1, b"x" * 300, padding=10))
    add(2, settings(), headers(e(), 1, post, end=False), data(1, b"y" * 200))
    add(0, settings(), headers(e(), 1, BASE + [("x-long", "v" * 400)], huffman=False))
    add(2, settings(), headers(e(), 1, BASE + [("x-long", "v" * 400)], huffman=False))
    add(0, settings(), continued(e(), 1, BASE + [("x-a", "1" * 40), ("x-b", "2" * 40)], 3))
    add(0, settings(), continued(e(), 1, BASE + [("x-%d" % i, "v") for i in range(40)], 10))
    add(0, settings(), PriorityFrame(3, depends_on=1, stream_weight=200).serialize(),
        headers(e(), 1, BASE, priority=True), headers(e(), 3, BASE, padding=5, priority=True))
    add(0, settings(), PingFrame(0, b"12345678").serialize(), headers(e(), 1, BASE),
        PingFrame(0, b"abcdefgh", flags=["ACK"]).serialize())
    add(12, settings(), headers(e(), 1, post, end=False), RstStreamFrame(1, error_code=8).serialize(),
        headers(e(), 3, BASE))
    add(0, settings(initial_window_size=10), headers(e(), 1, BASE), WindowUpdateFrame(1, 100).serialize(),
        WindowUpdateFrame(0, 1000).serialize())
    add(0, settings(max_frame_size=32768, header_table_size=0), headers(e(), 1, BASE),
        GoAwayFrame(0, last_stream_id=0, error_code=0, additional_data=b"bye").serialize())
    add(16, settings(), headers(e(), 1, BASE), headers(e(), 3, BASE))
    # One encoder across streams: the second block refers to the dynamic table; then a table
    # size update (the encoder emits it at the start of the next block).
    enc = e()
    seq = [headers(enc, 1, BASE + [("x-token", "abc")]), headers(enc, 3, BASE + [("x-token", "abc")])]
    enc.header_table_size = 256
    seq.append(headers(enc, 5, BASE + [("x-token", "def")]))
    enc.header_table_size = 0
    seq.append(headers(enc, 7, BASE))
    add(0, settings(), *seq)
    add(0, settings(), headers(e(), 1, [(":method", "CONNECT"), (":authority", "h:443")]))
    add(0, settings(), headers(e(), 1, [(":method", "OPTIONS"), (":scheme", "https"), (":authority", "a"),
                                          (":path", "*"), ("host", "A")]))
    add(0, settings(), headers(e(), 1, BASE + [("host", "evil")]), headers(e(), 3, BASE[:2] + BASE[3:]))
    add(0, settings(), headers(e(), 1, BASE + [("expect", "100-continue"), ("content-length", "2")], end=False),
        data(1, b"ok"))
    add(0, settings(), headers(e(), 1, BASE + [("te", "trailers")], end=False), data(1, b"a", end=False),
        headers(e(), 1, [("x-trailer", "t")]))
    add(0, settings(), headers(e(), 1, BASE + [("connection", "close")]), headers(e(), 3, BASE + [("te", "gzip")]),
        headers(e(), 5, BASE + [("upgrade", "h2c")]), headers(e(), 7, BASE + [("transfer-encoding", "chunked")]))
    add(0, settings(), headers(e(), 1, BASE + [("content-length", "3")], end=False), data(1, b"toolong"))
    add(0, settings(), headers(e(), 1, [("x", "y")] + BASE))
    # Many streams, the gateway holding every one (answer 3), then resets and new streams.
    enc = e()
    first = b"".join(headers(enc, 1 + 2 * i, BASE, end=False) for i in range(130))
    resets = b"".join(RstStreamFrame(1 + 2 * i, error_code=8).serialize() for i in range(130))
    more = b"".join(headers(enc, 261 + 2 * i, BASE) for i in range(20))
    add(12, settings(), first, resets, more)
    # Every stream held past its reset (bit 5: all answered as stream 1, answer 3: never),
    # then as many new streams; and every stream's body read first (answer 0).
    enc = e()
    held = b"".join(headers(enc, 1 + 2 * i, BASE, end=False) for i in range(40))
    again = b"".join(RstStreamFrame(1 + 2 * i, error_code=8).serialize() for i in range(40))
    again += b"".join(headers(enc, 81 + 2 * i, BASE, end=False) for i in range(40))
    add(32 | 12, settings(), held, again)
    add(32, settings(), headers(e(), 1, post, end=False), headers(e(), 3, post, end=False), data(3, b"a" * 11),
        data(1, b"b" * 11))
    # Rapid reset: HEADERS and RST_STREAM pairs.
    enc = e()
    add(0, settings(), b"".join(headers(enc, 1 + 2 * i, BASE) + RstStreamFrame(1 + 2 * i, error_code=8).serialize()
                                for i in range(60)))
    add(0, settings(), *[PingFrame(0, b"%08d" % i).serialize() for i in range(50)])
    add(0, b"\x00\x00\x00\x00\x00\x00\x00\x00\x00")  # no SETTINGS first
    add(0, settings(), data(1, b"x"))  # DATA on an idle stream
    add(0, settings(), headers(e(), 2, BASE))  # even stream id
    # The rules nghttp2 lets by, kept by HTTP2FrameScreen: a lower stream id, one skipped,
    # HEADERS and DATA on streams the client reset or ended, PRIORITY on stream 0 or on itself,
    # and a body and trailer section the client may still send on a stream it has not ended.
    enc = e()
    add(0, settings(), headers(enc, 5, BASE), headers(enc, 3, BASE), headers(enc, 7, BASE))
    enc = e()
    add(0, settings(), headers(enc, 1, post, end=False), RstStreamFrame(1, error_code=8).serialize(),
        headers(enc, 1, BASE), data(1, b"late"))
    enc = e()
    add(0, settings(), headers(enc, 1, BASE), data(1, b"late"), headers(enc, 3, BASE))
    add(0, settings(), b"\x00\x00\x05\x02\x00\x00\x00\x00\x00" + b"\x00\x00\x00\x01\x10", headers(e(), 1, BASE))
    add(0, settings(), headers(e(), 1, post, end=False),
        b"\x00\x00\x05\x02\x00\x00\x00\x00\x01" + b"\x00\x00\x00\x01\x10", data(1, b"hello world"))
    enc = e()
    add(4, settings(), headers(enc, 1, post, end=False), data(1, b"hello", end=False), headers(enc, 3, BASE),
        data(1, b" world", end=False), headers(enc, 1, [("x-trailer", "t")]), headers(enc, 9, BASE))
    return out


def main():
    target = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus-h2")
    os.makedirs(target, exist_ok=True)
    for seed in seeds():
        with open(os.path.join(target, hashlib.sha1(seed).hexdigest()), "wb") as f:
            f.write(seed)
    print(f"{len(seeds())} seeds in {target}")


if __name__ == "__main__":
    main()
