"""A real MCP server behind the gateway: the official MCP Python SDK's MCPServer on streamable
HTTP (served by uvicorn at /mcp), with no auth of its own, in a process of its own.

Tools:
  echo(text)          returns text.
  deploy(target)      returns "deployed <target>" (the tests' config protects it with a scope).
  count(n, run)       sends n progress notifications, then returns "counted <n>". With `run`, it
                      waits after each notification until the client acknowledges it with
                      POST /ack/<run> (straight to this server, bounded), so a test knows each
                      notification reached the client before the next one, and the result,
                      were even sent: the gateway streams the SSE response, it does not buffer it.
                      Without, the notifications go one after another.
  whoami()            returns the HTTP header fields of the request that called it, as a JSON
                      list of [name, value] pairs (names as received, lower case).
GET /calls lists the tools called so far, in order; GET /healthz answers 200 once the server is up.
/any/mcp takes GET, PUT, PATCH, DELETE and OPTIONS, and runs (lists in /calls) the tool a
tools/call in the body names, as a hand-written server that routes by path would.

Hand-made MCP endpoints answer a tools/list with the tools above, for the gateway's filter,
marked `"cacheScope": "public"` with a `ttlMs` of 60000 (SEP-2549):
  POST /gzip/mcp      answers with gzip (Content-Encoding: gzip) whatever the request asked;
                      GET /encodings lists the Accept-Encoding each such request came with.
  POST /progress/mcp  answers as an SSE stream: PROGRESS_EVENT (a progress notification), a
                      comment, then the result, and ends. With an `X-Ack-Run: <run>` field, it
                      waits for a POST /ack/<run> after the comment (so a test knows the events
                      reached the client before the result was even sent) and again after the
                      result (a server that holds the stream open until told).
  POST /twice/mcp     answers as an SSE stream holding the result twice, a comment between.

`python3 mcp_upstream.py FD json` serves /mcp with JSON answers (the SDK's `json_response`,
stateless) instead of SSE streams.

Run as `python3 mcp_upstream.py FD`: FD is a listening socket the parent bound on 127.0.0.1
and passed down, so the port is known before the process starts and no other process can take
it. `MCPUpstream` is the test side."""
import asyncio
import collections
import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request

ACK_TIMEOUT = 10.0
# Sent before the result by POST /progress/mcp, byte for byte (CRLF, as the SDK's SSE writer ends lines).
PROGRESS_EVENT = (b'event: message\r\nid: p1\r\ndata: {"jsonrpc":"2.0","method":"notifications/progress",'
                  b'"params":{"progressToken":"list","progress":1,"total":2,"message":"listing"}}\r\n\r\n')
COMMENT = b": still listing\r\n\r\n"


def build_server():
    from mcp.server.mcpserver import Context, MCPServer
    from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

    server = MCPServer("tokengate-test-upstream", log_level="WARNING")
    acks = collections.defaultdict(asyncio.Queue)
    calls = []  # the tools called, in order: GET /calls
    encodings = []  # the Accept-Encoding of each POST /gzip/mcp

    @server.resource("file:///srv/readme.txt")
    def readme() -> str:
        """A resource, for the answers a cache could keep (resources/list, resources/read)."""
        return "hello from the server"

    @server.tool()
    def echo(text: str) -> str:
        """Returns its text."""
        calls.append("echo")
        return text

    @server.tool()
    def deploy(target: str) -> str:
        """Pretends to deploy target."""
        calls.append("deploy")
        return f"deployed {target}"

    @server.tool()
    async def count(n: int, ctx: Context, run: str = "") -> str:
        """Reports progress 1..n, then returns."""
        calls.append("count")
        for i in range(1, n + 1):
            await ctx.report_progress(i, n, f"step {i} of {n}")
            if run:
                try:
                    await asyncio.wait_for(acks[run].get(), ACK_TIMEOUT)
                except asyncio.TimeoutError:
                    raise ValueError(f"progress {i} of run {run} was not acknowledged in {ACK_TIMEOUT}s")
        return f"counted {n}"

    @server.tool()
    def whoami(ctx: Context) -> str:
        """The HTTP header fields of this call's request."""
        calls.append("whoami")
        request = ctx.request_context.request
        return json.dumps([[k.decode("latin-1"), v.decode("latin-1")] for k, v in request.headers.raw])

    @server.custom_route("/ack/{run}", methods=["POST"])
    async def ack(request):
        acks[request.path_params["run"]].put_nowait(None)
        return PlainTextResponse("ok")

    async def tools_result(request):
        message = json.loads(await request.body())
        tools = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in await server.list_tools()]
        # As a 2026-07-28 server may say of a list it does not filter: any cache may keep it.
        result = {"tools": tools, "ttlMs": 60000, "cacheScope": "public"}
        return json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()

    @server.custom_route("/gzip/mcp", methods=["POST"])
    async def gzipped(request):
        encodings.append(request.headers.get("accept-encoding"))
        return Response(gzip.compress(await tools_result(request)), media_type="application/json",
                        headers={"Content-Encoding": "gzip"})

    @server.custom_route("/encodings", methods=["GET"])
    async def seen_encodings(request):
        return JSONResponse(encodings)

    @server.custom_route("/progress/mcp", methods=["POST"])
    async def progress_then_result(request):
        result = await tools_result(request)
        run = request.headers.get("x-ack-run")

        async def acked():
            if run:
                await asyncio.wait_for(acks[run].get(), ACK_TIMEOUT)

        async def events():
            yield PROGRESS_EVENT
            yield COMMENT
            await acked()
            yield b"event: message\r\nid: p2\r\ndata: " + result + b"\r\n\r\n"
            # Held open after the result, as a server may: a client that has its answer
            # closes first.
            await acked()

        return StreamingResponse(events(), media_type="text/event-stream")

    @server.custom_route("/twice/mcp", methods=["POST"])
    async def result_twice(request):
        result = await tools_result(request)
        # The response to one tools/list, sent twice in one stream: a client may read either.
        body = b"event: message\r\ndata: " + result + b"\r\n\r\n" + COMMENT
        return Response(body + b"event: message\r\ndata: " + result + b"\r\n\r\n", media_type="text/event-stream")

    @server.custom_route("/any/mcp", methods=["GET", "PUT", "PATCH", "DELETE", "OPTIONS"])
    async def any_method(request):
        # A hand-written server that reads JSON-RPC from the body whatever the method, as one
        # that routes by path does: a tools/call in it runs the tool.
        body = await request.body()
        message = json.loads(body) if body else {}
        if message.get("method") == "tools/call":
            calls.append(message["params"]["name"])
        return JSONResponse({"jsonrpc": "2.0", "id": message.get("id"), "result": {"ran": request.method}})

    @server.custom_route("/calls", methods=["GET"])
    async def called(request):
        return JSONResponse(calls)

    @server.custom_route("/healthz", methods=["GET"])
    async def healthz(request):
        return PlainTextResponse("ok")

    return server


def main(fd, json_response=False):
    import uvicorn

    app = build_server().streamable_http_app(json_response=json_response, stateless_http=json_response)
    # Open SSE streams (the client's GET stream) would hold a graceful shutdown: bound it.
    uvicorn.Server(uvicorn.Config(app, fd=fd, log_level="warning", timeout_graceful_shutdown=2)).run()


class MCPUpstream:
    """The server above in a subprocess on a socket bound here; `url` is its MCP endpoint."""

    def __init__(self, log_path, json_response=False):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log_path = log_path
        self.log = open(log_path, "wb")
        fd = self.sock.fileno()
        args = [sys.executable, os.path.abspath(__file__), str(fd)] + (["json"] if json_response else [])
        self.proc = subprocess.Popen(args, pass_fds=[fd],
                                     stdout=self.log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout=20.0):
        """Returns once /healthz answers; the process exiting or the deadline raises."""
        from .waiting import wait_for  # here: the server side runs this file as a script

        def ready():
            if self.proc.poll() is not None:
                raise RuntimeError("mcp upstream exited: " + self.output())
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=1) as r:
                    return r.status == 200
            except OSError:
                return False
        wait_for(ready, timeout, interval=0.05, what=lambda: "the mcp upstream's /healthz: " + self.output())
        return self

    def calls(self):
        """The tools the server has run, in order."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/calls", timeout=5) as r:
            return json.loads(r.read())

    def encodings(self):
        """The Accept-Encoding each POST /gzip/mcp came with."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/encodings", timeout=5) as r:
            return json.loads(r.read())

    def ack_url(self, run):
        return f"http://127.0.0.1:{self.port}/ack/{run}"

    def output(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.sock.close()
        self.log.close()


if __name__ == "__main__":
    main(int(sys.argv[1]), json_response=sys.argv[2:] == ["json"])
