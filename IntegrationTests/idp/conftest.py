"""The identity providers: the test authorization server itself, provider presets (Entra ID and
others), the FAPI 2.0 conformance plans. Shared fixtures are in the root conftest.py."""
