import JOSE

/// The status page's authorization server: its issuer, and the clients it gave tokens to
/// since the start (by their metadata document URL or registered id), how many and when last,
/// and how many consents their users gave and revoked (on their own page,
/// `/oauth2/as/consents`) since the start.
struct AuthorizationServerSection {
    struct ASClientRow: Sendable {
        var clientID: String
        var tokens: Int
        var lastAt: Double
        var consentsGiven = 0
        var consentsRevoked = 0
    }

    /// nil: the config has no authorization server.
    let asIssuer: String?
    let asClients: [ASClientRow]

    init(_ config: GatewayConfig, hub: AuthorizationServerHub?) {
        asIssuer = config.authorizationServer?.issuer
        asClients =
            asIssuer == nil
            ? []
            : (hub?.clientsSeen ?? []).map {
                ASClientRow(
                    clientID: $0.clientID, tokens: $0.tokens, lastAt: $0.lastAt, consentsGiven: $0.consents.given,
                    consentsRevoked: $0.consents.revoked)
            }
    }

    var section: StatusSection { StatusSection(name: "authorization_server", json: json, html: html) }

    var html: String {
        guard let issuer = asIssuer else { return "" }
        let e = LoginPages.escape
        var out = "<h2>Authorization server</h2><p>Issuer: \(e(issuer))</p>"
        guard !asClients.isEmpty else { return out + "<p>No client has been given a token since the start.</p>" }
        out += "<table id=\"as-clients\"><tr><th>Client</th><th>Tokens</th><th>Consents given</th>"
        out += "<th>Consents revoked</th><th>Last</th></tr>"
        for c in asClients {
            out += "<tr><td>\(e(c.clientID))</td><td>\(c.tokens)</td><td>\(c.consentsGiven)</td>"
            out += "<td>\(c.consentsRevoked)</td>"
            out += "<td>\(e(StatusReport.timestamp(c.lastAt).string ?? ""))</td></tr>"
        }
        return out + "</table>"
    }

    var json: JSONValue {
        guard let issuer = asIssuer else { return .null }
        return .object(
            JSONObject([
                "issuer": .string(issuer),
                "clients": .array(
                    asClients.map { c in
                        .object(
                            JSONObject([
                                "client_id": .string(c.clientID), "tokens": StatusReport.number(c.tokens),
                                "consents_given": StatusReport.number(c.consentsGiven),
                                "consents_revoked": StatusReport.number(c.consentsRevoked),
                                "last_token_at": StatusReport.timestamp(c.lastAt)
                            ]))
                    })
            ]))
    }
}

/// The workers hold no part of the section: the hub is the process's.
struct AuthorizationServerWorkerStatus: ModuleStatus {
    mutating func add(_ other: AuthorizationServerWorkerStatus) {}
    func section(_ config: GatewayConfig) -> StatusSection? { AuthorizationServerSection(config, hub: nil).section }
}
