"""TLS: listener certificates and profiles, uploads over TLS, mutual TLS (listener and towards
the AS), HTTPS upstreams. Shared fixtures are in the root conftest.py."""
