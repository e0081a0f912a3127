internal import CHiredis

/// hiredis' RESP reply parser (`redisReader`), fed the bytes of one connection. Owns the
/// reader and frees it in deinit; the replies it returns are copied into `RedisReply` and
/// freed at once. Loop-thread only.
///
/// hiredis 0.14 limits: arrays nest at most 7 deep (a deeper reply is a protocol error), and
/// array and bulk lengths from the server are trusted as sent (no `maxelements`): Redis is a
/// trusted peer here, the network path to it is not (later TLS).
final class RedisReader {
    private let reader: UnsafeMutablePointer<redisReader>

    init() throws(RedisError) {
        guard let reader = redisReaderCreate() else {
            throw RedisError(.protocolError, "redisReaderCreate failed (out of memory)")
        }
        self.reader = reader
    }

    deinit { redisReaderFree(reader) }

    /// Appends bytes read from the socket; hiredis copies them.
    func feed(_ bytes: UnsafeRawBufferPointer) throws(RedisError) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        if redisReaderFeed(reader, base.assumingMemoryBound(to: CChar.self), bytes.count) != REDIS_OK {
            throw RedisError(.protocolError, "reply reader: \(errorText)")
        }
    }

    /// The next complete reply, or nil until more bytes arrive. After a thrown error the
    /// stream cannot be resynchronised: the caller drops the connection.
    func next() throws(RedisError) -> RedisReply? {
        var raw: UnsafeMutableRawPointer?
        guard redisReaderGetReply(reader, &raw) == REDIS_OK else {
            throw RedisError(.protocolError, "reply reader: \(errorText)")
        }
        guard let raw else { return nil }
        defer { freeReplyObject(raw) }
        return RedisReader.convert(raw.assumingMemoryBound(to: redisReply.self))
    }

    private var errorText: String {
        withUnsafeBytes(of: reader.pointee.errstr) { buf in
            String(decoding: buf.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    /// Recursion depth is bounded by hiredis' nesting limit.
    private static func convert(_ reply: UnsafePointer<redisReply>) -> RedisReply {
        let r = reply.pointee
        switch r.type {
        case REDIS_REPLY_STATUS: return .status(String(decoding: bytes(r), as: UTF8.self))
        case REDIS_REPLY_ERROR: return .error(String(decoding: bytes(r), as: UTF8.self))
        case REDIS_REPLY_INTEGER: return .integer(Int64(r.integer))
        case REDIS_REPLY_STRING: return .bulk(Array(bytes(r)))
        case REDIS_REPLY_ARRAY:
            guard let elements = r.element else { return .array([]) }
            return .array(
                (0..<r.elements).map { i in
                    elements[i].map { convert($0) } ?? .null
                })
        default: return .null  // REDIS_REPLY_NIL, the only other type hiredis 0.14 makes
        }
    }

    private static func bytes(_ r: redisReply) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: r.str, count: r.str == nil ? 0 : r.len)
    }
}
