"""MCP routes: JSON-RPC judged per call, the official SDK on both sides, tools/list, listen
streams, decision mode, what an operator sees, the conformance suite. Shared fixtures are in
the root conftest.py."""
