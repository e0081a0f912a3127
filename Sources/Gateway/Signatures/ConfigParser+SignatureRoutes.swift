import Yams

extension ConfigParser {
    /// What a route's signature settings need of the rest of the route, once every route is
    /// read: a `client_jwks` policy needs the route's access tokens (the client is theirs);
    /// a FAPI 2.0 issuer's routes verify with a FAPI 2.0 policy; and a FAPI 2.0 policy's
    /// routes sign their answers by the profile's rules too.
    static func signatureRoutes(
        _ routes: inout [RouteConfig], issuers: [String: IssuerConfig], routesNode: Node?, _ r: ConfigReader
    ) {
        let nodes = routesNode.flatMap { $0.sequence.map(Array.init) } ?? []
        let verifyKey = SignatureStage.routeKey.name
        let signKey = ResponseSigningStage.routeKey.name
        for i in routes.indices {
            let index = routes[i].index
            let node = index < nodes.count ? nodes[index] : nil
            let p = "routes[\(index)]"
            let policy = routes[i].options.settings[SignatureStage.Settings.self]
            if let policy {
                let tokens = routes[i].options.auth.tokenRoute
                if case .clientJWKS = policy.keys, tokens == nil {
                    r.problem(
                        "\(p).\(verifyKey)", node?[verifyKey],
                        "signatures.\(policy.name) takes the keys of the access token's client (client_jwks): "
                            + "the route must take access tokens (auth: bearer, dpop or token)")
                }
                let held = (tokens?.issuers ?? []).filter { issuers[$0]?.profile == .fapi2 }
                if !held.isEmpty, policy.profile != .fapi2 {
                    r.problem(
                        "\(p).\(verifyKey)", node?[verifyKey],
                        "issuers of profile: fapi2 (\(held.sorted().joined(separator: ", "))) take signed requests "
                            + "by FAPI 2.0 Message Signing's rules: give signatures.\(policy.name) profile: fapi2")
                }
            }
            guard policy?.profile == .fapi2,
                var signing = routes[i].options.settings[ResponseSigningStage.Settings.self],
                signing.profile == nil
            else { continue }
            fapi2ResponseSigning(&signing, node: node?[signKey], path: "\(p).\(signKey)", r)
            routes[i].options.settings[ResponseSigningStage.Settings.self] = signing
        }
    }
}
