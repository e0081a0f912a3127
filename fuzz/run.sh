#!/usr/bin/env bash
# The standing fuzz campaign. Builds every libFuzzer target with ASan, runs each from its
# corpus (and its past findings) for SECONDS, merges what it found back into its corpus
# with a set-cover merge (which keeps corpora small), and prints per target: inputs run,
# exec/s, coverage (edges `cov`, features `ft`), corpus size and findings. Exits non-zero
# if any target found something; the input is left in $OUT/<target>/artifacts.
#
#   fuzz/run.sh [SECONDS] [TARGET...]    default: 300 s each, every target
#   RUNS=10000000 fuzz/run.sh 3600       stop each target after RUNS inputs (SECONDS caps)
#   JOBS=2                               targets fuzzed at once (one process each)
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-300}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(JOSEFuzz HTTP1Fuzz StreamFuzz H2Fuzz OAuthFuzz SETFuzz ASFuzz RouteFuzz LoginFuzz MCPFuzz ExtAuthzFuzz SignatureFuzz)
out=${OUT:-/tmp/tokengate-fuzz}
here=$PWD

# Per target: corpus directory, findings directory (under findings/), dictionary, max_len.
settings() {
    case $1 in
    JOSEFuzz) echo "corpus jose jose.dict 8192" ;;
    HTTP1Fuzz) echo "corpus-http1 http1 http1.dict 512" ;;
    StreamFuzz) echo "corpus-stream stream stream.dict 512" ;;
    H2Fuzz) echo "corpus-h2 h2 h2.dict 4096" ;;
    OAuthFuzz) echo "corpus-oauth oauth oauth.dict 1024" ;;
    SETFuzz) echo "corpus-set set set.dict 4096" ;;
    ASFuzz) echo "corpus-as as as.dict 6144" ;;
    RouteFuzz) echo "corpus-route route route.dict 1024" ;;
    LoginFuzz) echo "corpus-login login login.dict 2048" ;;
    MCPFuzz) echo "corpus-mcp mcp mcp.dict 4096" ;;
    ExtAuthzFuzz) echo "corpus-extauthz extauthz extauthz.dict 4096" ;;
    SignatureFuzz) echo "corpus-signatures signatures signatures.dict 2048" ;;
    *) echo "unknown target $1" >&2; exit 2 ;;
    esac
}

flags=(-c release -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library)
mkdir -p "$out"
nice -n 19 swift build "${flags[@]}" >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 2; }
bin=$(swift build "${flags[@]}" --show-bin-path)

fuzz() {
    local target=$1 corpus findings dict max_len
    read -r corpus findings dict max_len <<<"$(settings "$target")"
    local work=$out/$target
    rm -rf "$work" && mkdir -p "$work/corpus" "$work/artifacts" "findings/$findings"
    cp "$corpus"/* "$work/corpus/"
    local started=$(date +%s)
    # -detect_leaks=0: an input that ends with more allocations than frees (caches the Swift
    # runtime and OpenSSL build lazily) costs a LeakSanitizer scan of the whole heap; it halved
    # JOSEFuzz's rate. LeakSanitizer still checks the whole heap when the process exits.
    (cd "$work" && nice -n 19 "$bin/$target" -max_total_time="$seconds" ${RUNS:+-runs=$RUNS} -detect_leaks=0 \
        -max_len="$max_len" -timeout=10 -dict="$here/$dict" -print_final_stats=1 \
        -artifact_prefix="$work/artifacts/" "$work/corpus" "$here/findings/$findings" >fuzz.log 2>&1) || true
    local elapsed=$(($(date +%s) - started))
    mkdir "$work/merged"
    if nice -n 19 "$bin/$target" -merge=1 -set_cover_merge=1 -max_len="$max_len" \
        "$work/merged" "$corpus" "$work/corpus" >"$work/merge.log" 2>&1; then
        rm -rf "$corpus" && mv "$work/merged" "$corpus"
    else
        echo "$target: merge failed, corpus kept (see $work/merge.log)" >&2
    fi
    local runs rate cov ft
    runs=$(sed -n 's/^stat::number_of_executed_units: //p' "$work/fuzz.log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: //p' "$work/fuzz.log")
    cov=$(grep -o 'cov: [0-9]*' "$work/fuzz.log" | tail -1 | cut -d' ' -f2)
    ft=$(grep -o 'ft: [0-9]*' "$work/fuzz.log" | tail -1 | cut -d' ' -f2)
    printf '%-10s %12s %8s %6s %7s %7s %6s %8s\n' "$target" "${runs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" \
        "$(ls "$corpus" | wc -l)" "${elapsed}s" "$(ls "$work/artifacts" | wc -l)" >"$work/summary"
}

for target in "${targets[@]}"; do
    settings "$target" >/dev/null
    while [ "$(jobs -rp | wc -l)" -ge "${JOBS:-2}" ]; do wait -n || true; done
    fuzz "$target" &
done
wait

printf '%-10s %12s %8s %6s %7s %7s %6s %8s\n' target runs exec/s cov ft corpus time findings
found=0
for target in "${targets[@]}"; do
    cat "$out/$target/summary"
    [ -z "$(ls "$out/$target/artifacts")" ] || { found=1; ls "$out/$target/artifacts"/* >&2; }
done
exit $found
