import Yams

/// Identity assertions as a module: the gateway's own signing keys (`identity_assertion_keys`,
/// published at the JWKS path), the route option's section, and each worker's signer and cache
/// (`IdentityAssertions`), which the identity headers ask for a route's assertion.
enum IdentityAssertionsModule: GatewayModule {
    static let key: ConfigKeyDoc? = ConfigKeyDoc(
        name: "identity_assertion_keys", type: "list of paths to private keys (JWK or PEM)", defaultText: "`[]`",
        defaultCheck: nil)
    static let sections = [ConfigSection.identityAssertion]
    static let unset: [AssertionKey] = []

    static func read(_ node: Node, _ cfg: GatewayConfig, _ r: ConfigReader) -> [AssertionKey] {
        ConfigParser.assertionKeys(node, r)
    }

    static func makeService(_ shared: NoModuleShared, _ context: ModuleContext) -> IdentityAssertions {
        IdentityAssertions()
    }
}

extension IdentityAssertions: ModuleService {}

extension ConfigSection {
    static let identityAssertion = ConfigSection("routes[].identity_assertion") {
        IdentityAssertionConfig.keyTable.docs
    }
}

extension GatewayConfig {
    /// `identity_assertion_keys`: the gateway's own signing keys for identity assertions (the
    /// first signs, all are published at the JWKS path).
    var assertionKeys: [AssertionKey] { self[module: IdentityAssertionsModule.self] }
}

extension WorkerServices {
    /// Signed identity assertions (route option `identity_assertion`), cached per caller.
    var assertions: IdentityAssertions { modules[IdentityAssertionsModule.self] }
}
