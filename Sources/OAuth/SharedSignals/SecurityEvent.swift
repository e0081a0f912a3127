public import JOSE

/// The event types a gateway acts on: CAEP's and RISC's about sessions, credentials and
/// accounts, SSF 1.0's own about the stream, and Google's RISC names for the same (mapped to
/// the type whose effect they have). Any other type is `other`: understood as an event,
/// counted, and without effect.
public enum SecurityEventType: Sendable, Hashable {
    case sessionRevoked
    case credentialChange
    case tokenClaimsChange
    case accountDisabled
    case accountEnabled
    case accountPurged
    case credentialCompromise
    /// SSF 1.0 §8.1.4: the answer to a verification request, carrying its `state`.
    case verification
    /// SSF 1.0 §8.1.5: the transmitter changed the stream's status.
    case streamUpdated
    case other(String)

    public static let caep = "https://schemas.openid.net/secevent/caep/event-type/"
    public static let risc = "https://schemas.openid.net/secevent/risc/event-type/"
    public static let ssf = "https://schemas.openid.net/secevent/ssf/event-type/"
    public static let oauth = "https://schemas.openid.net/secevent/oauth/event-type/"

    /// The type its URI names (an event's member name in `events`, RFC 8417 §2.2).
    public init(uri: String) {
        let known: [String: SecurityEventType] = [
            Self.caep + "session-revoked": .sessionRevoked,
            Self.caep + "credential-change": .credentialChange,
            Self.caep + "token-claims-change": .tokenClaimsChange,
            Self.risc + "account-disabled": .accountDisabled,
            Self.risc + "account-enabled": .accountEnabled,
            Self.risc + "account-purged": .accountPurged,
            Self.risc + "credential-compromise": .credentialCompromise,
            Self.ssf + "verification": .verification,
            Self.ssf + "stream-updated": .streamUpdated,
            // RISC's older and Google's names, for the same effects.
            Self.risc + "sessions-revoked": .sessionRevoked,
            Self.oauth + "tokens-revoked": .sessionRevoked,
            Self.risc + "account-credential-change-required": .credentialChange,
            Self.risc + "verification": .verification
        ]
        self = known[uri] ?? .other(uri)
    }

    /// The name config files use (`shared_signals.NAME.events`), nil for stream events and
    /// types without effect.
    public var configName: String? {
        switch self {
        case .sessionRevoked: "session-revoked"
        case .credentialChange: "credential-change"
        case .tokenClaimsChange: "token-claims-change"
        case .accountDisabled: "account-disabled"
        case .accountEnabled: "account-enabled"
        case .accountPurged: "account-purged"
        case .credentialCompromise: "credential-compromise"
        case .verification, .streamUpdated, .other: nil
        }
    }

    /// The names a config may list, in the order docs give them.
    public static let configNames = [
        "session-revoked", "credential-change", "token-claims-change", "account-disabled", "account-enabled",
        "account-purged", "credential-compromise"
    ]
}

/// One event of a Security Event Token: its type, its subject (the SET's `sub_id`, or the
/// event's own `subject` as older transmitters send it), when it happened, and the members the
/// stream events carry.
public struct SecurityEvent: Sendable, Equatable {
    public let type: SecurityEventType
    /// The event type's URI as the SET named it (for the log and metrics, cut short).
    public let uri: String
    public let subject: SubjectIdentifier?
    /// CAEP's `event_timestamp`: when the event happened (tokens issued before it are
    /// revoked); nil when the event gives none (the SET's `iat` stands in).
    public let timestamp: Int64?
    /// A verification event's `state` (SSF 1.0 §8.1.4.1).
    public let state: String?
    /// A stream-updated event's `status`: `enabled`, `paused` or `disabled` (§8.1.5).
    public let status: String?
}
