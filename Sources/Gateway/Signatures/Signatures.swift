import Yams

/// Signed requests as a module: the `signatures:` verifiers, each worker's count of the
/// requests they refused, the profile step that fills in a FAPI 2.0 route's signature rules,
/// and `SignatureStage` on the routes that name a verifier (`verify_signature`).
enum Signatures: GatewayModule {
    static let key: ConfigKeyDoc? = ConfigKeyDoc(
        name: "signatures", type: "mapping: a policy's name to its verifier (below)", defaultText: "none",
        defaultCheck: nil)
    static let sections = [ConfigSection.signature, .signatureKeys, .signatureHeaders]
    static let unset: [String: SignaturePolicy] = [:]
    static let stages: [any ModuleStage.Type] = [SignatureStage.self]
    static let steps = [
        ConfigStep("signature routes", .profile) { cfg, top, r in
            ConfigParser.signatureRoutes(&cfg.routes, issuers: cfg.issuers, routesNode: top["routes"], r)
        }
    ]

    static func read(_ node: Node, _ cfg: GatewayConfig, _ r: ConfigReader) -> [String: SignaturePolicy] {
        ConfigParser.signatures(node, cfg, r)
    }

    static func makeService(_ shared: NoModuleShared, _ context: ModuleContext) -> SignatureRefusals {
        SignatureRefusals()
    }
}

/// One worker's requests that a `verify_signature` refused. Loop-thread only.
final class SignatureRefusals: ModuleService {
    private(set) var metrics = SignatureMetrics()

    func refused(policy: String, reason: String) { metrics.refused[policy + "\u{0}" + reason, default: 0] += 1 }
    func apply(_ config: GatewayConfig) {}
}

/// Requests refused by `verify_signature`, by policy and reason (`policy\0reason`).
struct SignatureMetrics: ModuleMetrics {
    var refused: [String: Int] = [:]

    mutating func add(_ other: SignatureMetrics) { refused.merge(other.refused, uniquingKeysWith: +) }

    func write(to out: inout PrometheusText) {
        out.family(
            "tokengate_signature_refusals_total", .counter,
            help: "Requests refused by verify_signature, by policy and reason.")
        for (key, n) in refused.sorted(by: { $0.key < $1.key }) {
            let parts = key.split(separator: "\u{0}", maxSplits: 1).map(String.init)
            out.sample("tokengate_signature_refusals_total", [("policy", parts[0]), ("reason", parts.last ?? "")], n)
        }
    }
}

/// Signed answers (`sign_response`) as a module: a route option, its section and its stage.
enum ResponseSigning: GatewayModule {
    static let sections = [ConfigSection.responseSign]
    static let stages: [any ModuleStage.Type] = [ResponseSigningStage.self]
}

extension ConfigSection {
    static let responseSign = ConfigSection("routes[].sign_response") { MessageSigningConfig.responseKeyTable.docs }
    static let signature = ConfigSection("signatures.NAME") { SignaturePolicy.keyTable.docs }
    static let signatureKeys = ConfigSection("signatures.NAME.keys") { SignaturePolicy.keysKeyTable.docs }
    static let signatureHeaders = ConfigSection("signatures.NAME.headers") { SignaturePolicy.headersKeyTable.docs }
}

extension GatewayConfig {
    /// `signatures:`: named HTTP Message Signature verifiers that routes name (`verify_signature`).
    var signatures: [String: SignaturePolicy] { self[module: Signatures.self] }
}
