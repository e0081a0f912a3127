/// One reply as Redis sends it (RESP2, the only protocol this client speaks).
///
/// An `-ERR …` reply is a value here, not a failure: the command reached the server and the
/// server answered, so the caller decides what the error means (a `WRONGTYPE` is a bug, a
/// `NOSCRIPT` a cue to load the script).
public enum RedisReply: Sendable, Equatable {
    /// A simple string (`+OK`).
    case status(String)
    /// An error reply (`-ERR …`), its text without the leading `-`.
    case error(String)
    /// An integer reply (`:42`).
    case integer(Int64)
    /// A bulk string, byte for byte.
    case bulk([UInt8])
    /// A null bulk string or null array (`$-1`, `*-1`): for example GET of a missing key, or
    /// `SET … NX` when the key exists.
    case null
    /// A multi-bulk reply.
    case array([RedisReply])
}
