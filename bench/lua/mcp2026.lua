-- A tools/call as an MCP 2026-07-28 client POSTs it: the same message as mcp.lua with its
-- revision in `params._meta` and mirrored in the headers (SEP-2243: MCP-Protocol-Version,
-- Mcp-Method, Mcp-Name), which the gateway checks against the body. BENCH_TOKEN as in mcp.lua.
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN")
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "deploy"
wrk.body = '{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"deploy",'
  .. '"arguments":{"service":"orders","version":"2.4.1","regions":["eu-west-1","us-east-1"]},'
  .. '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
  .. '"io.modelcontextprotocol/clientCapabilities":{}}}}'
