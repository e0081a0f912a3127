import Testing

@testable import Reactor

/// An upstream call's life (`UpstreamCallStateMachine`) driven without a socket: every
/// transition and the action it returns. The calls that act on them are in
/// UpstreamResponseTests, UpstreamRequestBodyTests, UpstreamContinueTests and the engine's
/// fault tests.
@Suite("Upstream call state machine")
struct UpstreamCallStateMachineTests {
    typealias Machine = UpstreamCallStateMachine

    /// A call connected, its request still going out.
    static func exchanging() -> Machine {
        var machine = Machine()
        machine.connecting()
        let connected = machine.connected()
        #expect(connected)
        return machine
    }

    /// A call whose whole request went out.
    static func sent() -> Machine {
        var machine = exchanging()
        _ = machine.written(bodyComplete: true, outputPending: false)
        return machine
    }

    // MARK: Connecting

    @Test func aNewCallIsNeitherConnectingNorExchanging() {
        let machine = Machine()
        #expect(machine.isNew && !machine.isConnecting && !machine.isExchanging && !machine.isFinished)
        #expect(machine.request == nil && machine.response == nil && !machine.owesResponse)
    }

    @Test func connectingThenConnectedStartsTheExchangeAfresh() {
        var machine = Machine()
        machine.connecting()
        #expect(machine.isConnecting && !machine.isExchanging && !machine.readsResponse)
        let connected = machine.connected()
        #expect(connected && machine.isExchanging && machine.readsResponse)
        #expect(machine.request == .sending && machine.response == .silent)
    }

    @Test func aLateConnectCallbackIsIgnored() {
        var machine = Self.exchanging()
        let again = machine.connected()
        #expect(!again)
        _ = machine.finish()
        let afterEnd = machine.connected()
        #expect(!afterEnd && machine.isFinished)
    }

    // MARK: Sending

    @Test func writtenWithTheBodyStillComingKeepsSending() {
        var machine = Self.exchanging()
        let action = machine.written(bodyComplete: false, outputPending: false)
        #expect(action == .none && machine.request == .sending && !machine.owesResponse)
    }

    @Test func writtenWholeIsSentAndStartsTheResponseDeadline() {
        var machine = Self.exchanging()
        let action = machine.written(bodyComplete: true, outputPending: false)
        #expect(action == .armRead && machine.requestSent && machine.owesResponse)
        let twice = machine.written(bodyComplete: true, outputPending: false)
        #expect(twice == .none)
    }

    @Test func aWriteThatLeftOutputQueuedIsNotTheEnd() {
        // A body resumed inside the write queued its rest, more than the socket took: the
        // request goes on sending (and its writes on flushing) until nothing is left.
        var machine = Self.exchanging()
        let action = machine.written(bodyComplete: true, outputPending: true)
        #expect(action == .none && machine.request == .sending && !machine.owesResponse)
        let later = machine.written(bodyComplete: true, outputPending: false)
        #expect(later == .armRead && machine.requestSent)
    }

    @Test func aPausedCallDoesNotArmReadWhenTheRequestIsSent() {
        var machine = Self.exchanging()
        let paused = machine.pause()
        let action = machine.written(bodyComplete: true, outputPending: false)
        #expect(paused && action == .none && machine.requestSent)
    }

    @Test func writingBeforeConnectingDoesNothing() {
        var machine = Machine()
        machine.connecting()
        let action = machine.written(bodyComplete: true, outputPending: false)
        #expect(action == .none && machine.request == nil)
    }

    @Test func aFailedWriteCutsTheRequestAndReadsWhatCameFirst() {
        var machine = Self.exchanging()
        let action = machine.writeFailed()
        #expect(action == .armRead && machine.request == .cut && !machine.requestSent)
        let written = machine.written(bodyComplete: true, outputPending: false)
        #expect(written == .none && machine.request == .cut)
    }

    @Test func aFailedWriteWhilePausedLeavesReadingOff() {
        var machine = Self.exchanging()
        _ = machine.pause()
        let afterFailure = machine.writeFailed()
        #expect(afterFailure == .none)
    }

    @Test func anHTTP2RequestEndsWhenItsStreamDoes() {
        var machine = Self.exchanging()
        machine.requestEnded()
        #expect(machine.requestSent)
        var cut = Self.exchanging()
        _ = cut.writeFailed()
        cut.requestEnded()
        #expect(cut.request == .cut)
    }

    // MARK: Receiving

    @Test func bytesMakeTheResponsePartialOnce() {
        var machine = Self.sent()
        machine.bytesReceived()
        #expect(machine.response == .partial)
        _ = machine.headReceived(keepAlive: true)
        machine.bytesReceived()
        #expect(machine.response == .head(keepAlive: true))
    }

    @Test func aHeadAfterTheWholeRequestIsDelivered() {
        var machine = Self.sent()
        let action = machine.headReceived(keepAlive: true)
        #expect(action == .init(stopSending: false, armRead: true))
        #expect(machine.gotHead && machine.requestSent && machine.owesResponse)
    }

    @Test func aHeadBeforeTheWholeRequestIsAnEarlyResponse() {
        var machine = Self.exchanging()
        let action = machine.headReceived(keepAlive: true)
        #expect(action == .init(stopSending: true, armRead: true))
        #expect(machine.request == .cut && machine.gotHead)
        // Nothing more is sent once the upstream has answered (RFC 9112 §9.3).
        let afterWrite = machine.written(bodyComplete: true, outputPending: false)
        #expect(afterWrite == .none)
    }

    @Test func aHeadWhilePausedDoesNotArmRead() {
        var machine = Self.sent()
        _ = machine.pause()
        let onHead = machine.headReceived(keepAlive: false)
        #expect(onHead == .init(stopSending: false, armRead: false))
    }

    @Test func anHTTP2HeadNeverStopsTheRequest() {
        var machine = Self.exchanging()
        machine.streamHeadReceived()
        #expect(machine.gotHead && machine.request == .sending)
    }

    @Test func eventsAfterTheEndChangeNothing() {
        var machine = Self.sent()
        _ = machine.finish()
        machine.bytesReceived()
        machine.streamHeadReceived()
        machine.requestEnded()
        let onHead = machine.headReceived(keepAlive: true)
        #expect(onHead == .init(stopSending: false, armRead: false))
        let afterFailure = machine.writeFailed()
        #expect(afterFailure == .none)
        #expect(machine.isFinished && machine.response == nil && !machine.gotHead)
    }

    // MARK: Switching protocols

    @Test func a101AnsweringAnUpgradeEndsTheCall() {
        var machine = Self.sent()
        let switched = machine.switchingProtocols(upgradeRequested: true)
        #expect(switched)
        let ending = machine.finish()
        #expect(machine.isFinished && ending == .none)
    }

    @Test func a101ToARequestWithoutUpgradeIsRefused() {
        var machine = Self.sent()
        let switched = machine.switchingProtocols(upgradeRequested: false)
        #expect(!switched)
        #expect(machine.isExchanging)
    }

    @Test func a101BeforeTheRequestWentWholeIsRefused() {
        var machine = Self.exchanging()
        let switched = machine.switchingProtocols(upgradeRequested: true)
        #expect(!switched)
        #expect(machine.isExchanging)
    }

    // MARK: The end of the response

    @Test func aKeepAliveResponseToAWholeRequestGoesBackToThePool() {
        var machine = Self.sent()
        _ = machine.headReceived(keepAlive: true)
        let reuse = machine.responseEnded(inputEmpty: true)
        #expect(reuse == .pool)
    }

    @Test func theConnectionClosesWhenAnyConditionFails() {
        var close = Self.sent()
        _ = close.headReceived(keepAlive: false)
        var early = Self.exchanging()
        _ = early.headReceived(keepAlive: true)
        var failedWrite = Self.exchanging()
        _ = failedWrite.writeFailed()
        _ = failedWrite.headReceived(keepAlive: true)
        var answered = Self.sent()
        _ = answered.headReceived(keepAlive: true)
        let headless = Self.sent()
        // Said close; answered early; the write failed; no head at all; bytes left unread.
        let cases = [(close, true), (early, true), (failedWrite, true), (headless, true), (answered, false)]
        for (machine, inputEmpty) in cases {
            var ending = machine
            let reuse = ending.responseEnded(inputEmpty: inputEmpty)
            #expect(reuse == .close)
        }
    }

    // MARK: A lost connection

    @Test func aSilentStaleConnectionGoesAgainOnce() {
        var machine = Self.sent()
        let lost = machine.connectionLost(mayGoAgain: true)
        #expect(lost == .retry)
        machine.connecting()
        #expect(machine.isConnecting && machine.request == nil)
        _ = machine.connected()
        #expect(machine.request == .sending && machine.response == .silent)
        _ = machine.written(bodyComplete: true, outputPending: false)
        let lost2 = machine.connectionLost(mayGoAgain: true)
        #expect(lost2 == .fail)
    }

    @Test func aLostConnectionFailsWhenTheCallerSaysNo() {
        var machine = Self.sent()
        let lost = machine.connectionLost(mayGoAgain: false)
        #expect(lost == .fail)
        // The refusal used no retry: the same call may still go again.
        let lost2 = machine.connectionLost(mayGoAgain: true)
        #expect(lost2 == .retry)
    }

    @Test func aConnectionThatSaidAnythingIsNotRetried() {
        var bytes = Self.sent()
        bytes.bytesReceived()
        let lost = bytes.connectionLost(mayGoAgain: true)
        #expect(lost == .fail)

        var head = Self.sent()
        _ = head.headReceived(keepAlive: true)
        let lost2 = head.connectionLost(mayGoAgain: true)
        #expect(lost2 == .fail)
    }

    @Test func aConnectionLostWhileConnectingIsNotRetried() {
        var machine = Machine()
        machine.connecting()
        let lost = machine.connectionLost(mayGoAgain: true)
        #expect(lost == .fail)
    }

    @Test func aRefusedStreamUsesTheOneRetry() {
        var machine = Self.exchanging()
        machine.streamGoesAgain()
        #expect(machine.isConnecting)
        _ = machine.connected()
        let lost = machine.connectionLost(mayGoAgain: true)
        #expect(lost == .fail)
    }

    // MARK: Flow control

    @Test func pauseAndResumeTakeEffectOnceEach() {
        var machine = Self.sent()
        let first = machine.pause()
        let second = machine.pause()
        #expect(first && !second && machine.isPaused && !machine.readsResponse)
        let resumed = machine.resume()
        let again = machine.resume()
        #expect(resumed && !again && machine.readsResponse)
    }

    @Test func aPauseBeforeConnectingHoldsOnceConnected() {
        var machine = Machine()
        machine.connecting()
        _ = machine.pause()
        _ = machine.connected()
        #expect(machine.isExchanging && !machine.readsResponse)
    }

    // MARK: The end

    @Test func finishReportsOnceAndSaysWhetherAHeadCame() {
        var before = Self.sent()
        let ending = before.finish()
        #expect(ending == .report(afterHead: false))
        let ending2 = before.finish()
        #expect(ending2 == .none)

        var after = Self.sent()
        _ = after.headReceived(keepAlive: true)
        let ending3 = after.finish()
        #expect(ending3 == .report(afterHead: true))
    }

    @Test func aCallMayEndBeforeItConnects() {
        var machine = Machine()
        let ending = machine.finish()
        #expect(ending == .report(afterHead: false))
        #expect(machine.isFinished)
    }
}
