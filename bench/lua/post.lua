-- A JSON POST of POST_BYTES bytes (default 1024) on every request, as an API client sends
-- one; the nginx baseline gets the same request. The upstream reads and drops the body.
local size = tonumber(os.getenv("POST_BYTES") or "1024")
local open, close = '{"items":"', '"}'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = open .. string.rep("x", size - #open - #close) .. close
