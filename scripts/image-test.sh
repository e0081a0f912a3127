#!/usr/bin/env bash
# Run test of the container image that scripts/image.sh wrote: what is inside it, and the
# image running for real, read-only, as uid 10001, with no capabilities, on a mounted config,
# in front of an upstream and a JWKS server on 127.0.0.1.
#
# Usage: scripts/image-test.sh [ARCHIVE]   (default .build-image/tokengate.oci.tar; root)
# Runs it with podman; IMAGE_TEST_RUNTIME=runc runs the unpacked image with runc directly
# (the fallback where podman cannot run containers). Ends with "N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."
archive=${1:-.build-image/tokengate.oci.tar}
bin=.build-image/tokengate    # the same binary, run on the host: makes the key, mints tokens
runtime=${IMAGE_TEST_RUNTIME:-podman}
max_compressed=$((60 * 1000 * 1000))
name=tokengate-image-test
passed=0 failed=0
ok() { echo "ok - $*"; passed=$((passed + 1)); }
bad() { echo "FAIL - $*"; failed=$((failed + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
py() { python3 -c "$@"; }

tmp=$(mktemp -d "$PWD/.build-image/test.XXXXXX")
chmod 755 "$tmp"
pids=()
# podman keeps its images and containers here, not in the machine's own storage.
# vfs: needs no overlay support in the kernel (this may itself be a container);
# cgroupfs, file events: there is no systemd or journald to talk to;
# runc: crun refuses this host's mix of cgroup v1 and v2.
P=(podman --root "$tmp/storage" --runroot "$tmp/run" --storage-driver vfs --runtime runc
   --cgroup-manager cgroupfs --events-backend file)
cleanup() {
  if [[ $runtime == podman ]]; then
    "${P[@]}" rm -f -t 0 "$name" >/dev/null 2>&1 || true
    "${P[@]}" system reset --force >/dev/null 2>&1 || true
  else
    runc delete -f "$name" >/dev/null 2>&1 || true
  fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "== image test: $archive ($runtime)"
manifest=$(skopeo inspect --raw "oci-archive:$archive")
config=$(skopeo inspect --config "oci-archive:$archive")
digest=$(skopeo inspect --format '{{.Digest}}' "oci-archive:$archive")
compressed=$(py 'import json,sys; m=json.loads(sys.argv[1]); print(sum(l["size"] for l in m["layers"]) + m["config"]["size"])' "$manifest")
echo "   digest: $digest"
echo "   compressed size: $compressed bytes ($((compressed / 1000000)) MB; limit $((max_compressed / 1000000)) MB)"
check "valid OCI archive (skopeo inspect)" test -n "$digest"
check "compressed size $compressed < $max_compressed bytes" test "$compressed" -lt "$max_compressed"

# --- the image's configuration: the same as deploy/Dockerfile's ---------------------------------
cfg() { py 'import json,sys; c=json.loads(sys.argv[1])["config"]; print(json.dumps(eval(sys.argv[2])))' "$config" "$1"; }
check "user 10001:10001" test "$(cfg 'c["User"]')" = '"10001:10001"'
check "entrypoint tokengate" test "$(cfg 'c["Entrypoint"]')" = '["tokengate"]'
check "cmd serve --config /etc/tokengate/tokengate.yaml" \
  test "$(cfg 'c["Cmd"]')" = '["serve", "--config", "/etc/tokengate/tokengate.yaml"]'
check "exposed ports 8080, 9901" test "$(cfg 'sorted(c["ExposedPorts"])')" = '["8080/tcp", "9901/tcp"]'
check "stop signal SIGTERM" test "$(cfg 'c["StopSignal"]')" = '"SIGTERM"'
check "OCI labels source, revision, version, created" test "$(cfg 'sorted(k.rsplit(".",1)[1] for k in c["Labels"] if k.startswith("org.opencontainers.image.") and c["Labels"][k])' \
  | py 'import json,sys; print(set(json.load(sys.stdin)) >= {"source","revision","version","created"})')" = True

# --- what is inside: listed from the layers --------------------------------------------------------
py '
import io, json, sys, tarfile
outer = tarfile.open(sys.argv[1])
blob = lambda d: outer.extractfile("./blobs/" + d.replace(":", "/"))
index = json.load(blob(json.load(outer.extractfile("./index.json"))["manifests"][0]["digest"]))
for layer in index["layers"]:
    with tarfile.open(fileobj=io.BytesIO(blob(layer["digest"]).read()), mode="r:gz") as t:
        for m in t:
            print(m.name.removeprefix("./"))
            if m.name.removeprefix("./") in ("etc/passwd", "etc/ssl/certs/ca-certificates.crt"):
                open(sys.argv[2] + "/" + m.name.rsplit("/", 1)[1], "wb").write(t.extractfile(m).read())
' "$archive" "$tmp" > "$tmp/files.txt"
echo "   files in the image: $(wc -l < "$tmp/files.txt")"
forbidden=$(grep -E '(^|/)(sh|bash|dash|busybox|apt|apt-get|dpkg|dpkg-deb|perl|python3?|gcc|cc|c\+\+|g\+\+|clang|swiftc|ld|as|make)$|^var/lib/dpkg/|^etc/apt/' "$tmp/files.txt" || true)
check "no shell, package manager or compiler in the image${forbidden:+: $forbidden}" test -z "$forbidden"
check "the binary is /usr/local/bin/tokengate" grep -qx usr/local/bin/tokengate "$tmp/files.txt"
check "/etc/passwd has tokengate as 10001" grep -q '^tokengate:x:10001:10001:' "$tmp/passwd"
check "CA bundle has > 100 certificates" test "$(grep -c 'BEGIN CERTIFICATE' "$tmp/ca-certificates.crt")" -gt 100

# --- the image running ----------------------------------------------------------------------------
port() { py 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
gw=$(port); admin=$(port); up=$(port); jw=$(port)
mkdir -p "$tmp/etc" "$tmp/www"
"$bin" keys generate --alg ES256 --kid image-test --out "$tmp/key.jwk" > "$tmp/www/jwks.json"
python3 scripts/echo_upstream.py "$up" > /dev/null & pids+=($!)
python3 -m http.server --bind 127.0.0.1 --directory "$tmp/www" "$jw" > /dev/null 2>&1 & pids+=($!)
# Loopback only: the container shares the host's network namespace (--network=host).
cat > "$tmp/etc/tokengate.yaml" <<YAML
listen: 127.0.0.1:$gw
admin_listen: 127.0.0.1:$admin
workers: 2
limits: { shutdown_grace: 5s }
issuers:
  it:
    issuer: https://image-test.local
    jwks_uri: http://127.0.0.1:$jw/jwks.json   # fetched by libcurl inside the image
    audiences: [image-test]
    access_token_type: at+jwt
upstreams:
  app: { url: "http://127.0.0.1:$up", connect_timeout: 2s, timeout: 10s }
routes:
  - { name: api, match: { path_prefix: /api/ }, upstream: app, auth: bearer, issuers: [it] }
  - { name: public, match: { path_prefix: / }, upstream: app, auth: none }
YAML
printf 'listen: nowhere\nroutes: 7\n' > "$tmp/etc/bad.yaml"
chmod 644 "$tmp"/etc/*.yaml && chmod 755 "$tmp/etc"
# Explicit and low: podman's defaults (1048576 files, the host's maximum of processes) are
# above what this host lets the container set, and runc then fails with EPERM.
nofile=4096 nproc=4096

source scripts/image-runtime.sh    # start_gateway, gateway_pid, stop_gateway, run_once
t_start=$SECONDS
start_gateway
ready=0
for _ in $(seq 100); do
  curl -fs "http://127.0.0.1:$admin/readyz" > /dev/null 2>&1 && { ready=1; break; }
  sleep 0.2
done
check "/readyz answers 200 (JWKS fetched over HTTP by libcurl in the image) in $((SECONDS - t_start)) s" test $ready = 1
pid=$(gateway_pid)
status=$(cat "/proc/$pid/status" 2>/dev/null || true)
check "runs as uid 10001, gid 10001" grep -qP '^Uid:\t10001\t10001\t10001\t10001' <<< "$status"
check "runs with no capabilities (CapEff and CapBnd 0)" \
  bash -c 'grep -q "^CapEff:\s*0000000000000000" <<< "$1" && grep -q "^CapBnd:\s*0000000000000000" <<< "$1"' _ "$status"
check "no new privileges" grep -qP '^NoNewPrivs:\t1' <<< "$status"
check "root filesystem mounted read-only" \
  bash -c "awk '\$5 == \"/\" {print \$6}' /proc/$pid/mountinfo | grep -q '^ro'"
code() { curl -s -o "$tmp/body" -w '%{http_code}' "$@"; }
check "public route: 200 from the upstream" test "$(code "http://127.0.0.1:$gw/hello")" = 200
check "bearer route without a token: 401" test "$(code "http://127.0.0.1:$gw/api/orders")" = 401
token=$("$bin" jwt sign --key "$tmp/key.jwk" --typ at+jwt --exp-in 300 --claims \
  "{\"iss\":\"https://image-test.local\",\"aud\":\"image-test\",\"sub\":\"alice\",\"client_id\":\"x\",\"jti\":\"image-test-$RANDOM\",\"iat\":$(date +%s)}")
check "bearer route with a token: 200" test "$(code -H "Authorization: Bearer $token" "http://127.0.0.1:$gw/api/orders")" = 200
check "the upstream got the request" grep -q '"path": "/api/orders"' "$tmp/body"
check "/metrics counts the 401 and the 200" bash -c \
  "curl -fs http://127.0.0.1:$admin/metrics | grep -q 'tokengate_requests_total{route=\"api\",status=\"401\"} 1' && curl -fs http://127.0.0.1:$admin/metrics | grep -q 'tokengate_requests_total{route=\"api\",status=\"200\"} 1'"
t_stop=$SECONDS
stop_gateway 20
check "SIGTERM: exit code 0 (was $stop_rc) in $((SECONDS - t_stop)) s, within the 20 s grace" \
  test "$stop_rc" = 0 -a $((SECONDS - t_stop)) -lt 20
rc=0; run_once check-config /etc/tokengate/bad.yaml > "$tmp/out" 2>&1 || rc=$?
check "check-config on a bad mounted file exits 1 (was $rc)" test "$rc" = 1
check "check-config lists the problems" grep -q 'problem' "$tmp/out"
rc=0; run_once check-config /etc/tokengate/tokengate.yaml > "$tmp/out" 2>&1 || rc=$?
check "check-config on the good file exits 0 (was $rc)" test "$rc" = 0

echo "image test: $passed passed, $failed failed"
(( failed == 0 ))
