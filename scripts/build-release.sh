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
# - lld with scripts/link-order.txt, every function in a section of its own: the functions
#   the gateway runs laid out together at the front of .text, so the kernel's 64 KB fault-around maps them and little else
#   (scripts/link-order.sh says why and makes the list).
# - Relative relocations packed (`-z pack-relative-relocs`, DT_RELR, glibc 2.36): the
#   loader reads all of them at start, and as 24-byte RELA entries they were 2.3 MB of the
#   binary in every process's RSS; packed, a few kilobytes.
set -euo pipefail
cd "$(dirname "$0")/.."
product=tokengate
if [[ ${1:-} == --product ]]; then product=${2:?--product needs a name}; shift 2; fi
exec swift build -c release --product "$product" --static-swift-stdlib --scratch-path .build-release \
  -Xswiftc -cross-module-optimization -Xswiftc -use-ld=lld -Xswiftc -Xfrontend -Xswiftc -function-sections \
  -Xcc -ffunction-sections \
  -Xlinker --symbol-ordering-file="$PWD/scripts/link-order.txt" -Xlinker --no-warn-symbol-ordering \
  -Xlinker -z -Xlinker pack-relative-relocs "$@"
