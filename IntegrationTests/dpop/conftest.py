"""DPoP (RFC 9449): proofs and bound tokens, against the real AS, and replay defence shared
through Redis. Shared fixtures are in the root conftest.py."""
