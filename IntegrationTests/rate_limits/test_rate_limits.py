"""Rate limits per caller (docs/rate-limits.md), tried from the caller's side: two tokengate
processes on one real redis-server share each caller's budget; a caller over it gets 429 with
Retry-After and the upstream never sees the request; another caller, an override, a refused
token and a gRPC call each get what the policy says; the RateLimit fields parse as
Structured Fields (PyPI http-sf); Redis holds digests with TTLs, never an identity; and with
Redis stopped, fail_open lets requests through while fail_closed answers 503. Tokens are
minted by the test's JWKS issuer (joserfc); everything listens on 127.0.0.1."""
import json
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import http_sf
import pytest
import requests

from support.waiting import wait_for
from test_bearer import ec_key, idp, token as mint  # noqa: F401 — idp is a fixture
from test_grpc_refusals import MESSAGE, metadata

SESSION_KEY = "q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE="


def config(upstream, idp, store="memory", http2=False):
    listen = "{ address: 127.0.0.1:{PORT}, http2: true }" if http2 else "127.0.0.1:{PORT}"
    return f"""
listen: {listen}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
store: {{ url: "{store}", prefix: "rl-test:" }}
session: {{ keys: ["{SESSION_KEY}"] }}
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], algorithms: [ES256] }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}", timeout: 5s }}
rate_limits:
  per-user:
    key: sub
    rate: 10/s
    burst: 5
    overrides: {{ "svc-batch": {{ rate: 100/s, burst: 50 }}, "dave": {{ rate: 6/m, burst: 5 }} }}
  per-user-closed: {{ key: sub, rate: 10/s, burst: 5, on_store_failure: fail_closed }}
  per-ip: {{ key: ip, rate: 1/m, burst: 3 }}
  per-call: {{ key: sub, rate: 1/m, burst: 2 }}
routes:
  - name: orders
    match: {{ path_prefix: /orders/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    rate_limit: per-user
  - name: payments
    match: {{ path_prefix: /payments/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    rate_limit: [per-user-closed]
  - name: flood
    match: {{ path_prefix: /flood/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    rate_limit: per-ip
  - name: rpc
    match: {{ path_prefix: /pkg.Orders/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    rate_limit: per-call
"""


@pytest.fixture
def replicas(upstream, idp, redis, gateway_factory):  # noqa: F811 — fixtures
    url = f"redis://127.0.0.1:{redis.port}/0"
    return [gateway_factory(config(upstream, idp, url)) for _ in range(2)]


def bearer(idp, sub):  # noqa: F811
    return {"Authorization": "Bearer " + mint(idp.keys[0], sub=sub)}


def metric(gw, name):
    text = requests.get(f"http://127.0.0.1:{gw.admin}/metrics", timeout=5).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


def upstream_saw(upstream, sub_path):
    return sum(1 for r in upstream.requests if r["path"].startswith(sub_path))


def test_a_callers_budget_is_shared_by_two_replicas_and_no_one_elses(replicas, upstream, idp):  # noqa: F811
    a, b = replicas
    alice, bob = bearer(idp, "alice"), bearer(idp, "bob")
    session = [requests.Session(), requests.Session()]
    started = time.monotonic()
    answers = []
    for i in range(40):
        gw = (a, b)[i % 2]
        answers.append(session[i % 2].get(gw.url(f"/orders/alice/{i}"), headers=alice, timeout=5))
    elapsed = time.monotonic() - started
    passed = [r for r in answers if r.status_code == 200]
    refused = [r for r in answers if r.status_code != 200]
    # GCRA: burst 5 at once, then 10/s: burst + rate × elapsed, ±1.
    assert 5 <= len(passed) <= 5 + 10 * elapsed + 1, (len(passed), elapsed)
    assert refused and all(r.status_code == 429 for r in refused)
    for r in refused:
        assert int(r.headers["Retry-After"]) >= 1
        body = r.json()
        assert body["error"] == "rate_limited" and body["request_id"] == r.headers["X-Request-Id"]
    assert upstream_saw(upstream, "/orders/alice/") == len(passed), "no refused request reached the upstream"
    # Bob, in the same second, has a budget of his own.
    assert requests.get(b.url("/orders/bob"), headers=bob, timeout=5).status_code == 200
    assert metric(a, 'tokengate_rate_limited_total{route="orders",policy="per-user"}') + metric(
        b, 'tokengate_rate_limited_total{route="orders",policy="per-user"}') == len(refused)


def test_an_override_has_its_own_rate(replicas, idp):  # noqa: F811
    a, b = replicas
    batch = bearer(idp, "svc-batch")
    statuses = [requests.get((a, b)[i % 2].url(f"/orders/batch/{i}"), headers=batch, timeout=5).status_code
                for i in range(30)]
    assert statuses == [200] * 30, "svc-batch's burst is 50"


def test_after_retry_after_the_next_request_passes(replicas, idp):  # noqa: F811
    a, b = replicas
    carol = bearer(idp, "carol")
    while (r := requests.get(a.url("/orders/c"), headers=carol, timeout=5)).status_code == 200:
        pass
    assert r.status_code == 429
    wait = int(r.headers["Retry-After"])
    assert wait == 1
    # Real time must pass: the budget comes back on the shared clock, and a request sent to see
    # whether it has would spend it.
    time.sleep(wait)
    assert requests.get(b.url("/orders/c"), headers=carol, timeout=5).status_code == 200


def test_the_ratelimit_fields_parse_and_never_rise_within_a_window(replicas, idp):  # noqa: F811
    a, b = replicas
    # Dave's override is 6 a minute: no request of his comes back into the budget while the
    # test runs, however slowly a loaded machine serves it (at 10/s one would every 100 ms).
    dave = bearer(idp, "dave")
    remaining = []
    for i in range(8):
        r = requests.get((a, b)[i % 2].url("/orders/d"), headers=dave, timeout=5)
        [(name, params)] = http_sf.parse(r.headers["RateLimit"].encode(), tltype="list")
        [(policy_name, policy)] = http_sf.parse(r.headers["RateLimit-Policy"].encode(), tltype="list")
        assert name == policy_name == "per-user"
        assert policy == {"q": 6, "w": 60}
        assert params["t"] >= 1 and "dave" not in r.headers["RateLimit"]
        if r.status_code == 429:
            assert params["r"] == 0 and params["t"] == int(r.headers["Retry-After"])
        remaining.append(params["r"])
    assert remaining == sorted(remaining, reverse=True), remaining
    assert remaining[-1] == 0


def test_redis_holds_digests_with_ttls_never_an_identity(replicas, redis, idp):  # noqa: F811
    a, _ = replicas
    for sub in ("alice@example.com", "bob"):
        assert requests.get(a.url("/orders/k"), headers=bearer(idp, sub), timeout=5).status_code == 200
    keys = redis.cli("--scan", "--pattern", "rl-test:rl:*").split()
    assert len(keys) == 2, keys
    for key in keys:
        assert "alice" not in key and "bob" not in key
        assert 0 < int(redis.cli("PTTL", key)) <= 1000, "expires once the budget is whole again"
        assert "alice" not in redis.cli("GET", key)


def test_with_redis_stopped_fail_open_passes_and_fail_closed_answers_503(replicas, redis, idp):  # noqa: F811
    a, _ = replicas
    erin = bearer(idp, "erin")
    assert requests.get(a.url("/orders/e"), headers=erin, timeout=5).status_code == 200
    redis.stop()
    started = time.monotonic()
    r = requests.get(a.url("/orders/e"), headers=erin, timeout=15)
    assert r.status_code == 200 and "RateLimit" not in r.headers, "fail_open: through, with no fields"
    r = requests.get(a.url("/payments/e"), headers=erin, timeout=15)
    assert r.status_code == 503 and int(r.headers["Retry-After"]) >= 1
    assert r.json()["error"] == "temporarily_unavailable"
    assert time.monotonic() - started < 10, "bounded by the store's timeouts"
    assert metric(a, "tokengate_rate_limit_store_failures_total") >= 2


def test_an_ip_limit_cuts_a_flood_of_bad_tokens_before_any_signature_check(upstream, idp, gateway_factory):  # noqa: F811
    gw = gateway_factory(config(upstream, idp))
    forged = {"Authorization": "Bearer " + mint(ec_key("one-1"), sub="mallory")}  # right kid, wrong key
    statuses = [requests.get(gw.url(f"/flood/{i}"), headers=forged, timeout=5).status_code for i in range(20)]
    assert statuses[:3] == [401] * 3 and statuses[3:] == [429] * 17, statuses
    assert metric(gw, "tokengate_auth_failures_total") == 3, "no signature was checked past the limit"


def test_a_grpc_call_over_its_limit_gets_resource_exhausted(upstream, idp, gateway_factory):  # noqa: F811
    gw = gateway_factory(config(upstream, idp, http2=True))
    token = mint(idp.keys[0], sub="frank")
    codes = []
    with grpc.insecure_channel(f"127.0.0.1:{gw.port}") as channel:
        call = channel.unary_unary("/pkg.Orders/Get", request_serializer=None, response_deserializer=None)
        for _ in range(3):
            try:
                call(MESSAGE[5:], metadata=[("authorization", "Bearer " + token)], timeout=10)
                codes.append(grpc.StatusCode.OK)
            except grpc.RpcError as e:
                codes.append(e.code())
                last = e
    assert codes[2] == grpc.StatusCode.RESOURCE_EXHAUSTED, codes
    assert int(metadata(last)["retry-after"]) >= 1


def test_memory_store_shares_one_budget_between_workers(upstream, idp, gateway_factory):  # noqa: F811
    # No session keys: the workers still name a caller's budget the same way.
    gw = gateway_factory(config(upstream, idp).replace(f'session: {{ keys: ["{SESSION_KEY}"] }}\n', ""))
    grace = bearer(idp, "grace")
    # Parallel connections land on both workers; together they get one budget.
    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(lambda i: requests.get(gw.url(f"/orders/g{i}"), headers=grace, timeout=5).status_code,
                                 range(16)))
    assert 5 <= statuses.count(200) <= 7 and statuses.count(429) == 16 - statuses.count(200), statuses


def test_the_same_budget_across_replicas_on_a_redis_cluster(upstream, idp, gateway_factory):  # noqa: F811
    from support.redis_deployments import Cluster
    cluster = Cluster()
    try:
        a, b = (gateway_factory(config(upstream, idp, cluster.url)) for _ in range(2))
        statuses = []
        for sub in ("alice", "bob", "carol", "dave"):
            token = bearer(idp, sub)
            statuses.append([requests.get((a, b)[i % 2].url(f"/orders/{sub}"), headers=token, timeout=5).status_code
                             for i in range(12)])
        for s in statuses:
            assert 5 <= s.count(200) <= 8 and s.count(429) == 12 - s.count(200), statuses
        spread = cluster.keys_per_node("rl-test:rl:*")
        assert sum(spread) == 4 and sum(1 for n in spread if n) >= 2, spread
    finally:
        cluster.close()


def test_a_decision_over_the_limit_is_a_429_verdict(upstream, idp, gateway_factory):  # noqa: F811
    secret = "decision-secret-0123456789abcdef"
    text = config(upstream, idp).replace(
        "workers: 2\n",
        f"workers: 2\ntrusted_proxies: [127.0.0.1/32]\npublic_url: http://127.0.0.1:{{PORT}}\n"
        f"decision: {{ secret: \"{secret}\" }}\n")
    gw = gateway_factory(text)
    headers = dict(bearer(idp, "heidi"), **{
        "X-Original-URL": gw.url("/orders/x"), "X-Original-Method": "GET", "X-Tokengate-Decision-Secret": secret})
    answers = [requests.get(gw.url("/_tokengate/auth"), headers=headers, timeout=5) for _ in range(8)]
    statuses = [r.status_code for r in answers]
    assert statuses[:5] == [200] * 5 and 429 in statuses[5:], statuses
    refused = answers[statuses.index(429)]
    assert int(refused.headers["Retry-After"]) >= 1 and refused.headers["RateLimit"].startswith('"per-user";r=0')
    assert upstream_saw(upstream, "/orders/") == 0, "a verdict sends nothing upstream"


def test_a_tool_limit_counts_per_tool_and_caller(upstream, idp, gateway_factory):  # noqa: F811
    from test_routes import call, config as mcp_config, post
    extra = """  - name: limited
    match: { path: /limited/mcp }
    upstream: app
    auth: bearer
    issuers: [one]
    mcp: { default: allow }
    rate_limit: per-tool
rate_limits:
  per-tool: { key: tool, rate: 1/m, burst: 2 }
"""
    gw = gateway_factory(mcp_config(upstream, idp, extra))
    # The route has no resource of its own: a token for the issuer's API audience.
    alice, bob = mint(idp.keys[0], scope="mcp"), mint(idp.keys[0], scope="mcp", sub="bob")
    statuses = [post(gw, alice, call("tools/call", name="echo"), path="/limited/mcp").status_code for _ in range(3)]
    assert statuses == [200, 200, 429], statuses
    assert post(gw, alice, call("tools/call", name="other"), path="/limited/mcp").status_code == 200, "another tool"
    assert post(gw, bob, call("tools/call", name="echo"), path="/limited/mcp").status_code == 200, "another caller"
    # Calls that name no tool share one budget of their own.
    assert [post(gw, alice, call("ping", id=i), path="/limited/mcp").status_code for i in range(3)] == [200, 200, 429]


@pytest.mark.parametrize("entries", [
    ["203.0.113.7:5000{}", "203.0.113.7:6000{}"],
    ["[2001:db8:1:2::{}]:443", "[2001:db8:1:2::{}]"],
])
def test_a_forwarded_address_with_a_port_or_brackets_is_one_client(upstream, idp, gateway_factory, entries):  # noqa: F811
    """RFC 7239 §6 nodes: Azure Application Gateway writes `IP:port`; a port or brackets make
    no client of their own, so changing the port is no way around an ip limit."""
    text = config(upstream, idp).replace("workers: 2", "workers: 2\ntrusted_proxies: [127.0.0.1/32]")
    gw = gateway_factory(text)
    forged = {"Authorization": "Bearer " + mint(ec_key("one-1"), sub="mallory")}
    statuses = [requests.get(gw.url(f"/flood/{i}"), timeout=5, headers={
        **forged, "X-Forwarded-For": entries[i % 2].format(i)}).status_code for i in range(8)]
    assert statuses == [401] * 3 + [429] * 5, statuses


@pytest.mark.parametrize("header", ["X-Forwarded-For", "X-Real-IP", "Forwarded", "X-Request-Id", "True-Client-IP"])
def test_check_config_refuses_a_header_key_any_client_can_change(upstream, idp, tmp_path, header):  # noqa: F811
    import subprocess
    from support.gateway import BIN
    text = config(upstream, idp).replace("per-ip: { key: ip,", f'per-ip: {{ key: "header:{header}",')
    assert f"header:{header}" in text
    path = tmp_path / "tokengate.yaml"
    path.write_text(text.replace("{PORT}", "1").replace("{ADMIN}", "2"))
    r = subprocess.run([BIN, "check-config", str(path)], capture_output=True, text=True, timeout=30)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "rate_limits.per-ip.key" in out and "count by key: ip" in out, out
