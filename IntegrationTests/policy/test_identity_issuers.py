"""A caller is its issuer's (docs/rate-limits.md, docs/policy.md), tried from the caller's
side on a route that two issuers vouch for: the same `sub` from the other issuer is another
caller. It neither gets an override written for the first issuer's user nor spends that user's
budget, and a PDP decision cached for one issuer's `alice` never answers the other's; the PDP
hears who vouched in `subject.properties.iss`. Tokens are minted by the test's JWKS issuer and
a second issuer's key file; the PDP is support/authzen_pdp.py, all on 127.0.0.1."""
import requests

from support.authzen_pdp import PDP
from test_bearer import idp, second_idp, token as mint  # noqa: F401 — fixtures


def config(upstream, idp, second_path, pdp_url):  # noqa: F811
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 1
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], algorithms: [ES256] }}
  two: {{ issuer: "https://idp.two", jwks_file: "{second_path}", audiences: [api], algorithms: [ES256] }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}", timeout: 5s }}
rate_limits:
  per-user:
    key: sub
    rate: 1/m
    burst: 3
    overrides: {{ "one/svc-batch": {{ rate: 100/s, burst: 50 }}, "svc-batch": {{ rate: 100/s, burst: 50 }} }}
authorizers:
  pdp:
    url: "{pdp_url}"
    cache: {{ allow_ttl: 30s }}
    subject: {{ type: identity, id: sub, properties: [email] }}
routes:
  - name: orders
    match: {{ path_prefix: /orders/ }}
    upstream: app
    auth: bearer
    issuers: [one, two]
    rate_limit: per-user
  - name: reports
    match: {{ path_prefix: /reports/ }}
    upstream: app
    auth: bearer
    issuers: [one, two]
    authorize: pdp
"""


def one(idp, sub):  # noqa: F811
    return {"Authorization": "Bearer " + mint(idp.keys[0], sub=sub)}


def two(second, sub):
    key, _ = second
    return {"Authorization": "Bearer " + mint(key, iss="https://idp.two", sub=sub)}


def statuses(gw, path, headers, n):
    return [requests.get(gw.url(path), headers=headers, timeout=5).status_code for _ in range(n)]


def test_an_override_is_its_issuers_users_and_budgets_are_per_issuer(
        gateway_factory, upstream, idp, second_idp):  # noqa: F811
    p = PDP().start()
    try:
        gw = gateway_factory(config(upstream, idp, second_idp[1], p.url))
        # one/svc-batch has the raised limit; the bare "svc-batch" names no caller on a
        # route of two issuers, so two's svc-batch gets the policy's burst of 3.
        assert statuses(gw, "/orders/b", one(idp, "svc-batch"), 12) == [200] * 12
        assert statuses(gw, "/orders/b", two(second_idp, "svc-batch"), 5) == [200] * 3 + [429] * 2
        # two's carol spends her own budget, not one's carol's.
        assert statuses(gw, "/orders/c", two(second_idp, "carol"), 4) == [200] * 3 + [429]
        assert statuses(gw, "/orders/c", one(idp, "carol"), 3) == [200] * 3
    finally:
        p.stop()


def test_a_cached_decision_for_one_issuers_alice_never_answers_the_others(
        gateway_factory, upstream, idp, second_idp):  # noqa: F811
    p = PDP().start()
    try:
        p.decide = lambda body: {"decision": body["subject"]["properties"].get("iss") == "https://idp.one"}
        gw = gateway_factory(config(upstream, idp, second_idp[1], p.url))
        with requests.Session() as s:
            assert s.get(gw.url("/reports/1"), headers=one(idp, "alice"), timeout=5).status_code == 200
            assert s.get(gw.url("/reports/1"), headers=one(idp, "alice"), timeout=5).status_code == 200
        assert requests.get(gw.url("/reports/1"), headers=two(second_idp, "alice"), timeout=5).status_code == 403
        calls = p.evaluation_calls()
        assert [c["body"]["subject"]["properties"]["iss"] for c in calls] == ["https://idp.one", "https://idp.two"]
        assert all(c["body"]["subject"]["id"] == "alice" for c in calls)
        assert not p.schema_errors
    finally:
        p.stop()


def test_check_config_warns_where_two_issuers_share_a_rate_limit_or_a_pdp(upstream, idp, second_idp, tmp_path):  # noqa: F811
    import subprocess
    from support.gateway import BIN
    path = tmp_path / "tokengate.yaml"
    text = config(upstream, idp, second_idp[1], "http://127.0.0.1:9/")
    path.write_text(text.replace("{PORT}", "1").replace("{ADMIN}", "2"))
    r = subprocess.run([BIN, "check-config", str(path)], capture_output=True, text=True, timeout=30)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "routes[0].rate_limit" in out and "its overrides svc-batch name no issuer" in out, out
    assert "routes[1].authorize" in out and "subject.properties.iss" in out, out
