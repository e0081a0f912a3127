/// RESP2 replies through `RedisReader` (hiredis).
extension StreamFuzzEntry {
    struct Replies: Equatable {
        var replies: [RedisReply] = []
        var refusal: RedisError?
    }

    /// However the stream is cut, the reader gives the same replies, in order, then the same
    /// refusal (or none).
    public static func resp(_ data: [UInt8]) {
        let whole = readReplies(data, splits: [])
        for splits in splitPlans(data) {
            fuzzInvariant(readReplies(data, splits: splits) == whole, "RESP: the replies differ with the cut")
        }
    }

    static func readReplies(_ data: [UInt8], splits: [Int]) -> Replies {
        var out = Replies()
        do {
            let reader = try RedisReader()
            for chunk in HTTP1FuzzEntry.chunks(data, splits) {
                try Array(chunk).withUnsafeBytes { try reader.feed($0) }
                while let reply = try reader.next() { out.replies.append(reply) }
            }
        } catch let error as RedisError {
            out.refusal = error
        } catch {
            fatalError("RESP: the reader threw \(error)")
        }
        return out
    }
}
