#!/usr/bin/env python3
"""Seeds for SETFuzz (fuzz/corpus-set): a Security Event Token's claims in each shape a
transmitter sends (every event type the gateway acts on, each subject format, a stream event,
aliases of one type, and the refusals: `sub`, an unknown type), subject identifiers alone, and
whole SETs as they arrive (a wrong signature, `none`, HS256). The first byte picks the entry
(SETFuzzEntry.all: 0 arrived, 1 signed claims, 2 a subject). Usage: ./seed-set.py [DIR]"""
import base64
import json
import os
import sys

CAEP = "https://schemas.openid.net/secevent/caep/event-type/"
RISC = "https://schemas.openid.net/secevent/risc/event-type/"
SSF = "https://schemas.openid.net/secevent/ssf/event-type/"
BASE = {"iss": "https://tx.example", "aud": "https://gw.example", "iat": 1800000000, "jti": "j1",
        "sub_id": {"format": "iss_sub", "iss": "https://idp.example", "sub": "alice"}}


def claims(events, **changes):
    c = dict(BASE, events=events, **changes)
    return {k: v for k, v in c.items() if v is not None}


def b64(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=")


def main(out):
    os.makedirs(out, exist_ok=True)
    seeds = [
        (1, claims({CAEP + "session-revoked": {"event_timestamp": 1799999990}})),
        (1, claims({RISC + "account-disabled": {}}, sub_id={"format": "email", "email": "a@example.com"})),
        (1, claims({RISC + "account-enabled": {}}, sub_id={"format": "opaque", "id": "u-1"})),
        (1, claims({CAEP + "credential-change": {"subject": {"format": "email", "email": "b@example.com"}}},
                   sub_id=None)),
        (1, claims({CAEP + "token-claims-change": {}},
                   sub_id={"format": "complex", "user": {"format": "opaque", "id": "u"},
                           "session": {"format": "opaque", "id": "s"}})),
        (1, claims({SSF + "verification": {"state": "st"}}, sub_id=None)),
        (1, claims({SSF + "stream-updated": {"status": "paused"}}, sub_id={"format": "opaque", "id": "stream-1"})),
        (1, claims({CAEP + "session-revoked": {}, RISC + "sessions-revoked": {}})),
        (1, claims({CAEP + "session-revoked": {}}, sub="alice")),
        (1, claims({RISC + "credential-compromise": {}},
                   sub_id={"format": "aliases", "identifiers": [{"format": "opaque", "id": "u"},
                                                                {"format": "email", "email": "e@x"}]})),
        (1, claims({"https://example.com/unknown": {}})),
        (2, {"subject_type": "iss-sub", "iss": "https://accounts.google.com", "sub": "7"}),
        (2, {"user": {"format": "email", "email": "a@b.c"}, "session": {"format": "opaque", "id": "s"}}),
        (2, {"format": "account", "uri": "acct:a@b.c"}),
    ]
    files = [bytes([mode]) + json.dumps(obj, separators=(",", ":")).encode() for mode, obj in seeds]
    payload = b64(json.dumps(seeds[0][1]).encode())
    for header, signature in [(b'{"alg":"ES256","typ":"secevent+jwt","kid":"fuzz-1"}', b"\x01" * 64),
                              (b'{"alg":"none","typ":"secevent+jwt"}', b""),
                              (b'{"alg":"HS256","typ":"secevent+jwt"}', b"\x02" * 32)]:
        files.append(bytes([0]) + b64(header) + b"." + payload + b"." + b64(signature))
    for i, data in enumerate(files, 1):
        with open(os.path.join(out, f"seed-{i:02d}"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus-set"))
