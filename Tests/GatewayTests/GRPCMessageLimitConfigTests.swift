import Reactor
import Testing

@testable import Gateway

/// `limits.grpc_max_message_size` as check-config reads it, and what bounds a proxied body
/// (`RequestBodyLimit`): a gRPC call's messages one by one, every other body whole.
@Suite("gRPC message size: config and body limits")
struct GRPCMessageLimitConfigTests {
    static func parse(_ limits: String) -> Result<GatewayConfig, ConfigError> {
        let yaml = """
            listen: 127.0.0.1:1
            limits: \(limits)
            upstreams: { app: { url: "http://127.0.0.1:2" } }
            routes: [{ match: { path_prefix: / }, upstream: app, auth: none }]
            """
        return ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 1)
    }

    @Test func defaultIsGRPCsOwnFourMebibytes() throws {
        #expect(try Self.parse("{}").get().limits.grpcMaxMessageSize == 4_194_304)
        #expect(try Self.parse("{ grpc_max_message_size: 16MB }").get().limits.grpcMaxMessageSize == 16 << 20)
        #expect(try Self.parse("{ grpc_max_message_size: 1 }").get().limits.grpcMaxMessageSize == 1)
        #expect(try Self.parse("{ grpc_max_message_size: 1GB }").get().limits.grpcMaxMessageSize == 1 << 30)
    }

    @Test(arguments: ["0", "0B", "1025MB", "2GB"])
    func outOfRangeIsRefused(value: String) {
        guard case .failure(let e) = Self.parse("{ grpc_max_message_size: \(value) }") else {
            Issue.record("\(value) must be refused")
            return
        }
        #expect(
            e.problems.map(\.description) == [
                "line 2: limits.grpc_max_message_size: must be from 1B to 1GB (gRPC's own default is 4MB)"
            ])
    }

    @Test func aNonSizeIsRefused() {
        guard case .failure(let e) = Self.parse("{ grpc_max_message_size: big }") else {
            Issue.record("a non-size must be refused")
            return
        }
        #expect(
            e.problems.map(\.description) == [
                "line 2: limits.grpc_max_message_size: \"big\" is not a size; write e.g. 512KB, 4MB"
            ])
    }

    static func fields(_ contentType: String) -> HTTP1Fields { HTTP1Fields([("Content-Type", contentType)]) }

    @Test func aGRPCCallStreamsUnboundedInTotalAndBoundedPerMessage() {
        var limits = Limits()
        limits.grpcMaxMessageSize = 1000
        let streamed = RequestBodyLimit.of(Self.fields("application/grpc+proto"), limits: limits, readWhole: false)
        #expect(streamed == StreamedBodyLimit(total: .max, messages: GRPCMessageLimit(maxMessage: 1000)))
        let web = RequestBodyLimit.of(Self.fields("application/grpc-web"), limits: limits, readWhole: false)
        #expect(web.messages == GRPCMessageLimit(maxMessage: 1000))
        let text = RequestBodyLimit.of(Self.fields("application/grpc-web-text"), limits: limits, readWhole: false)
        #expect(text.messages == GRPCMessageLimit(maxMessage: 1000, text: true))
    }

    /// Read whole first: the larger of max_body_size and one message at its limit on the wire.
    @Test func aGRPCBodyReadWholeKeepsATotal() {
        var limits = Limits()
        limits.maxBodySize = 4 << 20
        limits.grpcMaxMessageSize = 4 << 20
        #expect(
            RequestBodyLimit.of(Self.fields("application/grpc"), limits: limits, readWhole: true).total == (4 << 20) + 5
        )
        // base64: 4 characters for every 3 bytes of the frame.
        #expect(
            RequestBodyLimit.of(Self.fields("application/grpc-web-text"), limits: limits, readWhole: true).total
                == ((4 << 20) + 5 + 2) / 3 * 4)
        limits.maxBodySize = 64 << 20
        #expect(RequestBodyLimit.of(Self.fields("application/grpc"), limits: limits, readWhole: true).total == 64 << 20)
    }

    @Test(arguments: ["application/json", "application/grpcx", "text/plain", ""])
    func otherBodiesKeepMaxBodySize(contentType: String) {
        #expect(RequestBodyLimit.of(Self.fields(contentType), limits: Limits(), readWhole: false) == .server)
        #expect(RequestBodyLimit.of(Self.fields(contentType), limits: Limits(), readWhole: true) == .server)
    }
}
