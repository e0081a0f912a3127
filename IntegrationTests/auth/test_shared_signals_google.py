"""Google's RISC (Cross-Account Protection) with `profile: google-risc`, against a transmitter
that speaks Google's own stream API (support/google_risc.py): the gateway signs its management
calls with the service account's key, sets the project's stream with `stream:update`, has it
verified, and applies Google's events: `sessions-revoked` and `tokens-revoked` end a user's
earlier tokens, `account-disabled` refuses them all until `account-enabled`, and a SET for
another app's client ID or with a forged signature is refused."""
import time

import pytest
import requests

from support.google_risc import OAUTH, RISC, GoogleRISC, service_account
from support.waiting import wait_for
from test_bearer import ec_key, idp, token  # noqa: F401 — idp is a fixture
from test_shared_signals import SESSION_KEY, get, metric

CLIENT_ID = "123-app.apps.googleusercontent.com"


@pytest.fixture
def google(tmp_path):
    path = tmp_path / "sa.json"
    g = GoogleRISC(service_account(path), CLIENT_ID)
    g.key_file = path
    yield g
    g.stop()


@pytest.fixture
def gateway(idp, google, upstream, gateway_factory):  # noqa: F811
    text = f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
session: {{ keys: ["{SESSION_KEY}"] }}
issuers:
  google: {{ issuer: "https://accounts.google.com", jwks_uri: "{idp.url}", audiences: ["{CLIENT_ID}"], algorithms: [ES256] }}
shared_signals:
  google:
    profile: google-risc
    issuer: "{google.issuer}"
    issuers: [google]
    endpoint_url: "http://127.0.0.1:{{PORT}}/.risc/events"
    auth: {{ service_account_file: "{google.key_file}" }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - name: orders
    match: {{ path_prefix: /api/ }}
    upstream: app
    auth: bearer
    issuers: [google]
"""
    g = gateway_factory(text)
    wait_for(lambda: google.verifications == [202], timeout=10, what="the verification event taken")
    return g


def google_token(idp, sub, iat):  # noqa: F811
    return token(idp.keys[0], iss="https://accounts.google.com", aud=CLIENT_ID, sub=sub, iat=iat)


def test_the_project_stream_is_set_with_googles_api_and_verified(gateway, google):
    [update] = google.updates
    assert update["delivery"] == {"delivery_method": "https://schemas.openid.net/secevent/risc/delivery-method/push",
                                  "url": gateway.url("/.risc/events")}
    assert set(update["events_requested"]) == {
        RISC + "sessions-revoked", OAUTH + "tokens-revoked", RISC + "account-credential-change-required",
        RISC + "account-disabled", RISC + "account-enabled", RISC + "account-purged", RISC + "verification"}
    assert google.management_tokens_refused == 0
    row = requests.get(f"http://127.0.0.1:{gateway.admin}/status.json", timeout=5).json()["shared_signals"]
    assert row["transmitters"][0]["verified"] is True


def test_googles_events_end_the_users_tokens(gateway, google, idp):  # noqa: F811
    now = int(time.time())
    alice, bob = google_token(idp, "1001", now - 10), google_token(idp, "1002", now - 10)
    assert get(gateway, alice).status_code == 200
    assert google.push(RISC + "sessions-revoked", "1001").status_code == 202
    r = get(gateway, alice)
    assert r.status_code == 401 and "revoked" in r.json()["error_description"]
    assert get(gateway, bob).status_code == 200
    assert google.push(OAUTH + "tokens-revoked", "1002").status_code == 202
    assert get(gateway, bob).status_code == 401
    carol = google_token(idp, "1003", now + 1)
    assert google.push(RISC + "account-disabled", "1003", payload={"reason": "hijacking"}).status_code == 202
    assert get(gateway, carol).status_code == 401
    assert google.push(RISC + "account-enabled", "1003").status_code == 202
    assert get(gateway, carol).status_code == 200
    applied = 'tokengate_ssf_events_total{transmitter="google",event="session-revoked",result="applied"}'
    assert metric(gateway, applied) == 2


def test_a_set_for_another_app_or_forged_is_refused(gateway, google, idp):  # noqa: F811
    dave = google_token(idp, "1004", int(time.time()) - 10)

    def err(r):
        assert r.status_code == 400, (r.status_code, r.text)
        return r.json()["err"]
    assert err(google.push(RISC + "sessions-revoked", "1004", aud="999-other.apps.googleusercontent.com")) \
        == "invalid_audience"
    assert err(google.push(RISC + "sessions-revoked", "1004", iss="https://evil.example/")) == "invalid_issuer"
    real = google.key
    google.key = type(real).generate_key(2048, parameters={"kid": "google-1", "alg": "RS256"}, private=True)
    try:
        assert err(google.push(RISC + "sessions-revoked", "1004")) == "invalid_key"
    finally:
        google.key = real
    # No typ is what Google sends; a typ that is not a SET's is still refused (an ID token
    # signed with the same keys cannot pass as an event).
    assert err(google.push(RISC + "sessions-revoked", "1004", typ="JWT")) == "invalid_request"
    assert get(gateway, dave).status_code == 200
