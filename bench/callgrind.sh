#!/usr/bin/env bash
# Instructions per proxied request, counted by callgrind: repeatable whatever else the
# machine does, so two binaries compare to within about ±100 instructions in one sitting.
#
# usage: bench/callgrind.sh BIN [none|post-1k|post-16k|bearer|ratelimit|authorize|signature|signature-response|mcp-bearer|mcp-tools|mcp-bearer-2026|mcp-2026|api-key|api-key-10k|as-self] [REQUESTS]
#   BIN: a tokengate release binary (copied and stripped of its DWARF 5, which valgrind
#   3.19 cannot read). One worker, on bench/tokengate/KIND.yaml: none, or bearer (an ES256
#   token, the verified-token cache on), or bearer's route with a rate limit in the memory
#   store that the run never reaches, or with a PDP whose decision is kept (the bench
#   upstream answers it) — the scenarios ratelimit-memory and authorize-cached —, or none's
#   route verifying one Ed25519 request signature (signature-ed25519's), or none's route
#   signing every answer with Ed25519 (signature-response's), or the mcp-*
#   scenarios' tools/call POST (bench/lua/mcp.lua, mcp2026.lua) on bench/tokengate/mcp.yaml, or
#   none's route with the post-1k and post-16k scenarios' JSON POSTs (bench/lua/post.lua), or
#   the api-key scenarios' route (bench/tokengate/api-key.yaml), its set one key or 10,000
#   (bench/api_keys/make.py), or as-self's route taking the authorization server's tokens
#   (bench/tokengate/as-self.yaml), in front of the bench upstream (bench/nginx/
#   upstream.conf.in) on 127.0.0.1:PORT_BASE+1. 300 requests warm it up; the counters are
#   zeroed; REQUESTS (default 500) keep-alive requests over 4 connections (wrk -t1 -c4);
#   the counters are dumped. Prints the instructions per request over the worker's thread
#   and the files it kept (for callgrind_annotate).
# env:  PORT_BASE=19300  KEEP_WORK=1 (keep the temp dir)
#       CALLGRIND_ARGS (more valgrind options: --dump-instr=yes counts per instruction)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${1:?usage: bench/callgrind.sh BIN [none|bearer|ratelimit|authorize|signature|mcp-*|api-key*] [REQUESTS]}
KIND=${2:-none}
# The mcp-* kinds: mcp.yaml with its rules on or commented out, and the scenario's lua body.
CONFIG=$KIND MCP_OFF="" LUA=""
case $KIND in
  mcp-bearer) CONFIG=mcp MCP_OFF="#" LUA=mcp.lua ;;
  mcp-tools) CONFIG=mcp LUA=mcp.lua ;;
  mcp-bearer-2026) CONFIG=mcp MCP_OFF="#" LUA=mcp2026.lua ;;
  mcp-2026) CONFIG=mcp LUA=mcp2026.lua ;;
  api-key-10k) CONFIG=api-key ;;
  # none's route with the post-1k and post-16k scenarios' JSON POSTs (bench/lua/post.lua).
  post-1k) CONFIG=none LUA=post.lua; export POST_BYTES=1024 ;;
  post-16k) CONFIG=none LUA=post.lua; export POST_BYTES=16384 ;;
esac
REQUESTS=${3:-500}
PORT_BASE=${PORT_BASE:-19300}
PORT=$PORT_BASE UPSTREAM=$((PORT_BASE + 1)) ADMIN=$((PORT_BASE + 2))
for cmd in valgrind callgrind_control callgrind_annotate wrk nginx curl strip; do
  command -v "$cmd" >/dev/null || [[ -x /usr/sbin/$cmd ]] || { echo "callgrind.sh: needs $cmd" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/tg-callgrind.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [[ ${KEEP_WORK:-0} == 1 ]] || rm -rf "$WORK"
}
trap cleanup EXIT

render() {  # render TEMPLATE DEST KEY=VALUE...: @KEY@ → VALUE, as bench/run.sh does
  local src=$1 dst=$2; shift 2
  local script=() kv
  for kv in "$@"; do script+=(-e "s|@${kv%%=*}@|${kv#*=}|g"); done
  sed "${script[@]}" "$src" >"$dst"
}

mkdir -p "$WORK/upstream"
user_line=""; [[ $(id -u) -eq 0 ]] && user_line="user root;"
render bench/nginx/upstream.conf.in "$WORK/upstream/nginx.conf" USER_LINE="$user_line" DIR="$WORK/upstream" \
  PORT="$UPSTREAM"
nginx -c "$WORK/upstream/nginx.conf" -p "$WORK/upstream" &
pids+=($!)

cp "$BIN" "$WORK/tokengate"
strip --strip-debug "$WORK/tokengate"
headers=()
target=/x
if [[ $KIND == signature ]]; then
  target=/  # the path sign.py signs
  python3 bench/signatures/sign.py "$WORK/sig"
  cp "$WORK/sig/jwks.json" "$WORK/jwks.json"
  headers=(-H "Signature-Input: $(sed -n 1p "$WORK/sig/headers")" -H "Signature: $(sed -n 2p "$WORK/sig/headers")")
elif [[ $KIND == signature-response ]]; then
  # none's route signing every answer (sign_response), as the bench scenario of that name.
  openssl genpkey -algorithm ed25519 -out "$WORK/signing.pem" 2>/dev/null
elif [[ $KIND == api-key || $KIND == api-key-10k ]]; then
  python3 bench/api_keys/make.py "$WORK/tokengate" "$WORK/api-keys" "$([[ $KIND == api-key ]] && echo 1 || echo 10000)"
  headers=(-H "X-API-Key: $(cat "$WORK/api-keys/key")")
elif [[ $KIND == as-self ]]; then
  "$WORK/tokengate" keys generate --alg ES256 --kid as-1 --out "$WORK/as.jwk" >/dev/null
  token=$("$WORK/tokengate" jwt sign --key "$WORK/as.jwk" --typ at+jwt --exp-in 86400 \
    --claims '{"iss":"https://bench.local","aud":"https://bench.local/mcp","sub":"bench-user","client_id":"https://client.example/c.json","idp_iss":"https://idp.example","scope":"bench"}')
  headers=(-H "Authorization: Bearer $token")
elif [[ $CONFIG != none ]]; then
  "$WORK/tokengate" keys generate --alg ES256 --kid bench --out "$WORK/key.jwk" >"$WORK/jwks.json"
  token=$("$WORK/tokengate" jwt sign --key "$WORK/key.jwk" --typ at+jwt --exp-in 86400 \
    --claims '{"iss":"https://bench.local","aud":"bench-api","sub":"bench-user","client_id":"bench","scope":"bench","email":"b@example.com"}')
  headers=(-H "Authorization: Bearer $token")
fi
render "bench/tokengate/$CONFIG.yaml" "$WORK/tokengate.yaml" MCP_OFF="$MCP_OFF" PORT="$PORT" ADMIN_PORT="$ADMIN" WORKERS=1 \
  UPSTREAM_PORT="$UPSTREAM" JWKS="$WORK/jwks.json" CACHE_ENTRIES=10000 STORE=memory RATE=1000000/s BURST=1000000 \
  MAX_ENTRIES=100000 SIGNING_KEY="$WORK/signing.pem" KEY_FILE="$WORK/api-keys/keys.yaml" AS_KEY="$WORK/as.jwk"
# serve sets the allocator's tunable by running itself again, which would leave valgrind.
GLIBC_TUNABLES=glibc.malloc.tcache_count=64 valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.out" ${CALLGRIND_ARGS:-} \
  "$WORK/tokengate" serve --config "$WORK/tokengate.yaml" >"$WORK/tokengate.log" 2>&1 &
tg=$!
pids+=("$tg")
for _ in $(seq 200); do curl -fsS "http://127.0.0.1:$ADMIN/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
if [[ -n $LUA ]]; then
  # The scenario's request (method, headers, body) from its lua file, counted.
  export BENCH_TOKEN=${token:-}
  { cat "bench/lua/$LUA"; cat <<LUA
local n = 0
request = function()
  n = n + 1
  if n > $REQUESTS then wrk.thread:stop() end
  return wrk.format(nil, "$target")
end
LUA
  } >"$WORK/count.lua"
  # Warmed up by the same request, through wrk (curl would need the lua's body and headers).
  sed "s/> $REQUESTS then/> 300 then/" "$WORK/count.lua" >"$WORK/warm.lua"
  wrk -t1 -c4 -d60s -s "$WORK/warm.lua" "http://127.0.0.1:$PORT/" >/dev/null
  headers=()
else
  for _ in $(seq 300); do curl -fsS "${headers[@]}" "http://127.0.0.1:$PORT$target" >/dev/null; done
  cat >"$WORK/count.lua" <<LUA
local n = 0
request = function()
  n = n + 1
  if n > $REQUESTS then wrk.thread:stop() end
  return wrk.format(nil, "$target")
end
LUA
fi
callgrind_control -z "$tg" >/dev/null 2>&1
wrk -t1 -c4 -d120s -s "$WORK/count.lua" "${headers[@]}" "http://127.0.0.1:$PORT/" >"$WORK/wrk.txt"
callgrind_control -d "$tg" >/dev/null 2>&1
sleep 1
requests=$(awk '/requests in/ {print $1}' "$WORK/wrk.txt")
# A refused request is cheap: a count over refusals (a stale gateway on the port, a token the
# JWKS does not know) would look like a speed-up.
if grep -q "Non-2xx" "$WORK/wrk.txt"; then
  echo "callgrind.sh: some counted requests were not answered 2xx or 3xx:" >&2
  grep "Non-2xx" "$WORK/wrk.txt" >&2
  exit 1
fi
# The dump after the zeroing: the worker's thread over the counted requests.
total=$(callgrind_annotate "$WORK/callgrind.out.1" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
echo "$KIND: $requests requests, $total instructions, $((total / requests)) per request ($(basename "$BIN"))"
if [[ ${KEEP_WORK:-0} == 1 ]]; then echo "callgrind files: $WORK/callgrind.out*"; fi
