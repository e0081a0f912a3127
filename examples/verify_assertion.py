from joserfc import jwt
from joserfc.jwk import KeySet


def verify_assertion(assertion, jwks, issuer, audience):
    """The caller's claims from a tokengate identity assertion, or an exception. jwks: the
    gateway's /.well-known/jwks.json (cache it; fetch again on an unknown kid)."""
    token = jwt.decode(assertion, KeySet.import_key_set(jwks), algorithms=["ES256"])
    if token.header.get("typ") != "tokengate-assertion+jwt":
        raise ValueError("not a tokengate identity assertion")
    jwt.JWTClaimsRegistry(leeway=30, iss={"essential": True, "value": issuer}, aud={"essential": True, "value": audience},
                          exp={"essential": True}, sub={"essential": True}).validate(token.claims)
    return token.claims
