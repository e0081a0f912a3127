"""Mutual TLS on a listener and certificate-bound access tokens (RFC 8705 §3), end to end: a CA,
client certificates and a CRL made with the `openssl` command in the test, a real tokengate,
tokens signed with joserfc. A token whose `cnf.x5t#S256` names a certificate is good only over
a connection that presented that certificate; everything else gets 401 `invalid_token` or a
refused handshake. The upstream learns the certificate's subject, SPIFFE URI and thumbprint
when the route asks."""
import base64
import hashlib
import os
import socket
import ssl
import subprocess

import pytest
import requests
from cryptography import x509

from support.gateway import free_port, sent_headers
from support.tls_pki import make_pair
from support.waiting import wait_for
from test_bearer import JWKSServer, ec_key, token


def run(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


CA_CONF = """[ca]
default_ca = ca
[ca]
database = index.txt
crlnumber = crlnumber
default_md = sha256
default_crl_days = 1
"""


class ClientPKI:
    """A CA in `directory` that issues client certificates and CRLs, through `openssl`."""

    def __init__(self, directory, name="ca"):
        self.dir = os.path.join(directory, name)
        os.makedirs(self.dir)
        with open(os.path.join(self.dir, "ca.cnf"), "w") as f:
            f.write(CA_CONF)
        open(os.path.join(self.dir, "index.txt"), "w").close()
        with open(os.path.join(self.dir, "crlnumber"), "w") as f:
            f.write("01\n")
        run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key",
            "-out", "ca.crt", "-subj", f"/CN=Test Client CA {name}", "-days", "2",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            cwd=self.dir)
        self.crt = os.path.join(self.dir, "ca.crt")

    def issue(self, stem, subject, uri=None):
        """A client certificate and key; returns (crt, key) paths."""
        with open(os.path.join(self.dir, f"{stem}.ext"), "w") as f:
            f.write("extendedKeyUsage=clientAuth\n")
            if uri:
                f.write(f"subjectAltName=URI:{uri}\n")
        run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f"{stem}.key",
            "-out", f"{stem}.csr", "-subj", subject, cwd=self.dir)
        run("x509", "-req", "-in", f"{stem}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{stem}.crt", "-days", "2", "-extfile", f"{stem}.ext", cwd=self.dir)
        return os.path.join(self.dir, f"{stem}.crt"), os.path.join(self.dir, f"{stem}.key")

    def revoke(self, crt):
        run("ca", "-config", "ca.cnf", "-keyfile", "ca.key", "-cert", "ca.crt", "-revoke", crt, cwd=self.dir)

    def crl(self):
        """Writes the CRL of everything revoked so far to crl.pem; returns its path."""
        out = os.path.join(self.dir, "crl.pem")
        run("ca", "-config", "ca.cnf", "-keyfile", "ca.key", "-cert", "ca.crt", "-gencrl", "-out", "crl.pem.new",
            cwd=self.dir)
        os.replace(os.path.join(self.dir, "crl.pem.new"), out)
        return out


def x5t(crt):
    """The certificate's `x5t#S256`: base64url of the SHA-256 of its DER (RFC 8705 §3.1)."""
    with open(crt, "rb") as f:
        der = x509.load_pem_x509_certificate(f.read()).public_bytes(__import__(
            "cryptography.hazmat.primitives.serialization", fromlist=["Encoding"]).Encoding.DER)
    return base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode()


@pytest.fixture
def pki(tmp_path):
    return ClientPKI(str(tmp_path))


@pytest.fixture
def idp():
    s = JWKSServer()
    s.keys = [ec_key("one-1")]
    yield s
    s.stop()


def mtls_config(upstream, idp, server_pair, tls_extra, plain_port):
    crt, key = server_pair
    return f"""
listen:
  - {{ address: 127.0.0.1:{{PORT}}, tls: {{ cert_file: {crt}, key_file: {key}, watch: 1s{tls_extra} }} }}
  - 127.0.0.1:{plain_port}
admin_listen: 127.0.0.1:{{ADMIN}}
workers: 2
issuers:
  one: {{ issuer: "https://idp.one", jwks_uri: "{idp.url}", audiences: [api] }}
upstreams:
  app: {{ url: "http://127.0.0.1:{upstream.port}" }}
routes:
  - name: api
    match: {{ path_prefix: /api/ }}
    upstream: app
    auth: bearer
    issuers: [one]
    certificate_headers: {{ X-Client-Subject: subject, X-Spiffe-Id: uri, X-Client-Cert-Sha256: sha256 }}
  - name: public
    match: {{ path_prefix: / }}
    upstream: app
    auth: none
    certificate_headers: {{ X-Spiffe-Id: uri }}
"""


class MTLS:
    """A gateway with mTLS on its TLS listener, a plain listener beside it, a PKI, an issuer."""

    def __init__(self, gateway, pki, idp, plain_port, server_crt):
        self.g, self.pki, self.idp, self.plain_port, self.server_crt = gateway, pki, idp, plain_port, server_crt

    def bound(self, crt, **claims):
        """A token bound to the certificate `crt` (`cnf.x5t#S256`)."""
        return token(self.idp.keys[0], cnf={"x5t#S256": x5t(crt)}, **claims)

    def unbound(self):
        return token(self.idp.keys[0])

    def url(self, path="/api/x", plain=False):
        return f"http://127.0.0.1:{self.plain_port}{path}" if plain else f"https://127.0.0.1:{self.g.port}{path}"

    def get(self, path="/api/x", tok=None, cert=None, plain=False, headers=None):
        h = dict(headers or {})
        if tok:
            h["Authorization"] = f"Bearer {tok}"
        return requests.get(self.url(path, plain), headers=h, cert=cert, verify=self.server_crt, timeout=10)


def start(upstream, idp, gateway_factory, tmp_path, pki, tls_extra=""):
    server = make_pair(str(tmp_path), "server", ["127.0.0.1"])
    plain = free_port()
    g = gateway_factory(mtls_config(upstream, idp, server, f", client_ca_file: {pki.crt}{tls_extra}", plain))
    return MTLS(g, pki, idp, plain, server[0])


@pytest.fixture
def optional(upstream, idp, gateway_factory, tmp_path, pki):
    return start(upstream, idp, gateway_factory, tmp_path, pki)


def challenge(r):
    return r.headers.get("WWW-Authenticate", "")


def tls12_context(m, cert):
    """A client context presenting `cert`, TLS 1.2 at most (the session is known once the
    handshake ends); one context for a connection and the ones that resume its session."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(m.server_crt)
    ctx.load_cert_chain(*cert)
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    return ctx


def tls12_get(m, ctx, path, session=None, headers=""):
    """GET `path` over one connection of `ctx`, resuming `session` if given: (session,
    resumed, status line)."""
    with socket.create_connection(("127.0.0.1", m.g.port), timeout=5) as s:
        with ctx.wrap_socket(s, server_hostname="127.0.0.1", session=session) as t:
            t.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}Connection: close\r\n\r\n".encode())
            data = b""
            while chunk := t.recv(65536):
                data += chunk
            return t.session, t.session_reused, data.split(b"\r\n", 1)[0]


def test_a_bound_token_with_its_certificate_reaches_the_upstream_with_the_certificates_identity(optional, pki):
    a = pki.issue("a", "/CN=billing/O=Example", uri="spiffe://example.org/ns/prod/sa/billing")
    forged = {"X-Client-Subject": "CN=forged", "X-Spiffe-Id": "spiffe://evil", "X-Client-Cert-Sha256": "x"}
    r = optional.get(tok=optional.bound(a[0]), cert=a, headers=forged)
    assert r.status_code == 200, r.text
    h = sent_headers(r)
    assert h["x-forwarded-user"] == "alice"
    assert h["x-client-subject"] == "O=Example,CN=billing"
    assert h["x-spiffe-id"] == "spiffe://example.org/ns/prod/sa/billing"
    assert h["x-client-cert-sha256"] == x5t(a[0])


def test_a_bound_token_without_a_certificate_is_refused(optional, pki):
    a = pki.issue("a", "/CN=billing")
    r = optional.get(tok=optional.bound(a[0]))
    assert r.status_code == 401
    assert 'error="invalid_token"' in challenge(r)
    assert "client certificate" in r.json()["error_description"]


def test_a_bound_token_with_another_clients_certificate_is_refused(optional, pki):
    a = pki.issue("a", "/CN=billing")
    b = pki.issue("b", "/CN=mallory")
    r = optional.get(tok=optional.bound(a[0]), cert=b)
    assert r.status_code == 401
    assert 'error="invalid_token"' in challenge(r)
    assert r.json()["error_description"] == "the token is bound to another client certificate"


def test_a_bound_token_on_the_plain_listener_is_refused(optional, pki):
    a = pki.issue("a", "/CN=billing")
    r = optional.get(tok=optional.bound(a[0]), plain=True)
    assert r.status_code == 401
    assert 'error="invalid_token"' in challenge(r)


def test_a_certificate_from_an_untrusted_ca_fails_the_handshake(optional, tmp_path):
    other = ClientPKI(str(tmp_path), "other")
    c = other.issue("c", "/CN=billing")
    # Even a token bound to that very certificate: the handshake never completes.
    with pytest.raises(requests.exceptions.SSLError):
        optional.get(tok=optional.bound(c[0]), cert=c)
    # A self-signed certificate likewise.
    self_signed = make_pair(str(tmp_path), "self", ["billing"])
    with pytest.raises(requests.exceptions.SSLError):
        optional.get(tok=optional.bound(self_signed[0]), cert=self_signed)


def test_a_token_bound_to_a_malformed_thumbprint_is_refused_even_with_a_certificate(optional, pki):
    a = pki.issue("a", "/CN=billing")
    for bad in ["", x5t(a[0]) + "=", x5t(a[0])[:-2], "*" * 43]:
        r = optional.get(tok=token(optional.idp.keys[0], cnf={"x5t#S256": bad}), cert=a)
        assert r.status_code == 401, bad
        assert 'error="invalid_token"' in challenge(r)


def test_unbound_tokens_work_with_or_without_a_certificate(optional, pki):
    a = pki.issue("a", "/CN=billing", uri="spiffe://example.org/a")
    assert optional.get(tok=optional.unbound(), cert=a).status_code == 200
    r = optional.get(tok=optional.unbound())
    assert r.status_code == 200
    assert "x-client-subject" not in sent_headers(r)
    assert optional.get(tok=optional.unbound(), plain=True).status_code == 200


def test_a_route_without_auth_tells_the_upstream_the_spiffe_id(optional, pki):
    a = pki.issue("a", "/CN=billing", uri="spiffe://example.org/ns/prod/sa/billing")
    r = optional.get("/hello", cert=a, headers={"X-Spiffe-Id": "spiffe://evil"})
    assert sent_headers(r)["x-spiffe-id"] == "spiffe://example.org/ns/prod/sa/billing"
    # Without a certificate the client's own header is still stripped.
    r = optional.get("/hello", headers={"X-Spiffe-Id": "spiffe://evil"})
    assert "x-spiffe-id" not in sent_headers(r)
    r = optional.get("/hello", plain=True, headers={"X-Spiffe-Id": "spiffe://evil"})
    assert "x-spiffe-id" not in sent_headers(r)


def test_a_resumed_session_keeps_its_certificate(optional, pki):
    a = pki.issue("a", "/CN=billing")
    tok = optional.bound(a[0])

    ctx = tls12_context(optional, a)

    def ask(session=None):
        return tls12_get(optional, ctx, "/api/x", session, f"Authorization: Bearer {tok}\r\n")

    session, reused, status = ask()
    assert not reused and status == b"HTTP/1.1 200 OK"
    # Either worker: the listener's one context holds the session cache.
    for _ in range(4):
        _, reused, status = ask(session)
        assert reused and status == b"HTTP/1.1 200 OK"


def test_http2_clients_are_held_to_the_same_binding(optional, pki):
    a = pki.issue("a", "/CN=billing")
    b = pki.issue("b", "/CN=mallory")
    tok = optional.bound(a[0])

    def curl(cert):
        out = subprocess.run(["curl", "-s", "--http2", "--cacert", optional.server_crt, "--cert", cert[0], "--key",
                              cert[1], "-H", f"Authorization: Bearer {tok}", "-o", "/dev/null", "-w",
                              "%{http_version} %{http_code}", optional.url()], capture_output=True, text=True,
                             timeout=20)
        return out.stdout
    assert curl(a) == "2 200"
    assert curl(b) == "2 401"


@pytest.fixture
def required(upstream, idp, gateway_factory, tmp_path, pki):
    return start(upstream, idp, gateway_factory, tmp_path, pki, ", client_certificate: required")


def test_a_required_certificate_refuses_clients_without_one(required, pki):
    with pytest.raises(requests.exceptions.SSLError):
        required.get(tok=required.unbound())
    a = pki.issue("a", "/CN=billing")
    assert required.get(tok=required.bound(a[0]), cert=a).status_code == 200
    # The plain listener beside it is not the TLS listener's business.
    assert required.get(tok=required.unbound(), plain=True).status_code == 200


def test_revoked_certificates_fail_and_a_new_crl_is_picked_up(upstream, idp, gateway_factory, tmp_path, pki):
    a = pki.issue("a", "/CN=billing")
    b = pki.issue("b", "/CN=payroll")
    pki.revoke(a[0])
    crl = pki.crl()
    m = start(upstream, idp, gateway_factory, tmp_path, pki, f", client_crl_file: {crl}")
    with pytest.raises(requests.exceptions.SSLError):
        m.get(tok=m.bound(a[0]), cert=a)
    assert m.get(tok=m.bound(b[0]), cert=b).status_code == 200
    ctx = tls12_context(m, b)

    def handshake(session=None):
        return tls12_get(m, ctx, "/hello", session)[:2]
    session, _ = handshake()
    assert handshake(session)[1], "resumes while b is good"
    # b is revoked and the CRL file replaced: within the watch interval (1s) new handshakes
    # refuse b.
    pki.revoke(b[0])
    pki.crl()

    def refused():
        try:
            m.get(tok=m.bound(b[0]), cert=b)
        except requests.exceptions.SSLError:
            return True
    wait_for(refused, 10, interval=0.2, what="the new CRL to be picked up")
    assert m.g.logged("TLS certificates loaded")
    # Nor can b resume the session it had: the reload emptied the session cache.
    with pytest.raises(ssl.SSLError):
        handshake(session)


def test_check_config_names_an_unreadable_client_ca(tmp_path, pki):
    from support.gateway import BIN
    crt, key = make_pair(str(tmp_path), "server", ["127.0.0.1"])
    path = tmp_path / "c.yaml"
    path.write_text(f"""
listen: {{ address: 127.0.0.1:1, tls: {{ cert_file: {crt}, key_file: {key}, client_ca_file: /nonexistent.pem }} }}
upstreams: {{ app: {{ url: http://127.0.0.1:9 }} }}
routes: [ {{ match: {{ path_prefix: / }}, upstream: app, auth: none }} ]
""")
    out = subprocess.run([BIN, "serve", "--config", str(path)], capture_output=True, text=True, timeout=20)
    assert out.returncode != 0
    assert "client_ca_file" in out.stdout + out.stderr
