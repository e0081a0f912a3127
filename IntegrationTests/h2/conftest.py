"""HTTP/2 in and out (conformance, attacks, misbehaving upstreams) and gRPC through the gateway.
Shared fixtures are in the root conftest.py."""
