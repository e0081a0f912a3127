/// The PDP's decision for the last question a connection's token asked on its route, kept
/// on that token's `BearerMemo`: the next request on the connection that asks the same
/// question is answered from it, without building the question, digesting it or taking the
/// process cache's lock. Clients keep their connection and send one token to one resource
/// many times, so most kept decisions are answered here.
///
/// It stands for exactly what the process cache would answer, so it holds only while that
/// cannot differ:
/// - the memo itself fixes the token (so the subject and its properties), the route (so its
///   authorizer and template) and the config generation;
/// - the rest of the question is compared here: the authorizer, the method (`action`), the
///   host and path (the `resource`, and a template's variables come from the path), the
///   query when the authorizer sends it, and the client's address (`context.ip_address`,
///   which a trusted proxy may change per request);
/// - until the cache's own entry ends (`until`: the decision's `allow_ttl` or `deny_ttl`).
/// An MCP call asks about its tool, not its path: it is never kept here.
final class KeptDecision {
    enum Key: TokenMemoKey { typealias Value = KeptDecision }
    let authorizer: String
    let method: String
    let host: String
    let path: String
    /// The raw query, when the authorizer asks with it (`query: true`); nil otherwise.
    let query: String?
    let ip: String
    let decision: AuthZENDecision
    /// When the cache's entry ends, on the cache's clock.
    let until: Double

    init(
        authorizer: String, method: String, host: String, path: String, query: String?, ip: String,
        decision: AuthZENDecision, until: Double
    ) {
        self.authorizer = authorizer
        self.method = method
        self.host = host
        self.path = path
        self.query = query
        self.ip = ip
        self.decision = decision
        self.until = until
    }

    /// Whether this is the answer to the question these members ask, at `now`.
    func answers(
        authorizer: String, method: String, host: String, path: String, query: String?, ip: String, now: Double
    ) -> Bool {
        now < until && path == self.path && method == self.method && ip == self.ip && host == self.host
            && query == self.query && authorizer == self.authorizer
    }
}
