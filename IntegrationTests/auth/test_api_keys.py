"""API keys as callers, end to end: keys made by `tokengate api-keys`, a real tokengate, the
echo upstream. A key passes with its identity; an unknown, expired, not-yet-valid or
malformed one is refused with its reason and never reaches the upstream; the key's field
never goes upstream; revoking, rotating and breaking the file take effect without a restart."""
import json
import re
import subprocess
import time

import pytest
import requests

from support.gateway import BIN, raw_request, sent_headers as sent
from support.waiting import sleep_into_second, wait_for
from test_bearer import idp, token  # noqa: F401 — idp is a fixture


def keys(path, *args):
    r = subprocess.run([BIN, "api-keys", *args, "--file", str(path)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def config(upstream, idp, key_file, store="memory"):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
store: {{ url: "{store}", prefix: "keys-test:" }}
session: {{ keys: ["q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE="] }}
rate_limits:
  per-client: {{ key: client_id, rate: 1/m, burst: 3 }}
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], algorithms: [ES256] }}
api_keys:
  partners: {{ file: "{key_file}" }}
  scripts: {{ file: "{key_file}", scheme: ApiKey }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - name: orders
    match: {{ path_prefix: /api/orders/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    api_keys: partners
    require: {{ scopes: [orders:read] }}
    headers: {{ X-User: sub, X-Client: client_id, X-Org: org }}
  - name: strong
    match: {{ path_prefix: /api/strong/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    api_keys: partners
    require: {{ acr: ["urn:example:mfa"] }}
  - name: metered
    match: {{ path_prefix: /api/metered/ }}
    upstream: app
    auth: api_key
    api_keys: partners
    rate_limit: per-client
  - name: keys-only
    match: {{ path_prefix: /api/keys/ }}
    upstream: app
    auth: api_key
    api_keys: [partners, scripts]
  - name: public
    match: {{ path_prefix: / }}
    upstream: app
    auth: none
"""


@pytest.fixture
def setup(upstream, idp, gateway_factory, tmp_path):
    path = tmp_path / "keys.yaml"
    key = keys(path, "create", "--sub", "partner-acme", "--client-id", "acme-sync", "--scopes", "orders:read",
               "--claim", "org=acme", "--id", "k_acme")
    gw = gateway_factory(config(upstream, idp, path))
    return gw, path, key


def get(gw, path, headers):
    return requests.get(gw.url(path), headers=headers, timeout=10)


def test_a_key_passes_with_its_identity_and_never_goes_upstream(setup):
    gw, _, key = setup
    r = get(gw, "/api/orders/1", {"X-API-Key": key, "X-User": "mallory"})
    assert r.status_code == 200, r.text
    h = sent(r)
    assert h["x-user"] == "partner-acme" and h["x-client"] == "acme-sync" and h["x-org"] == "acme"
    assert "x-api-key" not in h and "authorization" not in h
    assert key not in r.text
    gw.logged('"api_key":"k_acme"')
    line = next(ln for ln in gw.output().splitlines() if '"api_key":"k_acme"' in ln)
    assert '"route":"orders"' in line and '"sub":"partner-acme"' in line and '"issuer":"partners"' in line
    assert key not in gw.output()
    # The status page lists the key by id, with its caller and last use; never a digest.
    status = requests.get(f"http://127.0.0.1:{gw.admin}/status.json", timeout=5).json()
    sets = {s["name"]: s for s in status["api_keys"]}
    row = next(k for k in sets["partners"]["keys"] if k["id"] == "k_acme")
    assert row["sub"] == "partner-acme" and row["client_id"] == "acme-sync" and row["last_used"], row
    page = requests.get(f"http://127.0.0.1:{gw.admin}/status", timeout=5).text
    assert "k_acme" in page and "sha256" not in page and "sha256" not in json.dumps(status) and key not in page
    # The Authorization scheme form, on the route whose second set reads it.
    r = get(gw, "/api/keys/1", {"Authorization": f"ApiKey {key}"})
    assert r.status_code == 200, r.text
    assert "authorization" not in sent(r)


def test_keys_that_are_not_valid_are_refused_with_their_reason(setup, upstream):
    gw, path, key = setup
    made = time.time()
    expired = keys(path, "create", "--sub", "old", "--scopes", "orders:read", "--expires",
                   time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(made + 2)))
    staged = keys(path, "create", "--sub", "new", "--scopes", "orders:read", "--not-before", "30d")
    typo = key[:-1] + ("a" if key[-1] != "a" else "b")
    unknown = keys(path.parent / "other.yaml", "create", "--sub", "x")
    wait_for(lambda: get(gw, "/api/orders/1", {"X-API-Key": staged}).status_code == 401 and
             "not valid yet" in get(gw, "/api/orders/1", {"X-API-Key": staged}).text, what="the new keys loaded")
    sleep_into_second(made, 2)  # the expiry's second has come: no leeway
    cases = [(expired, "has expired"), (staged, "not valid yet"), (typo, "malformed"), (unknown, "not known"),
             ("not-a-key", "malformed")]
    for bad, why in cases:
        r = get(gw, "/api/orders/1", {"X-API-Key": bad})
        assert r.status_code == 401, (bad, r.text)
        assert r.json()["error"] == "invalid_token" and why in r.json()["error_description"], r.text
        assert r.headers["WWW-Authenticate"].startswith("Bearer"), r.headers
        assert "headers" not in r.text, "the upstream answered"
    # A keys-only route names its own scheme; without a key there is no error code.
    r = get(gw, "/api/keys/1", {})
    assert r.status_code == 401 and r.headers["WWW-Authenticate"] == 'ApiKey realm="tokengate"', r.headers
    r = get(gw, "/api/keys/1", {"X-API-Key": unknown})
    assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("ApiKey"), r.headers
    metrics = requests.get(f"http://127.0.0.1:{gw.admin}/metrics", timeout=5).text
    for outcome in ["expired", "not_yet_valid", "malformed", "unknown"]:
        assert re.search(rf'tokengate_api_key_auth_total{{set="partners",outcome="{outcome}"}} [1-9]', metrics), outcome


def test_a_key_meets_the_route_s_requirement_as_a_token_would(setup):
    gw, path, _ = setup
    reader = keys(path, "create", "--sub", "reader", "--scopes", "orders:write")
    wait_for(lambda: get(gw, "/api/orders/1", {"X-API-Key": reader}).status_code != 401, what="the key loaded")
    r = get(gw, "/api/orders/1", {"X-API-Key": reader})
    assert r.status_code == 403 and r.json()["error"] == "insufficient_scope", r.text


def test_a_key_never_meets_a_step_up_requirement(setup):
    gw, _, key = setup
    r = get(gw, "/api/strong/1", {"X-API-Key": key})
    assert r.status_code == 401 and r.json()["error"] == "insufficient_user_authentication", r.text
    assert 'acr_values="urn:example:mfa"' in r.headers["WWW-Authenticate"], r.headers


def test_a_key_and_a_token_together_are_refused(setup, idp):
    gw, _, key = setup
    r = get(gw, "/api/orders/1", {"X-API-Key": key, "Authorization": f"Bearer {token(idp.keys[0])}"})
    assert r.status_code == 400 and r.json()["error"] == "invalid_request", r.text
    # A key beside another Authorization field, when the key comes in Authorization.
    status, raw = raw_request(gw.port, (f"GET /api/keys/1 HTTP/1.1\r\nHost: a\r\nAuthorization: ApiKey {key}\r\n"
                                "Authorization: Bearer x\r\nConnection: close\r\n\r\n").encode())
    assert status == 400 and b"invalid_request" in raw, raw[:300]
    # A key sent as a Bearer token is refused at once: it goes to no issuer.
    r = get(gw, "/api/orders/1", {"Authorization": f"Bearer {key}"})
    assert r.status_code == 401 and "not an access token" in r.json()["error_description"], r.text
    # A token alone still passes on the route that takes both.
    r = get(gw, "/api/orders/1", {"Authorization": f"Bearer {token(idp.keys[0])}"})
    assert r.status_code == 200, r.text


def test_revoke_rotate_and_a_broken_file_need_no_restart(setup):
    gw, path, key = setup
    second = keys(path, "create", "--sub", "partner-acme", "--scopes", "orders:read", "--id", "k_two")
    wait_for(lambda: get(gw, "/api/orders/1", {"X-API-Key": second}).status_code == 200, what="a new key passes")
    start = time.monotonic()
    keys(path, "revoke", "k_two")
    wait_for(lambda: get(gw, "/api/orders/1", {"X-API-Key": second}).status_code == 401, timeout=3,
             what="a revoked key fails")
    assert time.monotonic() - start < 1.5
    rotated = keys(path, "rotate", "k_acme", "--overlap", "1h")
    wait_for(lambda: get(gw, "/api/orders/1", {"X-API-Key": rotated}).status_code == 200, what="the rotated key")
    assert get(gw, "/api/orders/1", {"X-API-Key": key}).status_code == 200, "the old key within its overlap"
    good = path.read_text()
    path.write_text(good + "- id: broken\n")
    gw.logged("API key file refused")
    assert get(gw, "/api/orders/1", {"X-API-Key": rotated}).status_code == 200, "the last good table stays"
    metrics = requests.get(f"http://127.0.0.1:{gw.admin}/metrics", timeout=5).text
    assert re.search(r'tokengate_api_key_file_refusals_total{set="partners"} [1-9]', metrics), metrics
    # A file that is gone revokes the set's keys (fails closed) until it is back.
    path.unlink()
    wait_for(lambda: get(gw, "/api/orders/1", {"X-API-Key": rotated}).status_code == 401, timeout=3,
             what="the keys of a deleted file fail")
    path.write_text(good)
    wait_for(lambda: get(gw, "/api/orders/1", {"X-API-Key": rotated}).status_code == 200, timeout=3,
             what="the keys pass again")


def test_a_key_s_caller_is_metered_by_client_id_across_two_replicas(upstream, idp, redis, gateway_factory, tmp_path):
    path = tmp_path / "keys.yaml"
    first = keys(path, "create", "--sub", "job-1", "--client-id", "ci")
    second = keys(path, "create", "--sub", "job-2", "--client-id", "ci")
    other = keys(path, "create", "--sub", "job-3", "--client-id", "nightly")
    store = f"redis://127.0.0.1:{redis.port}/0"
    a, b = (gateway_factory(config(upstream, idp, path, store)) for _ in range(2))
    answers = [get((a, b)[i % 2], f"/api/metered/{i}", {"X-API-Key": (first, second)[i % 2]}).status_code
               for i in range(6)]
    # One budget for the client (burst 3, then 1 a minute), whichever key and replica.
    assert answers[:3] == [200, 200, 200] and set(answers[3:]) == {429}, answers
    assert get(b, "/api/metered/x", {"X-API-Key": other}).status_code == 200, "another client has its own"
