#!/usr/bin/env bash
# testssl.sh (Debian's `testssl`) against tokengate's TLS listener and nginx set to Mozilla's
# "intermediate" profile, on the same certificates (ECDSA P-256 and RSA 2048), on 127.0.0.1.
# Prints, per key type, the findings whose severity differs between the two, and the count
# of findings per severity for each. Needs testssl, nginx and openssl.
#
#   TOKENGATE_BIN=.build-release/release/tokengate bench/tls/scan.sh [PROFILE]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${TOKENGATE_BIN:-$here/../../.build-release/release/tokengate}
profile=${1:-intermediate}
work=$(mktemp -d /tmp/tls-scan.XXXXXX)
trap 'kill $(cat "$work"/*.pid 2>/dev/null) 2>/dev/null || true' EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/ec.key" -out "$work/ec.crt" \
    -days 30 -subj /CN=localhost -addext subjectAltName=DNS:localhost 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/rsa.key" -out "$work/rsa.crt" \
    -days 30 -subj /CN=localhost -addext subjectAltName=DNS:localhost 2>/dev/null

for kind in ec rsa; do
    sed -e "s|@DIR@|$work|g" -e "s|@KIND@|$kind|g" "$here/nginx-intermediate.conf.in" >"$work/nginx-$kind.conf"
    nginx -c "$work/nginx-$kind.conf" -e "$work/nginx-$kind.err"
    cat >"$work/tg-$kind.yaml" <<YAML
listen: { address: 127.0.0.1:18443, tls: { cert_file: $work/$kind.crt, key_file: $work/$kind.key, profile: $profile } }
admin_listen: 127.0.0.1:19901
workers: 1
access_log: false
upstreams: { app: { url: "http://127.0.0.1:9" } }
routes: [ { match: { path_prefix: / }, upstream: app, auth: none } ]
YAML
    "$bin" serve --config "$work/tg-$kind.yaml" >"$work/tg-$kind.log" 2>&1 &
    echo $! >"$work/tg.pid"
    sleep 1
    for target in tokengate:18443 nginx:18444; do
        name=${target%%:*}
        testssl --quiet --color 0 --warnings off --sneaky -p -s -f -S -U -E \
            --jsonfile "$work/$name-$kind.json" "https://localhost:${target##*:}" >"$work/$name-$kind.txt" 2>&1 || true
    done
    kill "$(cat "$work/tg.pid")"
    kill "$(cat "$work/nginx-$kind.pid")"
    sleep 0.5
    python3 "$here/compare.py" "$kind" "$work/tokengate-$kind.json" "$work/nginx-$kind.json"
done
echo "raw reports: $work"
