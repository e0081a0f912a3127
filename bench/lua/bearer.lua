-- Adds the scenario's access token (BENCH_TOKEN, set by bench/run.sh) to every request.
-- The nginx baseline gets the same header (it proxies it without checking).
wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN")
