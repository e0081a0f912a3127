/// A failure of Reactor's C-facing setup (listening, TLS contexts, connections), with a
/// message for the log.
public struct ReactorError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
