"""A key's caller before a real AuthZEN PDP (support/authzen_pdp.py): the PDP hears the key's
identity as it hears a token's (its `sub`, its claims, an `iss` naming the key set), and a
deny stops the key's request before the upstream."""
import subprocess

import pytest
import requests

from support.authzen_pdp import PDP
from support.gateway import BIN


def make_key(path, *args):
    r = subprocess.run([BIN, "api-keys", "create", "--file", str(path), *args], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.fixture
def pdp():
    p = PDP().start()
    yield p
    p.stop()


def config(upstream, pdp_url, key_file):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
api_keys:
  partners: {{ file: "{key_file}" }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}", timeout: 5s }}
authorizers:
  pdp:
    url: "{pdp_url}"
    timeout: 300ms
    subject: {{ type: identity, id: sub, properties: [client_id, org, teams] }}
routes:
  - name: orders
    match: {{ path_prefix: /orders/ }}
    upstream: app
    auth: api_key
    api_keys: partners
    authorize: pdp
"""


def test_the_pdp_judges_a_key_s_caller_by_the_key_s_claims(gateway_factory, upstream, pdp, tmp_path):
    path = tmp_path / "keys.yaml"
    key = make_key(path, "--sub", "partner-acme", "--client-id", "acme-sync", "--claim", "org=acme",
                   "--claim", "teams=a", "--claim", "teams=b")
    gw = gateway_factory(config(upstream, pdp.url, path))
    r = requests.post(gw.url("/orders/7"), headers={"X-API-Key": key}, timeout=5)
    assert r.status_code == 200, r.text
    assert not pdp.schema_errors
    [call] = pdp.evaluation_calls()
    assert call["body"]["subject"] == {
        "type": "identity", "id": "partner-acme",
        "properties": {"client_id": "acme-sync", "org": "acme", "teams": ["a", "b"],
                       "iss": "urn:tokengate:api-keys:partners"}}
    assert key not in str(call)
    pdp.decide = lambda body: {"decision": False}
    r = requests.post(gw.url("/orders/8"), headers={"X-API-Key": key}, timeout=5)
    assert r.status_code == 403, r.text
    assert not any(req["path"] == "/orders/8" for req in upstream.requests), "a denied request reached the upstream"
