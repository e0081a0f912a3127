#!/usr/bin/env bash
# Command 1 of the README: set up, build, and run tokengate on config/quickstart.yaml in
# front of a demo upstream (an echo server on 127.0.0.1:3000). Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "== building tokengate (release)"
swift build -c release --product tokengate
bin="$(swift build -c release --show-bin-path)/tokengate"
python3 scripts/echo_upstream.py 3000 &
up=$!
"$bin" serve --config config/quickstart.yaml &
gw=$!
trap 'kill $gw $up 2>/dev/null; wait 2>/dev/null' EXIT INT TERM
for _ in $(seq 50); do
  curl -fs http://127.0.0.1:9901/readyz >/dev/null 2>&1 && break
  sleep 0.1
done
cat <<MSG

tokengate is running on http://127.0.0.1:8080 (admin: http://127.0.0.1:9901/metrics).
Try:
  curl -s http://127.0.0.1:8080/hello -H 'X-Forwarded-For: 6.6.6.6' | python3 -m json.tool
The echo upstream shows what it received: the client's X-Forwarded-For replaced (it is not a
trusted proxy), X-Forwarded-Proto/-Host and X-Request-Id set by the gateway. Ctrl-C stops.
MSG
wait $gw
