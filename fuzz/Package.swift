// swift-tools-version:6.0
// libFuzzer targets for tokengate's JOSE parsers (JWS parse + verify, JWK / JWK Set parse)
// and its HTTP/1.1 request and response parsers.
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
        .executableTarget(name: "HTTP1Fuzz",
                          dependencies: ["CFuzzerDriver", .product(name: "Reactor", package: "tokengate")]),
    ]
)
