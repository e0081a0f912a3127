-- Many callers: each request carries the next of the tokens in BENCH_TOKENS_FILE (one per
-- line, each for its own `sub`, made by bench/run.sh), in turn, starting at a different
-- place in each wrk thread. The nginx baseline gets the same headers (it proxies them
-- without checking).
local counter = 0

function setup(thread)
   thread:set("id", counter)
   counter = counter + 1
end

function init(args)
   tokens = {}
   for line in io.lines(os.getenv("BENCH_TOKENS_FILE")) do tokens[#tokens + 1] = "Bearer " .. line end
   next_token = (id * 97) % #tokens + 1
end

function request()
   local t = tokens[next_token]
   next_token = next_token % #tokens + 1
   return wrk.format(nil, nil, { ["Authorization"] = t })
end
