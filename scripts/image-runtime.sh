# Sourced by scripts/image-test.sh: runs the image with podman, or (IMAGE_TEST_RUNTIME=runc)
# with runc directly on the image unpacked by umoci, where podman cannot run containers.
# Both give the container the same settings: read-only root, uid 10001, no capabilities,
# no new privileges, the host's network (loopback only is used), /etc/tokengate mounted
# read-only, file and process limits below the host's hard ones.
#   start_gateway          starts `serve` (the image's default command) in the background
#   gateway_pid            the host pid of tokengate in the container
#   stop_gateway SECONDS   SIGTERM, waits up to SECONDS, sets stop_rc to the exit code
#   run_once ARGS...       runs `tokengate ARGS...` in a new container; its exit code

if [[ $runtime == podman ]]; then
  image=$("${P[@]}" load -q -i "$archive" | sed -n 's/^Loaded image: //p')
  check "podman loads the archive as $image" test -n "$image"
  flags=(--read-only --user 10001:10001 --cap-drop=ALL --security-opt=no-new-privileges
         --network=host --ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc"
         -v "$tmp/etc:/etc/tokengate:ro")
  start_gateway() { "${P[@]}" run -d --name "$name" "${flags[@]}" "$image" > /dev/null; }
  gateway_pid() { "${P[@]}" inspect -f '{{.State.Pid}}' "$name"; }
  stop_gateway() {
    "${P[@]}" stop -t "$1" "$name" > /dev/null
    stop_rc=$("${P[@]}" inspect -f '{{.State.ExitCode}}' "$name")
  }
  run_once() { "${P[@]}" run --rm "${flags[@]}" "$image" "$@"; }
elif [[ $runtime == runc ]]; then
  skopeo copy --quiet "oci-archive:$archive" "oci:$tmp/layout:image"
  umoci unpack --image "$tmp/layout:image" "$tmp/bundle" > /dev/null
  check "umoci unpacks the image into a runtime bundle" test -x "$tmp/bundle/rootfs/usr/local/bin/tokengate"
  # umoci's config.json carries the image's user, entrypoint, command and environment;
  # tighten it like the podman flags above. /proc stays mounted: the Swift runtime reads
  # the process's arguments there.
  spec() {
    py '
import json, sys
path, etc, nofile, nproc, args = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
s = json.load(open(path))
p = s["process"]
if args: p["args"] = ["tokengate"] + args
p["terminal"] = False
p["noNewPrivileges"] = True
p["capabilities"] = {k: [] for k in ("bounding", "effective", "inheritable", "permitted", "ambient")}
p["rlimits"] = [{"type": "RLIMIT_NOFILE", "hard": nofile, "soft": nofile},
                {"type": "RLIMIT_NPROC", "hard": nproc, "soft": nproc}]
s["root"]["readonly"] = True
s["linux"]["namespaces"] = [n for n in s["linux"]["namespaces"] if n["type"] != "network"]
s["mounts"] = [m for m in s["mounts"] if m["destination"] != "/etc/tokengate"] + [
    {"destination": "/etc/tokengate", "type": "bind", "source": etc, "options": ["rbind", "ro"]}]
assert any(m["destination"] == "/proc" for m in s["mounts"])
json.dump(s, open(path, "w"))
' "$tmp/bundle/config.json" "$tmp/etc" "$nofile" "$nproc" "$@"
  }
  start_gateway() {
    spec
    runc run --bundle "$tmp/bundle" "$name" > "$tmp/gateway.log" 2>&1 &
    runc_pid=$!
  }
  gateway_pid() { runc state "$name" | py 'import json,sys; print(json.load(sys.stdin)["pid"])'; }
  stop_gateway() {
    runc kill "$name" TERM
    for _ in $(seq $(($1 * 10))); do kill -0 "$runc_pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$runc_pid" 2>/dev/null && runc kill "$name" KILL   # past the grace: as podman does
    stop_rc=0; wait "$runc_pid" || stop_rc=$?
  }
  run_once() {
    spec "$@"
    local rc=0
    runc run --bundle "$tmp/bundle" "$name-once" || rc=$?
    runc delete -f "$name-once" > /dev/null 2>&1 || true
    return $rc
  }
else
  echo "IMAGE_TEST_RUNTIME is podman or runc, not $runtime" >&2
  exit 2
fi
