"""A real gRPC server (PyPI grpcio) as tokengate's upstream, over h2c or TLS (ALPN h2).

Methods take and give raw bytes (no generated stubs), under /test.Echo/:
`max_streams` sets its SETTINGS_MAX_CONCURRENT_STREAMS; `handlers.most_running` is the most
`sleep:` calls it ran at once.

- Unary: answers a JSON object with the request's metadata, its body and the seconds left
  of its deadline (`time_remaining`, None without one); the body's first
  word steers it: `sleep:SECONDS`, `fail:CODE:MESSAGE` (the upstream's own status), and
  `big:N` (an N-byte answer). Trailing metadata `x-upstream-trailer: done` on every answer.
- ServerStream: `N` → N messages `0`…`N-1`.
- ClientStream: answers the total length of the messages received.
- Bidi: echoes each message.
"""
import json
import threading
import time
from concurrent import futures

import grpc

MAX = 16 << 20


def _meta(context):
    return [[k, v if isinstance(v, str) else v.decode("latin-1")] for k, v in context.invocation_metadata()]


class Handlers:
    def __init__(self):
        self.calls = 0
        self.running = 0
        self.most_running = 0
        self.lock = threading.Lock()

    def count(self):
        with self.lock:
            self.calls += 1

    def unary(self, request, context):
        self.count()
        context.set_trailing_metadata((("x-upstream-trailer", "done"),))
        word = request.split(b" ", 1)[0].decode("latin-1")
        if word.startswith("sleep:"):
            with self.lock:
                self.running += 1
                self.most_running = max(self.most_running, self.running)
            # A slow handler is what the caller asked for (a deadline, a cancel, concurrency
            # to see): the delay is the input, not a wait for something.
            time.sleep(float(word[6:]))
            with self.lock:
                self.running -= 1
        elif word.startswith("fail:"):
            _, code, message = word.split(":", 2)
            context.abort(grpc.StatusCode[code], message)
        elif word.startswith("big:"):
            return b"x" * int(word[4:])
        return json.dumps({"metadata": _meta(context), "body": request.decode("latin-1"),
                           "time_remaining": context.time_remaining()}).encode()

    def server_stream(self, request, context):
        self.count()
        for i in range(int(request)):
            yield str(i).encode()

    def client_stream(self, requests, context):
        self.count()
        return str(sum(len(r) for r in requests)).encode()

    def bidi(self, requests, context):
        self.count()
        for r in requests:
            yield r


class GRPCUpstream:
    def __init__(self, tls=None, max_streams=None):
        self.handlers = Handlers()
        h = self.handlers
        handler = grpc.method_handlers_generic_handler("test.Echo", {
            "Unary": grpc.unary_unary_rpc_method_handler(h.unary),
            "ServerStream": grpc.unary_stream_rpc_method_handler(h.server_stream),
            "ClientStream": grpc.stream_unary_rpc_method_handler(h.client_stream),
            "Bidi": grpc.stream_stream_rpc_method_handler(h.bidi),
        })
        self.server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=64),
            options=[("grpc.max_receive_message_length", MAX), ("grpc.max_send_message_length", MAX)]
            + ([("grpc.max_concurrent_streams", max_streams)] if max_streams else []))
        self.server.add_generic_rpc_handlers((handler,))
        if tls:
            cert, key = tls
            creds = grpc.ssl_server_credentials([(open(key, "rb").read(), open(cert, "rb").read())])
            self.port = self.server.add_secure_port("127.0.0.1:0", creds)
        else:
            self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    @property
    def calls(self):
        return self.handlers.calls

    def stop(self):
        self.server.stop(grace=None).wait(5)


def channel(port, **options):
    opts = [("grpc.max_receive_message_length", MAX), ("grpc.max_send_message_length", MAX)]
    opts += list(options.items())
    return grpc.insecure_channel(f"127.0.0.1:{port}", options=opts)


def unary(ch, body=b"hello", metadata=None, timeout=10):
    call = ch.unary_unary("/test.Echo/Unary")
    return call.with_call(body, metadata=metadata, timeout=timeout)
