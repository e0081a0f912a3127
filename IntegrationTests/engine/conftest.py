"""The HTTP engine and the process: proxying, streaming, limits, slow peers, connection reclaim,
edge-triggered reads, Expect: 100-continue, reload and shutdown, routes at scale, access log,
tracing, status page. Shared fixtures are in the root conftest.py."""
