-- A fixed offered rate (PACED in bench/run.sh): every connection waits between its requests
-- so that all of them together send about PACED_RATE requests a second, whatever the route
-- costs. The scenario's own script (PACED_INNER, if any) still makes each request; this only
-- adds wrk's delay(). wrk takes whole milliseconds, so each wait is the floor or the ceiling
-- of the exact interval, the ceiling that often, so that the waits average to it. The
-- response time comes on top of each wait: the achieved rate is a little under the offered
-- one, and run.sh reports the achieved rate beside the CPU per request.
local inner = os.getenv("PACED_INNER")
if inner ~= nil and inner ~= "" then dofile(inner) end

local interval = tonumber(os.getenv("PACED_INTERVAL_MS"))
local whole = math.floor(interval)
local fraction = interval - whole

function delay()
   if math.random() < fraction then return whole + 1 end
   return whole
end
