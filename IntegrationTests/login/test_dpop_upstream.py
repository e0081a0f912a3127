"""A login route that forwards the session's DPoP-bound access token (`dpop: true`,
`forward_token: true`) to a resource server that checks DPoP itself (support/dpop_resource.py):
the token goes as `Authorization: DPoP` with a fresh proof of the gateway's key for the
upstream's URL (RFC 9449 §7.1), the upstream's nonce challenge is answered once for a request
without a body (§9), and the token endpoint's `token_type` must be the one asked for (§5, case-
insensitive). Against the real test AS (idpyoidc with DPoP)."""
import pytest
import requests

from support.dpop_resource import rs  # noqa: F401 (a fixture)
from test_login import API_ROUTE_FORWARDING_TOKEN, HTML, login_env  # noqa: F401 (a fixture)


@pytest.fixture
def dpop_as(authserver_factory):
    return authserver_factory(login="form", dpop=True)


def env_for(login_env, a, rs, tmp_path, **kw):
    return login_env(a, rs, tmp_path, extra_client="    dpop: true", extra_route=API_ROUTE_FORWARDING_TOKEN,
                     workers=1, **kw)


def api_checks(rs):
    return [(c["status"], c["error"]) for c in rs.checked]


def test_the_session_token_goes_upstream_with_a_fresh_proof_the_resource_accepts(login_env, dpop_as, rs, tmp_path):
    e = env_for(login_env, dpop_as, rs, tmp_path)
    r = e.login("/api/me")
    assert r.status_code == 200, r.text
    for _ in range(3):
        r = e.get("/api/me?page=2")
        assert r.status_code == 200, r.text
    # Each one checked in full by the resource: a replayed jti would have been refused.
    assert api_checks(rs) == [(200, None)] * 4
    proof = r.json()["proof"]
    assert proof["htm"] == "GET" and proof["htu"] == f"http://127.0.0.1:{rs.port}/api/me" and "nonce" not in proof


def test_the_client_cannot_put_its_own_token_or_proof_in_front_of_the_gateways(login_env, dpop_as, rs, tmp_path):
    e = env_for(login_env, dpop_as, rs, tmp_path)
    e.login("/api/me")
    r = e.get("/api/me", headers={**HTML, "Authorization": "DPoP forged", "DPoP": "forged.proof.x"})
    assert r.status_code == 200, r.text
    sent = [(k.lower(), v) for k, v in r.json()["headers"]]
    assert [k for k, _ in sent].count("dpop") == 1 and [k for k, _ in sent].count("authorization") == 1
    assert dict(sent)["dpop"] != "forged.proof.x" and dict(sent)["authorization"] != "DPoP forged"


def test_a_nonce_challenge_is_answered_once_and_the_nonce_kept(login_env, dpop_as, rs, tmp_path):
    e = env_for(login_env, dpop_as, rs, tmp_path)
    e.login("/api/me")
    rs.checked.clear()
    rs.nonce = "n-1"
    r = e.get("/api/me")
    assert r.status_code == 200, r.text
    assert api_checks(rs) == [(401, "use_dpop_nonce"), (200, None)]
    assert r.json()["proof"]["nonce"] == "n-1"
    assert "DPoP-Nonce" not in r.headers
    # The next request carries the nonce from the start.
    rs.checked.clear()
    assert e.get("/api/me").status_code == 200
    assert api_checks(rs) == [(200, None)]
    # A new nonce: one more challenge, answered again.
    rs.checked.clear()
    rs.nonce = "n-2"
    r = e.get("/api/me")
    assert r.status_code == 200 and r.json()["proof"]["nonce"] == "n-2"
    assert api_checks(rs) == [(401, "use_dpop_nonce"), (200, None)]


def test_a_request_with_a_body_is_not_sent_twice(login_env, dpop_as, rs, tmp_path):
    e = env_for(login_env, dpop_as, rs, tmp_path)
    e.login("/api/me")
    rs.checked.clear()
    rs.nonce = "n-1"
    r = e.browser.post(e.url("/api/orders"), data=b'{"qty": 1}', allow_redirects=False, timeout=15,
                       headers={"Content-Type": "application/json", "Accept": "application/json"})
    # The upstream's challenge reaches the client (its nonce is the gateway's, not passed on).
    assert r.status_code == 401 and "use_dpop_nonce" in r.headers.get("WWW-Authenticate", "")
    assert "DPoP-Nonce" not in r.headers
    assert [c["method"] for c in rs.checked] == ["POST"]
    # The gateway learnt the nonce: the next POST goes through at once.
    r = e.browser.post(e.url("/api/orders"), data=b'{"qty": 1}', allow_redirects=False, timeout=15,
                       headers={"Content-Type": "application/json", "Accept": "application/json"})
    assert r.status_code == 200 and r.json()["proof"]["nonce"] == "n-1"


def test_an_upstream_that_always_challenges_gets_one_retry(login_env, dpop_as, rs, tmp_path):
    e = env_for(login_env, dpop_as, rs, tmp_path)
    e.login("/api/me")
    rs.checked.clear()
    rs.nonce, rs.always_challenge = "n-1", True
    r = e.get("/api/me", headers={"Accept": "application/json"})
    assert r.status_code == 401
    assert api_checks(rs) == [(401, "use_dpop_nonce")] * 2


@pytest.mark.parametrize("said", ["dpop", "DPOP", "DPoP"])
def test_the_token_type_is_case_insensitive(login_env, dpop_as, rs, tmp_path, said):
    dpop_as.token_response_fault = {"token_type": said}
    e = env_for(login_env, dpop_as, rs, tmp_path)
    assert e.login("/api/me").status_code == 200
    assert api_checks(rs) == [(200, None)]


@pytest.mark.parametrize("said", ["Bearer", "bearer", "N_A", ""])
def test_a_token_type_other_than_dpop_ends_the_login(login_env, dpop_as, rs, tmp_path, said):
    dpop_as.token_response_fault = {"token_type": said}
    e = env_for(login_env, dpop_as, rs, tmp_path)
    r = e.get(e.to_callback("/api/me"))
    assert r.status_code == 400, r.text
    assert "token_type" in e.gw.output()
    assert rs.checked == []


def test_a_bearer_client_refuses_a_dpop_token_type(login_env, authserver_factory, rs, tmp_path):
    a = authserver_factory(login="form")
    a.token_response_fault = {"token_type": "DPoP"}
    e = login_env(a, rs, tmp_path, extra_route=API_ROUTE_FORWARDING_TOKEN, workers=1)
    r = e.get(e.to_callback("/orders/1"))
    assert r.status_code == 400, r.text
    assert "token_type DPoP, not Bearer" in e.gw.output()


def test_a_decision_hands_the_ingress_a_proof_for_the_original_url(login_env, dpop_as, rs, tmp_path):
    e = env_for(login_env, dpop_as, rs, tmp_path,
                extra_top="decision: {}\ntrusted_proxies: [127.0.0.1/32]")
    e.login("/api/me")
    host = f"127.0.0.1:{e.gw.port}"
    cookies = "; ".join(f"{c.name}={c.value}" for c in e.browser.cookies)
    r = requests.get(e.gw.url("/_tokengate/forward-auth"), timeout=10, headers={
        "X-Forwarded-Method": "GET", "X-Forwarded-Proto": "http", "X-Forwarded-Host": host,
        "X-Forwarded-Uri": "/api/me?x=1", "Cookie": cookies, "Accept": "application/json"})
    assert r.status_code == 200, r.text
    # What the ingress sends on to the API at the original URL: the resource checks it as
    # if it were served there.
    rs.checked.clear()
    status, error, proof = rs.check("GET", "/api/me", {"Authorization": [r.headers["Authorization"]],
                                                      "DPoP": [r.headers["DPoP"]]}, origin=f"http://{host}")
    assert (status, error) == (200, None)
    assert proof["htu"] == f"http://{host}/api/me"


def test_htu_names_the_host_the_upstream_is_sent(login_env, dpop_as, rs, tmp_path):
    """host_header: a fixed name — the proof's htu names it, as the resource sees its URL."""
    e = login_env(dpop_as, rs, tmp_path, extra_client="    dpop: true", extra_route=API_ROUTE_FORWARDING_TOKEN,
                  workers=1)
    text = open(e.gw.config_path).read()
    port = rs.port
    e.gw.stop()
    fixed = text.replace(f'app: {{ url: "http://127.0.0.1:{port}" }}',
                         f'app: {{ url: "http://127.0.0.1:{port}", host_header: api.internal }}')
    assert fixed != text
    with open(e.gw.config_path, "w") as f:
        f.write(fixed)
    e.gw.start()
    r = e.login("/api/me")
    assert r.status_code == 200, r.text
    assert r.json()["proof"]["htu"] == "http://api.internal/api/me"


@pytest.mark.parametrize("shared_key", [True, False], ids=["one-key-file", "a-key-each"])
def test_replicas_forward_each_others_session_tokens_with_one_dpop_key(login_env, dpop_as, rs, tmp_path,
                                                                        shared_key):
    """Two replicas share sessions (one session key). The session token is bound to the key of
    the replica that logged in; the other replica's proofs pass the resource's cnf.jkt check
    only when both sign with `dpop.key_file`: with a random key each, the resource refuses."""
    import subprocess
    from support.gateway import BIN
    key = tmp_path / "dpop.jwk"
    subprocess.run([BIN, "keys", "generate", "--alg", "ES256", "--kid", "dpop-1", "--out", str(key)],
                   capture_output=True, check=True)
    top = f'dpop: {{ key_file: "{key}" }}' if shared_key else ""
    a = env_for(login_env, dpop_as, rs, tmp_path, extra_top=top)
    (tmp_path / "b").mkdir()
    b = env_for(login_env, dpop_as, rs, tmp_path / "b", extra_top=top, share_client_of=a)
    assert a.login("/api/me").status_code == 200
    r = a.browser.get(b.url("/api/me"), headers=HTML, allow_redirects=False, timeout=10)
    if shared_key:
        assert r.status_code == 200, r.text
        assert api_checks(rs) == [(200, None), (200, None)]
    else:
        assert r.status_code == 401 and api_checks(rs) == [(200, None), (401, "invalid_token")]
        assert b.gw.logged("dpop.key_file is not set")


def test_a_proof_the_gateway_sent_cannot_be_replayed_to_the_upstream(login_env, dpop_as, rs, tmp_path):
    """Whoever sees a request the gateway sent upstream (a log, a proxy in between) has the token
    and a valid proof: sent again, the resource refuses the proof (its jti was used), and the
    proof names only that method and URL."""
    e = env_for(login_env, dpop_as, rs, tmp_path)
    r = e.login("/api/me")
    assert r.status_code == 200, r.text
    seen = {k.lower(): v for k, v in r.json()["headers"]}
    stolen = {"Authorization": seen["authorization"], "DPoP": seen["dpop"]}
    replayed = requests.get(f"http://127.0.0.1:{rs.port}/api/me", headers=stolen, timeout=5)
    assert replayed.status_code == 401 and replayed.json()["error"] == "invalid_dpop_proof"
    other = requests.post(f"http://127.0.0.1:{rs.port}/api/transfer", headers=stolen, timeout=5)
    assert other.status_code == 401 and other.json()["error"] == "invalid_dpop_proof"
