// swift-tools-version:6.0
// libFuzzer targets for every tokengate parser of untrusted input: JOSE (JWS, JWK), the
// HTTP/1.1 parsers, the HTTP/2 frame input, WebSocket frames and RESP replies, OAuth's return
// targets, htu and callback queries, the gateway's paths, hosts, routes, cookies and session cookie, and the
// JSON-RPC message of an MCP call, Shared Signals' Security Event Tokens, Envoy's ext_authz CheckRequest, HTTP Message Signatures.
// A separate package so the main build never needs -sanitize=fuzzer; see README.md.
import PackageDescription

func fuzzTarget(_ name: String, _ product: String) -> Target {
    .executableTarget(name: name, dependencies: ["CFuzzerDriver", .product(name: product, package: "tokengate")])
}

let package = Package(
    name: "tokengate-fuzz",
    platforms: [.macOS(.v14)],
    dependencies: [.package(name: "tokengate", path: "..")],
    targets: [
        .target(name: "CFuzzerDriver"),
        fuzzTarget("JOSEFuzz", "JOSE"),
        fuzzTarget("HTTP1Fuzz", "Reactor"),
        fuzzTarget("StreamFuzz", "Reactor"),
        fuzzTarget("H2Fuzz", "Reactor"),
        fuzzTarget("OAuthFuzz", "OAuth"),
        fuzzTarget("SETFuzz", "OAuth"),
        fuzzTarget("ASFuzz", "OAuth"),
        fuzzTarget("RouteFuzz", "Gateway"),
        fuzzTarget("LoginFuzz", "Gateway"),
        fuzzTarget("MCPFuzz", "Gateway"),
        fuzzTarget("ExtAuthzFuzz", "ExtAuthz"),
        fuzzTarget("SignatureFuzz", "MessageSignatures")
    ]
)
