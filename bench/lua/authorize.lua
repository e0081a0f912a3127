-- The authorization endpoint with a signed-in browser's cookie (bench/as/code_grants.py):
-- each GET answers 302 with a code; each thread appends the codes it is given, one per line,
-- to the file named after "--" (its own file: <path>.<thread>).
local out
local thread_count = 0

function setup(thread)
  thread_count = thread_count + 1
  thread:set("id", thread_count)
end

function init(args)
  out = io.open(args[1] .. "." .. id, "w")
end

function response(status, headers, body)
  local location = headers["Location"]
  if status == 302 and location then
    local code = string.match(location, "[?&]code=([^&]+)")
    if code then out:write(code, "\n") end
  end
end

function done(summary, latency, requests)
  if out then out:close() end
end
