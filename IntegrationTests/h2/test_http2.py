"""HTTP/2 in: curl and nghttp (Debian's, both on libnghttp2) and the `h2` library as clients,
over TLS with ALPN and over plain TCP with prior knowledge, next to HTTP/1.1 on the same port;
the gateway's pipeline unchanged per stream (bearer routes, identity headers, body limits)."""
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time

import pytest
import requests

from support.gateway import basic_config, sent_headers
import hpack
from hyperframe.frame import HeadersFrame, SettingsFrame

from support.h2_client import H2Connection, frames
from support.waiting import wait_for

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

CURL = shutil.which("curl")
NGHTTP = shutil.which("nghttp") or "/usr/bin/nghttp"


@pytest.fixture(scope="module")
def cert():
    d = tempfile.mkdtemp(prefix="tg-h2-")
    c, k = os.path.join(d, "c.pem"), os.path.join(d, "k.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", k, "-out", c, "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return c, k


def plain_h2(upstream, extra="", timeout="2s"):
    return basic_config(upstream.port, extra=extra, timeout=timeout, connect_timeout=timeout).replace(
        "listen: 127.0.0.1:{PORT}", "listen: { address: 127.0.0.1:{PORT}, http2: true }")


def tls_listener(upstream, cert, http2=None):
    flag = "" if http2 is None else f", http2: {str(http2).lower()}"
    return basic_config(upstream.port).replace(
        "listen: 127.0.0.1:{PORT}",
        f"listen: {{ address: 127.0.0.1:{{PORT}}, tls: {{ cert_file: {cert[0]}, key_file: {cert[1]} }}{flag} }}")


def curl(*args, timeout=20):
    """curl's status line, HTTP version and body for one request."""
    out = subprocess.run([CURL, "-sS", "-o", "-", "-w", "\n%{http_code} %{http_version}", *args],
                         capture_output=True, timeout=timeout)
    body, _, tail = out.stdout.rpartition(b"\n")
    code, version = tail.decode().split()
    return int(code), version, body


def test_prior_knowledge_on_a_plain_listener(upstream, gateway_factory):
    g = gateway_factory(plain_h2(upstream))
    code, version, body = curl("--http2-prior-knowledge", g.url("/echo?a=1"), "-H", "X-Test: one")
    assert (code, version) == (200, "2")
    seen = json.loads(body)
    assert seen["path"] == "/echo?a=1"
    headers = {k.lower(): v for k, v in seen["headers"]}
    # :authority became the request's Host (passed on as X-Forwarded-Host); the upstream
    # hop is HTTP/1.1 and gets no pseudo-headers.
    assert headers["x-forwarded-host"] == f"127.0.0.1:{g.port}"
    assert headers["x-test"] == "one"
    assert not any(k.startswith(":") for k in headers)


def test_http1_still_served_on_the_same_port(upstream, gateway_factory):
    g = gateway_factory(plain_h2(upstream))
    r = requests.get(g.url("/echo"), timeout=5)
    assert r.status_code == 200 and r.raw.version == 11
    # A client that starts like the preface but is not one is HTTP/1.1, and refused as such.
    s = socket.create_connection(("127.0.0.1", g.port), timeout=5)
    s.sendall(b"PRI * HTTP/1.1\r\nHost: x\r\n\r\n")
    assert s.recv(4096).startswith(b"HTTP/1.1 4")
    s.close()


def test_preface_refused_where_http2_is_off(gateway):
    s = socket.create_connection(("127.0.0.1", gateway.port), timeout=5)
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
    assert s.recv(4096).startswith(b"HTTP/1.1 505")
    s.close()


def test_tls_offers_h2_in_alpn_by_default(upstream, gateway_factory, cert):
    g = gateway_factory(tls_listener(upstream, cert))
    url = f"https://127.0.0.1:{g.port}/echo"
    assert curl("--http2", "--cacert", cert[0], url)[:2] == (200, "2")
    assert curl("--http1.1", "--cacert", cert[0], url)[:2] == (200, "1.1")
    ctx = ssl.create_default_context(cafile=cert[0])
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    with socket.create_connection(("127.0.0.1", g.port), timeout=5) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            assert s.selected_alpn_protocol() == "h2"


def test_nghttp_prior_knowledge_and_over_tls(upstream, gateway_factory, cert):
    # nghttp (Debian's nghttp2-client): h2c with prior knowledge on a plain listener, and h2
    # by ALPN over TLS; -v prints the frames, with the response's :status.
    for config, url in ((plain_h2(upstream), "http://127.0.0.1:{}/echo?via=nghttp"),
                        (tls_listener(upstream, cert), "https://127.0.0.1:{}/echo?via=nghttp")):
        g = gateway_factory(config)
        out = subprocess.run([NGHTTP, "-v", url.format(g.port)], capture_output=True, timeout=20)
        text = out.stdout.decode(errors="replace")
        assert out.returncode == 0, text
        assert ":status: 200" in text
        assert '"/echo?via=nghttp"' in text
        g.stop()


def test_tls_without_http2_answers_http1_only(upstream, gateway_factory, cert):
    g = gateway_factory(tls_listener(upstream, cert, http2=False))
    assert curl("--http2", "--cacert", cert[0], f"https://127.0.0.1:{g.port}/echo")[:2] == (200, "1.1")


@pytest.mark.parametrize("size", [5, 100_000, 3_000_000])
def test_request_bodies(upstream, gateway_factory, size, tmp_path):
    g = gateway_factory(plain_h2(upstream))
    f = tmp_path / "body"
    f.write_bytes(os.urandom(size))
    code, version, body = curl("--http2-prior-knowledge", "--data-binary", f"@{f}", g.url("/echo"))
    assert (code, version) == (200, "2")
    assert json.loads(body)["body_length"] == size


# A client's trailer section: an end-to-end field passes; a forged identity header, a
# credential, content metadata and an override header do not (RFC 9110 §6.5.1, and a server
# may merge trailers into the head).
FORGED_TRAILERS = [("x-forwarded-user", "mallory"), ("authorization", "Bearer forged"),
                   ("content-type", "text/evil"), ("x-original-url", "/admin"), ("cookie", "s=1")]


def test_request_trailers_reach_an_http1_upstream_in_the_last_chunk(upstream, gateway_factory):
    g = gateway_factory(plain_h2(upstream))
    with H2Connection(g.port) as c:
        a = c.request("POST", "/echo", body=b"x" * 70_000, trailers=[("x-checksum", "42")] + FORGED_TRAILERS)
    assert a.status == 200
    seen = json.loads(a.body)
    assert seen["body_length"] == 70_000
    assert seen["trailers"] == [["x-checksum", "42"]]
    assert "transfer-encoding" in {k.lower() for k, _ in seen["headers"]}


def test_http1_chunked_trailers_pass_the_same_rules(upstream, gateway_factory):
    from support.gateway import raw_request
    g = gateway_factory(plain_h2(upstream))
    forged = "".join(f"{k}: {v}\r\n" for k, v in FORGED_TRAILERS if k != "content-type")
    status, resp = raw_request(g.port, (
        "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        f"5\r\nhello\r\n0\r\nX-Checksum: 42\r\n{forged}\r\n").encode())
    assert status == 200
    seen = json.loads(resp.split(b"\r\n\r\n", 1)[1])
    assert seen["body_length"] == 5 and seen["trailers"] == [["X-Checksum", "42"]]


def test_a_framing_field_in_trailers_fails_the_request(upstream, gateway_factory):
    g = gateway_factory(plain_h2(upstream))
    with H2Connection(g.port) as c:
        a = c.request("POST", "/echo", body=b"hello", trailers=[("content-length", "5")])
        # The stream is reset (the body did not arrive whole); the connection goes on.
        assert a.reset is not None or a.status == 400
        assert c.request("GET", "/echo").status == 200


def test_body_over_the_limit_is_413_and_the_connection_goes_on(upstream, gateway_factory):
    g = gateway_factory(plain_h2(upstream))
    with H2Connection(g.port) as c:
        big = c.request("POST", "/echo", body=b"x" * (5 << 20), headers=[("content-length", str(5 << 20))])
        assert big.status == 413
        # Refused on its announced length: the stream ends at once, the connection serves on.
        assert c.request("GET", "/echo").status == 200
    with H2Connection(g.port) as c:
        # No content-length: refused once past the limit, mid-body.
        assert c.request("POST", "/echo", body=b"y" * (5 << 20)).status == 413
        assert c.request("GET", "/echo").status == 200


def test_large_responses_stream_within_flow_control(upstream, gateway_factory):
    g = gateway_factory(plain_h2(upstream))
    code, version, body = curl("--http2-prior-knowledge", g.url("/big?size=5000000"))
    assert (code, version, len(body)) == (200, "2", 5_000_000)
    code, version, body = curl("--http2-prior-knowledge", g.url("/chunked?size=3000000"))
    assert (code, version, len(body)) == (200, "2", 3_000_000)


def test_many_streams_on_one_connection(upstream, gateway_factory):
    # The echo upstream's listen backlog is Python's default 5: 50 connections at once from
    # the gateway may wait out a SYN retransmit or two.
    g = gateway_factory(plain_h2(upstream, timeout="10s"))
    with H2Connection(g.port) as c:
        ids = [c.send_request("GET", f"/echo?n={i}") for i in range(50)]
        answers = c.collect(ids)
        assert sorted(a.status for a in answers.values()) == [200] * 50
        assert {json.loads(answers[i].body)["path"] for i in ids} == {f"/echo?n={n}" for n in range(50)}


def test_head_and_no_body_statuses(upstream, gateway_factory):
    g = gateway_factory(plain_h2(upstream))
    with H2Connection(g.port) as c:
        head = c.request("HEAD", "/big?size=1234")
        assert head.status == 200 and head.body == b""
        assert head.header("content-length") == "1234"


def test_upgrade_h2c_is_never_honoured(upstream, gateway_factory):
    g = gateway_factory(plain_h2(upstream))
    r = requests.get(g.url("/echo"), headers={"Connection": "Upgrade, HTTP2-Settings", "Upgrade": "h2c",
                                              "HTTP2-Settings": "AAMAAABkAARAAAAAAAIAAAAA"}, timeout=5)
    assert r.status_code == 200 and r.raw.version == 11
    seen = sent_headers(r)
    assert "upgrade" not in seen and "http2-settings" not in seen


def test_refusals_in_the_engine(upstream, gateway_factory):
    g = gateway_factory(plain_h2(upstream))
    with H2Connection(g.port) as c:
        # Host naming another authority than :authority (RFC 9113 §8.3.1).
        assert c.request("GET", "/echo", headers=[("host", "evil.example")], validate=False).status == 400
        # A header section past max_header_size (32 KiB by default): 431, as on HTTP/1.1.
        many = [(f"x-h{i}", "v" * 1000) for i in range(40)]
        assert c.request("GET", "/echo", headers=many).status == 431
        # Expectations other than 100-continue (RFC 9110 §10.1.1).
        assert c.request("GET", "/echo", headers=[("expect", "teapot")]).status == 417
        # Uppercase field names are malformed (RFC 9113 §8.2.1): the stream is reset.
        assert c.request("GET", "/echo", headers=[("X-Upper", "1")], validate=False).reset is not None
        # Connection-specific fields are malformed (RFC 9113 §8.2.2).
        assert c.request("GET", "/echo", headers=[("connection", "close")], validate=False).reset is not None
        # The connection outlived all of that.
        assert c.request("GET", "/echo").status == 200


def test_goaway_on_sigterm(upstream, gateway_factory):
    """Read raw: the `h2` library takes a GOAWAY as the end of everything, but a graceful one
    (RFC 9113 §6.8) still carries the answers of the streams it lets finish."""
    g = gateway_factory(plain_h2(upstream))
    s = socket.create_connection(("127.0.0.1", g.port), timeout=10)
    block = hpack.Encoder().encode([(":method", "GET"), (":path", "/slow?delay=1"), (":scheme", "http"),
                                    (":authority", "127.0.0.1")])
    s.sendall(PREFACE + SettingsFrame(0).serialize() + HeadersFrame(1, block, flags=["END_HEADERS", "END_STREAM"]).serialize())
    metrics_url = f"http://127.0.0.1:{g.admin}/metrics"
    wait_for(lambda: "tokengate_inflight_requests 1" in requests.get(metrics_url, timeout=5).text,
             what="the request in flight")
    g.signal(signal.SIGTERM)
    got = b""
    while True:
        data = s.recv(65536)
        if not data:
            break
        got += data
    seen = frames(got)
    goaway = [f for f in seen if f[0] == 0x7]
    # GOAWAY(NO_ERROR) naming stream 1 as the last it serves, then stream 1's answer in full.
    assert goaway and int.from_bytes(goaway[0][3][4:8], "big") == 0
    assert int.from_bytes(goaway[0][3][:4], "big") == 1
    headers = [f for f in seen if f[0] == 0x1 and f[2] == 1]
    assert dict(hpack.Decoder().decode(headers[0][3]))[":status"] == "200"
    assert any(f[0] == 0x0 and f[2] == 1 and f[1] & 0x1 for f in seen)
    assert g.proc.wait(timeout=10) == 0


def test_bearer_route_over_h2(upstream, gateway_factory, tmp_path):
    from joserfc import jwt
    from joserfc.jwk import ECKey
    key = ECKey.generate_key("P-256", parameters={"kid": "k1", "alg": "ES256"}, private=True)
    jwks = tmp_path / "keys.jwks"
    jwks.write_text(json.dumps({"keys": [key.as_dict(private=False)]}))
    g = gateway_factory(f"""
listen: {{ address: 127.0.0.1:{{PORT}}, http2: true }}
admin_listen: 127.0.0.1:{{ADMIN}}
issuers:
  one: {{ issuer: "https://idp.one", jwks_file: "{jwks}", audiences: [api] }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - name: api
    match: {{ path_prefix: /api/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    headers: {{ X-User-Id: sub }}
""")
    now = int(time.time())
    tok = jwt.encode({"alg": "ES256", "kid": "k1"},
                     {"iss": "https://idp.one", "aud": "api", "sub": "alice", "iat": now, "exp": now + 60}, key)
    with H2Connection(g.port) as c:
        none = c.request("GET", "/api/x")
        assert none.status == 401 and none.header("www-authenticate").startswith("Bearer")
        bad = c.request("GET", "/api/x", headers=[("authorization", "Bearer " + tok[:-4] + "AAAA")])
        assert bad.status == 401 and 'error="invalid_token"' in bad.header("www-authenticate")
        ok = c.request("GET", "/api/x", headers=[("authorization", "Bearer " + tok), ("x-user-id", "mallory")])
        assert ok.status == 200
        seen = {k.lower(): v for k, v in json.loads(ok.body)["headers"]}
        # The client's copy is stripped, the gateway's injected.
        assert seen["x-user-id"] == "alice"


def test_dpop_route_over_h2(upstream, gateway_factory):
    """A DPoP-bound token and its proof over HTTP/2: the proof's htu names the URL the
    client used; a replayed proof and a proof for another URL are refused in RFC 9449 shape."""
    from support.dpop_client import DPoPKey
    from test_bearer import JWKSServer, ec_key, token as mint
    from test_dpop import config as dpop_config
    idp = JWKSServer()
    idp.keys = [ec_key("one-1")]
    try:
        g = gateway_factory(dpop_config(upstream, idp).replace(
            "listen: 127.0.0.1:{PORT}", "listen: { address: 127.0.0.1:{PORT}, http2: true }"))
        client = DPoPKey("ES256")
        tok = mint(idp.keys[0], claims={"cnf": {"jkt": client.jkt}})
        url = g.url("/dpop/orders/1")
        with H2Connection(g.port) as c:
            proof = client.proof("GET", url, access_token=tok)
            creds = [("authorization", f"DPoP {tok}"), ("dpop", proof)]
            ok = c.request("GET", "/dpop/orders/1", headers=creds)
            assert ok.status == 200, ok.body
            seen = {k.lower(): v for k, v in json.loads(ok.body)["headers"]}
            assert "authorization" not in seen and "dpop" not in seen
            replay = c.request("GET", "/dpop/orders/1", headers=creds)
            assert replay.status == 401 and 'error="invalid_dpop_proof"' in replay.header("www-authenticate")
            other = client.proof("GET", g.url("/dpop/elsewhere"), access_token=tok)
            wrong = c.request("GET", "/dpop/orders/1", headers=[("authorization", f"DPoP {tok}"), ("dpop", other)])
            assert wrong.status == 401 and 'error="invalid_dpop_proof"' in wrong.header("www-authenticate")
    finally:
        idp.stop()
