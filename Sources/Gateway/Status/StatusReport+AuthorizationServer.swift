import JOSE

/// The status page's authorization server: its issuer, and the clients it gave tokens to
/// since the start (by their metadata document URL or registered id), how many and when last,
/// and how many consents their users gave and revoked (on their own page,
/// `/oauth2/as/consents`) since the start.
extension StatusReport {
    struct ASClientRow: Sendable {
        var clientID: String
        var tokens: Int
        var lastAt: Double
        var consentsGiven = 0
        var consentsRevoked = 0
    }

    var authorizationServerSection: String {
        guard let issuer = asIssuer else { return "" }
        let e = LoginPages.escape
        var out = "<h2>Authorization server</h2><p>Issuer: \(e(issuer))</p>"
        guard !asClients.isEmpty else { return out + "<p>No client has been given a token since the start.</p>" }
        out += "<table id=\"as-clients\"><tr><th>Client</th><th>Tokens</th><th>Consents given</th>"
        out += "<th>Consents revoked</th><th>Last</th></tr>"
        for c in asClients {
            out += "<tr><td>\(e(c.clientID))</td><td>\(c.tokens)</td><td>\(c.consentsGiven)</td>"
            out += "<td>\(c.consentsRevoked)</td>"
            out += "<td>\(e(Self.timestamp(c.lastAt).string ?? ""))</td></tr>"
        }
        return out + "</table>"
    }

    var authorizationServerJSON: JSONValue {
        guard let issuer = asIssuer else { return .null }
        return .object(
            JSONObject([
                "issuer": .string(issuer),
                "clients": .array(
                    asClients.map { c in
                        .object(
                            JSONObject([
                                "client_id": .string(c.clientID), "tokens": Self.number(c.tokens),
                                "consents_given": Self.number(c.consentsGiven),
                                "consents_revoked": Self.number(c.consentsRevoked),
                                "last_token_at": Self.timestamp(c.lastAt)
                            ]))
                    })
            ]))
    }
}
