#!/usr/bin/env bash
# JOSE micro-benchmark: tokengate's full JWT verify (JWTVerifier: parse + key
# selection from a 3-key JWK Set + signature + claims) against OpenSSL's raw EVP_DigestVerify
# on the same key and message, for RS256, PS256, ES256 and EdDSA, and the DPoP proof check
# (DPoP, DPoP-cached) against one raw ES256 verify. Not a timed test: run it
# on a quiet machine (check `top`); the ratio is what matters, absolute rates vary by CPU.
#
#   bench/jose/run.sh                    # release build, 3 runs of 3 s per algorithm
#   RUNS=1 BENCH_SECONDS=1 bench/jose/run.sh
#   OPENSSL_SPEED=0 bench/jose/run.sh    # skip the `openssl speed` reference
set -euo pipefail
cd "$(dirname "$0")/../.."

SCRATCH=${SCRATCH:-.build-jose-bench}
RUNS=${RUNS:-3}
BENCH_SECONDS=${BENCH_SECONDS:-3}

swift build -c release --scratch-path "$SCRATCH" --product tokengate-jose-bench
BIN="$SCRATCH/release/tokengate-jose-bench"

for i in $(seq "$RUNS"); do
    echo "== run $i of $RUNS ($BENCH_SECONDS s per algorithm, full and raw interleaved)"
    "$BIN" --seconds "$BENCH_SECONDS"
done

# A second reference: `openssl speed` verifies a pre-hashed digest with a reused context, so it
# is faster than any per-token verify (which must hash the message and set up a context).
if [ "${OPENSSL_SPEED:-1}" = 1 ] && command -v openssl >/dev/null; then
    echo "== openssl speed -seconds 3 (reference only; verify/s of a pre-hashed digest)"
    openssl speed -seconds 3 rsa2048 ecdsap256 ed25519 2>/dev/null | awk '
        /^rsa 2048 bits/          { print "RS256/PS256 (rsa2048)  " $NF }
        /ecdsa \(nistp256\)/      { print "ES256 (ecdsap256)      " $NF }
        /EdDSA \(Ed25519\)/       { print "EdDSA (ed25519)        " $NF }'
fi
