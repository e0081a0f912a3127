internal import CHiredis

/// hiredis' RESP reply parser (`redisReader`), fed the bytes of one connection. Owns the
/// reader and frees it in deinit; the replies it returns are copied into `RedisReply` and
/// freed at once. Loop-thread only.
///
/// hiredis 0.14 limits: arrays nest at most 7 deep (a deeper reply is a protocol error); a
/// bulk string is read only once all its bytes are there. An array's element list, though,
/// is allocated as soon as its header names a count, and 0.14 has no `maxelements` (hiredis
/// 1.0.1 added it, for CVE-2021-32765): `*922337201\r\n` alone would ask for 7 GB. So the
/// count is bounded here (`maxElements`); a reply over it is refused as the protocol error
/// hiredis reports for a failed allocation ("Out of memory"), and the connection dropped.
final class RedisReader {
    private let reader: UnsafeMutablePointer<redisReader>

    /// More elements than any reply the gateway asks for holds (the largest: the session
    /// keys of one subject), and 8 MB of element pointers at most.
    static let maxElements: Int32 = 1 << 20

    init() throws(RedisError) {
        guard let reader = redisReaderCreateWithFunctions(boundedReplyFunctions) else {
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

/// hiredis' own reply constructors (those `redisReaderCreate` uses), read once from a reader.
private let hiredisReplyFunctions: redisReplyObjectFunctions = {
    guard let probe = redisReaderCreate() else { preconditionFailure("redisReaderCreate failed (out of memory)") }
    defer { redisReaderFree(probe) }
    return probe.pointee.fn.pointee
}()

/// hiredis' reply constructors with `createArray` refusing more than `maxElements`. Never
/// freed: every reader points at it (hiredis keeps the pointer, not a copy).
private nonisolated(unsafe) let boundedReplyFunctions: UnsafeMutablePointer<redisReplyObjectFunctions> = {
    let functions = UnsafeMutablePointer<redisReplyObjectFunctions>.allocate(capacity: 1)
    functions.initialize(to: hiredisReplyFunctions)
    functions.pointee.createArray = { task, elements in
        elements > RedisReader.maxElements ? nil : hiredisReplyFunctions.createArray(task, elements)
    }
    return functions
}()
