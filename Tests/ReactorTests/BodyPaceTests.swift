import Testing

@testable import Reactor

/// `BodyPace.judge` with fixed times: the total deadline, the minimum rate after its grace
/// period, time held back by the gateway, and when the next look is due.
@Suite("BodyPace: body deadline and minimum rate")
struct BodyPaceTests {
    let pace = BodyPace(deadline: 60, minRate: 1024, grace: 5)

    @Test func offJudgesNothing() {
        let off = BodyPace()
        #expect(!off.isActive)
        #expect(off.judge(elapsed: 1e6, active: 1e6, bytes: 0) == .onPace(checkIn: nil))
    }

    @Test func graceFirstThenTheRateHolds() {
        // Nothing is judged inside the grace period: first look when it ends.
        #expect(pace.judge(elapsed: 0, active: 0, bytes: 0) == .onPace(checkIn: 5))
        #expect(pace.judge(elapsed: 4, active: 4, bytes: 0) == .onPace(checkIn: 1))
        // The pentest's client: one byte every 2 s is far under 1 KB/s at the end of grace.
        #expect(pace.judge(elapsed: 5, active: 5, bytes: 3) == .tooSlow)
        // Exactly on the floor passes; a byte under it does not.
        #expect(pace.judge(elapsed: 10, active: 10, bytes: 10 * 1024) == .onPace(checkIn: 1))
        #expect(pace.judge(elapsed: 10, active: 10, bytes: 10 * 1024 - 1) == .tooSlow)
    }

    @Test func nextLookIsWhenTheAverageCouldFallUnder() {
        // 100 KB after 10 s: with no more bytes, the average reaches 1 KB/s at 100 s, but the
        // deadline (60 s) comes first.
        #expect(pace.judge(elapsed: 10, active: 10, bytes: 100 * 1024) == .onPace(checkIn: 50))
        let noDeadline = BodyPace(minRate: 1024, grace: 5)
        #expect(noDeadline.judge(elapsed: 10, active: 10, bytes: 100 * 1024) == .onPace(checkIn: 90))
    }

    @Test func timeHeldBackByTheGatewayDoesNotCount() {
        // 20 s of 30 were the upstream's flow control: 10 active seconds at 1 KB/s is on pace.
        #expect(pace.judge(elapsed: 30, active: 10, bytes: 10 * 1024) == .onPace(checkIn: 1))
        #expect(pace.judge(elapsed: 30, active: 30, bytes: 10 * 1024) == .tooSlow)
    }

    @Test func deadlineIsTotalTime() {
        // However fast: a body still arriving at the deadline is cut, paused time included.
        #expect(pace.judge(elapsed: 60, active: 1, bytes: 1 << 30) == .pastDeadline)
        #expect(pace.judge(elapsed: 59, active: 59, bytes: 1 << 30) == .onPace(checkIn: 1))
        let deadlineOnly = BodyPace(deadline: 2, minRate: 0)
        #expect(deadlineOnly.isActive)
        #expect(deadlineOnly.judge(elapsed: 0.5, active: 0.5, bytes: 0) == .onPace(checkIn: 1.5))
    }
}
