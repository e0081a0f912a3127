import Yams

extension ConfigParser {
    /// The routes toward an upstream with `credentials`: nothing else of the route may set the
    /// credential's field, or two values would go (or the gateway would pick one silently).
    static func upstreamCredentialRoutes(_ cfg: GatewayConfig, routesNode: Node?, _ r: ConfigReader) {
        let nodes = routesNode?.sequence.map(Array.init) ?? []
        for route in cfg.routes {
            guard let credentials = cfg.upstreams[route.upstream]?.credentials else { continue }
            let p = "routes[\(route.index)]"
            let node = route.index < nodes.count ? nodes[route.index] : nil
            let field = credentials.fieldName
            let because = "upstreams.\(route.upstream).credentials sends \(field) itself"
            if credentials.replacesAuthorization {
                let tokens = route.options.auth.tokenRoute
                if tokens?.forwardToken == true {
                    r.problem("\(p).forward_token", node, "\(because): the caller's token cannot go too")
                }
                if tokens?.tokenExchange != nil {
                    r.problem("\(p).token_exchange", node, "\(because): an exchanged token cannot go too")
                }
                if tokens?.dpop?.forwardProof == true {
                    r.problem(
                        "\(p).dpop.forward_proof", node, "\(because): a proof for the caller's token cannot go with it")
                }
                if route.options.forwarding.passAccessToken?.lowercased() == "authorization" {
                    r.problem("\(p).forward_token", node, "\(because): the session's token cannot go too")
                }
            }
            let forwarding = route.options.forwarding
            let set = forwarding.identityHeaders.headerNames.map { $0.lowercased() } + forwarding.ownHeaders
            if set.contains(field) {
                r.problem(p, node, "\(because); the route sets \(field) too: name another field for one of them")
            }
        }
    }
}
