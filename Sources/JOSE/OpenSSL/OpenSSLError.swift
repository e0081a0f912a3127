internal import COpenSSL

/// Drains OpenSSL's thread-local error queue (all of it, so no stale entry is blamed on a
/// later call) into a JOSEError.
enum OpenSSLError {
    static func make(_ what: String) -> JOSEError { make(.crypto, what) }

    static func make(_ code: JOSEError.Code, _ what: String) -> JOSEError {
        var parts: [String] = []
        while case let e = ERR_get_error(), e != 0 {
            var buf = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(e, &buf, buf.count)
            parts.append(buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        }
        return JOSEError(code, parts.isEmpty ? what : "\(what): \(parts.joined(separator: "; "))")
    }

    static func clear() { ERR_clear_error() }
}
