#!/usr/bin/env bash
# Command 2 of the README: set up, build, and run every test (unit, integration, and the
# container image's: built, run-tested, rebuilt for its digest; the Kubernetes manifests).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
echo "== format (swift format lint --strict, with the repo's .swift-format)"
# Fails on any line the formatter would change; fix with:
#   swift format -i -r -p Sources Tests fuzz/Sources Package.swift
swift format lint --strict -r -p Sources Tests fuzz/Sources Package.swift
echo "== build"
swift build --build-tests
echo "== unit tests (swift test)"
swift test --skip-build
echo "== unit tests under ThreadSanitizer (swift test --sanitize=thread; a data race fails the run)"
# Its own build folder: instrumented code never mixes with the build the integration tests use.
TSAN_OPTIONS="halt_on_error=1" swift build --build-tests --sanitize=thread --scratch-path .build-tsan
TSAN_OPTIONS="halt_on_error=1" swift test --skip-build --sanitize=thread --scratch-path .build-tsan
echo "== integration tests (pytest: real tokengate + real upstream on 127.0.0.1)"
TOKENGATE_BIN="$(swift build --show-bin-path)/tokengate" python3 -m pytest -q tests/integration
echo "== container image (scripts/image.sh: release build, root filesystem, OCI archive)"
scripts/image.sh
scripts/image-test.sh
echo "== image reproducibility: built again from the same binary and .deb files, offline"
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
scripts/k8s-validate.sh
