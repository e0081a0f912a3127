/// gRPC's Length-Prefixed-Message (PROTOCOL-HTTP2.md): "Compressed-Flag Message-Length
/// Message", a flag byte (0: not compressed), a 4-byte big-endian length, then the message.
/// A unary call's request body is exactly one, and so is its answer's.
public enum GRPCMessage {
    /// Why a unary request body is not one uncompressed message, with the gRPC status it
    /// is answered with.
    public struct Problem: Error, Equatable, Sendable {
        public let status: GRPCStatus
        public let message: String
    }

    /// The bytes of a message's prefix.
    public static let prefixBytes = 5

    /// The one message of a unary call's request body. A compressed message needs a
    /// `grpc-encoding` the server offered (it offers none: UNIMPLEMENTED, as gRPC's own
    /// servers answer an encoding they lack); a body that is not exactly one whole message
    /// (cut short, or followed by more) is no unary request (INVALID_ARGUMENT).
    public static func unary(_ body: [UInt8]) -> Result<ArraySlice<UInt8>, Problem> {
        guard body.count >= prefixBytes else {
            return .failure(Problem(status: .invalidArgument, message: "the request body is not a gRPC message"))
        }
        switch body[0] {
        case 0: break
        case 1:
            return .failure(Problem(status: .unimplemented, message: "compressed messages are not accepted"))
        default:
            return .failure(Problem(status: .invalidArgument, message: "the message's compressed flag is not 0 or 1"))
        }
        let length = Int(body[1]) << 24 | Int(body[2]) << 16 | Int(body[3]) << 8 | Int(body[4])
        guard length == body.count - prefixBytes else {
            return .failure(
                Problem(status: .invalidArgument, message: "the request body is not exactly one gRPC message"))
        }
        return .success(body[prefixBytes...])
    }

    /// `message` with its prefix (not compressed).
    public static func framed(_ message: [UInt8]) -> [UInt8] {
        precondition(message.count <= Int(UInt32.max), "a gRPC message's length fits in 32 bits")
        let n = UInt32(message.count)
        var out: [UInt8] = [0, UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
        out.reserveCapacity(prefixBytes + message.count)
        out += message
        return out
    }
}
