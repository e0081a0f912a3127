"""Real TLS servers for the HTTPS-upstream tests: throwaway CAs and leaf certificates made
with `cryptography`, and an HTTP/1.1 keep-alive server over Python's ssl that records the
SNI and session resumption of every TLS connection it accepts."""
import datetime
import hashlib
import http.server
import ipaddress
import os
import ssl
import threading

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from .tls_pki import write_pair

NOW = datetime.datetime.now(datetime.timezone.utc)


class CA:
    """A throwaway certificate authority; `issue` writes a leaf certificate and its key."""

    def __init__(self, directory, name):
        self.dir = directory
        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self.cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(NOW - datetime.timedelta(days=1))
                     .not_valid_after(NOW + datetime.timedelta(days=30))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                  content_commitment=False, key_encipherment=False,
                                                  data_encipherment=False, key_agreement=False,
                                                  encipher_only=False, decipher_only=False), critical=True)
                     .sign(self.key, hashes.SHA256()))
        self.path = os.path.join(directory, f"{name}.pem")
        with open(self.path, "wb") as f:
            f.write(self.cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, label, dns=(), ips=(), expired=False, client=False):
        key = ec.generate_private_key(ec.SECP256R1())
        sans = [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
        before, after = (NOW - datetime.timedelta(days=10), NOW - datetime.timedelta(days=1)) if expired else \
            (NOW - datetime.timedelta(days=1), NOW + datetime.timedelta(days=10))
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, label)]))
                   .issuer_name(self.cert.subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(before).not_valid_after(after)
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH if client
                                                         else ExtendedKeyUsageOID.SERVER_AUTH]), critical=False))
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return write_pair(self.dir, label, builder.sign(self.key, hashes.SHA256()), key)


class TLSUpstream:
    """An HTTP/1.1 keep-alive server over TLS on 127.0.0.1. Records, per TLS connection,
    the SNI it was sent and whether the session was resumed; /big?n= streams n bytes,
    POST /sha256 hashes the body it reads."""

    def __init__(self, cert, key, client_ca=None, max_version=None):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        if max_version:
            # An old server: OpenSSL 3 only offers TLS 1.1 at security level 0.
            ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
            ctx.minimum_version = ssl.TLSVersion.TLSv1
            ctx.maximum_version = max_version
        if client_ca:
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(client_ca)
        self.handshakes = []  # (sni, session_reused)
        self.failed_handshakes = 0
        self.lock = threading.Lock()
        outer = self
        snis = {}

        def on_sni(sock, name, _ctx):
            snis[id(sock)] = name

        ctx.sni_callback = on_sni

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                try:
                    self.request.do_handshake()
                except (ssl.SSLError, OSError):
                    with outer.lock:
                        outer.failed_handshakes += 1
                    raise
                with outer.lock:
                    outer.handshakes.append((snis.get(id(self.request)), self.request.session_reused))
                super().setup()

            def log_message(self, *a):
                pass

            def _reply(self, body, extra=()):
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                for k, v in extra:
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path.startswith("/big"):
                    n = int(self.path.split("n=")[1])
                    self.send_response(200)
                    self.send_header("Content-Length", str(n))
                    self.end_headers()
                    chunk = bytes(range(256)) * 256
                    sent = 0
                    while sent < n:
                        piece = chunk[: min(len(chunk), n - sent)]
                        self.wfile.write(piece)
                        sent += len(piece)
                    return
                if self.path.startswith("/stray"):
                    # A response, then bytes no request asked for, in one TLS record.
                    self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray"
                                     b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nSMUGGLED")
                    return
                extra = [("Connection", "close")] if self.path.startswith("/close") else []
                self._reply(f"ok {self.path} host={self.headers.get('Host')}".encode(), extra)
                if extra:
                    self.close_connection = True

            def do_POST(self):
                n = int(self.headers["Content-Length"])
                h = hashlib.sha256()
                while n > 0:
                    b = self.rfile.read(min(n, 65536))
                    if not b:
                        break
                    h.update(b)
                    n -= len(b)
                self._reply(h.hexdigest().encode())

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def get_request(self):
                sock, addr = self.socket.accept()
                # The handshake runs in the handler's thread, not the accept loop.
                return ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

            def handle_error(self, request, client_address):
                pass

        self.srv = Server(("127.0.0.1", 0), Handler)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()
