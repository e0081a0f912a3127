internal import CEvent
internal import CShim

/// A view of one libevent header list (`struct evkeyvalq`). Not owning: the list belongs to
/// the request it came from, and the view is valid only while that request is.
public struct HeaderList {
    let queue: UnsafeMutablePointer<evkeyvalq>

    /// Copies every header for which `keep(name)` is true into `other`, C string to C string
    /// (no Swift strings on the request path).
    public func copy(to other: HeaderList, where keep: (HeaderName) -> Bool) {
        var kv = tg_headers_first(queue)
        while let entry = kv {
            if keep(HeaderName(pointer: entry.pointee.key)) {
                evhttp_add_header(other.queue, entry.pointee.key, entry.pointee.value)
            }
            kv = tg_headers_next(entry)
        }
    }

    /// Whether every header name is an RFC 9110 §5.1 token. evhttp keeps whitespace before
    /// the colon as part of the name ("Host : x"), which RFC 9112 §5.1 says to reject: such
    /// names would slip past every name comparison and mean something else upstream.
    public var allNamesAreTokens: Bool {
        var kv = tg_headers_first(queue)
        while let entry = kv {
            if !HeaderList.isToken(entry.pointee.key) { return false }
            kv = tg_headers_next(entry)
        }
        return true
    }

    /// All values of `name` (case-insensitive), in order.
    public func values(_ name: String) -> [String] {
        var out: [String] = []
        var kv = tg_headers_first(queue)
        while let entry = kv {
            if strcasecmp(entry.pointee.key, name) == 0 { out.append(String(cString: entry.pointee.value)) }
            kv = tg_headers_next(entry)
        }
        return out
    }

    static func isToken(_ p: UnsafePointer<CChar>) -> Bool {
        var q = p
        if q.pointee == 0 { return false }
        while q.pointee != 0 {
            let c = UInt8(bitPattern: q.pointee)
            let ok = (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39)
                || c == 0x21 || (c >= 0x23 && c <= 0x27) || c == 0x2a || c == 0x2b || c == 0x2d || c == 0x2e
                || c == 0x5e || c == 0x5f || c == 0x60 || c == 0x7c || c == 0x7e
            if !ok { return false }
            q += 1
        }
        return true
    }

    /// The first value of `name` (case-insensitive), if any.
    public func first(_ name: String) -> String? {
        guard let value = evhttp_find_header(queue, name) else { return nil }
        return String(cString: value)
    }

    /// How many headers named `name` (case-insensitive) there are.
    public func count(_ name: String) -> Int {
        var n = 0
        var kv = tg_headers_first(queue)
        while let entry = kv {
            if strcasecmp(entry.pointee.key, name) == 0 { n += 1 }
            kv = tg_headers_next(entry)
        }
        return n
    }

    /// Appends a header. libevent refuses values with CR/LF (header injection); so do we.
    @discardableResult
    public func add(_ name: String, _ value: String) -> Bool {
        evhttp_add_header(queue, name, value) == 0
    }

    /// Removes every header named `name`.
    public func removeAll(_ name: String) {
        while evhttp_remove_header(queue, name) == 0 {}
    }

    public func clear() { evhttp_clear_headers(queue) }

    /// The list as an `HTTP1Fields` section (a copy).
    var fields: HTTP1Fields {
        var out = HTTP1Fields()
        var kv = tg_headers_first(queue)
        while let entry = kv {
            let name = entry.pointee.key!, value = entry.pointee.value!
            out.append(name: UnsafeBufferPointer(start: UnsafeRawPointer(name).assumingMemoryBound(to: UInt8.self), count: strlen(name)),
                       value: UnsafeBufferPointer(start: UnsafeRawPointer(value).assumingMemoryBound(to: UInt8.self), count: strlen(value)))
            kv = tg_headers_next(entry)
        }
        return out
    }
}

/// A header name as libevent holds it (a C string valid during the callback that sees it),
/// compared without building a Swift string.
public struct HeaderName {
    let pointer: UnsafePointer<CChar>

    /// The name's bytes.
    public var bytes: UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: strlen(pointer))
    }

    public var string: String { String(cString: pointer) }

    /// An RFC 9110 token (no spaces, separators or controls).
    public var isToken: Bool { HeaderList.isToken(pointer) }
}
