// swift-tools-version:6.0
// libFuzzer target for tokengate's JOSE parsers (JWS parse + verify, JWK / JWK Set parse).
// A separate package so the main build never needs -sanitize=fuzzer; see README.md.
import PackageDescription

let package = Package(
    name: "tokengate-fuzz",
    platforms: [.macOS(.v14)],
    dependencies: [.package(name: "tokengate", path: "..")],
    targets: [
        .target(name: "CFuzzerDriver"),
        .executableTarget(name: "JOSEFuzz",
                          dependencies: ["CFuzzerDriver", .product(name: "JOSE", package: "tokengate")]),
    ]
)
