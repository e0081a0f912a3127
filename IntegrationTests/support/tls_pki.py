"""Certificates for the TLS listener tests, made with PyPI `cryptography`: self-signed leaves
with chosen names, key types and validity (a certificate not valid yet cannot be made with
Debian's `openssl req`)."""
import datetime
import os
import ssl
import socket
import hashlib

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID


def make_pair(directory, stem, names, kind="ec", days=30, starts_in_days=0, rsa_bits=2048):
    """Writes `stem.crt` and `stem.key` in `directory`; returns their paths."""
    key = ec.generate_private_key(ec.SECP256R1()) if kind == "ec" else rsa.generate_private_key(65537, rsa_bits)
    now = datetime.datetime.now(datetime.timezone.utc)
    start = now + datetime.timedelta(days=starts_in_days) - datetime.timedelta(minutes=5)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    sans = [x509.IPAddress(__import__("ipaddress").ip_address(n)) if n[0].isdigit() else x509.DNSName(n) for n in names]
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start)
            .not_valid_after(start + datetime.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .sign(key, hashes.SHA256()))
    return write_pair(directory, stem, cert, key)


def write_pair(directory, stem, cert, key):
    """Writes `stem.crt` (PEM) and `stem.key` (PKCS#8 PEM, no passphrase); returns their paths."""
    crt, k = os.path.join(directory, stem + ".crt"), os.path.join(directory, stem + ".key")
    with open(crt, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(k, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return crt, k


def fingerprint(path):
    """The SHA-256 of a PEM certificate's DER, hex."""
    with open(path, "rb") as f:
        cert = x509.load_pem_x509_certificate(f.read())
    return cert.fingerprint(hashes.SHA256()).hex()


def served(port, server_name=None):
    """The SHA-256 of the certificate the listener serves for `server_name` (None: no SNI)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        with ctx.wrap_socket(s, server_hostname=server_name) as t:
            return hashlib.sha256(t.getpeercert(binary_form=True)).hexdigest()
