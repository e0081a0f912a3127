/// RFC 9110's field syntax, read by bytes, for fields this process builds from values it was
/// given (a token from an AS, a file's contents, a claim): one rule, so that no CR, LF or NUL
/// from any source ends a header line early and starts another (request splitting).
///
/// Bytes, not Characters: in Swift `"\r\n"` is one Character, equal to neither `"\r"` nor
/// `"\n"`, so a Character-wise test for either lets the pair through.
public enum FieldSyntax {
    /// field-value (RFC 9110 §5.5): field-vchar (VCHAR, obs-text), SP and HTAB, nothing else.
    public static func isFieldValue(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in bytes.allSatisfy(HTTP1Bytes.isFieldValueByte) }
    }

    /// field-name (RFC 9110 §5.1): a token, at least one tchar.
    public static func isFieldName(_ text: some StringProtocol) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy(HTTP1Bytes.isTchar)
    }

    /// A `Name: value` line as libcurl takes it: a field name, a colon, then a field value.
    public static func isFieldLine(_ line: String) -> Bool {
        guard let colon = line.utf8.firstIndex(of: HTTP1Bytes.colon) else { return false }
        let name = line.utf8[..<colon]
        let value = line.utf8[line.utf8.index(after: colon)...]
        return !name.isEmpty && name.allSatisfy(HTTP1Bytes.isTchar) && value.allSatisfy(HTTP1Bytes.isFieldValueByte)
    }

    /// A URL to hand a client library (RFC 3986 §2: no byte a URI may not hold raw): visible
    /// ASCII only, so no space, control, DEL or raw non-ASCII byte splits the request line.
    public static func isRequestURL(_ url: String) -> Bool {
        !url.isEmpty && url.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }
}
