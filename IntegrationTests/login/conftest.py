"""`auth: login` (the gateway as an OpenID Connect client): the round-trip, several clients,
userinfo, distributed claims, tokens upstream, logout, pages, step-up at login, browsers, and
replicas sharing sessions through Redis. Shared fixtures are in the root conftest.py."""
