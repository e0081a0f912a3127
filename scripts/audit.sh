#!/usr/bin/env bash
# The standing audit: the outside tools that each found something in tokengate on their first
# run, run beside Debian's nginx (the peer), both in front of the same upstream with the same
# certificates and timeouts, on 127.0.0.1 only, on ports chosen free at start.
#
#   testssl.sh       TLS set-up, once per key type (ECDSA P-256, RSA 2048)
#   slowhttptest     slowloris, slow body, slow read, range, each with a prober beside it
#   h2load           h2 over TLS: failures, throughput and latency
#   conformance      IntegrationTests/h2/test_http2_conformance.py, on TLS and on h2c
#   REDbot           the gateway's own answers: 401 with its challenge, 403, 429, the
#                    protected-resource metadata, /status, /metrics, the login pages
#   fuzz replay      every fuzz corpus through its unit-test replay (tokengate only)
#
# It prints one table: each tool's findings for tokengate beside nginx's, and a verdict per row,
# "regression" when tokengate has a finding nginx lacks; it exits 1 on a regression (2 when a
# tool could not run). The full run also writes docs/audit.md.
#
#   scripts/audit.sh [--quick]     TOKENGATE_BIN=path (default: a release build, else debug)
#                                  AUDIT_SWIFT_TEST_ARGS="..." (the fuzz replay's swift test
#                                  options, e.g. --sanitize=thread --scratch-path .build-tsan)
#                                  KEEP_WORK=1 keeps the raw reports
# --quick: short attacks, fewer testssl checks, ≤ 5 minutes on 2 cores (run by scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
QUICK=0
for a in "$@"; do
  case $a in
    --quick) QUICK=1 ;;
    *) echo "usage: scripts/audit.sh [--quick]" >&2; exit 2 ;;
  esac
done
log() { echo "== audit: $* (at ${SECONDS}s)" >&2; }
die() { echo "audit: $*" >&2; exit 2; }
for tool in testssl slowhttptest h2load openssl curl; do
  command -v "$tool" >/dev/null || die "needs $tool (scripts/setup.sh --test installs it)"
done
python3 -c "import redbot" 2>/dev/null || die "needs REDbot (scripts/setup.sh --test installs it: scripts/audit/requirements.txt)"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[[ -x $NGINX ]] || die "needs nginx (scripts/setup.sh --test installs it)"
if [[ -z ${TOKENGATE_BIN:-} ]]; then
  for b in .build/release/tokengate .build-release/release/tokengate .build/debug/tokengate; do
    [[ -x $b ]] && { TOKENGATE_BIN=$ROOT/$b; break; }
  done
fi
[[ -x ${TOKENGATE_BIN:-} ]] || die "no tokengate binary: swift build, or set TOKENGATE_BIN"
export TOKENGATE_BIN

WORK=$(mktemp -d /tmp/tokengate-audit.XXXXXX)
RESULTS=$WORK/results
mkdir -p "$RESULTS" "$WORK/www"
TG_PID=""
cleanup() {
  [[ -n $TG_PID ]] && kill -TERM "$TG_PID" 2>/dev/null && wait "$TG_PID" 2>/dev/null || true
  local f
  for f in "$WORK/nginx.pid" "$WORK/upstream.pid"; do [[ -f $f ]] && kill -TERM "$(cat "$f")" 2>/dev/null || true; done
  if [[ -n ${KEEP_WORK:-} ]]; then echo "audit: raw reports kept in $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
ulimit -n 65536 2>/dev/null || true

# --- material: certificates, keys, tokens, the upstream's files ----------------------------
# Ports: tokengate's five (HTTP/1.1, TLS ECDSA, TLS RSA, h2c, admin), nginx's five, the upstream.
mapfile -t P < <(python3 scripts/audit/ports.py 11)
declare -A PORT=([tokengate.http]=${P[0]} [tokengate.tls_ec]=${P[1]} [tokengate.tls_rsa]=${P[2]}
  [tokengate.h2c]=${P[3]} [tokengate.admin]=${P[4]} [nginx.http]=${P[5]} [nginx.tls_ec]=${P[6]}
  [nginx.tls_rsa]=${P[7]} [nginx.h2c]=${P[8]} [nginx.admin]=${P[9]})
UPSTREAM=${P[10]}
SIDES=(tokengate nginx)
# Both servers get these pairs (SAN: localhost and 127.0.0.1); ca.pem trusts both.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$WORK/ec.key" -out "$WORK/ec.crt" \
  -days 2 -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/rsa.key" -out "$WORK/rsa.crt" \
  -days 2 -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2>/dev/null
cat "$WORK/ec.crt" "$WORK/rsa.crt" >"$WORK/ca.pem"
"$TOKENGATE_BIN" keys generate --alg ES256 --kid audit --out "$WORK/issuer.jwk" >"$WORK/jwks.json"
cp "$WORK/jwks.json" "$WORK/www/jwks.json"
# A token the bearer route verifies, without the scope it requires: 403 insufficient_scope.
# Its audience is the route's resource (RFC 8707), which a token must name on that route.
NO_SCOPE_TOKEN=$("$TOKENGATE_BIN" jwt sign --key "$WORK/issuer.jwk" --typ at+jwt --exp-in 3600 --claims \
  "{\"iss\":\"https://audit.local\",\"aud\":\"http://127.0.0.1:${PORT[tokengate.http]}/api/\",\"sub\":\"audit\",\"client_id\":\"audit\",\"scope\":\"other\"}")
printf 'hello from the audit upstream: a small fixed page, the same for every request, of 100 bytes.\n' \
  >"$WORK/www/index.html"
head -c 262144 /dev/zero | tr '\0' 'x' >"$WORK/www/big.bin"

# As root, nginx's workers would run as nobody, who cannot read this directory.
USER_LINE=""; [[ $(id -u) -ne 0 ]] || USER_LINE="user root;"
render() {  # SIDE TEMPLATE DEST: the template with SIDE's ports
  local side=$1
  sed -e "s|@DIR@|$WORK|g" -e "s|@USER_LINE@|$USER_LINE|g" -e "s|@UPSTREAM@|$UPSTREAM|g" \
    -e "s|@HTTP@|${PORT[$side.http]}|g" -e "s|@TLS_EC@|${PORT[$side.tls_ec]}|g" \
    -e "s|@TLS_RSA@|${PORT[$side.tls_rsa]}|g" -e "s|@H2C@|${PORT[$side.h2c]}|g" \
    -e "s|@ADMIN@|${PORT[$side.admin]}|g" "$2" >"$3"
}
wait_port() { local i; for i in $(seq 150); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; die "nothing on port $1"; }

# --- the upstream, the peer, tokengate -----------------------------------------------------
render nginx scripts/audit/upstream.conf.in "$WORK/upstream.conf"
"$NGINX" -c "$WORK/upstream.conf" -e "$WORK/upstream.err"
wait_port "$UPSTREAM"
render nginx scripts/audit/nginx.conf.in "$WORK/nginx.conf"
render nginx scripts/audit/nginx-locations.conf.in "$WORK/nginx-locations.conf"
"$NGINX" -c "$WORK/nginx.conf" -e "$WORK/nginx.err"
render tokengate scripts/audit/tokengate.yaml.in "$WORK/tokengate.yaml"
"$TOKENGATE_BIN" serve --config "$WORK/tokengate.yaml" >"$WORK/tokengate.log" 2>&1 &
TG_PID=$!
for side in "${SIDES[@]}"; do for l in http tls_ec tls_rsa h2c admin; do wait_port "${PORT[$side.$l]}"; done; done
curl -sf -o /dev/null "http://127.0.0.1:${PORT[tokengate.admin]}/readyz" || { cat "$WORK/tokengate.log" >&2; die "tokengate is not ready"; }
log "tokengate ($TOKENGATE_BIN) on ${PORT[tokengate.http]}, nginx $("$NGINX" -v 2>&1 | cut -d/ -f2) on ${PORT[nginx.http]}, upstream on $UPSTREAM"
FAILED=()  # the tools that could not run

# --- the first phase, in parallel: none of these is timed ----------------------------------
# The fuzz replay (tokengate only), testssl.sh per key type and the HTTP/2 conformance suite
# per listener, at both sides; each bounded in time.
JOBS=()
LIMIT=270s; (( QUICK )) || LIMIT=900s  # each job's bound
read -r -a swift_args <<<"${AUDIT_SWIFT_TEST_ARGS:-}"
if [[ ! -e "$(swift build --show-bin-path "${swift_args[@]}")/tokengatePackageTests.xctest" ]]; then
  log "building the unit tests first (swift build --build-tests ${swift_args[*]})"
  swift build --build-tests "${swift_args[@]}" >"$WORK/build-tests.log" 2>&1 \
    || { tail -n 40 "$WORK/build-tests.log" >&2; die "the unit tests did not build"; }
fi
log "fuzz corpus replay (swift test --filter FuzzCorpusReplay ${swift_args[*]})"
( rc=0; timeout --kill-after=10s $LIMIT swift test --skip-build "${swift_args[@]}" --filter FuzzCorpusReplay \
    >"$WORK/fuzz.log" 2>&1 || rc=$?; echo "$rc" >"$WORK/fuzz.rc" ) &
JOBS+=($!)
# Quick: protocols, the server's cipher preferences, forward secrecy and the vulnerabilities.
# Full: also the standard cipher lists, the server defaults and each cipher per protocol.
if (( QUICK )); then testssl_checks=(-p -P -f -U); else testssl_checks=(-p -P -f -U -s -S -E); fi
log "testssl.sh (${testssl_checks[*]}) on the ECDSA and RSA listeners of both"
for kind in ec rsa; do
  for side in "${SIDES[@]}"; do
    timeout --kill-after=10s $LIMIT testssl --quiet --color 0 --warnings off --sneaky --add-ca "$WORK/ca.pem" \
      "${testssl_checks[@]}" --jsonfile "$WORK/testssl-$kind-$side.json" "https://localhost:${PORT[$side.tls_$kind]}" \
      >"$WORK/testssl-$kind-$side.txt" 2>&1 &
    JOBS+=($!)
  done
done
# The suite's reads wait 3 s at most (H2_RAW_TIMEOUT): an answer on 127.0.0.1 takes
# milliseconds, and every test nginx fails waits one read out.
log "HTTP/2 conformance suite (pytest) on TLS and h2c of both"
for side in "${SIDES[@]}"; do
  for listener in tls h2c; do
    H2_RAW_TIMEOUT=3 H2_CONFORMANCE_PEER="${PORT[$side.tls_ec]},${PORT[$side.h2c]},$WORK/ca.pem" \
      timeout --kill-after=10s $LIMIT python3 -m pytest -q -p no:cacheprovider --timeout=60 -k "$listener" \
      --junitxml="$WORK/conformance-$side-$listener.xml" IntegrationTests/h2/test_http2_conformance.py \
      >"$WORK/conformance-$side-$listener.txt" 2>&1 &
    JOBS+=($!)
  done
done
for pid in "${JOBS[@]}"; do wait "$pid" || true; done
for kind in ec rsa; do
  python3 scripts/audit/parse.py testssl "testssl.sh, $kind certificate" "$WORK/testssl-$kind-tokengate.json" \
    "$WORK/testssl-$kind-nginx.json" >"$RESULTS/1-testssl-$kind.json" || FAILED+=("testssl $kind")
done
python3 scripts/audit/parse.py conformance "$WORK" "$RESULTS" || FAILED+=("conformance")
python3 scripts/audit/parse.py fuzz "$WORK/fuzz.log" "$(cat "$WORK/fuzz.rc")" >"$RESULTS/9-fuzz.json" \
  || FAILED+=("fuzz replay")

# --- REDbot on the gateway's own answers ----------------------------------------------------
log "REDbot on 401, 403, 429, metadata, status, metrics, login pages of both"
for side in "${SIDES[@]}"; do
  # The rate limit allows one request a minute (per worker, without a shared store): these
  # spend it on every worker, so REDbot's requests get 429.
  for _ in 1 2 3 4 5 6 7 8; do curl -s -o /dev/null "http://127.0.0.1:${PORT[$side.http]}/limited/"; done
  timeout --kill-after=10s 120s python3 scripts/audit/redbot_check.py "http://127.0.0.1:${PORT[$side.http]}" \
    "http://127.0.0.1:${PORT[$side.admin]}" "$NO_SCOPE_TOKEN" >"$WORK/redbot-$side.json" 2>"$WORK/redbot-$side.err" \
    || FAILED+=("redbot $side")
done
python3 scripts/audit/parse.py redbot "$WORK/redbot-tokengate.json" "$WORK/redbot-nginx.json" "$RESULTS" \
  || FAILED+=("redbot")


# --- slowhttptest, with a prober ------------------------------------------------------------
if (( QUICK )); then CONNS=500 RATE=250 LENGTH=8; else CONNS=3000 RATE=300 LENGTH=30; fi
log "slowhttptest: slowloris, slow body, slow read, range ($CONNS connections, ${LENGTH}s each)"
n=0
for attack in slowloris slow-body slow-read range; do
  n=$((n + 1))
  for side in "${SIDES[@]}"; do
    base="http://127.0.0.1:${PORT[$side.http]}"
    case $attack in
      slowloris) flags=(-H -i 10 -s 8192 -u "$base/") ;;
      slow-body) flags=(-B -i 10 -s 8192 -x 10 -t POST -u "$base/") ;;
      slow-read) flags=(-X -w 512 -y 1024 -n 5 -z 32 -k 3 -u "$base/big.bin") ;;
      range) flags=(-R -a 10 -b 3000 -u "$base/big.bin") ;;
    esac
    timeout --kill-after=10s $((LENGTH + 30)) slowhttptest -c "$CONNS" -r "$RATE" -l "$LENGTH" -p 3 "${flags[@]}" \
      >"$WORK/slow-$attack-$side.txt" 2>&1 &
    attacker=$!
    sleep 2
    python3 bench/slow/probe.py "$base/" $((LENGTH - 4)) >"$WORK/probe-$attack-$side.json"
    wait "$attacker" || true
    sleep 2
  done
  python3 scripts/audit/parse.py slow "slowhttptest, ${attack/-/ }" "$WORK" "$attack" >"$RESULTS/3-slow-$n.json" \
    || FAILED+=("slowhttptest $attack")
done

# --- h2load ---------------------------------------------------------------------------------
if (( QUICK )); then H2_SECONDS=5; else H2_SECONDS=15; fi
log "h2load: h2 over TLS, 16 connections x 10 streams, ${H2_SECONDS}s each"
for side in "${SIDES[@]}"; do
  timeout --kill-after=10s $((H2_SECONDS + 30)) h2load -c 16 -m 10 -t 1 -D "$H2_SECONDS" \
    --log-file="$WORK/h2load-$side.log" "https://127.0.0.1:${PORT[$side.tls_ec]}/" >"$WORK/h2load-$side.txt" 2>&1 || true
done
python3 scripts/audit/parse.py h2load "$WORK" >"$RESULTS/4-h2load.json" || FAILED+=("h2load")

# --- the table ------------------------------------------------------------------------------
mode=full; (( QUICK )) && mode=quick
write=(); (( QUICK )) || write=(--write docs/audit.md)
status=0
python3 scripts/audit/table.py "$RESULTS" --mode "$mode" --binary "$TOKENGATE_BIN" \
  --nginx "$("$NGINX" -v 2>&1 | cut -d/ -f2)" "${write[@]}" || status=$?
if (( ${#FAILED[@]} )); then
  echo "audit: could not read: ${FAILED[*]} (raw output: KEEP_WORK=1 keeps $WORK)" >&2
  (( status )) || status=2
fi
log "done"
exit "$status"
