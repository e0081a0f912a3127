from joserfc import jwt
from joserfc.jwk import KeySet


def verify_assertion(assertion, jwks, issuer, audience, idps=None):
    """The caller's claims from a tokengate identity assertion, or an exception. jwks: the
    gateway's /.well-known/jwks.json (cache it; fetch again on an unknown kid). idps: the
    IdP issuer URLs whose users this upstream serves; on a route with several IdPs, a sub or
    group is only unique per IdP, so key users by (idp, sub)."""
    token = jwt.decode(assertion, KeySet.import_key_set(jwks), algorithms=["ES256"])
    if token.header.get("typ") != "tokengate-assertion+jwt":
        raise ValueError("not a tokengate identity assertion")
    jwt.JWTClaimsRegistry(leeway=30, iss={"essential": True, "value": issuer}, aud={"essential": True, "value": audience},
                          exp={"essential": True}, sub={"essential": True}, idp={"essential": True}).validate(token.claims)
    if idps is not None and token.claims["idp"] not in idps:
        raise ValueError("the assertion's user comes from another IdP: " + token.claims["idp"])
    return token.claims
