"""HTTP Message Signatures (RFC 9421): verified requests, FAPI 2.0 policies, refusal forms,
signed answers, signed requests upstream. Shared fixtures are in the root conftest.py."""
