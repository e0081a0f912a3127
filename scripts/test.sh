#!/usr/bin/env bash
# Command 2 of the README: set up, build, and run every test (unit and integration).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
echo "== build"
swift build --build-tests
echo "== unit tests (swift test)"
swift test --skip-build
echo "== integration tests (pytest: real tokengate + real upstream on 127.0.0.1)"
TOKENGATE_BIN="$(swift build --show-bin-path)/tokengate" python3 -m pytest -q tests/integration
