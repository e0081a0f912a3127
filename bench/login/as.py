"""The benchmark's authorization server for the login and exchange scenarios: the test
suite's real one (idpyoidc, IntegrationTests/support/authserver) with automatic login, on
127.0.0.1:PORT, the gateway's login client registered with its public keys and its
token-exchange client (bench-exchange, EXCHANGE_SECRET). One user's access token (scope
orders:read, an hour) is written to SUBJECT_FILE: the exchange scenarios' caller. Runs until
SIGTERM.

usage: as.py PORT CLIENT_JWKS_FILE REDIRECT_URI SUBJECT_FILE"""
import json
import os
import signal
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "IntegrationTests"))
from support.authserver.server import AuthServer  # noqa: E402

EXCHANGE_SECRET = "bench-exchange-secret-0123456789abcdef"

port, jwks_file, redirect, subject_file = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
a = AuthServer(port=port, access_token_lifetime=3600, id_token_lifetime=3600, threaded=True)
a.add_client("bench-web", jwks=json.load(open(jwks_file)), scopes=["openid", "profile", "email"], redirect_uri=redirect,
             token_endpoint_auth_method="private_key_jwt")
a.add_client("bench-exchange", client_secret=EXCHANGE_SECRET, scopes=["openid", "orders:read"])
a.start()
with open(subject_file, "w") as f:
    f.write(a.code_flow(scope="openid orders:read")["access_token"])
print("ready", flush=True)
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
stop.wait()
a.close()
