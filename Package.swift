// swift-tools-version:6.0
// tokengate — a reverse-proxy token gateway on libevent, OpenSSL and libcurl.
// Layers (arrows point down only): tokengate → Gateway → (OAuth, MessageSignatures →) JOSE,
// Reactor → C shims.
import PackageDescription

let strictC: [SwiftSetting] = [.enableUpcomingFeature("InternalImportsByDefault")]

let package = Package(
    name: "tokengate",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "tokengate", targets: ["tokengate"]),
        // For fuzz/ (a separate package, built with -sanitize=fuzzer) to depend on by path.
        .library(name: "JOSE", targets: ["JOSE"]),
        // Likewise for the Reactor's stream parsers' fuzz targets (fuzz/Sources/HTTP1Fuzz,
        // StreamFuzz), OAuth's (OAuthFuzz) and the gateway's (RouteFuzz, LoginFuzz): each
        // drives the public entry in its module's Fuzz/ folder.
        .library(name: "Reactor", targets: ["Reactor"]),
        .library(name: "OAuth", targets: ["OAuth"]),
        .library(name: "MessageSignatures", targets: ["MessageSignatures"]),
        .library(name: "Gateway", targets: ["Gateway"]),
        .library(name: "ExtAuthz", targets: ["ExtAuthz"]),
        .library(name: "OTLP", targets: ["OTLP"]),
        // JOSE verify throughput against raw OpenSSL (bench/jose/run.sh).
        .executable(name: "tokengate-jose-bench", targets: ["JOSEBench"]),
        // Test-only: what HTTP1RequestParser makes of requests on stdin, for the differential
        // test against llhttp (IntegrationTests/security/test_http1_differential.py).
        .executable(name: "tokengate-http1-parse", targets: ["HTTP1ParseTool"])
    ],
    dependencies: [
        .package(url: "https://github.com/jpsim/Yams", from: "5.0.1"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-http-structured-headers", from: "1.7.0")
    ],
    targets: [
        // C libraries as the system provides them (Debian: libevent-dev, libssl-dev,
        // libcurl4-openssl-dev, libhiredis-dev, libnghttp2-dev).
        .systemLibrary(
            name: "CEvent", pkgConfig: "libevent_openssl",
            providers: [.apt(["libevent-dev"])]),
        .systemLibrary(
            name: "COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),
        // No pkgConfig for hiredis: its .pc adds -D_FILE_OFFSET_BITS=64, which SwiftPM drops
        // with a warning on every build; <hiredis/hiredis.h> is found in /usr/include anyway.
        .systemLibrary(name: "CHiredis", providers: [.apt(["libhiredis-dev"])]),
        // HTTP/2 framing, HPACK and stream states (Debian: libnghttp2-dev).
        .systemLibrary(
            name: "CNghttp2", pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"])]),
        // The few C entry points Swift cannot call directly (macros, variadics, TAILQ walks).
        .target(name: "CShim", dependencies: ["CEvent", "COpenSSL", "CCurl"]),

        // Cryptographic core: JWS/JWK/JWT on OpenSSL's EVP API. No I/O.
        .target(name: "JOSE", dependencies: ["CShim", "COpenSSL"], swiftSettings: strictC),
        // OAuth protocol rules, no I/O: token extraction and challenges (RFC 6750), and, as
        // they land, access-token policy, DPoP proofs, PKCE, request objects, ID tokens.
        .target(name: "OAuth", dependencies: ["JOSE"], swiftSettings: strictC),
        // HTTP Message Signatures (RFC 9421) and Content-Digest (RFC 9530), no I/O: the signature
        // base, its fields read as Structured Fields, verification and signing through JOSE.
        .target(
            name: "MessageSignatures",
            dependencies: [
                "JOSE", .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers")
            ],
            swiftSettings: strictC + [.swiftLanguageMode(.v6)]),
        // Event loops, HTTP server and upstream client, Redis client, signals, timers.
        // Knows nothing of OAuth.
        .target(
            name: "Reactor", dependencies: ["CShim", "CEvent", "CCurl", "CHiredis", "CNghttp2"],
            swiftSettings: strictC + [.swiftLanguageMode(.v6)]),
        // Envoy's external authorization messages (ext_authz v3): a CheckRequest read into the
        // attributes the gateway judges, a CheckResponse written from its verdict. The
        // messages are generated from proto/ by scripts/gen-protos.sh and committed.
        .target(
            name: "ExtAuthz", dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")],
            swiftSettings: [.swiftLanguageMode(.v6)]),
        // OpenTelemetry's trace export (OTLP/HTTP): W3C trace context, finished spans, and the
        // ExportTraceServiceRequest they are sent in (generated from proto/opentelemetry by
        // scripts/gen-protos.sh and committed).
        .target(
            name: "OTLP", dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")],
            swiftSettings: [.swiftLanguageMode(.v6)]),
        // Config, router, request pipeline, metrics, logs.
        .target(
            name: "Gateway",
            dependencies: [
                "Reactor", "JOSE", "OAuth", "MessageSignatures", "ExtAuthz", "OTLP",
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers")
            ],
            swiftSettings: strictC + [.swiftLanguageMode(.v6)]),
        .executableTarget(
            name: "tokengate",
            dependencies: [
                "Gateway", "JOSE", "Reactor",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log")
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]),
        // Micro-benchmark, not a test: full JWT verify and the DPoP proof check vs OpenSSL's raw
        // EVP_DigestVerify; `--profile` runs one scenario alone, for callgrind.
        .executableTarget(
            name: "JOSEBench", dependencies: ["JOSE", "OAuth", "COpenSSL"],
            path: "Sources/JOSEBench"),
        .executableTarget(name: "HTTP1ParseTool", dependencies: ["Reactor"], path: "Sources/HTTP1ParseTool"),

        .testTarget(
            name: "JOSETests", dependencies: ["JOSE", "OAuth", "COpenSSL", "TestSupport"],
            resources: [.copy("Fixtures")]),
        // What several test targets share: a real redis-server for the Redis-backed tests, the
        // fuzz corpora the replay suites run.
        .target(name: "TestSupport", dependencies: ["Reactor"], path: "Tests/TestSupport"),
        .testTarget(name: "GatewayTests", dependencies: ["Gateway", "Reactor", "ExtAuthz", "TestSupport"]),
        .testTarget(name: "ReactorTests", dependencies: ["Reactor", "TestSupport"]),
        .testTarget(name: "OAuthTests", dependencies: ["OAuth", "TestSupport"]),
        .testTarget(
            name: "MessageSignaturesTests",
            dependencies: [
                "MessageSignatures", "JOSE", "TestSupport",
                .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers")
            ]),
        .testTarget(name: "ExtAuthzTests", dependencies: ["ExtAuthz", "TestSupport"]),
        .testTarget(name: "OTLPTests", dependencies: ["OTLP", "TestSupport"])
    ]
)
