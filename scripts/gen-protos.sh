#!/usr/bin/env bash
# Regenerates Sources/ExtAuthz/Generated/ (Envoy's messages: proto/envoy, proto/google) and
# Sources/OTLP/Generated/ (proto/opentelemetry) from proto/ (see proto/README.md): Debian's protoc
# (protobuf-compiler) and protoc-gen-swift built from apple/swift-protobuf at the version
# Package.swift names, in a scratch checkout. Not part of a build or of CI: run it after
# changing a .proto, and commit what it writes.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v protoc >/dev/null || { echo "protoc not found: apt-get install protobuf-compiler" >&2; exit 2; }
version=$(sed -n 's|.*apple/swift-protobuf.*from: "\([0-9.]*\)".*|\1|p' Package.swift)
[ -n "$version" ] || { echo "no swift-protobuf version in Package.swift" >&2; exit 2; }
work=${PROTOC_GEN_SWIFT_DIR:-/tmp/tokengate-protoc-gen-swift-$version}
if [ ! -x "$work/.build/release/protoc-gen-swift" ]; then
    rm -rf "$work"
    git clone -q -b "$version" https://github.com/apple/swift-protobuf "$work"
    (cd "$work" && swift build -c release --product protoc-gen-swift)
fi
# generate MODULE DIR...: the messages under proto/DIR into Sources/MODULE/Generated.
generate() {
    local out=Sources/$1/Generated
    shift
    rm -rf "$out" && mkdir -p "$out"
    protoc --plugin="$work/.build/release/protoc-gen-swift" -I proto --swift_out="$out" \
        --swift_opt=Visibility=Internal --swift_opt=FileNaming=PathToUnderscores \
        $(cd proto && find "$@" -name '*.proto' | sort)
    ls "$out"
}
generate ExtAuthz envoy google
generate OTLP opentelemetry
# (protoc-gen-swift marks each file `swift-format-ignore-file`: the lint skips them.)
