/// Why a session store did not do what was asked: one case per distinct outcome, each with a
/// stable `code` for logs and tests to branch on; the text of a Redis reply or error is for
/// the log only (`description`).
enum SessionStoreError: Error, Equatable, CustomStringConvertible {
    /// The session was ended (logout) while this update was on its way.
    case ended
    /// Someone refreshed the session since this update's basis was read (and this is not the
    /// refresh holding the lease): writing it would put back older tokens.
    case superseded
    /// A session field is larger than a session may hold.
    case tooLarge
    /// A new session's random id is already in use (`SET NX` refused it).
    case idTaken
    /// The session was stored but its back-channel logout index was not.
    case notIndexed
    /// Redis answered something the store never asks for; the reply, for the log.
    case unexpectedReply(String)
    /// The store did not answer (down, timed out, connection lost); what happened, for the log.
    case unavailable(String)

    /// Stable: logs and tests match on it; new kinds get new codes.
    var code: String {
        switch self {
        case .ended: "ended"
        case .superseded: "superseded"
        case .tooLarge: "too_large"
        case .idTaken: "id_taken"
        case .notIndexed: "not_indexed"
        case .unexpectedReply: "unexpected_reply"
        case .unavailable: "unavailable"
        }
    }

    var description: String {
        switch self {
        case .ended: "session ended"
        case .superseded: "the session was refreshed elsewhere since it was read"
        case .tooLarge: "a session field is too large"
        case .idTaken: "session id taken"
        case .notIndexed: "the session could not be indexed"
        case .unexpectedReply(let reply): "unexpected Redis reply \(reply)"
        case .unavailable(let detail): detail
        }
    }
}
