import Testing

@testable import Reactor

/// An HTTP/2 stream's request side (`HTTP2Stream.RequestState`) driven without a session:
/// the header block, a stream error before and after the start, the start once, and the
/// gateway's exchange opened and ended once. The handler that acts on it is in the h2
/// integration tests (conformance, MadeYouReset, the exchange cap) and HTTP2ExchangeLimitTests.
@Suite("HTTP/2 stream: request state")
struct HTTP2StreamRequestStateTests {
    typealias State = HTTP2Stream.RequestState

    @Test func theHeaderBlockEndsOnce() {
        var state = State.receivingHeaders
        #expect(!state.headersComplete && !state.started)
        let first = state.headerBlockEnded()
        // A second block is the trailer section, not a new head.
        let second = state.headerBlockEnded()
        #expect(first && !second && state == .headersComplete && state.headersComplete)
    }

    @Test func aCompleteHeadStartsOnceThenItsExchangeOpensAndEndsOnce() {
        var state = State.headersComplete
        let started = state.start()
        let again = state.start()
        #expect(started && !again && state == .started && state.started)
        state.exchangeOpened()
        #expect(state == .exchanging && state.started)
        let ended = state.exchangeEnded()
        let endedAgain = state.exchangeEnded()
        #expect(ended && !endedAgain && state == .started)
    }

    @Test func aHeadStillArrivingStartsOnlyToBeRefused() {
        // The header bomb: its 431 goes before the block ends; until the block ends its fields
        // are still the head's (decoded unread) and the header timeout still holds it.
        var state = State.receivingHeaders
        let started = state.start()
        #expect(started && state == .refusedMidBlock && state.started && !state.headersComplete)
        let ended = state.headerBlockEnded()
        #expect(!ended && state == .started && state.headersComplete)
        let again = state.start()
        #expect(!again)
    }

    @Test func aStreamErrorBeforeTheStartMeansNoStart() {
        for (before, afterHeaders) in [(State.receivingHeaders, false), (.headersComplete, true)] {
            var state = before
            state.streamError()
            let started = state.start()
            #expect(state == .errored(afterHeaders: afterHeaders) && !started && !state.started)
            // The header timeout holds it while its block has not ended.
            #expect(state.headersComplete == afterHeaders)
            let ended = state.headerBlockEnded()
            #expect(!ended && state == .errored(afterHeaders: true))
        }
    }

    @Test func aStreamErrorAfterTheStartChangesNothing() {
        var open = State.exchanging
        open.streamError()
        #expect(open == .exchanging)
        var answered = State.started
        answered.streamError()
        #expect(answered == .started)
    }

    @Test func anExchangeNeverOpenedDoesNotEnd() {
        var refused = State.headersComplete
        _ = refused.start()
        let ended = refused.exchangeEnded()
        #expect(!ended && refused == .started)
        var errored = State.errored(afterHeaders: true)
        errored.exchangeOpened()
        #expect(errored == .errored(afterHeaders: true))
    }
}
