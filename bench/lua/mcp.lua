-- A tools/call on every request: the JSON-RPC message an MCP client POSTs (streamable HTTP),
-- with the scenario's access token (BENCH_TOKEN). The nginx baseline gets the same request.
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN")
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.body = '{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"deploy",'
  .. '"arguments":{"service":"orders","version":"2.4.1","regions":["eu-west-1","us-east-1"]}}}'
