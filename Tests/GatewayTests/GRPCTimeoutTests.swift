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

    @Test func whatTheSpecDoesNotAllowIsRefused() {
        for bad in ["", "S", "5", "123456789S", "1.5S", "-1S", "5s", "5 S", " 5S", "5SS", "١S", "5h", "+5S"] {
            #expect(GRPCTimeout.seconds(bad) == nil, "\(bad)")
        }
    }

    /// The gateway's own value (a capped deadline): the finest unit that fits 8 digits,
    /// rounded up, and read back as at least what it stands for.
    static let caps: [(Double, String)] = [
        (30, "30000000u"), (0.05, "50000000n"), (300, "300000m"), (259_200, "259200S"), (0, "0n")
    ]

    @Test(arguments: caps)
    func capsAreWrittenInTheFinestUnitThatFits(seconds: Double, value: String) {
        #expect(GRPCTimeout.value(seconds) == value)
        #expect(GRPCTimeout.seconds(value)! >= seconds)
    }
}
