/// Why a command got no reply. Every command ends in exactly one reply or one of these.
public struct RedisError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// No usable connection: connect refused or timed out (`connectTimeout`), name not
        /// resolved, TLS handshake or certificate refused, handshake rejected (AUTH, SELECT),
        /// connection reset or closed, the client backing off after such a failure, too many
        /// commands pending, or the client closed; through Sentinel also no master found or
        /// the master replaced (`-READONLY`, `-LOADING`), in a cluster no slot map or a slot
        /// redirected twice.
        /// A command sent on a connection that then broke may or may not have run.
        case unavailable
        /// The oldest unanswered command waited longer than `commandTimeout`; the connection
        /// was dropped, so these commands may or may not have run.
        case timeout
        /// The server sent something the reply parser rejects, or the command cannot be sent
        /// on a shared pipelined connection (see `RedisCommand.refusal(for:)`), or `Redis`
        /// cannot route it: keys in different cluster slots (CROSSSLOT), a key index outside
        /// the arguments, a command whose keys it does not know.
        case protocolError
    }

    public let kind: Kind
    /// What happened, with the server's address; never a password.
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "redis \(kind): \(message)" }
}
