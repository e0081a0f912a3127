import JOSE

/// The status page's authorization server: its issuer, and the clients it gave tokens to
/// since the start (by their metadata document URL), how many and when last.
extension StatusReport {
    struct ASClientRow: Sendable {
        var clientID: String
        var tokens: Int
        var lastAt: Double
    }

    var authorizationServerSection: String {
        guard let issuer = asIssuer else { return "" }
        let e = LoginPages.escape
        var out = "<h2>Authorization server</h2><p>Issuer: \(e(issuer))</p>"
        guard !asClients.isEmpty else { return out + "<p>No client has been given a token since the start.</p>" }
        out += "<table id=\"as-clients\"><tr><th>Client</th><th>Tokens</th><th>Last</th></tr>"
        for c in asClients {
            out += "<tr><td>\(e(c.clientID))</td><td>\(c.tokens)</td>"
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
                                "last_token_at": Self.timestamp(c.lastAt)
                            ]))
                    })
            ]))
    }
}
