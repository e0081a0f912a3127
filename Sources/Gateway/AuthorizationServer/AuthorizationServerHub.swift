import Foundation

/// The process's count of what its authorization server did, for its metrics:
/// `tokengate_as_tokens_issued_total{grant}` and `tokengate_as_refusals_total{endpoint,error}`.
/// Workers count; the admin listener reads.
///
/// `@unchecked Sendable`: every mutable field changes only under `lock`.
final class AuthorizationServerHub: @unchecked Sendable {
    private let lock = NSLock()
    private var issuedCounts: [String: Int] = [:]
    private var refusalCounts: [String: Int] = [:]
    /// The clients given tokens, by `client_id`: how many, and when last (the status page).
    private var clients: [String: (tokens: Int, lastAt: Double)] = [:]
    static let clientsKept = 1_000
    /// Consents users gave and revoked, by `client_id` (as many clients as `clients` keeps).
    private var consents: [String: (given: Int, revoked: Int)] = [:]
    private(set) var configured = false

    func apply(_ config: GatewayConfig) { lock.withLock { configured = config.authorizationServer != nil } }

    func issued(grant: String, client: String, at now: Double) {
        lock.withLock {
            issuedCounts[grant, default: 0] += 1
            if clients[client] == nil, clients.count >= Self.clientsKept,
                let oldest = clients.min(by: { $0.value.lastAt < $1.value.lastAt })
            {
                clients[oldest.key] = nil
            }
            clients[client] = ((clients[client]?.tokens ?? 0) + 1, now)
        }
    }

    /// The clients given tokens since the start, the latest first, with the consents their
    /// users gave and revoked.
    var clientsSeen: [(clientID: String, tokens: Int, lastAt: Double, consents: (given: Int, revoked: Int))] {
        lock.withLock {
            clients.map { ($0.key, $0.value.tokens, $0.value.lastAt, consents[$0.key] ?? (0, 0)) }
        }.sorted { $0.lastAt > $1.lastAt }
    }

    func consented(client: String) {
        lock.withLock {
            guard consents[client] != nil || consents.count < Self.clientsKept else { return }
            consents[client, default: (0, 0)].given += 1
        }
    }

    func revokedConsent(client: String) {
        lock.withLock {
            guard consents[client] != nil || consents.count < Self.clientsKept else { return }
            consents[client, default: (0, 0)].revoked += 1
        }
    }

    func refused(endpoint: String, error: String) {
        lock.withLock { refusalCounts["\(endpoint)\u{0}\(error)", default: 0] += 1 }
    }

    var metricsText: String {
        let (on, issued, refused) = lock.withLock { (configured, issuedCounts, refusalCounts) }
        guard on else { return "" }
        var out = PrometheusText()
        out.labelled(
            "tokengate_as_tokens_issued_total", .counter,
            help: "Access tokens the authorization server issued, by grant.",
            label: "grant", issued.sorted(by: { $0.key < $1.key }).map { ($0.key, $0.value) })
        out.family(
            "tokengate_as_refusals_total", .counter,
            help: "Requests the authorization server refused, by endpoint and OAuth error.")
        for (key, n) in refused.sorted(by: { $0.key < $1.key }) {
            let parts = key.split(separator: "\u{0}", omittingEmptySubsequences: false).map(String.init)
            out.sample("tokengate_as_refusals_total", [("endpoint", parts[0]), ("error", parts[1])], n)
        }
        return out.text
    }
}
