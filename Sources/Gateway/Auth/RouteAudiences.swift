import JOSE
import OAuth

/// The audiences a token route accepts, per issuer: the issuer's `audiences`, but for any
/// route's `resource`; on a route with a `resource`, that resource. A resource is an audience
/// on its own route only: a token an AS issued for the MCP server at `https://gw.example.com/mcp` (RFC 8707
/// §2, "the authorization server ... audience-restrict[s] issued access tokens to the
/// resource") opens that route, and never another route of the same issuer, even where the
/// issuer's `audiences` list the resource too (RFC 9068 §4: the resource server "MUST validate
/// that the aud claim contains a resource indicator value corresponding to an identifier the
/// resource server expects for itself").
///
/// A route with a `resource` requires it in `aud` (AuthRefusals, which says so in its
/// challenge), and that is all it requires: here it admits every token its issuer's check did.
struct RouteAudiences {
    /// Issuer name → the audiences accepted here; nil on a route with a `resource`.
    private let byIssuer: [String: Set<String>]?

    /// `resources`: every route's `resource` (`resources(of:)`, made once per config).
    init(route tokens: TokenRouteConfig, config: GatewayConfig, resources: Set<String>) {
        guard tokens.resource == nil else {
            byIssuer = nil
            return
        }
        var byIssuer: [String: Set<String>] = [:]
        for name in tokens.issuers {
            byIssuer[name] = Set((config.issuers[name]?.audiences ?? []).filter { !resources.contains($0) })
        }
        self.byIssuer = byIssuer
    }

    /// Every route's `resource`, by the issuers the route accepts.
    static func resources(of config: GatewayConfig) -> [String: [String]] {
        var out: [String: [String]] = [:]
        for route in config.routes {
            guard let tokens = route.options.auth.tokenRoute, let uri = tokens.resource?.identifier.uri else {
                continue
            }
            for name in tokens.issuers where out[name]?.contains(uri) != true { out[name, default: []].append(uri) }
        }
        return out
    }

    /// Whether the token's `aud` names an audience of this route for its issuer. An
    /// introspection answer without `aud` passes, as it does the issuer's check (RFC 7662
    /// §2.2: `aud` is optional); a route with a `resource` still requires it (AuthRefusals).
    func admits(_ token: VerifiedAccessToken) -> Bool {
        guard let byIssuer, let aud = token.claims[Self.aud] else { return true }
        let accepted = byIssuer[token.issuer] ?? []
        switch aud {
        case .string(let s): return accepted.contains(s)
        case .array(let values): return values.contains { $0.string.map(accepted.contains) == true }
        default: return false
        }
    }

    private static let aud = JSONObject.Name("aud")
}
