import OAuth
import Yams

/// A `routes[]` entry as `RouteConfig.keyTable` reads it, row by row in table order: the
/// route its match, upstream and plain options are read into, its `auth:` mode, and the keys
/// whose meaning depends on that mode, kept as given. `ConfigParser.routes` then combines
/// those (the token and login settings, the protected resource, `mcp`, the exchange) and
/// `ConfigValidation.route` judges the keys against each other.
struct RouteDraft {
    var route: RouteConfig
    /// The entry's key path (`routes[N]`).
    let path: String
    /// The entry itself: where a missing key's problem points.
    let item: Node
    /// `match:` parsed: the options are read only then (their checks need the match, and a
    /// route without one is not built).
    var matched = false
    /// `auth:` as written (`none` when it was missing or wrong: a problem was reported).
    var auth = AuthMode.none
    var keys = RouteKeys()

    var hasSession: Bool { auth == .login || auth == .login_or_token }

    init(index: Int, path: String, item: Node) {
        route = RouteConfig(
            index: index, name: path, match: RouteMatch(host: nil, path: .prefix("/"), methods: nil), upstream: "")
        self.path = path
        self.item = item
    }
}

/// A key as given in a draft, when its reading waits for other keys (a route's token
/// settings wait for `auth:`) or its checks point at it: its node and its key path.
struct GivenNode {
    let node: Node
    let path: String

    /// The key's own name: the last part of its path.
    var name: Substring { path.split(separator: ".").last ?? Substring(path) }
}

/// The keys of a route that `RouteDraft` keeps as given.
struct RouteKeys {
    // Read once `auth:` is known: ConfigParser.tokenRoute, loginClients, protectedResource,
    // mcpRules, tokenExchange.
    var apiKeys: GivenNode?
    var issuers: GivenNode?
    var client: GivenNode?
    var clients: GivenNode?
    var require: GivenNode?
    var forwardToken: GivenNode?
    var tokenInQuery: GivenNode?
    var tokenInBody: GivenNode?
    var dpop: GivenNode?
    var closeAtTokenExpiry: GivenNode?
    var resource: GivenNode?
    var resourceName: GivenNode?
    var resourceDocumentation: GivenNode?
    var mcp: GivenNode?
    var tokenExchange: GivenNode?
    // Read by their rows; kept for the checks that point at them (ConfigValidation.route).
    var headers: GivenNode?
    var upgrades: GivenNode?
    var corsPreflight: GivenNode?
    var passAccessToken: GivenNode?
    var passIDToken: GivenNode?
    var identityAssertion: GivenNode?
    var certificateHeaders: GivenNode?

    /// The protected resource's keys (RFC 9728), in table order.
    var protectedResource: [GivenNode?] { [resource, resourceName, resourceDocumentation] }
}
