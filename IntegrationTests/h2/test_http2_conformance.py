"""HTTP/2 conformance: RFC 9113's MUST and MUST NOT sentences for a server, each sent as raw
frames (support/h2_raw.py) at a real gateway, on its TLS listener (ALPN h2) and its plain
listener (prior knowledge), and each checked for the exact answer a server on nghttp2 gives:
the GOAWAY's error code and a closed connection for a connection error (§5.4.1), RST_STREAM's
code and a connection that goes on for a stream error (§5.4.2), the status for what the
gateway answers itself. Where RFC 9113 asks for a stream error and nghttp2 ends the connection
instead (allowed: §5.4.1 "an endpoint MAY choose to treat a stream error as a connection
error"), the test says so. Test names carry the RFC 9113 section."""
import os
import tempfile
from types import SimpleNamespace

import pytest
from h2.errors import ErrorCodes
from hyperframe.frame import (ContinuationFrame, DataFrame, HeadersFrame, PingFrame, PriorityFrame, RstStreamFrame,
                              SettingsFrame, WindowUpdateFrame)

from support.gateway import Gateway, basic_config, free_port
from echo_upstream import Upstream
from support import tls_pki
from support.h2_raw import (DATA, END_HEADERS, END_STREAM, GOAWAY, HEADERS, PING, PREFACE, PRIORITY, PUSH_PROMISE,
                            RST_STREAM, SETTINGS, WINDOW_UPDATE, Listener, Peer, frame, tls_context)

PROTOCOL_ERROR = ErrorCodes.PROTOCOL_ERROR
FLOW_CONTROL_ERROR = ErrorCodes.FLOW_CONTROL_ERROR
STREAM_CLOSED = ErrorCodes.STREAM_CLOSED
FRAME_SIZE_ERROR = ErrorCodes.FRAME_SIZE_ERROR
COMPRESSION_ERROR = ErrorCodes.COMPRESSION_ERROR

MAX_WINDOW = 2**31 - 1


@pytest.fixture(scope="module")
def gateway():
    """One gateway with both listeners: TLS at its port, plain HTTP/2 (h2c) at another. With
    H2_CONFORMANCE_PEER=TLS_PORT,H2C_PORT,CAFILE, a server already running there instead:
    scripts/audit.sh runs the suite so at tokengate and at nginx, its peer, side by side."""
    running = os.environ.get("H2_CONFORMANCE_PEER")
    if running:
        tls, plain, cafile = running.split(",")
        yield SimpleNamespace(port=int(tls), plain=int(plain), cafile=cafile)
        return
    d = tempfile.mkdtemp(prefix="tg-h2c-")
    crt, key = tls_pki.make_pair(d, "server", ["127.0.0.1"])
    upstream = Upstream().start()
    plain = free_port()
    config = basic_config(upstream.port).replace(
        "listen: 127.0.0.1:{PORT}",
        "listen:\n"
        f"  - {{ address: 127.0.0.1:{{PORT}}, tls: {{ cert_file: {crt}, key_file: {key} }} }}\n"
        f"  - {{ address: 127.0.0.1:{plain}, http2: true }}").replace(
        "shutdown_grace: 5s", "shutdown_grace: 5s, header_timeout: 2s")
    g = Gateway(config)
    try:
        g.start()
        g.plain, g.cafile = plain, crt
        yield g
    finally:
        g.stop()
        upstream.stop()


@pytest.fixture(params=["tls", "h2c"])
def listener(request, gateway):
    if request.param == "tls":
        return Listener("tls", gateway.port, tls_context(gateway.cafile))
    return Listener("h2c", gateway.plain)


@pytest.fixture
def peer(listener):
    with Peer(listener) as p:
        yield p.handshake()


def connection_error(p, code):
    got = p.connection_error()
    assert got == code, f"expected GOAWAY({code!r}), got {got!r}: {p.summary()}"


def stream_error(p, stream, code):
    assert p.read(lambda: p.reset(stream) is not None or p.goaway() is not None), p.summary()
    assert p.reset(stream) == code, f"expected RST_STREAM({stream}, {code!r}): {p.summary()}"
    assert p.alive(), f"a stream error ended the connection: {p.summary()}"


def served(p, stream, status=200):
    assert p.read(lambda: p.ended(stream) or p.reset(stream) is not None or p.goaway() is not None), p.summary()
    assert p.status(stream) == status, p.summary()


def still_serves(p, stream):
    """The connection goes on: a new request on `stream` is answered."""
    p.send(p.headers_frame(stream))
    served(p, stream)


# §3.4 The connection preface


def test_3_4_server_preface_is_a_settings_frame(listener):
    """§3.4: "The server connection preface consists of a potentially empty SETTINGS frame
    ... that MUST be the first frame the server sends"."""
    with Peer(listener) as p:
        p.send(PREFACE, SettingsFrame(0))
        assert p.read(lambda: p.received)
        kind, flags, stream, _ = p.received[0]
        assert (kind, flags & 0x1, stream) == (SETTINGS, 0, 0)


@pytest.mark.parametrize("bad", [b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n", b"PRI * HTTP/2.0\r\n\r\n\r\n\r\nSM\r\n\r\n"])
def test_3_4_invalid_preface_is_a_connection_error(listener, bad):
    """§3.4: "Clients and servers MUST treat an invalid connection preface as a connection
    error (Section 5.4.1) of type PROTOCOL_ERROR." A connection that starts with the
    preface's request line speaks HTTP/2, on a plain listener too: it gets GOAWAY, not an
    HTTP/1.1 answer."""
    with Peer(listener) as p:
        p.send(bad, SettingsFrame(0))
        connection_error(p, PROTOCOL_ERROR)
        assert not p.raw.startswith(b"HTTP/1.1")


def test_3_4_preface_must_be_followed_by_settings(listener):
    """§3.4: the client preface "MUST be followed by a SETTINGS frame"; a PING in its place
    is a connection error PROTOCOL_ERROR."""
    with Peer(listener) as p:
        p.send(PREFACE, PingFrame(0))
        connection_error(p, PROTOCOL_ERROR)


# §4 Frames


def test_4_1_unknown_frame_types_are_ignored(peer):
    """§4.1: "Implementations MUST ignore and discard frames of unknown types", on the
    connection and on a stream."""
    peer.send(frame(0x20, 0xFF, 0, b"abc"), peer.headers_frame(1, end_stream=False), frame(0x21, 0, 1, b"xyz"),
              DataFrame(1, b"", flags=["END_STREAM"]))
    served(peer, 1)
    assert peer.alive()


def test_4_1_unknown_flags_are_ignored(peer):
    """§4.1: "Flags that have no defined semantics for a particular frame type MUST be ignored"."""
    peer.send(frame(PING, 0xF0, 0, b"12345678"))
    assert peer.read(lambda: any(f[0] == PING and f[1] & 0x1 and f[3] == b"12345678" for f in peer.received))
    raw = peer.headers_frame(1).serialize()
    peer.send(raw[:4] + bytes([raw[4] | 0xC0]) + raw[5:])
    served(peer, 1)


def test_4_1_reserved_bit_is_ignored(peer):
    """§4.1: the reserved bit "MUST be ignored when receiving": stream 0x80000001 is stream 1."""
    raw = peer.headers_frame(1).serialize()
    peer.send(raw[:5] + bytes([raw[5] | 0x80]) + raw[6:])
    served(peer, 1)


def test_4_2_frame_over_max_frame_size_is_a_frame_size_error(peer):
    """§4.2: "An endpoint MUST send an error code of FRAME_SIZE_ERROR if a frame exceeds the
    size defined in SETTINGS_MAX_FRAME_SIZE" (16,384 here, the default); a HEADERS frame
    alters the connection's state, so it is a connection error."""
    peer.send(frame(HEADERS, END_HEADERS | END_STREAM, 1, peer.block(peer.request_fields()).ljust(16385, b"\x00")))
    connection_error(peer, FRAME_SIZE_ERROR)


def test_4_2_data_frame_over_max_frame_size_is_a_frame_size_error(peer):
    """§4.2: a DATA frame past SETTINGS_MAX_FRAME_SIZE: FRAME_SIZE_ERROR (nghttp2 checks the
    length before the frame's type, as a connection error)."""
    peer.send(peer.headers_frame(1, peer.request_fields("POST", "/slow?delay=1"), end_stream=False),
              frame(DATA, END_STREAM, 1, b"x" * 16385))
    connection_error(peer, FRAME_SIZE_ERROR)


@pytest.mark.parametrize("kind,stream,payload", [
    (PING, 0, b"1234567"),
    (SETTINGS, 0, b"\x00\x04\x00\x01\x00"),
    (WINDOW_UPDATE, 0, b"\x00\x00\x01"),
    (WINDOW_UPDATE, 0, b"\x00\x00\x00\x01\x00"),
    (PRIORITY, 1, b"\x00\x00\x00\x00"),
    (PRIORITY, 1, b"\x00\x00\x00\x00\x10\x00"),
], ids=["ping-7", "settings-5", "window_update-3", "window_update-5", "priority-4", "priority-6"])
def test_4_2_bad_length_of_a_fixed_size_frame_is_a_frame_size_error(peer, kind, stream, payload):
    """§6.7 PING "length field value other than 8", §6.5 SETTINGS "not a multiple of 6", §6.9
    WINDOW_UPDATE "length other than 4 octets", §6.3 PRIORITY "length other than 5": each
    MUST be treated as a FRAME_SIZE_ERROR (nghttp2: a connection error, PRIORITY's too)."""
    peer.send(frame(kind, 0, stream, payload))
    connection_error(peer, FRAME_SIZE_ERROR)


def test_6_4_rst_stream_bad_length_is_a_frame_size_error(peer):
    """§6.4: "A RST_STREAM frame with a length other than 4 octets MUST be treated as a
    connection error (Section 5.4.1) of type FRAME_SIZE_ERROR"."""
    peer.send(peer.headers_frame(1, peer.request_fields(path="/slow?delay=1")), frame(RST_STREAM, 0, 1, b"\x00\x00\x08"))
    connection_error(peer, FRAME_SIZE_ERROR)


# §5.1 Stream states


def test_5_1_headers_after_the_client_reset_the_stream_is_stream_closed(peer):
    """§5.1 closed: a stream is closed once the client sent RST_STREAM, and "An endpoint MUST
    NOT send frames other than PRIORITY on a closed stream"; "An endpoint MAY treat receipt of
    any other type of frame on a closed stream as a connection error (Section 5.4.1) of type
    STREAM_CLOSED", as nghttp2 does on a closed stream it holds."""
    peer.send(peer.headers_frame(1, peer.request_fields(path="/slow?delay=1"), end_stream=False),
              RstStreamFrame(1, error_code=ErrorCodes.CANCEL), peer.headers_frame(1))
    connection_error(peer, STREAM_CLOSED)


def test_5_1_data_after_the_client_reset_the_stream_is_stream_closed(peer):
    """§5.1 closed, for DATA: after its own RST_STREAM the client sends no DATA on the stream;
    §6.1: DATA on a stream not "open" or "half-closed (local)" is STREAM_CLOSED (a connection
    error, as nghttp2 makes it)."""
    peer.send(peer.headers_frame(1, peer.request_fields("POST", "/slow?delay=1"), end_stream=False),
              RstStreamFrame(1, error_code=ErrorCodes.CANCEL), DataFrame(1, b"late", flags=["END_STREAM"]))
    connection_error(peer, STREAM_CLOSED)


def test_5_1_headers_on_a_stream_closed_both_ways_is_stream_closed(peer):
    """§5.1 closed: "A stream enters the 'closed' state after an endpoint both sends and
    receives a frame with an END_STREAM flag set"; a HEADERS frame on it is a connection
    error STREAM_CLOSED."""
    peer.send(peer.headers_frame(1))
    served(peer, 1)
    peer.send(peer.headers_frame(1))
    connection_error(peer, STREAM_CLOSED)


def test_5_1_data_on_a_stream_closed_both_ways_is_stream_closed(peer):
    """§5.1 closed / §6.1: DATA on a stream closed both ways: STREAM_CLOSED."""
    peer.send(peer.headers_frame(1))
    served(peer, 1)
    peer.send(DataFrame(1, b"late", flags=["END_STREAM"]))
    connection_error(peer, STREAM_CLOSED)


def test_5_1_frames_on_a_stream_the_server_reset_are_discarded(peer):
    """§5.1 closed: after the server's RST_STREAM the client may still send what it had sent
    or queued; "An endpoint MUST minimally process and then discard any frames it receives in
    this state". Here nghttp2 resets a body past its content-length (PROTOCOL_ERROR); the rest
    of that body and its trailer section are discarded and the connection goes on."""
    peer.send(peer.headers_frame(1, peer.request_fields("POST", extra=[("content-length", "2")]), end_stream=False),
              DataFrame(1, b"12345"))
    assert peer.read(lambda: peer.reset(1) is not None), peer.summary()
    peer.send(DataFrame(1, b"67890"), peer.headers_frame(1, [("x-trailer", "1")]))
    assert peer.alive()
    still_serves(peer, 3)


def test_5_1_window_update_and_rst_stream_on_a_closed_stream_are_allowed(peer):
    """§5.1 closed: "An endpoint that sends a frame with the END_STREAM flag set or a RST_STREAM
    frame might receive a WINDOW_UPDATE or RST_STREAM frame from its peer" after it."""
    peer.send(peer.headers_frame(1))
    served(peer, 1)
    peer.send(WindowUpdateFrame(1, 100), RstStreamFrame(1, error_code=ErrorCodes.CANCEL))
    assert peer.alive()
    still_serves(peer, 3)


def test_5_1_priority_on_a_closed_stream_is_allowed(peer):
    """§5.1 closed: PRIORITY is the one frame a closed stream may still get."""
    peer.send(peer.headers_frame(1))
    served(peer, 1)
    peer.send(PriorityFrame(1, depends_on=0, stream_weight=16))
    assert peer.alive()
    still_serves(peer, 3)


@pytest.mark.parametrize("late", ["data", "headers"])
def test_5_1_half_closed_remote_refuses_more_frames(peer, late):
    """§5.1 half-closed (remote): "If an endpoint receives additional frames, other than
    WINDOW_UPDATE, PRIORITY, or RST_STREAM, for a stream that is in this state, it MUST
    respond with a stream error (Section 5.4.2) of type STREAM_CLOSED." nghttp2 ends the
    connection with STREAM_CLOSED (a stream error made a connection error, §5.4.1)."""
    peer.send(peer.headers_frame(1, peer.request_fields(path="/slow?delay=1")))
    peer.send(DataFrame(1, b"more") if late == "data" else peer.headers_frame(1, [("x-late", "1")]))
    connection_error(peer, STREAM_CLOSED)


def test_5_1_half_closed_remote_takes_window_update_priority_and_rst_stream(peer):
    """§5.1 half-closed (remote): WINDOW_UPDATE, PRIORITY and RST_STREAM are still allowed."""
    peer.send(peer.headers_frame(1, peer.request_fields(path="/slow?delay=1")), WindowUpdateFrame(1, 100),
              PriorityFrame(1, depends_on=0, stream_weight=32), RstStreamFrame(1, error_code=ErrorCodes.CANCEL))
    assert peer.alive()
    still_serves(peer, 3)


@pytest.mark.parametrize("kind", ["data", "rst_stream", "window_update", "continuation"])
def test_5_1_idle_stream_takes_only_headers_and_priority(peer, kind):
    """§5.1 idle: "Receiving any frame other than HEADERS or PRIORITY on a stream in this state
    MUST be treated as a connection error (Section 5.4.1) of type PROTOCOL_ERROR"."""
    sent = {"data": DataFrame(1, b"x", flags=["END_STREAM"]), "rst_stream": RstStreamFrame(1),
            "window_update": WindowUpdateFrame(1, 1),
            "continuation": ContinuationFrame(1, peer.block(peer.request_fields()), flags=["END_HEADERS"])}[kind]
    peer.send(sent)
    connection_error(peer, PROTOCOL_ERROR)


def test_5_1_priority_on_an_idle_stream_leaves_it_idle(peer):
    """§5.1 idle: a PRIORITY frame does not open the stream, so HEADERS may open it after."""
    peer.send(PriorityFrame(5, depends_on=0, stream_weight=16), peer.headers_frame(1))
    served(peer, 1)
    still_serves(peer, 5)


# §5.1.1 Stream identifiers


def test_5_1_1_even_stream_id_from_a_client_is_a_protocol_error(peer):
    """§5.1.1: "Streams initiated by a client MUST use odd-numbered stream identifiers"; "An
    endpoint that receives an unexpected stream identifier MUST respond with a connection
    error (Section 5.4.1) of type PROTOCOL_ERROR"."""
    peer.send(peer.headers_frame(2))
    connection_error(peer, PROTOCOL_ERROR)


def test_5_1_1_lower_stream_id_is_a_protocol_error(peer):
    """§5.1.1: "The identifier of a newly established stream MUST be numerically greater than
    all streams that the initiating endpoint has opened or reserved"; stream 3 after stream 5
    is an unexpected identifier: a connection error PROTOCOL_ERROR, and stream 3 not served."""
    peer.send(peer.headers_frame(5), peer.headers_frame(3))
    connection_error(peer, PROTOCOL_ERROR)
    assert peer.status(3) is None
    assert peer.goaway()[0] == 5


def test_5_1_1_skipped_stream_ids_are_closed(peer):
    """§5.1.1: "an endpoint may skip a stream identifier, with the effect being that the
    skipped stream is immediately closed": stream 1 cannot be opened after stream 7, even
    once 7 is answered (PROTOCOL_ERROR, an unexpected identifier)."""
    peer.send(peer.headers_frame(7))
    served(peer, 7)
    peer.send(peer.headers_frame(1))
    connection_error(peer, PROTOCOL_ERROR)


def test_5_1_1_streams_may_skip_identifiers(peer):
    """§5.1.1: identifiers need only grow; 1, then 9, then 11 are all served."""
    peer.send(peer.headers_frame(1), peer.headers_frame(9))
    served(peer, 1)
    served(peer, 9)
    still_serves(peer, 11)


# §5.3 Prioritization, §6.3 PRIORITY


def test_6_3_priority_on_stream_0_is_a_protocol_error(peer):
    """§6.3: "If a PRIORITY frame is received with a stream identifier of 0x00, the recipient
    MUST respond with a connection error (Section 5.4.1) of type PROTOCOL_ERROR"."""
    peer.send(frame(PRIORITY, 0, 0, b"\x00\x00\x00\x01\x10"))
    connection_error(peer, PROTOCOL_ERROR)


@pytest.mark.parametrize("stream", [1, 3])
def test_5_3_1_priority_depending_on_itself_is_a_protocol_error(peer, stream):
    """RFC 7540 §5.3.1, whose priority fields and "some of the mandatory handling" RFC 9113
    §5.3.2 keeps: "A stream cannot depend on itself. An endpoint MUST treat this as a stream
    error (Section 5.4.2) of type PROTOCOL_ERROR." On an idle stream (3) no RST_STREAM may be
    sent (§6.4), and nghttp2 makes it a connection error PROTOCOL_ERROR on any stream (1:
    open)."""
    peer.send(peer.headers_frame(1, peer.request_fields(path="/slow?delay=1")),
              frame(PRIORITY, 0, stream, stream.to_bytes(4, "big") + b"\x10"))
    connection_error(peer, PROTOCOL_ERROR)


def test_5_3_1_headers_depending_on_itself_is_a_protocol_error(peer):
    """RFC 7540 §5.3.1 for the priority fields of a HEADERS frame: nghttp2 ends the connection
    with PROTOCOL_ERROR."""
    f = HeadersFrame(1, peer.block(peer.request_fields()), flags=["END_STREAM", "END_HEADERS", "PRIORITY"])
    f.depends_on, f.stream_weight = 1, 16
    peer.send(f)
    connection_error(peer, PROTOCOL_ERROR)


def test_5_3_2_valid_priority_signals_are_accepted(peer):
    """§5.3.2: RFC 7540's priority signals are deprecated, not forbidden: well-formed ones are
    ignored and the request served."""
    f = HeadersFrame(1, peer.block(peer.request_fields()), flags=["END_STREAM", "END_HEADERS", "PRIORITY"])
    f.depends_on, f.stream_weight, f.exclusive = 0, 200, True
    peer.send(PriorityFrame(3, depends_on=1, stream_weight=8), f)
    served(peer, 1)


# §6 Frame definitions: the stream a frame may name


@pytest.mark.parametrize("kind,stream", [
    ("data", 0), ("headers", 0), ("rst_stream", 0), ("settings", 1), ("ping", 1), ("goaway", 1),
])
def test_6_frame_on_the_wrong_stream_is_a_protocol_error(peer, kind, stream):
    """§6.1 DATA, §6.2 HEADERS, §6.4 RST_STREAM on stream 0, and §6.5 SETTINGS, §6.7 PING,
    §6.8 GOAWAY on a stream other than 0: each "MUST respond with a connection error ... of
    type PROTOCOL_ERROR"."""
    sent = {"data": frame(DATA, END_STREAM, 0, b"x"),
            "headers": frame(HEADERS, END_STREAM | END_HEADERS, 0, peer.block(peer.request_fields())),
            "rst_stream": frame(RST_STREAM, 0, 0, b"\x00\x00\x00\x08"),
            "settings": frame(SETTINGS, 0, stream, b""),
            "ping": frame(PING, 0, stream, b"12345678"),
            "goaway": frame(GOAWAY, 0, stream, b"\x00\x00\x00\x00\x00\x00\x00\x00")}[kind]
    peer.send(sent)
    connection_error(peer, PROTOCOL_ERROR)


def test_8_4_push_promise_from_a_client_is_a_protocol_error(peer):
    """§8.4: "A client cannot push"; a server "MUST treat the receipt of a PUSH_PROMISE frame
    as a connection error (Section 5.4.1) of type PROTOCOL_ERROR"."""
    peer.send(peer.headers_frame(1, peer.request_fields(path="/slow?delay=1")),
              frame(PUSH_PROMISE, END_HEADERS, 1, b"\x00\x00\x00\x02" + peer.block(peer.request_fields())))
    connection_error(peer, PROTOCOL_ERROR)


def test_6_10_continuation_after_another_frame_is_a_protocol_error(peer):
    """§6.10: a header block's frames "MUST be sent as a contiguous sequence of frames, with no
    interleaved frames of any other type or from any other stream": a PING in the middle is a
    connection error PROTOCOL_ERROR."""
    block = peer.block(peer.request_fields())
    peer.send(HeadersFrame(1, block[:3], flags=["END_STREAM"]), PingFrame(0),
              ContinuationFrame(1, block[3:], flags=["END_HEADERS"]))
    connection_error(peer, PROTOCOL_ERROR)


def test_6_10_continuation_on_another_stream_is_a_protocol_error(peer):
    """§6.10: a CONTINUATION frame for another stream than the block's: PROTOCOL_ERROR."""
    block = peer.block(peer.request_fields())
    peer.send(HeadersFrame(1, block[:3], flags=["END_STREAM"]), ContinuationFrame(3, block[3:], flags=["END_HEADERS"]))
    connection_error(peer, PROTOCOL_ERROR)


def test_6_10_a_block_in_continuation_frames_is_served(peer):
    """§6.10: a header block in HEADERS and CONTINUATION frames is one block."""
    block = peer.block(peer.request_fields())
    peer.send(HeadersFrame(1, block[:2], flags=["END_STREAM"]), ContinuationFrame(1, block[2:4]),
              ContinuationFrame(1, block[4:], flags=["END_HEADERS"]))
    served(peer, 1)


# §6.9 Flow control


def test_6_9_window_update_of_0_on_the_connection_is_a_protocol_error(peer):
    """§6.9: "A receiver MUST treat the receipt of a WINDOW_UPDATE frame with a flow-control
    window increment of 0 as a stream error ... errors on the connection flow-control window
    MUST be treated as a connection error" — PROTOCOL_ERROR."""
    peer.send(WindowUpdateFrame(0, 0))
    connection_error(peer, PROTOCOL_ERROR)


def test_6_9_window_update_of_0_on_a_stream_is_a_protocol_error(peer):
    """§6.9: an increment of 0 on a stream is a stream error PROTOCOL_ERROR; nghttp2 ends the
    connection with PROTOCOL_ERROR (§5.4.1 allows it)."""
    peer.send(peer.headers_frame(1, peer.request_fields(path="/slow?delay=1")), WindowUpdateFrame(1, 0))
    connection_error(peer, PROTOCOL_ERROR)


def test_6_9_1_connection_window_past_2_31_minus_1_is_a_flow_control_error(peer):
    """§6.9.1: "If a sender receives a WINDOW_UPDATE that causes a flow-control window to exceed
    this maximum, it MUST terminate either the stream or the connection, as appropriate" — for
    the connection, a connection error FLOW_CONTROL_ERROR."""
    peer.send(WindowUpdateFrame(0, MAX_WINDOW))
    connection_error(peer, FLOW_CONTROL_ERROR)


def test_6_9_1_stream_window_past_2_31_minus_1_is_a_stream_error(peer):
    """§6.9.1: the same on a stream: RST_STREAM with FLOW_CONTROL_ERROR."""
    peer.send(peer.headers_frame(1, peer.request_fields(path="/slow?delay=1")), WindowUpdateFrame(1, MAX_WINDOW))
    stream_error(peer, 1, FLOW_CONTROL_ERROR)


def test_6_9_2_initial_window_size_making_a_window_overflow_is_a_flow_control_error(peer):
    """§6.9.2: "An endpoint MUST treat a change to SETTINGS_INITIAL_WINDOW_SIZE that causes any
    flow-control window to exceed the maximum size as a connection error (Section 5.4.1) of
    type FLOW_CONTROL_ERROR". nghttp2 terminates the stream whose window overflowed instead,
    with RST_STREAM FLOW_CONTROL_ERROR (§6.9.1: "terminate either the stream or the
    connection"): the one rule of this suite nghttp2 does not keep as written."""
    peer.send(peer.headers_frame(1, peer.request_fields(path="/slow?delay=1")),
              WindowUpdateFrame(1, MAX_WINDOW - 65535), SettingsFrame(0, settings={0x4: 65536}))
    stream_error(peer, 1, FLOW_CONTROL_ERROR)


# §6.5 SETTINGS


@pytest.mark.parametrize("setting,value,code", [
    (0x2, 2, PROTOCOL_ERROR),
    (0x4, 2**31, FLOW_CONTROL_ERROR),
    (0x5, 16383, PROTOCOL_ERROR),
    (0x5, 2**24, PROTOCOL_ERROR),
], ids=["enable_push-2", "initial_window_size-2^31", "max_frame_size-16383", "max_frame_size-2^24"])
def test_6_5_2_setting_out_of_range_is_a_connection_error(peer, setting, value, code):
    """§6.5.2: SETTINGS_ENABLE_PUSH "Any value other than 0 or 1 MUST be treated as a
    connection error ... PROTOCOL_ERROR"; SETTINGS_INITIAL_WINDOW_SIZE "Values above the
    maximum flow-control window size of 2^31-1 MUST be treated as a connection error ...
    FLOW_CONTROL_ERROR"; SETTINGS_MAX_FRAME_SIZE "Values outside this range [2^14, 2^24-1]
    MUST be treated as a connection error ... PROTOCOL_ERROR"."""
    peer.send(frame(SETTINGS, 0, 0, setting.to_bytes(2, "big") + value.to_bytes(4, "big")))
    connection_error(peer, code)


def test_6_5_settings_ack_with_a_payload_is_a_frame_size_error(peer):
    """§6.5: "Receipt of a SETTINGS frame with the ACK flag set and a length field value other
    than 0 MUST be treated as a connection error (Section 5.4.1) of type FRAME_SIZE_ERROR"."""
    peer.send(frame(SETTINGS, 0x1, 0, b"\x00\x04\x00\x00\xff\xff"))
    connection_error(peer, FRAME_SIZE_ERROR)


def test_6_5_unknown_settings_are_ignored_and_acknowledged(peer):
    """§6.5.2: "An endpoint that receives a SETTINGS frame with any unknown or unsupported
    identifier MUST ignore that setting"; §6.5.3: the SETTINGS frame is acknowledged."""
    before = sum(1 for f in peer.received if f[0] == SETTINGS and f[1] & 0x1)
    peer.send(frame(SETTINGS, 0, 0, b"\x00\xf0\x00\x00\x00\x01"))
    assert peer.read(lambda: sum(1 for f in peer.received if f[0] == SETTINGS and f[1] & 0x1) > before)
    still_serves(peer, 1)


# §4.3 Field section compression


@pytest.mark.parametrize("block", [b"\x80", b"\xbf", b"\x3f\xe1\x7f"], ids=["index-0", "index-past-table", "table-size-past-limit"])
def test_4_3_a_block_that_cannot_be_decoded_is_a_compression_error(peer, block):
    """§4.3: "A decoding error in a field block MUST be treated as a connection error (Section
    5.4.1) of type COMPRESSION_ERROR": index 0, an index past the static and empty dynamic
    table (RFC 7541 §2.3.3), a dynamic table size update past SETTINGS_HEADER_TABLE_SIZE
    (RFC 7541 §4.2)."""
    peer.send(frame(HEADERS, END_STREAM | END_HEADERS, 1, block))
    connection_error(peer, COMPRESSION_ERROR)


# §8.3 Pseudo-header fields, §8.2 field validity: malformed requests (§8.1.1)


MALFORMED = {
    "missing-method": [(":path", "/echo"), (":scheme", "https"), (":authority", "127.0.0.1")],
    "missing-path": [(":method", "GET"), (":scheme", "https"), (":authority", "127.0.0.1")],
    "missing-scheme": [(":method", "GET"), (":path", "/echo"), (":authority", "127.0.0.1")],
    "empty-path": [(":method", "GET"), (":path", ""), (":scheme", "https"), (":authority", "127.0.0.1")],
    "duplicated-path": [(":method", "GET"), (":path", "/echo"), (":path", "/echo"), (":scheme", "https"),
                        (":authority", "127.0.0.1")],
    "pseudo-after-regular": [(":method", "GET"), (":scheme", "https"), ("x-a", "1"), (":path", "/echo"),
                             (":authority", "127.0.0.1")],
    "unknown-pseudo": [(":method", "GET"), (":path", "/echo"), (":scheme", "https"), (":authority", "127.0.0.1"),
                       (":foo", "bar")],
    "response-pseudo": [(":method", "GET"), (":path", "/echo"), (":scheme", "https"), (":authority", "127.0.0.1"),
                        (":status", "200")],
    "uppercase-name": [(":method", "GET"), (":path", "/echo"), (":scheme", "https"), (":authority", "127.0.0.1"),
                       ("X-Upper", "1")],
    "connection": [(":method", "GET"), (":path", "/echo"), (":scheme", "https"), (":authority", "127.0.0.1"),
                   ("connection", "close")],
    "keep-alive": [(":method", "GET"), (":path", "/echo"), (":scheme", "https"), (":authority", "127.0.0.1"),
                   ("keep-alive", "timeout=5")],
    "proxy-connection": [(":method", "GET"), (":path", "/echo"), (":scheme", "https"), (":authority", "127.0.0.1"),
                         ("proxy-connection", "keep-alive")],
    "transfer-encoding": [(":method", "POST"), (":path", "/echo"), (":scheme", "https"), (":authority", "127.0.0.1"),
                          ("transfer-encoding", "chunked")],
    "upgrade": [(":method", "GET"), (":path", "/echo"), (":scheme", "https"), (":authority", "127.0.0.1"),
                ("upgrade", "websocket")],
    "te-gzip": [(":method", "GET"), (":path", "/echo"), (":scheme", "https"), (":authority", "127.0.0.1"),
                ("te", "gzip")],
    "value-with-crlf": [(":method", "GET"), (":path", "/echo"), (":scheme", "https"), (":authority", "127.0.0.1"),
                        ("x-a", "1\r\nx-b: 2")],
    "name-with-space": [(":method", "GET"), (":path", "/echo"), (":scheme", "https"), (":authority", "127.0.0.1"),
                        ("x a", "1")],
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_8_1_1_malformed_request_is_a_stream_error(peer, case):
    """§8.1.1: "Malformed requests or responses that are detected MUST be treated as a stream
    error (Section 5.4.2) of type PROTOCOL_ERROR". Malformed here: §8.3.1 "All HTTP/2
    requests MUST include exactly one valid value for the :method, :scheme, and :path
    pseudo-header fields" (":path ... MUST NOT be empty"); §8.3 "Pseudo-header fields MUST NOT
    appear in a field block after a regular field", "Endpoints MUST NOT generate pseudo-header
    fields other than those defined in this document", "Pseudo-header fields defined for
    responses MUST NOT appear in requests"; §8.2 "A field name MUST NOT contain characters in
    the ranges 0x00-0x20, 0x41-0x5a"; §8.2.1 no CR or LF in a value; §8.2.2 "An endpoint MUST
    NOT generate an HTTP/2 message containing connection-specific header fields" (Connection,
    Keep-Alive, Proxy-Connection, Transfer-Encoding, Upgrade) and TE "MUST NOT contain any value
    other than 'trailers'"."""
    peer.send(HeadersFrame(1, peer.block(MALFORMED[case]), flags=["END_STREAM", "END_HEADERS"]))
    stream_error(peer, 1, PROTOCOL_ERROR)


def test_8_2_2_te_trailers_is_allowed(peer):
    """§8.2.2: TE "MAY be present in an HTTP/2 request" with the value "trailers"."""
    peer.send(peer.headers_frame(1, peer.request_fields(extra=[("te", "trailers")])))
    served(peer, 1)


def test_8_3_1_host_naming_another_authority_is_400(peer):
    """§8.3.1: "A server SHOULD treat a request as malformed if it contains a Host header field
    that identifies an entity that differs from the entity in the ':authority' pseudo-header
    field": the gateway answers 400 itself (docs/proxy.md)."""
    peer.send(peer.headers_frame(1, peer.request_fields(extra=[("host", "other.example")])))
    served(peer, 1, 400)
    assert peer.alive()


# §8.1.1 Content-Length, §8.1 trailers


@pytest.mark.parametrize("declared,sent", [(10, b"12345"), (2, b"12345")], ids=["short", "long"])
def test_8_1_1_content_length_that_data_contradicts_is_a_stream_error(peer, declared, sent):
    """§8.1.1: "A request or response is also malformed if the value of a content-length header
    field does not equal the sum of the DATA frame payload lengths that form the content"."""
    peer.send(peer.headers_frame(1, peer.request_fields("POST", extra=[("content-length", str(declared))]),
                                 end_stream=False), DataFrame(1, sent, flags=["END_STREAM"]))
    stream_error(peer, 1, PROTOCOL_ERROR)


def test_8_1_1_content_length_that_data_matches_is_served(peer):
    peer.send(peer.headers_frame(1, peer.request_fields("POST", extra=[("content-length", "5")]), end_stream=False),
              DataFrame(1, b"12345", flags=["END_STREAM"]))
    served(peer, 1)


def test_8_1_pseudo_header_in_trailers_is_a_stream_error(peer):
    """§8.1: "Trailers MUST NOT include pseudo-header fields"."""
    peer.send(peer.headers_frame(1, peer.request_fields("POST"), end_stream=False), DataFrame(1, b"body"),
              peer.headers_frame(1, [(":path", "/other")]))
    stream_error(peer, 1, PROTOCOL_ERROR)


def test_8_1_trailers_without_end_stream_are_a_stream_error(peer):
    """§8.1: "An endpoint that receives a HEADERS frame without the END_STREAM flag set after
    receiving the HEADERS frame that opens a request ... MUST treat the corresponding request
    ... as malformed"."""
    peer.send(peer.headers_frame(1, peer.request_fields("POST"), end_stream=False), DataFrame(1, b"body"),
              peer.headers_frame(1, [("x-trailer", "1")], end_stream=False))
    stream_error(peer, 1, PROTOCOL_ERROR)


def test_8_1_trailers_with_end_stream_are_served(peer):
    """§8.1: a trailer section in a HEADERS frame with END_STREAM after the content."""
    peer.send(peer.headers_frame(1, peer.request_fields("POST"), end_stream=False), DataFrame(1, b"body"),
              peer.headers_frame(1, [("x-trailer", "1")]))
    served(peer, 1)
