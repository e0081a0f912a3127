#!/usr/bin/env bash
# Command 2 of the README: set up, build, and run every test (unit, integration, and the
# container image's: built, run-tested, rebuilt for its digest; the Kubernetes manifests).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase prints when it starts, so a slow CI run shows where the time went.
phase() { echo "== $* (at ${SECONDS}s)"; }
phase "setup (Debian packages, Python test requirements)"
scripts/setup.sh --test
phase "format (swift format lint --strict, with the repo's .swift-format)"
# Fails on any line the formatter would change; fix with:
#   swift format -i -r -p Sources Tests fuzz/Sources Package.swift
swift format lint --strict -r -p Sources Tests fuzz/Sources Package.swift
phase "release build: the binary the integration tests and the container image use"
# Its own scratch path (.build-release), shared with scripts/image.sh. The integration tests
# run against this binary, the one that ships, so no separate debug build is needed.
swift build -c release --product tokengate --static-swift-stdlib --scratch-path .build-release
swift build -c release --product tokengate-http1-parse --static-swift-stdlib --scratch-path .build-release
phase "unit tests under ThreadSanitizer (swift test --sanitize=thread; a data race fails the run)"
# One debug build, instrumented: every unit test runs once, with TSan watching, in its own
# build folder. (A plain `swift test` runs the same tests without the race checks.)
TSAN_OPTIONS="halt_on_error=1" swift build --build-tests --sanitize=thread --scratch-path .build-tsan
TSAN_OPTIONS="halt_on_error=1" swift test --skip-build --sanitize=thread --scratch-path .build-tsan
phase "integration tests (pytest: the release binary + real upstreams and AS on 127.0.0.1)"
TOKENGATE_BIN="$PWD/.build-release/release/tokengate" python3 -m pytest -q tests/integration
phase "container image (scripts/image.sh: the release binary above, root filesystem, OCI archive)"
scripts/image.sh --binary .build-release/release/tokengate
scripts/image-test.sh
phase "image reproducibility: built again from the same binary and .deb files, offline"
# The release build is not repeated (CI time): this checks everything after it. Two fresh
# release builds differ in the binary itself (deploy/README.md, "Reproducible").
first=$(cat .build-image/digest)
scripts/image.sh --binary .build-release/release/tokengate --debs .build-image/debs \
  --out .build-image/again.oci.tar | tail -n 6
second=$(cat .build-image/digest)
if [[ "$first" == "$second" ]] && cmp -s .build-image/tokengate.oci.tar .build-image/again.oci.tar; then
  echo "ok - same digest twice: $first (and the same archive bytes)"
else
  echo "FAIL - not reproducible: $first, then $second"; exit 1
fi
phase "Kubernetes manifests (offline schema validation)"
scripts/k8s-validate.sh
phase "all passed"
