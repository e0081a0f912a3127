"""Routes with `authorize` (docs/policy.md), tried from the caller's side against a real
OpenID AuthZEN 1.0 PDP on 127.0.0.1 (support/authzen_pdp.py: every body checked against
the specification's schemas with jsonschema, every call recorded): an allow goes through
with the request described as the specification says; a deny is 403 and the upstream never
hears of it; the PDP's user reason is shown and its admin reason is not; a 500, a decision
that is not a boolean, a hang and a refused connection each take `on_error` within the
authorizer's timeout; decisions are cached per process (one call for many identical
requests, across workers and when concurrent); the PDP's metadata names its endpoints; the
gateway's credential comes from a file. Tokens are minted by the test's JWKS issuer."""
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from echo_upstream import Upstream
from support.authserver.server import free_port
from support.authzen_pdp import PDP
from support.waiting import wait_for
from test_bearer import ec_key, idp, token as mint  # noqa: F401 — idp is a fixture


def config(upstream, idp, pdp_url, extra="", on_error="deny", timeout="300ms", allow_ttl="10s", workers=2):
    return f"""
listen: 127.0.0.1:{{PORT}}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: {workers}
access_log: true
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api], algorithms: [ES256] }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}", timeout: 5s }}
authorizers:
  pdp:
    url: "{pdp_url}"
    timeout: {timeout}
    on_error: {on_error}
    cache: {{ allow_ttl: {allow_ttl}, deny_ttl: 1s }}
    subject: {{ type: identity, id: sub, properties: [email, groups] }}
{extra}
routes:
  - name: orders
    match: {{ path_prefix: /orders/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    authorize: pdp
"""


@pytest.fixture
def pdp():
    p = PDP().start()
    yield p
    p.stop()


def bearer(idp, sub="alice"):  # noqa: F811
    return {"Authorization": "Bearer " + mint(idp.keys[0], sub=sub)}


def with_bearer_file(text, tmp_path, token):
    """The config with the authorizer's credential read from a file holding `token`."""
    path = tmp_path / "pdp.token"
    path.write_text(token + "\n")
    return text.replace("    subject:", f"    auth: {{ bearer_file: {path} }}\n    subject:"), path


def saw(upstream, prefix):
    return sum(1 for r in upstream.requests if r["path"].startswith(prefix))


def test_an_allow_goes_through_and_the_pdp_hears_the_request_as_authzen_writes_it(
        gateway_factory, upstream, idp, pdp):  # noqa: F811
    gw = gateway_factory(config(upstream, idp, pdp.url))
    r = requests.delete(gw.url("/orders/42"), headers=bearer(idp), timeout=5)
    assert r.status_code == 200
    assert saw(upstream, "/orders/42") == 1
    assert not pdp.schema_errors
    [call] = pdp.evaluation_calls()
    body = call["body"]
    assert body["subject"] == {"type": "identity", "id": "alice",
                               "properties": {"email": "alice@example.com", "groups": ["staff", "dev"],
                                              "iss": "https://idp.one"}}
    assert body["action"] == {"name": "DELETE"}
    assert body["resource"]["type"] == "route" and body["resource"]["id"] == "/orders/42"
    assert body["resource"]["properties"]["route"] == "orders"
    assert body["resource"]["properties"]["path"] == "/orders/42"
    assert body["resource"]["properties"]["host"].startswith("127.0.0.1")
    assert body["context"]["ip_address"] == "127.0.0.1"
    assert body["context"]["time"].endswith("Z")
    # The request's own id goes with the call (AuthZEN §10.1.3).
    assert call["headers"]["X-Request-ID"] == r.headers["X-Request-Id"]
    gw.logged('"authz":"pdp:allow"')


def test_a_deny_is_403_and_the_upstream_never_hears_of_it(gateway_factory, upstream, idp, pdp):  # noqa: F811
    pdp.decide = lambda body: {"decision": False, "context": {
        "reason_user": {"en-403": "Only the order's owner may delete it"},
        "reason_admin": {"en": "Rule ORD-7 matched subject alice"}}}
    gw = gateway_factory(config(upstream, idp, pdp.url))
    r = requests.delete(gw.url("/orders/42"), headers=bearer(idp), timeout=5)
    assert r.status_code == 403
    body = r.json()
    assert body["error"] == "access_denied"
    assert body["error_description"] == "Only the order's owner may delete it"
    assert "ORD-7" not in r.text and not any("ORD-7" in v for v in r.headers.values())
    assert saw(upstream, "/orders/") == 0
    gw.logged("Rule ORD-7 matched subject alice")
    gw.logged('"authz":"pdp:deny"')


def test_a_deny_without_a_reason_says_so_plainly(gateway_factory, upstream, idp, pdp):  # noqa: F811
    pdp.decide = lambda body: {"decision": False}
    gw = gateway_factory(config(upstream, idp, pdp.url))
    r = requests.get(gw.url("/orders/1"), headers=bearer(idp), timeout=5)
    assert r.status_code == 403 and r.json()["error"] == "access_denied"
    assert saw(upstream, "/orders/") == 0


@pytest.mark.parametrize("mode", ["500", "nonbool", "hang", "refused"])
@pytest.mark.parametrize("on_error,status", [("deny", 403), ("unavailable", 503)])
def test_no_decision_takes_on_error_within_the_timeout(
        gateway_factory, upstream, idp, pdp, mode, on_error, status):  # noqa: F811
    url = f"http://127.0.0.1:{free_port()}/" if mode == "refused" else pdp.url
    pdp.mode = None if mode == "refused" else mode
    gw = gateway_factory(config(upstream, idp, url, on_error=on_error, timeout="300ms"))
    started = time.monotonic()
    r = requests.get(gw.url("/orders/1"), headers=bearer(idp), timeout=10)
    took = time.monotonic() - started
    assert r.status_code == status, r.text
    assert r.json()["error"] == ("access_denied" if status == 403 else "temporarily_unavailable")
    if status == 503:
        assert r.headers["Retry-After"] == "1"
    # The authorizer's timeout (300 ms) bounds the wait, with room for a busy machine.
    assert took < 2.5, took
    assert saw(upstream, "/orders/") == 0
    gw.logged('"authz":"pdp:error"')
    # An error is never kept: the next request asks again.
    if mode != "refused":
        before = len(pdp.evaluation_calls())
        requests.get(gw.url("/orders/1"), headers=bearer(idp), timeout=10)
        assert len(pdp.evaluation_calls()) == before + 1


def test_identical_requests_within_the_ttl_are_one_call(gateway_factory, upstream, idp, pdp):  # noqa: F811
    gw = gateway_factory(config(upstream, idp, pdp.url, allow_ttl="1s"))
    alice = bearer(idp)
    with requests.Session() as s:
        for _ in range(50):
            assert s.get(gw.url("/orders/7"), headers=alice, timeout=5).status_code == 200
    assert len(pdp.evaluation_calls()) == 1
    # Another subject, another method: questions of their own.
    assert requests.get(gw.url("/orders/7"), headers=bearer(idp, "bob"), timeout=5).status_code == 200
    assert requests.post(gw.url("/orders/7"), headers=alice, timeout=5).status_code == 200
    assert len(pdp.evaluation_calls()) == 3
    # After the TTL, the same question is asked again. Real time must pass (the gateway's
    # clock ages the answer), and any request sent to see it would be one more question.
    time.sleep(1.2)
    assert requests.get(gw.url("/orders/7"), headers=alice, timeout=5).status_code == 200
    assert len(pdp.evaluation_calls()) == 4
    text = requests.get(f"http://127.0.0.1:{gw.admin}/metrics", timeout=5).text
    assert 'tokengate_authz_decisions_total{authorizer="pdp",outcome="allow"} 53' in text


def test_a_connections_kept_decision_answers_only_its_own_question(
        gateway_factory, upstream, idp, pdp):  # noqa: F811
    """One keep-alive connection, one token: a request whose method, path, host or client
    address differs from the last one's asks a question of its own. A decision kept for
    one never answers another, and the PDP hears each question once."""
    def decide(body):
        return {"decision": body["action"]["name"] == "GET"
                and body["resource"]["properties"]["path"] == "/orders/1"
                and body["context"]["ip_address"] != "203.0.113.9"}
    pdp.decide = decide
    gw = gateway_factory(config(upstream, idp, pdp.url, extra="trusted_proxies: [127.0.0.1/32]", workers=1))
    alice = bearer(idp)
    with requests.Session() as s:
        def code(method, path, **more):
            return s.request(method, gw.url(path), headers={**alice, **more}, timeout=5).status_code
        codes = [code("GET", "/orders/1"), code("GET", "/orders/1"), code("GET", "/orders/2"),
                 code("GET", "/orders/1"), code("DELETE", "/orders/1"), code("GET", "/orders/1"),
                 code("GET", "/orders/1", **{"X-Forwarded-For": "203.0.113.9"}),
                 code("GET", "/orders/1", Host="other.example"), code("GET", "/orders/1")]
    assert codes == [200, 200, 403, 200, 403, 200, 403, 200, 200]
    asked = [(b["action"]["name"], b["resource"]["properties"]["path"], b["resource"]["properties"]["host"],
              b["context"]["ip_address"]) for b in (c["body"] for c in pdp.evaluation_calls())]
    assert [(m, p, ip) for m, p, _, ip in asked] == [
        ("GET", "/orders/1", "127.0.0.1"), ("GET", "/orders/2", "127.0.0.1"), ("DELETE", "/orders/1", "127.0.0.1"),
        ("GET", "/orders/1", "203.0.113.9"), ("GET", "/orders/1", "127.0.0.1")]
    assert asked[-1][2] == "other.example"
    assert saw(upstream, "/orders/") == 6


def test_concurrent_identical_requests_share_one_call(gateway_factory, upstream, idp, pdp):  # noqa: F811
    release = pdp.decide

    def in_flight():
        text = requests.get(f"http://127.0.0.1:{gw.admin}/metrics", timeout=5).text
        return next(int(line.split()[1]) for line in text.splitlines()
                    if line.startswith("tokengate_inflight_requests "))

    def held(body):
        # The PDP answers only once all twenty requests are in the gateway: every other one
        # arrives while this call is out.
        wait_for(lambda: in_flight() >= 20, 4, what="twenty requests in flight")
        return release(body)
    pdp.decide = held
    gw = gateway_factory(config(upstream, idp, pdp.url, timeout="5s"))
    alice = bearer(idp)

    def one(_):
        return requests.get(gw.url("/orders/9"), headers=alice, timeout=10).status_code
    with ThreadPoolExecutor(20) as pool:
        codes = list(pool.map(one, range(20)))
    assert codes == [200] * 20
    assert len(pdp.evaluation_calls()) == 1


def test_the_pdps_metadata_names_its_endpoint(gateway_factory, upstream, idp):  # noqa: F811
    p = PDP(evaluation_path="/pdp/v2/eval", metadata=lambda pdp: {
        "policy_decision_point": pdp.url.rstrip("/"),
        "access_evaluation_endpoint": pdp.url + "pdp/v2/eval",
    }).start()
    try:
        gw = gateway_factory(config(upstream, idp, p.url))
        # The metadata is read at start, off the request path: wait until it has been.
        wait_for(lambda: requests.get(gw.url("/orders/1"), headers=bearer(idp), timeout=5).status_code == 200,
                 5, interval=0.1, what="a 200 through the metadata's endpoint")
        assert [c["path"] for c in p.calls][-1] == "/pdp/v2/eval"
    finally:
        p.stop()


@pytest.mark.parametrize("query", [False, True])
def test_the_query_is_asked_about_only_where_the_authorizer_says_so(
        gateway_factory, upstream, idp, pdp, query):  # noqa: F811
    """Without `query: true` the PDP is asked about the path, and its allow for GET
    /orders/42 answers /orders/42?action=delete too (docs/policy.md says so). With it, the
    query is `resource.properties.query`, part of the question, of the cache's digest and of
    a connection's kept decision."""
    pdp.decide = lambda body: {"decision": "delete" not in body["resource"]["properties"].get("query", "")}
    text = config(upstream, idp, pdp.url, workers=1)
    if query:
        text = text.replace("    subject:", "    query: true\n    subject:")
    gw = gateway_factory(text)
    with requests.Session() as s:
        codes = [s.get(gw.url(path), headers=bearer(idp), timeout=5).status_code
                 for path in ("/orders/42", "/orders/42?action=delete", "/orders/42?action=delete", "/orders/42")]
    assert codes == ([200, 403, 403, 200] if query else [200, 200, 200, 200])
    asked = [c["body"]["resource"]["properties"].get("query") for c in pdp.evaluation_calls()]
    assert asked == (["", "action=delete"] if query else [None])


def test_metadata_refused_on_a_later_reading_puts_the_default_endpoint_back(
        gateway_factory, upstream, idp):  # noqa: F811
    """Each reading of the PDP's metadata stands alone: one that names an endpoint, then a
    reload whose reading is refused, leaves the default under `url`, not the endpoint the
    earlier reading named."""
    import signal
    answer = {"meta": True}
    p = PDP(metadata=lambda pdp: {"policy_decision_point": pdp.url.rstrip("/"),
                                  "access_evaluation_endpoint": pdp.url + "moved/eval"} if answer["meta"] else None)
    p.start()
    try:
        text = config(upstream, idp, p.url, on_error="deny")
        gw = gateway_factory(text)
        def endpoint():
            report = requests.get(f"http://127.0.0.1:{gw.admin}/status.json", timeout=5).json()
            return report["authorizers"][0]["endpoint"]
        wait_for(lambda: endpoint() == p.url + "moved/eval", 5, interval=0.1, what="the moved endpoint")
        assert endpoint() == p.url + "moved/eval"
        # The moved endpoint is no evaluation endpoint of this PDP: on_error.
        assert requests.get(gw.url("/orders/1"), headers=bearer(idp, "m1"), timeout=5).status_code == 403
        answer["meta"] = False  # now 404
        gw.write_config(text)
        gw.signal(signal.SIGHUP)
        gw.logged("config reloaded")
        def allowed():
            allowed.last = requests.get(gw.url("/orders/2"), headers=bearer(idp, f"x{time.monotonic()}"), timeout=5)
            return allowed.last.status_code == 200
        wait_for(allowed, 5, interval=0.1, what=lambda: f"a 200 after the reload: {allowed.last.text}")
        assert p.evaluation_calls()[-1]["path"] == "/access/v1/evaluation"
        assert endpoint() == p.url + "access/v1/evaluation"
    finally:
        p.stop()


@pytest.mark.parametrize("elsewhere", ["other port", "other host"])
def test_metadata_naming_another_origin_gets_no_call_and_no_credential(
        gateway_factory, upstream, idp, tmp_path, elsewhere):  # noqa: F811
    """AuthZEN §9 metadata may move the endpoints only within url's origin: a PDP (or whoever
    can change its metadata) naming another port or host would otherwise receive the
    gateway's credential. The gateway keeps url's own paths and the configured PDP decides."""
    read = threading.Event()

    def metadata(pdp):
        read.set()
        other = f"http://127.0.0.1:{rec_port}" if elsewhere == "other port" else f"http://127.0.0.2:{pdp.port}"
        return {"policy_decision_point": pdp.url.rstrip("/"),
                "access_evaluation_endpoint": other + "/access/v1/evaluation",
                "access_evaluations_endpoint": other + "/access/v1/evaluations"}

    p = PDP(metadata=metadata, token="pdp-secret-1").start()
    rec_port = free_port()
    rec = Upstream(rec_port) if elsewhere == "other port" else Upstream(p.port, host="127.0.0.2")
    rec.start()
    try:
        text, _ = with_bearer_file(config(upstream, idp, p.url, workers=1), tmp_path, "pdp-secret-1")
        gw = gateway_factory(text)
        assert read.wait(5), "the gateway never read the PDP's metadata"
        # The answer is taken once the status says the metadata was read and is not used. One
        # worker: the status is that worker's own (of two, it would show the first to take it).
        def status():
            return requests.get(f"http://127.0.0.1:{gw.admin}/status.json", timeout=5).json()["authorizers"][0]
        wait_for(lambda: status()["metadata"] is False, 5, what=lambda: f"the metadata refused: {status()}")
        assert status()["endpoint"] == p.url + "access/v1/evaluation"
        p.decide = lambda body: {"decision": body["subject"]["id"] == "alice"}
        for i in range(4):
            assert requests.get(gw.url(f"/orders/{i}"), headers=bearer(idp), timeout=5).status_code == 200
        r = requests.get(gw.url("/orders/9"), headers=bearer(idp, "mallory"), timeout=5)
        assert r.status_code == 403 and r.json()["error"] == "access_denied", r.text
        assert rec.requests == []
        calls = p.evaluation_calls()
        assert len(calls) >= 5 and all(c["headers"]["Authorization"] == "Bearer pdp-secret-1" for c in calls)
        assert p.unauthorized == [] and p.schema_errors == []
    finally:
        rec.stop()
        p.stop()


def test_the_gateways_credential_comes_from_a_file(gateway_factory, upstream, idp, tmp_path):  # noqa: F811
    p = PDP(token="pdp-secret-1").start()
    try:
        text, path = with_bearer_file(config(upstream, idp, p.url), tmp_path, "pdp-secret-1")
        gw = gateway_factory(text)
        assert requests.get(gw.url("/orders/1"), headers=bearer(idp), timeout=5).status_code == 200
        # A rotated file is used within a second; the PDP now wants the new token.
        p.token = "pdp-secret-2"
        path.write_text("pdp-secret-2\n")
        wait_for(lambda: requests.get(gw.url("/orders/2"), headers=bearer(idp, "bob"), timeout=5).status_code == 200,
                 1.1, interval=0.1, what="the rotated token in use")
    finally:
        p.stop()


@pytest.mark.parametrize("mutate,message", [
    (lambda t: t.replace("authorize: pdp", "authorize: nope"), '"nope" is not defined under authorizers'),
    (lambda t: t.replace("auth: bearer\n    issuers: [one]\n", "auth: none\n"), "needs an authenticated caller"),
    (lambda t: t.replace('url: "http://127.0.0.1', 'url: "ftp://127.0.0.1'), "must be an http or https URL"),
    (lambda t: t.replace("on_error: deny", "on_error: maybe"), "must be deny or unavailable"),
    (lambda t: t.replace("timeout: 300ms", "timeout: 1m"), "must be above 0 and at most 10s"),
    (lambda t: t.replace("on_error: deny", "on_eror: deny"), "on_eror"),
])
def test_check_config_refuses_what_cannot_work(upstream, idp, tmp_path, mutate, message):  # noqa: F811
    import subprocess
    from support.gateway import BIN
    text = mutate(config(upstream, idp, "http://127.0.0.1:9/")).replace("{PORT}", "1").replace("{ADMIN}", "2")
    path = tmp_path / "tokengate.yaml"
    path.write_text(text)
    r = subprocess.run([BIN, "check-config", str(path)], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    assert message in r.stdout + r.stderr, r.stdout + r.stderr


def test_a_denied_grpc_call_is_permission_denied(gateway_factory, upstream, idp, pdp):  # noqa: F811
    """gRPC answers the PDP's deny in its own form: PERMISSION_DENIED with the user reason."""
    import grpc
    from test_grpc_refusals import rpc
    pdp.decide = lambda body: {"decision": False, "context": {"reason_user": "not this method"}}
    text = config(upstream, idp, pdp.url).replace(
        "listen: 127.0.0.1:{PORT}", "listen: { address: 127.0.0.1:{PORT}, http2: true }").replace(
        "path_prefix: /orders/", "path_prefix: /pkg.Orders/")
    gw = gateway_factory(text)
    err = rpc(gw, "/pkg.Orders/Delete", metadata=[("authorization", bearer(idp)["Authorization"])])
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED, (err.code(), err.details())
    assert "not this method" in err.details()
    [call] = pdp.evaluation_calls()
    assert call["body"]["action"] == {"name": "POST"}
    assert call["body"]["resource"]["id"] == "/pkg.Orders/Delete"


def test_a_reload_during_a_pdp_call_leaves_no_request_waiting(gateway_factory, upstream, idp, pdp):  # noqa: F811
    """The call under way when the authorizer's settings change still ends: the request that
    made it and the identical ones waiting on it (any worker) get its answer."""
    import signal
    release = pdp.decide
    answer = threading.Event()  # the PDP answers once the reload has been sent

    def slow(body):
        answer.wait(2.5)
        return release(body)
    pdp.decide = slow
    gw = gateway_factory(config(upstream, idp, pdp.url, timeout="3s"))
    alice = bearer(idp)
    with ThreadPoolExecutor(4) as pool:
        pending = [pool.submit(requests.get, gw.url("/orders/11"), headers=alice, timeout=10) for _ in range(4)]
        wait_for(lambda: pdp.evaluation_calls(), 5, interval=0.02, what="the PDP call under way")
        gw.write_config(config(upstream, idp, pdp.url, timeout="2s"))
        gw.signal(signal.SIGHUP)
        gw.logged("config reloaded")
        answer.set()
        codes = [f.result().status_code for f in pending]
    assert codes == [200] * 4
    pdp.decide = release
    gw.logged("config reloaded")
    assert requests.get(gw.url("/orders/11"), headers=alice, timeout=5).status_code == 200


def test_the_status_page_shows_each_authorizer(gateway_factory, upstream, idp, pdp):  # noqa: F811
    pdp.decide = lambda body: {"decision": body["subject"]["id"] != "bob"}
    gw = gateway_factory(config(upstream, idp, pdp.url))
    for sub in ("alice", "alice", "bob"):
        requests.get(gw.url("/orders/1"), headers=bearer(idp, sub), timeout=5)
    report = requests.get(f"http://127.0.0.1:{gw.admin}/status.json", timeout=5).json()
    [a] = report["authorizers"]
    assert a["name"] == "pdp" and a["url"] == pdp.url
    assert a["endpoint"] == pdp.url + "access/v1/evaluation"
    assert a["metadata"] is not True  # the test PDP has none (None until it has said so)
    assert a["decisions"] == {"allow": 2, "deny": 1, "error": 0, "cached": 1}
    page = requests.get(f"http://127.0.0.1:{gw.admin}/status", timeout=5).text
    assert 'id="authorizers"' in page and pdp.url + "access/v1/evaluation" in page


def test_a_template_routes_pdp_hears_the_template_and_its_variables(
        gateway_factory, upstream, idp, pdp):  # noqa: F811
    text = config(upstream, idp, pdp.url).replace(
        "match: { path_prefix: /orders/ }", 'match: { path_template: "/orders/{order_id}/lines/{line}" }')
    gw = gateway_factory(text)
    r = requests.delete(gw.url("/orders/42/lines/7"), headers=bearer(idp), timeout=5)
    assert r.status_code == 200
    [call] = pdp.evaluation_calls()
    resource = call["body"]["resource"]
    assert resource["id"] == "/orders/{order_id}/lines/{line}"
    assert resource["properties"] == {"route": "orders", "host": resource["properties"]["host"],
                                      "path": "/orders/42/lines/7", "order_id": "42", "line": "7"}
    assert not pdp.schema_errors
