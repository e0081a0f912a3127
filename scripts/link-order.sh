#!/usr/bin/env bash
# Writes scripts/link-order.txt: the functions the gateway runs on its common paths, which
# the release link (scripts/build-release.sh) lays out together at the front of .text.
#
# Why: the kernel maps a binary's code 64 KB at a time around each page a process runs
# (fault-around), so code that runs is resident with whatever lies beside it. In link
# order, the few thousand functions a gateway runs are spread over the whole 23 MB of
# .text, and almost all of it ends up in RSS (bench/README, "Memory"). Together, they
# take a few megabytes. A function missing from the list still runs; it only costs its own
# 64 KB.
#
# How: the binary runs under callgrind (valgrind), which names every function that runs,
# through start, a reload and the traffic of the bench's scenarios — plain GETs and POSTs
# over HTTP/1.1 and h2c, a bearer route (good and bad tokens), h2 over TLS, 1,000 routes,
# the admin endpoints — and stops with SIGTERM. Only 127.0.0.1 is used.
#
# usage: scripts/link-order.sh BIN   (a release build of tokengate with its symbols)
# env:   PORT_BASE=19500  KEEP_WORK=1 (keep the temp dir)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:?usage: scripts/link-order.sh BIN}
PORT_BASE=${PORT_BASE:-19500}
PORT=$PORT_BASE UPSTREAM=$((PORT_BASE + 1)) ADMIN=$((PORT_BASE + 2))
for cmd in valgrind nginx curl wrk h2load openssl nm; do
  command -v "$cmd" >/dev/null || [[ -x /usr/sbin/$cmd ]] || { echo "link-order.sh: needs $cmd" >&2; exit 1; }
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
WORK=$(mktemp -d /tmp/tg-link-order.XXXXXX)
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
"$NGINX" -c "$WORK/upstream/nginx.conf" -p "$WORK/upstream" &
pids+=($!)

# valgrind 3.19 cannot read DWARF 5: the symbols stay, the debug info goes.
cp "$BIN" "$WORK/tokengate"
strip --strip-debug "$WORK/tokengate"
TG=$WORK/tokengate
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$WORK/key.pem" -out "$WORK/cert.pem" \
  -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
"$TG" keys generate --alg ES256 --kid bench --out "$WORK/key.jwk" >"$WORK/jwks.json"
token=$("$TG" jwt sign --key "$WORK/key.jwk" --typ at+jwt --exp-in 86400 \
  --claims '{"iss":"https://bench.local","aud":"bench-api","sub":"bench-user","client_id":"bench","scope":"bench","email":"b@example.com"}')
head -c 1024 /dev/urandom | base64 -w0 | head -c 1000 | sed 's/.*/{"data":"&"}/' >"$WORK/post-1k.json"
head -c 16384 /dev/urandom | base64 -w0 | head -c 16000 | sed 's/.*/{"data":"&"}/' >"$WORK/post-16k.json"

# 1,000 routes before the `none` catch-all, as bench/run.sh's routes scenarios write them.
{ sed '/^routes:/q' bench/tokengate/none.yaml
  awk 'BEGIN { for (i = 1; i < 1000; i++)
    printf "  - { name: svc%05d, match: { path_prefix: /svc%05d/api/ }, upstream: app, auth: none }\n", i, i }'
  sed '1,/^routes:/d' bench/tokengate/none.yaml
} >"$WORK/routes.yaml.in"

# run NAME TEMPLATE TRAFFIC: serves TEMPLATE's config under callgrind, runs the TRAFFIC
# function, reloads, and stops the gateway; its function names go to $WORK/NAME.out*.
run() {
  local name=$1 template=$2 traffic=$3
  render "$template" "$WORK/$name.yaml" PORT="$PORT" ADMIN_PORT="$ADMIN" UPSTREAM_PORT="$UPSTREAM" WORKERS=1 \
    JWKS="$WORK/jwks.json" CERT="$WORK/cert.pem" KEY="$WORK/key.pem" H2C_PORT=$((PORT_BASE + 3)) \
    CACHE_ENTRIES=10000 STORE=memory RATE=1000000/s BURST=1000000 MAX_ENTRIES=100000
  # serve sets the allocator's tunable by running itself again, which would leave valgrind.
  GLIBC_TUNABLES=glibc.malloc.tcache_count=64 valgrind --tool=callgrind --demangle=no --compress-strings=no --compress-pos=no \
    --callgrind-out-file="$WORK/$name.out" "$TG" serve --config "$WORK/$name.yaml" >"$WORK/$name.log" 2>&1 &
  local tg=$!
  pids+=("$tg")
  local up=0
  for _ in $(seq 600); do
    if curl -fsS "http://127.0.0.1:$ADMIN/readyz" >/dev/null 2>&1; then up=1; break; fi
    sleep 0.2
  done
  (( up )) || { echo "link-order.sh: $name did not start" >&2; cat "$WORK/$name.log" >&2; exit 1; }
  "$traffic"
  curl -fsS "http://127.0.0.1:$ADMIN/metrics" >/dev/null
  curl -fsS "http://127.0.0.1:$ADMIN/healthz" >/dev/null || true
  kill -HUP "$tg"
  for _ in $(seq 300); do grep -q '"config reloaded"' "$WORK/$name.log" && break; sleep 0.2; done
  "$traffic"
  kill -TERM "$tg"
  wait "$tg" || { echo "link-order.sh: $name did not stop cleanly" >&2; exit 1; }
  echo "link-order.sh: $name done" >&2
}

plain() {
  local url=http://127.0.0.1:$PORT
  for _ in $(seq 20); do curl -fsS -o /dev/null "$url/x"; done
  curl -fsS -o /dev/null -H 'Content-Type: application/json' --data-binary @"$WORK/post-1k.json" "$url/x"
  curl -fsS -o /dev/null -H 'Content-Type: application/json' --data-binary @"$WORK/post-16k.json" "$url/x"
  wrk -t1 -c4 -d2s "$url/x" >/dev/null
  wrk -t1 -c4 -d2s -s bench/lua/post.lua "$url/x" >/dev/null
  h2load -n 200 -c 2 -m 10 "$url/x" >/dev/null
  curl -sS -o /dev/null "$url/%zz" || true
}

bearer() {
  local url=http://127.0.0.1:$PORT
  for _ in $(seq 10); do curl -fsS -o /dev/null -H "Authorization: Bearer $token" "$url/x"; done
  curl -sS -o /dev/null "$url/x"
  curl -sS -o /dev/null -H "Authorization: Bearer ${token}x" "$url/x"
  curl -sS -o /dev/null -H "Authorization: Bearer abc" "$url/x"
  BENCH_TOKEN=$token wrk -t1 -c4 -d2s -s bench/lua/bearer.lua "$url/x" >/dev/null
}

tls() {
  local url=https://127.0.0.1:$PORT
  for _ in $(seq 5); do curl -fsS -k -o /dev/null "$url/x"; done
  h2load -n 300 -c 2 -m 10 "$url/x" >/dev/null
  h2load -n 100 -c 2 -m 10 -H "Authorization: Bearer $token" "$url/bearer/x" >/dev/null
}

routes() {
  local url=http://127.0.0.1:$PORT
  for _ in $(seq 10); do curl -fsS -o /dev/null -o /dev/null "$url/x" "$url/svc00500/api/y"; done
  wrk -t1 -c4 -d2s "$url/" >/dev/null
}

run plain bench/tokengate/none.yaml plain
run bearer bench/tokengate/bearer.yaml bearer
run tls bench/tokengate/h2-tls.yaml tls
run routes "$WORK/routes.yaml.in" routes

# Every function callgrind saw run, as the binary names it (a recursion level's `'2`
# dropped, only what the binary itself defines), the most instructions first: the request
# path's functions share pages and cache lines, and start's run once after them.
nm --defined-only "$TG" | awk '$2 ~ /^[tTwW]$/ {print $3}' >"$WORK/defined.txt"
python3 - "$WORK/defined.txt" "$WORK"/*.out* >scripts/link-order.txt <<'PY'
import re
import sys

defined = set(open(sys.argv[1]).read().split())
cost = {}
for path in sys.argv[2:]:
    fn, call = None, False
    for line in open(path, errors="replace"):
        if line.startswith(("fn=", "cfn=")):
            name = re.sub(r"'[0-9]+$", "", line.split("=", 1)[1].strip())
            cost.setdefault(name, 0)
            if line.startswith("fn="):
                fn = name
        elif line.startswith("calls="):
            call = True  # the next cost line is the call's, not the function's own
        elif line[:1].isdigit() or line[:1] in "+-*":
            if call:
                call = False
            elif fn is not None:
                fields = line.split()
                if len(fields) > 1:
                    cost[fn] += int(fields[1])
ran = [name for name in cost if name in defined]
# One name a line, no comments: lld reads every line as a symbol.
for name in sorted(ran, key=lambda n: (-cost[n], n)):
    print(name)
PY
echo "link-order.sh: $(wc -l <scripts/link-order.txt) functions in scripts/link-order.txt; remove" \
  ".build-release/release/tokengate so that the next scripts/build-release.sh links it again" >&2
