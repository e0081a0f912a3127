"""Rate limits per caller, shared by replicas through Redis. Shared fixtures are in the root
conftest.py."""
