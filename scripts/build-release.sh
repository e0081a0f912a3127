#!/usr/bin/env bash
# The release build the container image ships, the integration tests run and the bench
# measures, made one way everywhere: `scripts/build-release.sh [--product P]` (default
# tokengate), into .build-release; prints nothing but the build's own output.
#
# - --static-swift-stdlib: the Swift runtime linked in, so its calls skip the PLT and its
#   libraries keep no pages of their own resident (1-2 % of CPU and 5 MB of RSS against the
#   shared-library build).
# - -cross-module-optimization, for every module the build compiles, the packages' included:
#   their generic functions can then be specialized where they are called. Without it the
#   Structured Fields parser of swift-http-structured-headers runs unspecialized across the
#   module boundary (generic metadata looked up per call), and a route that verifies an
#   RFC 9421 signature spends about 17 µs a request in it (bench/README.md, "Signatures").
#   Instruction counts on the plain and bearer routes are unchanged by it (callgrind).
set -euo pipefail
cd "$(dirname "$0")/.."
product=tokengate
if [[ ${1:-} == --product ]]; then product=${2:?--product needs a name}; shift 2; fi
exec swift build -c release --product "$product" --static-swift-stdlib --scratch-path .build-release \
  -Xswiftc -cross-module-optimization "$@"
