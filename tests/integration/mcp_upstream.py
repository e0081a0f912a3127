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
  whoami()            returns the HTTP header fields of the request that called it, as a JSON
                      list of [name, value] pairs (names as received, lower case).
GET /calls lists the tools called so far, in order; GET /healthz answers 200 once the server is up.

Run as `python3 mcp_upstream.py FD`: FD is a listening socket the parent bound on 127.0.0.1
and passed down, so the port is known before the process starts and no other process can take
it. `MCPUpstream` is the test side."""
import asyncio
import collections
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

ACK_TIMEOUT = 10.0


def build_server():
    from mcp.server.mcpserver import Context, MCPServer
    from starlette.responses import JSONResponse, PlainTextResponse

    server = MCPServer("tokengate-test-upstream", log_level="WARNING")
    acks = collections.defaultdict(asyncio.Queue)
    calls = []  # the tools called, in order: GET /calls

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
            else:
                await asyncio.sleep(0.02)
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

    @server.custom_route("/calls", methods=["GET"])
    async def called(request):
        return JSONResponse(calls)

    @server.custom_route("/healthz", methods=["GET"])
    async def healthz(request):
        return PlainTextResponse("ok")

    return server


def main(fd):
    import uvicorn

    app = build_server().streamable_http_app()
    # Open SSE streams (the client's GET stream) would hold a graceful shutdown: bound it.
    uvicorn.Server(uvicorn.Config(app, fd=fd, log_level="warning", timeout_graceful_shutdown=2)).run()


class MCPUpstream:
    """The server above in a subprocess on a socket bound here; `url` is its MCP endpoint."""

    def __init__(self, log_path):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log_path = log_path
        self.log = open(log_path, "wb")
        fd = self.sock.fileno()
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), str(fd)], pass_fds=[fd],
                                     stdout=self.log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout=20.0):
        """Returns once /healthz answers; the process exiting or the deadline raises."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("mcp upstream exited: " + self.output())
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=1) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"mcp upstream not ready in {timeout}s: " + self.output())

    def calls(self):
        """The tools the server has run, in order."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/calls", timeout=5) as r:
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
    main(int(sys.argv[1]))
