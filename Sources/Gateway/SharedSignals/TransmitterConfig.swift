import Foundation
import OAuth
import Yams

/// `shared_signals.NAME`: a Shared Signals transmitter (SSF 1.0) whose events end its
/// subjects' tokens and sessions here: where its metadata is (`issuer`), whose tokens its
/// events are about (`issuers`), where it pushes (RFC 8935, `endpoint_url`), the `aud` its
/// SETs carry, how the gateway calls its endpoints, which events it asks for, and how long
/// a revocation stands. docs/shared-signals.md.
struct TransmitterConfig: Sendable {
    var name: String
    /// The transmitter's issuer URL: its metadata is at `/.well-known/ssf-configuration`
    /// before the issuer's path (SSF 1.0 §7.2.1), and its SETs' `iss`.
    var issuer = ""
    /// The `issuers:` entries whose tokens and sessions its events name, and their `iss` URLs.
    var issuers: [String] = []
    var issuerURLs: Set<String> = []
    /// Those entries by each `iss` they accept (their `issuer` and `issuer_aliases`).
    var issuerNames: [String: [String]] = [:]
    /// How SETs come: pushed to `endpoint_url` (RFC 8935), or polled from the stream's poll
    /// endpoint (RFC 8936).
    var delivery = Delivery.push
    /// Poll delivery: the wait before the next poll after one that brought nothing.
    var pollInterval = 1.0
    /// Push delivery's URL (RFC 8935): the transmitter posts here; the gateway serves its path.
    var endpointURL = ""
    var endpointPath = ""
    /// The `aud` its SETs must carry: `endpoint_url`'s origin unless given (for Google's RISC,
    /// one of the `issuers`' audiences: the app's OAuth client IDs).
    var audience = ""
    var audiences: Set<String> = []
    /// `ssf` (SSF 1.0 streams) or `google-risc` (Google's own RISC stream API).
    var profile = Profile.ssf
    var auth = TransmitterAuth.none
    /// The events asked for; each has the effect docs/shared-signals.md gives it.
    var events = Set(SecurityEventType.configNames)
    /// How long a revocation stands after its last event: longer than any token or session
    /// it could refuse lives.
    var revocationTTL = 86_400.0

    enum Profile: String, Sendable {
        case ssf
        case googleRISC = "google-risc"

        /// Google's RISC transmitter: its issuer, and the `aud` of its management API's tokens.
        static let googleIssuer = "https://accounts.google.com"
        static let googleManagementAudience =
            "https://risc.googleapis.com/google.identity.risc.v1beta.RiscManagementService"
    }

    enum Delivery: String, Sendable {
        case push, poll

        /// The delivery method's URI in a stream's `delivery` (SSF 1.0 §6.1).
        var method: String { self == .push ? "urn:ietf:rfc:8935" : "urn:ietf:rfc:8936" }
    }

    /// How the gateway authenticates to the transmitter's endpoints.
    enum TransmitterAuth: Sendable {
        case none
        /// `bearer_file`: a token the transmitter issued, read from a file.
        case bearerFile(String)
        /// `client`: a token from the client credentials grant, as one of `clients:`.
        case client(ClientCredentialsGrant)
        /// `service_account_file`: a Google service account's key file; each call carries a
        /// token the gateway signs with it (Google's RISC management API).
        case serviceAccount(GoogleServiceAccount)
    }

    /// The CAEP/RISC URIs of `events`, as a stream asks for them (`events_requested`); Google
    /// names its own (and sends no `token-claims-change` or `credential-compromise`).
    var eventURIs: [String] {
        let names = SecurityEventType.configNames.filter { events.contains($0) }
        switch profile {
        case .ssf: return names.compactMap(SecurityEventType.uri(forConfigName:))
        case .googleRISC: return names.flatMap(SecurityEventType.googleURIs(forConfigName:))
        }
    }
}

extension TransmitterConfig {
    /// The keys of `shared_signals.NAME`, each said once with its reference row and read in
    /// this order into a `TransmitterDraft`; ConfigParser.sharedSignals then judges them
    /// together (the delivery's own keys, what a profile defaults).
    static let keyTable = ConfigKeyTable<TransmitterDraft, ConfigContext>([
        .init(
            "issuer", type: "https URL (http only for a loopback host)",
            default: "none: required (`google-risc`: `https://accounts.google.com`)"
        ) { d, n, p, c in
            d.issuer = n
            guard let s = c.r.string(n, path: p) else { return }
            if securedURL(s) == nil {
                c.r.problem(p, n, "\"\(s)\" is not an https URL (http only for a loopback host)")
            } else {
                d.t.issuer = s.hasSuffix("/") ? String(s.dropLast()) : s
            }
        },
        .init("issuers", type: "list of `issuers:` names", default: "none: required") { d, n, p, c in
            d.issuers = n
            for (i, issuer) in ConfigParser.exchangeNames(n, path: p, c.r).enumerated() {
                guard let config = c.cfg.issuers[issuer] else {
                    c.r.problem(
                        "\(p)[\(i)]", n,
                        "\"\(issuer)\" is not defined; defined: \(c.cfg.issuers.keys.sorted().joined(separator: ", "))")
                    continue
                }
                d.t.issuers.append(issuer)
                for url in [config.issuer] + config.issuerAliases {
                    d.t.issuerURLs.insert(url)
                    d.t.issuerNames[url, default: []].append(issuer)
                }
            }
        },
        .init(
            "delivery", type: "`push` (RFC 8935) or `poll` (RFC 8936)", default: "`push`",
            checkedBy: { ConfigDefault.firstValue($0) == "push" }
        ) { d, n, p, c in
            d.delivery = n
            guard let s = c.r.string(n, path: p) else { return }
            if let delivery = Delivery(rawValue: s) {
                d.t.delivery = delivery
            } else {
                c.r.problem(p, n, "must be push or poll")
            }
        },
        .init(
            "poll_interval", type: "duration, at least 100ms", default: "`1s`",
            checkedBy: ConfigDefault.duration(TransmitterConfig(name: "").pollInterval)
        ) { d, n, p, c in
            d.pollInterval = n
            guard let v = c.r.duration(n, path: p) else { return }
            if v < 0.1 { c.r.problem(p, n, "must be at least 100ms") } else { d.t.pollInterval = v }
        },
        .init(
            "endpoint_url", type: "https URL the transmitter pushes to (http only for a loopback host)",
            default: "none: required for push"
        ) { d, n, p, c in
            d.endpointURL = n
            guard let s = c.r.string(n, path: p) else { return }
            guard let url = securedURL(s), url.path.hasPrefix("/"), url.path.count > 1 else {
                c.r.problem(p, n, "\"\(s)\" is not an https URL with a path (http only for a loopback host)")
                return
            }
            d.t.endpointURL = s
            d.t.endpointPath = url.path
            if d.t.audience.isEmpty { d.t.audience = origin(of: s) }
        },
        .init("audience", type: "string", default: "`endpoint_url`'s origin; required for poll") { d, n, p, c in
            d.audience = n
            guard let s = c.r.string(n, path: p) else { return }
            if s.isEmpty { c.r.problem(p, n, "is empty") } else { d.t.audience = s }
        },
        .init("auth", type: "`{ bearer_file: PATH }` or `{ client: NAME, scope: … }`", default: "none") {
            d, n, p, c in d.t.auth = ConfigParser.transmitterAuth(n, path: p, c)
        },
        .init("events", type: "list of event names", default: "all seven (below)") { d, n, p, c in
            guard let items = c.r.sequence(n, path: p) else { return }
            var events: Set<String> = []
            for (i, item) in items.enumerated() {
                guard let s = c.r.string(item, path: "\(p)[\(i)]") else { continue }
                if SecurityEventType.configNames.contains(s) {
                    events.insert(s)
                } else {
                    c.r.problem(
                        "\(p)[\(i)]", item,
                        "\"\(s)\" is not an event; one of \(SecurityEventType.configNames.joined(separator: ", "))")
                }
            }
            if events.isEmpty { c.r.problem(p, n, "names no event") } else { d.t.events = events }
        },
        .init(
            "revocation_ttl", type: "duration", default: "`24h`",
            checkedBy: ConfigDefault.duration(TransmitterConfig(name: "").revocationTTL)
        ) { d, n, p, c in
            guard let v = c.r.duration(n, path: p) else { return }
            if v < 60 { c.r.problem(p, n, "must be at least 1m") } else { d.t.revocationTTL = v }
        },
        .init(
            "profile", type: "`ssf` or `google-risc`", default: "`ssf`",
            checkedBy: { ConfigDefault.firstValue($0) == "ssf" }
        ) { d, n, p, c in
            guard let s = c.r.string(n, path: p) else { return }
            if let profile = Profile(rawValue: s) {
                d.t.profile = profile
            } else {
                c.r.problem(p, n, "must be ssf or google-risc")
            }
        }
    ])

    /// The keys of `shared_signals.NAME.auth`, read in this order into a `TransmitterAuthDraft`
    /// (a grant's keys by the rows of `UpstreamCredentialsConfig.grantKeyTable`), for
    /// ConfigParser.transmitterAuth to hold to one form.
    static let authKeyTable = ConfigKeyTable<TransmitterAuthDraft, ConfigReader>([
        .init("bearer_file", type: "path of a file holding a token", default: "none") { d, n, p, r in
            d.bearerFile = GivenKey(value: r.string(n, path: p), node: n)
        },
        UpstreamCredentialsConfig.grantClient.lifted(
            into: \.grant, type: "a `clients:` name with an `issuer`", default: "none"),
        UpstreamCredentialsConfig.grantScope.lifted(into: \.grant, type: "space-separated scopes", default: "none"),
        .init(
            "service_account_file", type: "path of a Google service account's JSON key file", default: "none"
        ) { d, n, p, r in
            d.serviceAccountFile = GivenKey(value: r.string(n, path: p), node: n)
        },
        UpstreamCredentialsConfig.grantTokenEndpoint.lifted(
            into: \.grant, type: "http(s) URL", default: "the client's issuer's metadata")
    ])

    /// `s` as an https URL, or http on a loopback host (tests, a sidecar's own transmitter).
    static func securedURL(_ s: String) -> ConfigValues.ParsedURL? {
        guard let url = ConfigValues.url(s) else { return nil }
        if url.scheme == "https" { return url }
        let loopback = url.host == "localhost" || url.host == "::1" || url.host.hasPrefix("127.")
        return loopback ? url : nil
    }

    /// `scheme://host[:port]` of a URL the parser accepted.
    static func origin(of s: String) -> String {
        guard let end = s.range(of: "://") else { return s }
        let rest = s[end.upperBound...]
        return String(s[..<end.upperBound]) + String(rest.prefix { $0 != "/" })
    }
}

extension SecurityEventType {
    /// The URIs Google's RISC stream asks for under a config name: its own names for the same
    /// effects (`SecurityEventType.init(uri:)` maps them back).
    static func googleURIs(forConfigName name: String) -> [String] {
        switch name {
        case "session-revoked": [risc + "sessions-revoked", oauth + "tokens-revoked"]
        case "credential-change": [risc + "account-credential-change-required"]
        case "account-disabled", "account-enabled", "account-purged": [risc + name]
        default: []
        }
    }

    /// The URI a stream asks for under a config name (CAEP's and RISC's current names).
    static func uri(forConfigName name: String) -> String? {
        switch name {
        case "session-revoked", "credential-change", "token-claims-change": caep + name
        case "account-disabled", "account-enabled", "account-purged", "credential-compromise": risc + name
        default: nil
        }
    }
}

/// `shared_signals.NAME` as its table reads it: the transmitter, and the keys its checks
/// point at.
struct TransmitterDraft {
    var t: TransmitterConfig
    /// The entry itself: where a missing key's problem points.
    let node: Node
    var issuer: Node?
    var issuers: Node?
    var delivery: Node?
    var pollInterval: Node?
    var endpointURL: Node?
    var audience: Node?
}

/// `shared_signals.NAME.auth` as its table reads it: each form's keys as given.
struct TransmitterAuthDraft {
    var bearerFile: GivenKey<String>?
    var serviceAccountFile: GivenKey<String>?
    var grant = ClientCredentialsDraft()
}
