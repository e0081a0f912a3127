"""A real authorization server (idpyoidc) for the end-to-end tests; see server.py.

Import from the modules (`from support.authserver.server import AuthServer`); this file stays
empty so that `python3 -m support.authserver.server` does not import server.py twice."""
