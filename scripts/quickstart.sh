#!/usr/bin/env bash
# Command 1 of the README: set up, build, and run tokengate on config/quickstart.yaml in
# front of a demo upstream (an echo server on 127.0.0.1:3000). Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "== building tokengate (release)"
swift build -c release --product tokengate
bin="$(swift build -c release --show-bin-path)/tokengate"
if [[ ! -f config/dev/dev.jwk ]]; then
  mkdir -p config/dev
  "$bin" keys generate --alg ES256 --kid dev --out config/dev/dev.jwk > config/dev/dev.jwks
fi
python3 scripts/echo_upstream.py 3000 &
up=$!
"$bin" serve --config config/quickstart.yaml &
gw=$!
trap 'kill $gw $up 2>/dev/null; wait 2>/dev/null' EXIT INT TERM
# Ready when both answer: the gateway's readyz, and the echo upstream (Python starts slower).
for _ in $(seq 50); do
  curl -fs http://127.0.0.1:9901/readyz >/dev/null 2>&1 && curl -s -o /dev/null http://127.0.0.1:3000/ && break
  sleep 0.1
done
token=$("$bin" jwt sign --key config/dev/dev.jwk --typ at+jwt --exp-in 3600 \
  --claims '{"iss":"https://quickstart.local","aud":"demo-api","sub":"alice","client_id":"quickstart","email":"alice@example.com","scope":"demo:read"}')
cat <<MSG

tokengate is running on http://127.0.0.1:8080 (admin: http://127.0.0.1:9901/metrics).
Try:
  curl -i http://127.0.0.1:8080/api/hello                     # 401 with a Bearer challenge
  curl -s http://127.0.0.1:8080/api/hello -H "Authorization: Bearer $token" | python3 -m json.tool
                                                              # 200: the echo upstream shows X-Forwarded-User: alice
  curl -s http://127.0.0.1:8080/hello -H 'X-Forwarded-User: mallory' | python3 -m json.tool
                                                              # public route: the forged identity header is gone
Mint more tokens with: $bin jwt sign --key config/dev/dev.jwk --typ at+jwt --claims '{...}' (RFC 9068: iss, aud, sub, client_id; iat, exp, jti are added)
Ctrl-C stops.
MSG
wait $gw
