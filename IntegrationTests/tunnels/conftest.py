"""WebSocket tunnels: upgrades, the handshake from the attacker's side, sessions on login routes,
a real browser. Shared fixtures are in the root conftest.py."""
