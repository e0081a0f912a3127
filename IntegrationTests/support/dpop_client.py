"""A DPoP (RFC 9449) client for the end-to-end tests, written with a third-party JOSE library
(joserfc) so that the gateway and the test AS are checked against proofs they did not make
themselves. No hand-written crypto: key generation, thumbprints and signatures are joserfc's.

    key = DPoPKey("ES256")                 # ES256 (P-256), ES384 (P-384), PS256, RS256, EdDSA (Ed25519)
    key.alg, key.public_jwk, key.jkt       # jkt: RFC 7638 SHA-256 thumbprint, base64url
    proof = key.proof("GET", "http://127.0.0.1:8080/orders", access_token=tok, nonce=None)
    requests.get(url, headers={"Authorization": f"DPoP {tok}", "DPoP": proof})

A proof is a compact JWS: header {"typ": "dpop+jwt", "alg": key.alg, "jwk": key.public_jwk};
claims {"jti", "htm", "htu", "iat"} (+ "ath" with an access token, + "nonce" when given).

Attacker-side tests break exactly one rule with header_overrides / claim_overrides (a value of
None removes the member, like drop_header / drop_claims): e.g. typ missing, a jwk that holds
the private "d", another key's jwk, htu with another host, alg "none". The proof is still
signed with this key's own algorithm whatever the header claims; use hs256_proof() for a
symmetric "proof".
"""
import base64
import hashlib
import json
import secrets
import time
import warnings

from joserfc import jws
from joserfc.errors import SecurityWarning
from joserfc.jwk import ECKey, OctKey, OKPKey, RSAKey

# alg -> (key class, generate_key argument)
_KEYS = {
    "ES256": (ECKey, "P-256"),
    "ES384": (ECKey, "P-384"),
    "ES512": (ECKey, "P-521"),
    "PS256": (RSAKey, 2048),
    "RS256": (RSAKey, 2048),
    "EdDSA": (OKPKey, "Ed25519"),
}

# Members of a private JWK that are not in its public form (RFC 7518 §6, RFC 8037 §2).
PRIVATE_MEMBERS = ("d", "p", "q", "dp", "dq", "qi", "oth", "k")

DPOP_TYP = "dpop+jwt"


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def ath(access_token):
    """RFC 9449 §4.2: base64url(SHA-256(ASCII(access_token))), no padding."""
    return b64url(hashlib.sha256(access_token.encode("ascii")).digest())


def new_jti():
    """A random proof identifier: 16 random bytes, base64url (22 characters)."""
    return b64url(secrets.token_bytes(16))


def decode(proof):
    """(header, claims) of a compact JWS, without verifying it (for test assertions)."""
    def part(s):
        return json.loads(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))
    h, p, _ = proof.split(".")
    return part(h), part(p)


def _apply(base, overrides, drops):
    out = dict(base)
    for k, v in (overrides or {}).items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    for k in drops or ():
        out.pop(k, None)
    return out


def _claims(method, url, access_token, nonce, iat, jti):
    claims = {"jti": jti or new_jti(), "htm": method, "htu": url, "iat": int(time.time()) if iat is None else iat}
    if access_token is not None:
        claims["ath"] = ath(access_token)
    if nonce is not None:
        claims["nonce"] = nonce
    return claims


def _sign(header, claims, key, alg):
    """Compact JWS of claims under header, signed by key with algorithm alg (joserfc)."""
    with warnings.catch_warnings():
        # joserfc 1.6 flags "EdDSA" as deprecated by RFC 9864 (fully-specified "Ed25519");
        # DPoP deployments (and RFC 9449's own examples) still use EdDSA, so it stays.
        warnings.filterwarnings("ignore", message=".*deprecated via RFC 9864", category=SecurityWarning)
        return _sign_jws(header, claims, key, alg)


def _sign_jws(header, claims, key, alg):
    payload = json.dumps(claims, separators=(",", ":"))
    if header.get("alg") == alg:
        try:
            # The ordinary path: joserfc checks the header and that key fits alg.
            return jws.serialize_compact(header, payload, key, algorithms=[alg])
        except Exception:  # noqa: BLE001 — a header joserfc will not emit: sign it below
            pass
    # A header that lies (alg of another kind, a jwk with private members, a typ of the wrong
    # type, ...): joserfc's compact signer over exactly this header, with the key's real alg.
    registry = jws.JWSRegistry(algorithms=[alg])
    model = registry.get_alg(alg)
    model.check_key(key)
    return jws.sign_compact(jws.CompactSignature(header, payload.encode()), model, key).decode("ascii")


class DPoPKey:
    """A fresh DPoP key pair (joserfc) and the proofs it signs."""

    def __init__(self, alg="ES256"):
        if alg not in _KEYS:
            raise ValueError(f"unsupported DPoP alg {alg} (one of {', '.join(_KEYS)})")
        cls, arg = _KEYS[alg]
        self.alg = alg
        self.key = cls.generate_key(arg)
        self.public_jwk = {k: v for k, v in self.key.as_dict(private=False).items() if k not in PRIVATE_MEMBERS}
        self.jkt = self.key.thumbprint()  # RFC 7638, SHA-256, base64url

    @property
    def private_jwk(self):
        """The full JWK including private members (to put in a header, for attacker tests)."""
        return self.key.as_dict(private=True)

    def proof(self, method, url, access_token=None, nonce=None, iat=None, jti=None,
              header_overrides=None, claim_overrides=None, drop_claims=(), drop_header=()):
        """A DPoP proof JWT for an HTTP request: method (htm) and url (htu, no query or
        fragment). access_token adds ath; nonce adds nonce; iat (default now) and jti (default
        random) can be fixed. Overrides/drops change the header or claims after they are
        built (an override value of None removes the member)."""
        header = _apply({"typ": DPOP_TYP, "alg": self.alg, "jwk": self.public_jwk}, header_overrides, drop_header)
        claims = _apply(_claims(method, url, access_token, nonce, iat, jti), claim_overrides, drop_claims)
        return _sign(header, claims, self.key, self.alg)

    def __repr__(self):
        return f"DPoPKey({self.alg!r}, jkt={self.jkt!r})"


def hs256_proof(secret, method, url, access_token=None, nonce=None, iat=None, jti=None,
                include_jwk=True, header_overrides=None, claim_overrides=None, drop_claims=(), drop_header=()):
    """A "proof" MACed with HS256 under a shared secret (str or bytes) — never valid in DPoP
    (RFC 9449 §4.2: asymmetric algorithms only). With include_jwk the header carries the
    secret itself as a symmetric jwk {"kty": "oct", "k": ...}, so that a verifier that just
    trusts the embedded key would accept it."""
    secret = secret.encode() if isinstance(secret, str) else secret
    key = OctKey.import_key(secret)
    header = {"typ": DPOP_TYP, "alg": "HS256"}
    if include_jwk:
        header["jwk"] = {"kty": "oct", "k": b64url(secret)}
    header = _apply(header, header_overrides, drop_header)
    claims = _apply(_claims(method, url, access_token, nonce, iat, jti), claim_overrides, drop_claims)
    return _sign(header, claims, key, "HS256")
