"""What the gateway depends on failing: upstreams, the introspection endpoint, the key server,
the AS during a login, Redis under DPoP and sessions. Shared fixtures are in the root
conftest.py."""
