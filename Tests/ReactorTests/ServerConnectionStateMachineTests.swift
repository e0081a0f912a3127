import Testing

@testable import Reactor

/// A client connection's life (`ServerConnectionStateMachine`) driven without a socket:
/// open, finishing, lingering, closed; the peer's end at each stage; the deadline at each
/// stage; and TLS's waits, one or both at once. The connection that acts on them is in
/// HTTP1ServerTests, HTTP1ServerTLSTests, HTTP1ServerReclaimTests and the engine's
/// integration tests (slow readers, lingering close, tunnels).
@Suite("Server connection state machine")
struct ServerConnectionStateMachineTests {
    typealias Machine = ServerConnectionStateMachine

    static func finishing(linger: Bool) -> Machine {
        var machine = Machine()
        let action = machine.finish(linger: linger, outputPending: true)
        #expect(action == .flush)
        return machine
    }

    static func lingering() -> Machine {
        var machine = finishing(linger: true)
        let action = machine.stopWriting()
        #expect(action == .linger)
        return machine
    }

    // MARK: Open

    @Test func aNewConnectionIsOpenWithNothingWaiting() {
        let machine = Machine()
        #expect(machine.isOpen && !machine.isLingering && !machine.isClosed)
        #expect(machine.peer == .open && machine.tls == .none)
    }

    @Test func theDeadlineAndThePeersEndGoToTheHandlerWhileOpen() {
        var machine = Machine()
        #expect(machine.deadlinePassed() == .tellHandler)
        let ended = machine.peerEnded()
        #expect(ended == .tellHandler && machine.peerClosed)
    }

    // MARK: Finishing

    @Test func finishingWithNoOutputStopsWritingAtOnce() {
        var machine = Machine()
        let action = machine.finish(linger: true, outputPending: false)
        #expect(action == .stopWriting && !machine.isOpen)
        let stop = machine.stopWriting()
        #expect(stop == .linger && machine.isLingering)
    }

    @Test func finishingWithOutputWaitsForItToBeWritten() {
        let machine = Self.finishing(linger: false)
        #expect(machine.life == .finishing(linger: false))
        #expect(!machine.outputWritten(outputPending: true))
        #expect(machine.outputWritten(outputPending: false))
    }

    @Test func finishIsTakenOnce() {
        var machine = Self.finishing(linger: true)
        let again = machine.finish(linger: false, outputPending: false)
        #expect(again == .none && machine.life == .finishing(linger: true))
    }

    @Test func anOpenConnectionsFlushDoesNotStopWriting() {
        let machine = Machine()
        #expect(!machine.outputWritten(outputPending: false))
    }

    @Test func theDeadlineAndThePeersEndStillGoToTheHandlerWhileFinishing() {
        var machine = Self.finishing(linger: true)
        #expect(machine.deadlinePassed() == .tellHandler)
        let ended = machine.peerEnded()
        #expect(ended == .tellHandler)
    }

    // MARK: Stopping writing: linger or close

    @Test func withoutLingerTheConnectionCloses() {
        var machine = Self.finishing(linger: false)
        let action = machine.stopWriting()
        #expect(action == .close)
    }

    @Test func aPeerThatClosedIsNotLingeredFor() {
        var machine = Self.finishing(linger: true)
        _ = machine.peerEnded()
        let action = machine.stopWriting()
        #expect(action == .close)
    }

    @Test func aPeerThatOnlyAnnouncedItsFINIsStillLingeredFor() {
        var machine = Self.finishing(linger: true)
        machine.peerFINReported()
        let action = machine.stopWriting()
        #expect(action == .linger && machine.peerEnding)
    }

    @Test func stoppingWritingOnlyOnceFinishing() {
        var open = Machine()
        let action = open.stopWriting()
        #expect(action == .close && open.isOpen)
    }

    // MARK: Lingering

    @Test func lingeringEndsWithThePeersEndOrTheDeadline() {
        var ended = Self.lingering()
        let peer = ended.peerEnded()
        #expect(peer == .close)

        let timed = Self.lingering()
        #expect(timed.deadlinePassed() == .close)
    }

    @Test func aLingeringConnectionsFlushDoesNotStopWritingAgain() {
        let machine = Self.lingering()
        #expect(!machine.outputWritten(outputPending: false))
    }

    // MARK: Closed

    @Test func closeIsTakenOnceFromAnyStage() {
        var stages = [Machine(), Self.finishing(linger: true), Self.lingering()]
        for index in stages.indices {
            let first = stages[index].close()
            let second = stages[index].close()
            #expect(first && !second && stages[index].isClosed)
        }
    }

    @Test func nothingHappensAfterClose() {
        var machine = Machine()
        _ = machine.close()
        #expect(machine.deadlinePassed() == .none)
        let ended = machine.peerEnded()
        let finish = machine.finish(linger: true, outputPending: false)
        #expect(ended == .none && finish == .none && machine.isClosed)
    }

    // MARK: The peer

    @Test func theFINIsReportedThenTheEndRead() {
        var machine = Machine()
        machine.peerFINReported()
        #expect(machine.peerEnding && !machine.peerClosed)
        _ = machine.peerEnded()
        machine.peerFINReported()
        #expect(machine.peerClosed && !machine.peerEnding)
    }

    // MARK: TLS waits

    @Test func aReadThatNeedsWriteIsRetriedOnWritableOnce() {
        var wait = TLSWait.none
        wait.readWantsWrite()
        #expect(wait == .readNeedsWrite)
        let noWrite = wait.readableRetriesWrite()
        let retried = wait.writableRetriesRead()
        let again = wait.writableRetriesRead()
        #expect(!noWrite && retried && !again && wait == .none)
    }

    @Test func aWriteThatNeedsReadIsRetriedOnReadableOnce() {
        var wait = TLSWait.none
        wait.writeWantsRead()
        #expect(wait == .writeNeedsRead)
        let noRead = wait.writableRetriesRead()
        let retried = wait.readableRetriesWrite()
        let again = wait.readableRetriesWrite()
        #expect(!noRead && retried && !again && wait == .none)
    }

    @Test func bothWaitsAtOnceAreEachKeptUntilTheirOwnRetry() {
        var wait = TLSWait.none
        wait.readWantsWrite()
        wait.writeWantsRead()
        #expect(wait == .both && wait.readNeedsWrite && wait.writeNeedsRead)
        let read = wait.writableRetriesRead()
        #expect(read && wait == .writeNeedsRead)
        wait.readWantsWrite()
        let write = wait.readableRetriesWrite()
        #expect(write && wait == .readNeedsWrite)
    }
}
