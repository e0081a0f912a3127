#!/usr/bin/env bash
# Command 2 of the README: set up, build, and run every test (unit, integration, the quick
# audit beside nginx, and the container image's: built, run-tested, rebuilt for its digest;
# the Kubernetes manifests).
#
# What it prints is short: each phase, when it started, how long it took, and its result.
# The builds' and the unit tests' whole output goes to a log file, printed (its end, or its
# failures) only when that phase fails. Every phase that runs tests is bounded: a hang fails
# the run and names what hung, rather than holding CI until its own limit.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's start second, and when it ends (the next one starts) how long it took.
phase_start=
phase() {
  if [[ -n "$phase_start" ]]; then echo "   (phase took $((SECONDS - phase_start)) s)"; fi
  phase_start=$SECONDS
  echo "== $* (at ${SECONDS}s)"
}
trap 'rc=$?; if [[ $rc -ne 0 && -n "$phase_start" ]]; then echo "   (phase failed after $((SECONDS - phase_start)) s)"; fi' EXIT
logs=.build-logs
mkdir -p "$logs"
# logged NAME COMMAND...: the command's output to $logs/NAME.log; its end printed if it fails.
logged() {
  local log="$logs/$1.log"; shift
  if "$@" > "$log" 2>&1; then
    tail -n 1 "$log"
  else
    tail -n 80 "$log"; echo "FAIL - $* (whole output: $log)"; return 1
  fi
}

phase "setup (Debian packages, Python test requirements)"
scripts/setup.sh --test
phase "format (swift format lint --strict, with the repo's .swift-format) and where raw pointers may be"
# Fails on any line the formatter would change; fix with:
#   swift format -i -r -p Sources Tests fuzz/Sources Package.swift
swift format lint --strict -r -p Sources Tests fuzz/Sources Package.swift
scripts/check-unsafe.sh

phase "release build: the binary the integration tests and the container image use"
# Its own scratch path (.build-release), shared with scripts/image.sh. The integration tests
# run against this binary, the one that ships, so no separate debug build is needed.
logged build-release scripts/build-release.sh
logged build-release-tool scripts/build-release.sh --product tokengate-http1-parse

phase "unit tests under ThreadSanitizer (swift test --sanitize=thread; a data race fails the run)"
# One debug build, instrumented: every unit test runs once, with TSan watching, in its own
# build folder. (A plain `swift test` runs the same tests without the race checks.)
export TSAN_OPTIONS="halt_on_error=1"
logged build-tsan swift build --build-tests --sanitize=thread --scratch-path .build-tsan
if timeout --kill-after=30s 30m swift test --skip-build --sanitize=thread --scratch-path .build-tsan \
    > "$logs/unit-tests.log" 2>&1; then
  grep -E "Test run with [0-9]+ tests" "$logs/unit-tests.log" || tail -n 3 "$logs/unit-tests.log"
else
  grep -E "✘|recorded an issue|ThreadSanitizer|Fatal error|error:" "$logs/unit-tests.log" | head -n 150 || true
  python3 scripts/unfinished-tests.py "$logs/unit-tests.log"
  tail -n 20 "$logs/unit-tests.log"
  echo "FAIL - unit tests: a failure, or not done within 30 minutes (whole output: $logs/unit-tests.log)"; exit 1
fi

phase "integration tests (pytest: the release binary + real upstreams and AS on 127.0.0.1)"
# --timeout (pytest-timeout): a test past 5 minutes fails with its stack, and the run goes on.
# --durations=30: the 30 slowest tests, where the suite's time goes.
TOKENGATE_BIN="$PWD/.build-release/release/tokengate" timeout --kill-after=30s 60m \
  python3 -m pytest -q --timeout=300 --durations=30 IntegrationTests

phase "audit (scripts/audit.sh --quick: the outside tools beside nginx; a regression fails)"
# The release binary above, and the fuzz replay from the unit tests' TSan build. Its table is
# printed here; the full run's is docs/audit.md.
TOKENGATE_BIN="$PWD/.build-release/release/tokengate" \
  AUDIT_SWIFT_TEST_ARGS="--sanitize=thread --scratch-path .build-tsan" timeout --kill-after=30s 10m \
  scripts/audit.sh --quick

phase "container image (scripts/image.sh: the release binary above, root filesystem, OCI archive)"
logged image scripts/image.sh --binary .build-release/release/tokengate
tail -n 6 "$logs/image.log"
timeout --kill-after=30s 10m scripts/image-test.sh
phase "image reproducibility: built again from the same binary and .deb files, offline"
# The release build is not repeated (CI time): this checks everything after it. Two fresh
# release builds differ in the binary itself (deploy/README.md, "Reproducible").
first=$(cat .build-image/digest)
logged image-again scripts/image.sh --binary .build-release/release/tokengate --debs .build-image/debs \
  --out .build-image/again.oci.tar
second=$(cat .build-image/digest)
if [[ "$first" == "$second" ]] && cmp -s .build-image/tokengate.oci.tar .build-image/again.oci.tar; then
  echo "ok - same digest twice: $first (and the same archive bytes)"
else
  echo "FAIL - not reproducible: $first, then $second"; exit 1
fi
phase "Kubernetes manifests (offline schema validation)"
scripts/k8s-validate.sh
phase "all passed"
