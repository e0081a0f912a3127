import Testing

@testable import Gateway

/// Capability state by typed key, per lifetime: each key reads back the object it stored, no
/// other key (even of the same value type) reaches it, and slots come and go in any order.
@Suite("Request, connection and token-memo state by typed key")
struct LifetimeStateTests {
    final class Note {
        let text: String
        init(_ text: String) { self.text = text }
    }
    enum First: RequestStateKey { typealias Value = Note }
    enum Second: RequestStateKey { typealias Value = Note }
    enum Third: RequestStateKey { typealias Value = Note }
    enum Kept: TokenMemoKey { typealias Value = Note }
    enum OnConnection: ConnectionStateKey { typealias Value = Note }

    @Test func eachKeyReadsBackOnlyItsOwnObject() {
        var state = RequestState()
        #expect(state[First.self] == nil)
        let first = Note("first")
        state[First.self] = first
        #expect(state[First.self] === first)
        #expect(state[Second.self] == nil, "same value type, another key")
        state[Second.self] = Note("second")
        state[Third.self] = Note("third")
        #expect(state[First.self]?.text == "first" && state[Second.self]?.text == "second")
        #expect(state[Third.self]?.text == "third")
        state[Second.self] = Note("second again")
        #expect(state[Second.self]?.text == "second again" && state[Third.self]?.text == "third")
    }

    @Test func removingAnySlotKeepsTheOthers() {
        for removed in 0..<3 {
            var state = RequestState()
            state[First.self] = Note("1")
            state[Second.self] = Note("2")
            state[Third.self] = Note("3")
            switch removed {
            case 0: state[First.self] = nil
            case 1: state[Second.self] = nil
            default: state[Third.self] = nil
            }
            let left = [state[First.self]?.text, state[Second.self]?.text, state[Third.self]?.text]
            var expected: [String?] = ["1", "2", "3"]
            expected[removed] = nil
            #expect(left == expected, "removed slot \(removed)")
            // The freed slot takes a new value again.
            state[First.self] = Note("1b")
            #expect(state[First.self]?.text == "1b")
        }
    }

    @Test func aValueIsMadeOnceOnFirstUse() {
        var state = RequestState()
        var made = 0
        let a = state.value(First.self) {
            made += 1
            return Note("made")
        }
        let b = state.value(First.self) {
            made += 1
            return Note("again")
        }
        #expect(a === b && made == 1)
        var kept = TokenMemoState()
        let k = kept.value(Kept.self) { Note("kept") }
        #expect(kept[Kept.self] === k)
    }

    @Test func lifetimesKeepTheirOwnSlots() {
        var connection = ConnectionState()
        connection[OnConnection.self] = Note("connection")
        #expect(connection[OnConnection.self]?.text == "connection")
        connection[OnConnection.self] = nil
        #expect(connection[OnConnection.self] == nil)
    }
}
