"""Token routes: bearer tokens against a JWKS server and the real AS, introspection, token
exchange, protected resource metadata, step-up, the gateway's own client credentials, refusal
kinds, the JOSE CLI. Shared fixtures are in the root conftest.py."""
