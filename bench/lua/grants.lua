-- The token endpoint's jwt-bearer grant (bench/as/grants.py): each request posts the next of
-- the form bodies in the file named after "--", one per line, each with its own ID-JAG and
-- client assertion (both jtis are claimed once, so no body is sent twice).
local bodies = {}
local index = 0
local thread_count = 0
local threads = {}

function setup(thread)
  thread_count = thread_count + 1
  thread:set("id", thread_count)
  table.insert(threads, thread)
end

function init(args)
  local all = {}
  for line in io.lines(args[1]) do table.insert(all, line) end
  -- Each thread its own share, so no two threads send one body.
  for i = id, #all, 2 do table.insert(bodies, all[i]) end
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
end

function request()
  index = index + 1
  if index > #bodies then index = 1 end
  return wrk.format(nil, nil, nil, bodies[index])
end
