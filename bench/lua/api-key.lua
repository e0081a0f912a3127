-- Adds the scenario's API key (BENCH_API_KEY, set by bench/run.sh) to every request, in the
-- key set's field. The nginx baseline gets the same header (it proxies it without checking).
wrk.headers["X-API-Key"] = os.getenv("BENCH_API_KEY")
