import Testing

@testable import Gateway

/// `grpc-timeout` as gRPC over HTTP/2 spells it: 1–8 digits and one unit.
@Suite("gRPC: the grpc-timeout header")
struct GRPCTimeoutTests {
    @Test func everyUnit() {
        #expect(GRPCTimeout.seconds("2H") == 7200)
        #expect(GRPCTimeout.seconds("3M") == 180)
        #expect(GRPCTimeout.seconds("10S") == 10)
        #expect(GRPCTimeout.seconds("250m") == 0.25)
        #expect(GRPCTimeout.seconds("1500u") == 0.0015)
        #expect(GRPCTimeout.seconds("99999999n")! > 0.0999 && GRPCTimeout.seconds("99999999n")! < 0.1)
        #expect(GRPCTimeout.seconds("0S") == 0)
    }

    @Test func whatTheSpecDoesNotAllowIsNoDeadline() {
        for bad in ["", "S", "5", "123456789S", "1.5S", "-1S", "5s", "5 S", " 5S", "5SS", "١S", "5h", "+5S"] {
            #expect(GRPCTimeout.seconds(bad) == nil, "\(bad)")
        }
    }
}
