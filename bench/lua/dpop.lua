-- Every request carries the scenario's DPoP-bound token and a proof never sent before: the
-- proofs file (DPOP_PROOFS_FILE, one per line, made by bench/run.sh) is split between wrk's
-- threads (thread i takes lines i, i+n, i+2n, …) and each thread walks its share once. The
-- nginx baseline gets the same headers (it proxies them without checking).
local counter = 0

-- Runs in wrk's main state once per thread, before the threads start: their index, and how
-- many there are (WRK_THREADS, exported by run.sh as wrk's -t).
function setup(thread)
   thread:set("id", counter)
   thread:set("nthreads", tonumber(os.getenv("WRK_THREADS")))
   counter = counter + 1
end

function init(args)
   proofs = {}
   local path = os.getenv("DPOP_PROOFS_FILE")
   local i = 0
   for line in io.lines(path) do
      if i % nthreads == id then proofs[#proofs + 1] = line end
      i = i + 1
   end
   next_proof = 1
   wrk.headers["Authorization"] = "DPoP " .. os.getenv("BENCH_TOKEN")
end

function request()
   local p = proofs[next_proof]
   if p == nil then
      -- Out of fresh proofs: a reused one would be refused (401), which run.sh reports.
      next_proof = 1
      p = proofs[1]
   else
      next_proof = next_proof + 1
   end
   wrk.headers["DPoP"] = p
   return wrk.format()
end
