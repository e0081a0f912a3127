"""The benchmark's authorization server for the login scenario: the test suite's real one
(idpyoidc, tests/integration/authserver) with automatic login, on 127.0.0.1:PORT, the
gateway's client registered with its public keys. Runs until SIGTERM.

usage: as.py PORT CLIENT_JWKS_FILE REDIRECT_URI"""
import json
import os
import signal
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "integration"))
from authserver.server import AuthServer  # noqa: E402

port, jwks_file, redirect = int(sys.argv[1]), sys.argv[2], sys.argv[3]
a = AuthServer(port=port, access_token_lifetime=3600, id_token_lifetime=3600, threaded=True)
a.add_client("bench-web", jwks=json.load(open(jwks_file)), scopes=["openid", "profile", "email"], redirect_uri=redirect,
             token_endpoint_auth_method="private_key_jwt")
a.start()
print("ready", flush=True)
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
stop.wait()
a.close()
