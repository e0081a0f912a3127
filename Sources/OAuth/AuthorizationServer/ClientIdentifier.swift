public import JOSE

/// A `client_id` this AS knows how to find: the URL of a Client ID Metadata Document (fetched),
/// or an id its own registration endpoint issued (RFC 7591; looked up in its store). Any other
/// `client_id` names no client here.
public enum ClientIdentifier: Sendable, Equatable {
    case document(ClientIDURL)
    case registered(String)

    /// What registered ids start with: never an https URL, so never a document's.
    public static let registeredPrefix = "tg-dcr-"

    public init?(_ text: String) {
        if let url = try? ClientIDURL(text) {
            self = .document(url)
        } else if Self.isRegistered(text) {
            self = .registered(text)
        } else {
            return nil
        }
    }

    /// A new registered id: the prefix and 128 random bits.
    public static func newRegistered() -> ClientIdentifier {
        .registered(registeredPrefix + Base64URL.encode(SecureRandom.bytes(16)))
    }

    static func isRegistered(_ text: String) -> Bool {
        guard text.hasPrefix(registeredPrefix) else { return false }
        let rest = text.dropFirst(registeredPrefix.count)
        return rest.utf8.count == 22 && Base64URL.decode(String(rest))?.count == 16
    }

    public var text: String {
        switch self {
        case .document(let url): url.text
        case .registered(let id): id
        }
    }

    /// The host that vouches for the client (its document's): nil for a registered client,
    /// which nothing vouches for.
    public var host: String? {
        if case .document(let url) = self { return url.host }
        return nil
    }

    public var isRegistered: Bool {
        if case .registered = self { return true }
        return false
    }
}
