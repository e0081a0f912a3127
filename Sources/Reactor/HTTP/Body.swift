internal import CEvent

/// A run of body bytes in a libevent buffer (not owning). Moving it into another buffer
/// (`ServerRequest.sendChunk`) is zero-copy.
public struct BodyChunk {
    let buffer: OpaquePointer
    public var count: Int { evbuffer_get_length(buffer) }
}

/// An owned, growable byte buffer for bodies that the gateway writes itself (error pages,
/// metrics). Owns its evbuffer.
public final class OwnedBuffer {
    let buffer: OpaquePointer
    public init() { buffer = evbuffer_new() }
    public convenience init(_ text: String) { self.init(); append(text) }
    public func append(_ text: String) {
        var text = text
        text.withUTF8 { _ = evbuffer_add(buffer, $0.baseAddress, $0.count) }
    }
    public var count: Int { evbuffer_get_length(buffer) }
    deinit { evbuffer_free(buffer) }
}
