#!/usr/bin/env bash
# ext_authz benchmark: the cost of one decision in Envoy's two forms, on the same tokengate,
# the same bearer route and token (ES256, memoized per connection), the same h2c transport:
#   grpc   Check calls (envoy.service.auth.v3.Authorization/Check), a CheckRequest as Envoy
#          sends it (bench/ext_authz/check_request.py)
#   http   the HTTP form, GET /_tokengate/ext_authz/api/orders/1 with the same headers
# h2load (Debian's nghttp2-client), H2_CONNS connections × H2_STREAMS streams, one thread,
# alternating rounds. Reports decisions/s, the gRPC ÷ HTTP ratio and tokengate's CPU µs per
# decision (user + system of all its processes over a round, from /proc). Target: the gRPC
# form costs no more CPU per decision than the HTTP form. 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-8}
WARMUP=${WARMUP:-2}
WORKERS=${WORKERS:-$(nproc)}
PORT=${PORT:-18290}
H2_CONNS=${H2_CONNS:-16}
H2_STREAMS=${H2_STREAMS:-10}
OUT=${OUT:-/tmp/tokengate-bench-ext-authz.json}

log() { echo "== $*" >&2; }
die() { echo "bench/ext_authz: $*" >&2; exit 1; }
command -v h2load >/dev/null || die "needs h2load (apt-get install nghttp2-client)"
if [[ -z "${TOKENGATE_BIN:-}" ]]; then
  log "building tokengate (release, --static-swift-stdlib, as in the image)"
  scripts/build-release.sh >&2
  TOKENGATE_BIN="$PWD/.build-release/release/tokengate"
fi
WORK=$(mktemp -d /tmp/tokengate-bench-ext-authz.XXXXXX)
TG_PID=""
cleanup() { [[ -z $TG_PID ]] || { kill -TERM "$TG_PID" 2>/dev/null; wait "$TG_PID" 2>/dev/null; }; rm -rf "$WORK"; }
trap cleanup EXIT
cpu_ticks_tree() { local t=0 p; for p in $1 $(pgrep -P "$1"); do t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat"))); done; echo "$t"; }
CLK_TCK=$(getconf CLK_TCK)

"$TOKENGATE_BIN" keys generate --alg ES256 --kid bench-issuer --out "$WORK/issuer.jwk" >"$WORK/jwks.json"
TOKEN=$("$TOKENGATE_BIN" jwt sign --key "$WORK/issuer.jwk" --typ at+jwt --exp-in 86400 \
  --claims '{"iss":"https://bench.local","aud":"bench-api","sub":"bench-user","client_id":"bench","scope":"bench"}')
# The request's own fields, in both forms: what a client and Envoy put on a typical API call.
FIELDS=("authorization:Bearer $TOKEN" "user-agent:bench-client/1.0" "accept:application/json"
  "x-forwarded-proto:https" "x-request-id:0b0e8b1a-5b2e-4f7a-9d1c-2f1e6c1d2a3b" "x-envoy-expected-rq-timeout-ms:200")
python3 bench/ext_authz/check_request.py "$WORK/check.bin" "${FIELDS[@]}" "x-forwarded-for:203.0.113.7"
HTTP_ARGS=(); for f in "${FIELDS[@]}"; do HTTP_ARGS+=(-H "${f%%:*}: ${f#*:}"); done
HTTP_ARGS+=(-H "x-forwarded-for: 203.0.113.7")
sed -e "s|@PORT@|$PORT|; s|@ADMIN_PORT@|$((PORT + 1))|; s|@WORKERS@|$WORKERS|; s|@JWKS@|$WORK/jwks.json|" \
  bench/tokengate/ext-authz.yaml >"$WORK/tokengate.yaml"
"$TOKENGATE_BIN" serve --config "$WORK/tokengate.yaml" >"$WORK/tokengate.log" 2>&1 & TG_PID=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done

run() {   # form seconds out: one h2load run of the form, every answer a 200
  local form=$1 seconds=$2 out=$3
  if [[ $form == grpc ]]; then
    h2load -c "$H2_CONNS" -m "$H2_STREAMS" -t 1 -D "$seconds" -d "$WORK/check.bin" -H "content-type: application/grpc" \
      -H "te: trailers" "http://127.0.0.1:$PORT/envoy.service.auth.v3.Authorization/Check" >"$out" 2>&1
  else
    h2load -c "$H2_CONNS" -m "$H2_STREAMS" -t 1 -D "$seconds" -H ":authority: api.example" "${HTTP_ARGS[@]}" \
      "http://127.0.0.1:$PORT/_tokengate/ext_authz/api/orders/1" >"$out" 2>&1
  fi
  grep -q " 0 failed, 0 errored" "$out" && grep -q "status codes: [1-9][0-9]* 2xx, 0 3xx, 0 4xx, 0 5xx" "$out" \
    || { cat "$out" >&2; die "$form: failed or non-2xx answers"; }
}

# Each form answers as it should before it is timed: the gRPC form allows (grpc-status 0 and
# an OkHttpResponse that sets the identity header), the HTTP form allows with the header.
run grpc 1 "$WORK/check.txt"; run http 1 "$WORK/check.txt"
curl -s --http2-prior-knowledge -o /dev/null -w '%{http_code}' -H "host: api.example" \
  "http://127.0.0.1:$PORT/_tokengate/ext_authz/api/orders/1" | grep -q 401 || die "the HTTP form allowed no token"
log "load average $(cut -d' ' -f1 /proc/loadavg) (other work on the machine skews the figures)"
for form in grpc http; do run "$form" "$WARMUP" "$WORK/warm.txt"; done
: >"$WORK/runs.tsv"
for round in $(seq "$ROUNDS"); do
  order=(grpc http); (( round % 2 )) || order=(http grpc)
  for form in "${order[@]}"; do
    ticks=$(cpu_ticks_tree "$TG_PID")
    run "$form" "$DURATION" "$WORK/$form-$round.txt"
    printf '%s\t%s\t%s\t%s\n' "$form" "$round" "$(( $(cpu_ticks_tree "$TG_PID") - ticks ))" "$WORK/$form-$round.txt" >>"$WORK/runs.tsv"
    log "round $round: $form $(grep -o '[0-9.]* req/s' "$WORK/$form-$round.txt" | head -1)"
  done
done

python3 - "$WORK/runs.tsv" "$CLK_TCK" "$OUT" <<'PY'
import json, re, statistics, sys
runs, tck, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = {}
for line in open(runs):
    form, rnd, ticks, path = line.rstrip("\n").split("\t")
    text = open(path).read()
    done = int(re.search(r"requests: \d+ total, \d+ started, (\d+) done", text).group(1))
    r = rows.setdefault(form, {"rps": [], "cpu_us": []})
    r["rps"].append(float(re.search(r"([0-9.]+) req/s", text).group(1)))
    r["cpu_us"].append(int(ticks) / tck * 1e6 / max(done, 1))
med = {f: {k: statistics.median(v) for k, v in r.items()} for f, r in rows.items()}
ratio = med["grpc"]["rps"] / med["http"]["rps"]
cpu_ratio = med["grpc"]["cpu_us"] / med["http"]["cpu_us"]
print(f"{'form':6} {'decisions/s':>12} {'CPU µs/decision':>16}")
for f in ("grpc", "http"):
    print(f"{f:6} {med[f]['rps']:12.0f} {med[f]['cpu_us']:16.1f}")
print(f"gRPC ÷ HTTP: {ratio:.2f}× the decisions/s, {cpu_ratio:.2f}× the CPU per decision "
      f"(target ≤ 1.00: {'ok' if cpu_ratio <= 1.0 else 'MISSED'})")
json.dump({"median": med, "rounds": rows, "ratio": ratio, "cpu_ratio": cpu_ratio}, open(out, "w"), indent=1)
PY
