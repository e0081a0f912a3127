"""A real authorization server (idpyoidc) for the end-to-end tests; see server.py.

Import from the modules (`from authserver.server import AuthServer`); this file stays empty so
that `python3 -m authserver.server` does not import server.py twice."""
