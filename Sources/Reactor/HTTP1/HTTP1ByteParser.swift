/// What the request and response parsers share: fed bytes, they return how many they
/// consumed and at most one event (see `HTTP1RequestParser`'s contract).
public protocol HTTP1ByteParser {
    associatedtype Event
    mutating func parse(_ input: UnsafeRawBufferPointer) throws(HTTP1ParseError) -> (consumed: Int, event: Event?)
}

extension HTTP1ByteParser {
    /// `parse(_:)` over an array's bytes.
    public mutating func parse(_ input: [UInt8]) throws(HTTP1ParseError) -> (consumed: Int, event: Event?) {
        var result: Result<(consumed: Int, event: Event?), HTTP1ParseError>?
        input.withUnsafeBytes { buffer in
            result = Result { () throws(HTTP1ParseError) in try parse(buffer) }
        }
        return try result!.get()
    }
}
