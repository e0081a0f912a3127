extension String {
    /// The text a C function wrote into a NUL-terminated buffer (an OpenSSL or hiredis error
    /// message): up to the first NUL, or the whole buffer if it has none. Invalid UTF-8 is
    /// repaired rather than trusted.
    public init(nulTerminated buffer: [CChar]) {
        let end = buffer.firstIndex(of: 0) ?? buffer.endIndex
        self.init(decoding: buffer[..<end].lazy.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
