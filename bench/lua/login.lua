-- A logged-in browser: every request carries the scenario's session cookie (BENCH_COOKIE,
-- from one real login); when the gateway re-seals the session (at most once a minute of
-- activity) the new cookie is used from then on, as a browser would. The nginx baseline gets
-- the same header (it proxies it without checking).
local cookie = os.getenv("BENCH_COOKIE")
wrk.headers["Cookie"] = "tokengate_session=" .. cookie
wrk.headers["Accept"] = "text/html"

function response(status, headers, body)
   local set = headers["Set-Cookie"]
   if set ~= nil then
      local value = string.match(set, "^tokengate_session=([^;]+)")
      if value ~= nil and value ~= "" then wrk.headers["Cookie"] = "tokengate_session=" .. value end
   end
end
