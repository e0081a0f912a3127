import Foundation
import JOSE
import OAuth
import Testing

@testable import Gateway
@testable import Reactor

/// A `tools/list` answer filtered without sockets, from the caller's side: what it may not
/// call it never sees, in a JSON answer or an SSE stream; what it cannot be shown filtered is
/// refused; everything else passes as the server sent it.
@Suite("MCP tools/list: the filter and the relay")
struct MCPToolListFilterTests {
    func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }
    func text(_ b: [UInt8]?) -> String? { b.map { String(decoding: $0, as: UTF8.self) } }

    static let tools =
        #"[{"name":"echo","inputSchema":{"type":"object"}},{"name":"deploy","description":"x"},"#
        + #"{"description":"no name"},{"name":7},"audit"]"#

    func filter(id: JSONValue = .number("1"), max: Int = 1 << 20) -> ToolListFilter {
        ToolListFilter(id: id, maxBytes: max, mayCall: { $0 != "deploy" })
    }

    func names(_ out: [UInt8]?) throws -> [String] {
        let message = try JSONParser.parseObject(try #require(out), what: "response")
        return try #require(message["result"]?.object?["tools"]?.array).compactMap { $0.object?["name"]?.string }
    }

    @Test func theSixCacheableMethodsAndNoOther() {
        for method in [
            "server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list",
            "resources/read"
        ] {
            #expect(ToolListFilter.isCacheable(method), "\(method)")
        }
        // Same lengths as cacheable ones, a case apart, and the calls.
        for method in ["tools/call", "prompts/get", "resources/lisT", "Tools/list", "server/discovER", "tasks/list", ""]
        {
            #expect(!ToolListFilter.isCacheable(method), "\(method)")
        }
    }

    @Test func theResponseKeepsOnlyToolsTheCallerMayCall() throws {
        let answer = #"{"jsonrpc":"2.0","id":1,"result":{"tools":\#(Self.tools),"nextCursor":"c2"}}"#
        let out = try filter().filter(message: bytes(answer))
        // deploy is not for this caller; tools without a (string) name nobody can call.
        #expect(try names(out) == ["echo"])
        #expect(
            text(out)
                == #"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}],"#
                + #""nextCursor":"c2","cacheScope":"private"}}"#)
    }

    /// Another cacheable result on a route whose rules differ by caller: marked private,
    /// nothing removed; another id, an error or a result that is no object pass unchanged.
    @Test func anotherCacheableResultIsOnlyMarkedPrivate() throws {
        var marker = ToolListFilter(id: .number("4"), maxBytes: 1 << 20, mayCall: { _ in false })
        marker.marksOnly = true
        let read =
            #"{"jsonrpc":"2.0","id":4,"result":{"contents":[{"uri":"file:///a","text":"x"}],"cacheScope":"public","ttlMs":5}}"#
        let out = try JSONParser.parseObject(try #require(try marker.filter(message: bytes(read))), what: "out")
        #expect(out["result"]?.object?["cacheScope"] == .string("private"))
        #expect(out["result"]?.object?["ttlMs"] == .number("5"))
        #expect(out["result"]?.object?["contents"]?.array?.count == 1)
        #expect(try marker.filter(message: bytes(#"{"jsonrpc":"2.0","id":5,"result":{}}"#)) == nil)
        #expect(try marker.filter(message: bytes(#"{"jsonrpc":"2.0","id":4,"error":{"code":1,"message":"m"}}"#)) == nil)
        #expect(try marker.filter(message: bytes(#"{"jsonrpc":"2.0","id":4,"result":[]}"#)) == nil)
    }

    /// MCP 2026-07-28 (SEP-2549): a list filtered for one caller is marked private, whatever
    /// the server said, so no shared cache serves caller A's list to caller B; `ttlMs` stays.
    @Test func aFilteredListIsMarkedPrivateWithItsTTLKept() throws {
        let answer = #"{"jsonrpc":"2.0","id":1,"result":{"tools":\#(Self.tools),"ttlMs":60000,"cacheScope":"public"}}"#
        let out = try JSONParser.parseObject(try #require(try filter().filter(message: bytes(answer))), what: "out")
        #expect(out["result"]?.object?["cacheScope"] == .string("private"))
        #expect(out["result"]?.object?["ttlMs"] == .number("60000"))
    }

    @Test(arguments: [
        (JSONValue.number("1"), #""1""#), (.string("1"), "1"), (.number("1"), "2"), (.string("a"), #""b""#),
        (.string("1.0"), "1"), (.number("1"), "1.5")
    ])
    func anotherIdIsNotThisAnswer(id: JSONValue, answerID: String) throws {
        let answer = #"{"jsonrpc":"2.0","id":\#(answerID),"result":{"tools":\#(Self.tools)}}"#
        #expect(try filter(id: id).filter(message: bytes(answer)) == nil)
    }

    /// A caller sending `1.0` or `1e0` must not get an answer echoing `1` past the filter.
    @Test(arguments: [("1", "1"), ("1.0", "1"), ("1e0", "1"), ("1", "1.0"), ("-0", "0"), ("10E-1", "1")])
    func aNumberIdMatchesByValue(sent: String, echoed: String) throws {
        let answer = #"{"jsonrpc":"2.0","id":\#(echoed),"result":{"tools":\#(Self.tools)}}"#
        #expect(try names(filter(id: .number(sent)).filter(message: bytes(answer))) == ["echo"])
    }

    @Test func aStringIdMatchesAsAString() throws {
        let answer = #"{"jsonrpc":"2.0","id":"abc","result":{"tools":\#(Self.tools)}}"#
        #expect(try names(filter(id: .string("abc")).filter(message: bytes(answer))) == ["echo"])
    }

    @Test func errorsRequestsAndNotificationsPassUnchanged() throws {
        let f = filter()
        #expect(try f.filter(message: bytes(#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}"#)) == nil)
        // A request of the server's own may reuse the number: it has a method, it is not the answer.
        let request = #"{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","result":{"tools":[]}}"#
        #expect(try f.filter(message: bytes(request)) == nil)
        #expect(try f.filter(message: bytes(#"{"jsonrpc":"2.0","method":"notifications/progress"}"#)) == nil)
    }

    @Test(arguments: [
        #"{"jsonrpc":"2.0","id":1,"result":{}}"#, #"{"jsonrpc":"2.0","id":1,"result":{"tools":{}}}"#,
        #"{"jsonrpc":"2.0","id":1,"result":[]}"#, #"{"jsonrpc":"2.0","id":1,"result":{"tools":[]},"id":1}"#,
        #"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"deploy"}]}"#, ""
    ])
    func aResultThatCannotBeFilteredIsRefused(answer: String) {
        #expect(throws: ToolListFilter.Refusal.self) { try filter().filter(message: bytes(answer)) }
    }

    @Test func aBatchHasItsResponseFiltered() throws {
        let batch = #"[{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":1,"result":{"tools":\#(Self.tools)}}]"#
        let out = try #require(try filter().filter(message: bytes(batch)))
        guard case .array(let items) = try JSONParser.parse(out) else {
            Issue.record("not a batch")
            return
        }
        let notification = JSONObject(["jsonrpc": .string("2.0"), "method": .string("n")])
        #expect(items.count == 2 && items[0] == .object(notification))
        #expect(items[1].object?["result"]?.object?["tools"]?.array?.count == 1)
    }

    @Test func aResumedStreamHasEveryToolListFiltered() throws {
        var relay = ToolListRelay(filter: ToolListFilter(id: nil, maxBytes: 1 << 20, mayCall: { $0 != "deploy" }))
        let list = "data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":\(Self.tools)}}\n\n"
        let other = "data: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"content\":[]}}\n\n"
        let out = try relay.stream(bytes(list + other + list.replacingOccurrences(of: ":3,", with: ":\"x\",")))
        #expect(!relay.finished)
        var reader = EventStreamReader(maxEventBytes: 1 << 20)
        let events = try reader.feed(out)
        #expect(events.count == 3)
        #expect(try names(events[0].data) == ["echo"] && names(events[2].data) == ["echo"])
        #expect(events[1].raw == bytes(other))
    }

    // MARK: the relay

    func fields(_ pairs: [(String, String)]) -> HTTP1Fields {
        var f = HTTP1Fields()
        for (n, v) in pairs { f.append(n, v) }
        return f
    }

    @Test func theHeadDecidesHowTheAnswerIsRelayed() throws {
        #expect(try ToolListRelay.mode(status: 200, fields: fields([("Content-Type", "application/json")])) == .json)
        #expect(
            try ToolListRelay.mode(status: 200, fields: fields([("Content-Type", "Text/Event-Stream; charset=utf-8")]))
                == .eventStream)
        #expect(try ToolListRelay.mode(status: 200, fields: fields([])) == .json)
        let json = fields([("Content-Type", "application/json")])
        #expect(try ToolListRelay.mode(status: 400, fields: json) == .untouched)
        #expect(try ToolListRelay.mode(status: 304, fields: json) == .untouched)
        #expect(try ToolListRelay.mode(status: 200, fields: fields([("Content-Type", "text/html")])) == .untouched)
        #expect(
            try ToolListRelay.mode(
                status: 200, fields: fields([("Content-Type", "application/json"), ("Content-Encoding", "identity")]))
                == .json)
        for refused in [
            [("Content-Type", "application/json"), ("Content-Encoding", "gzip")],
            [("Content-Type", "text/event-stream"), ("Content-Encoding", "identity, br")],
            [("Content-Type", "application/json"), ("Content-Type", "text/html")]
        ] {
            #expect(throws: ToolListFilter.Refusal.self) {
                try ToolListRelay.mode(status: 200, fields: fields(refused))
            }
        }
    }

    @Test func aJSONAnswerIsHeldBoundedAndFiltered() throws {
        let answer = bytes(#"{"jsonrpc":"2.0","id":1,"result":{"tools":\#(Self.tools)}}"#)
        var relay = ToolListRelay(filter: filter())
        try relay.hold(Array(answer[..<10]))
        try relay.hold(Array(answer[10...]))
        #expect(try names(relay.endJSON()) == ["echo"])
        var small = ToolListRelay(filter: filter(max: answer.count - 1))
        #expect(throws: ToolListFilter.Refusal.self) { try small.hold(answer) }
        var broken = ToolListRelay(filter: filter())
        try broken.hold(bytes(#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"deploy"}]"#))
        #expect(throws: ToolListFilter.Refusal.self) { try broken.endJSON() }
    }

    static let sse =
        "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\r\n\r\n"
        + ": keep-alive\r\n\r\n"
        + "event: message\r\nid: 9\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\r\ndata: \"result\":{\"tools\":\(tools)}}\r\n\r\n"
        + "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"late\"}\r\n\r\n"

    @Test func anEventStreamHasOnlyItsResponseRewrittenWhereverItIsCut() throws {
        let all = bytes(Self.sse)
        let response = try #require(Self.sse.range(of: "event: message\r\nid: 9"))
        let before = bytes(String(Self.sse[..<response.lowerBound]))
        let after = bytes("event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"late\"}\r\n\r\n")
        for cut in stride(from: 0, through: all.count, by: 7) {
            var relay = ToolListRelay(filter: filter())
            var out = try relay.stream(Array(all[..<cut]))
            out += try relay.stream(Array(all[cut...]))
            // A stream is read to its end: a second copy of the response would be filtered too.
            #expect(!relay.finished)
            // Before the response: byte for byte; after it: byte for byte.
            #expect(out.starts(with: before), "cut at \(cut)")
            #expect(out.suffix(after.count).elementsEqual(after), "cut at \(cut)")
            let middle = Array(out[before.count..<(out.count - after.count)])
            var reader = EventStreamReader(maxEventBytes: 1 << 20)
            let events = try reader.feed(middle)
            #expect(events.count == 1)
            #expect(events.first?.fieldLines == [bytes("event: message"), bytes("id: 9")])
            #expect(try names(events.first?.data) == ["echo"])
        }
    }

    @Test func everyCopyOfTheResponseInAStreamIsFiltered() throws {
        let response = "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":\(Self.tools)}}\n\n"
        let other = "data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[{\"name\":\"deploy\"}]}}\n\n"
        var relay = ToolListRelay(filter: filter())
        var out = try relay.stream(bytes(response))
        // The second copy, in the same piece as another message and in a later one.
        out += try relay.stream(bytes(other + response.prefix(20)))
        out += try relay.stream(bytes(String(response.dropFirst(20))))
        var reader = EventStreamReader(maxEventBytes: 1 << 20)
        let events = try reader.feed(out)
        #expect(events.count == 3)
        #expect(try names(events[0].data) == ["echo"])
        #expect(events[1].raw == bytes(other), "another id's message passes as it came")
        #expect(try names(events[2].data) == ["echo"])
    }

    /// On a route with `authorize`: the response waits for the PDP, with every event after
    /// it, and goes out filtered by both the rules and the PDP's answers.
    @Test func aStreamsResponseWaitsForThePDPAndThenIsFilteredByIt() throws {
        var asked: [String] = []
        var answer: ((Set<String>) -> Void)?
        var f = filter()
        f.decisions = ToolListDecisions { names, done in
            asked = names
            answer = done
        }
        var relay = ToolListRelay(filter: f)
        let before = ": progress\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n"
        let response = "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":\(Self.tools)}}\n\n"
        let after = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n"
        let first = try relay.stream(bytes(before + response + after))
        #expect(first == bytes(before), "what comes before the response passes at once")
        let listed = try #require(relay.awaiting)
        #expect(Set(listed) == ["echo", "deploy"])
        // More of the stream while the PDP is asked: held behind the response.
        #expect(try relay.stream(bytes(after)).isEmpty)
        f.decisions!.decide(listed) {}
        #expect(Set(asked) == ["echo", "deploy"])
        answer!(["deploy"])
        let rest = try relay.release()
        var reader = EventStreamReader(maxEventBytes: 1 << 20)
        let events = try reader.feed(rest)
        #expect(events.count == 3)
        // echo: the PDP said no; deploy: the rules said no.
        #expect(try names(events[0].data) == [])
        #expect(events[1].raw == bytes(after) && events[2].raw == bytes(after))
        #expect(relay.awaiting == nil)
    }

    @Test func aJSONAnswerNamesItsToolsForThePDP() throws {
        var f = filter()
        f.decisions = ToolListDecisions { _, done in done(["echo"]) }
        var relay = ToolListRelay(filter: f)
        try relay.hold(bytes(#"{"jsonrpc":"2.0","id":1,"result":{"tools":\#(Self.tools)}}"#))
        let listed = try #require(relay.namesAwaitingDecisions())
        #expect(Set(listed) == ["echo", "deploy"])
        f.decisions!.decide(listed) {}
        #expect(relay.namesAwaitingDecisions() == nil)
        #expect(try names(relay.endJSON()) == ["echo"])
    }

    @Test func otherEventsPassAtOnceAndUnreadableOrHugeOnesAreRefused() throws {
        var relay = ToolListRelay(filter: filter())
        let progress = bytes("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n")
        #expect(try relay.stream(progress + bytes("data: {\"jsonrpc\"")) == progress)
        #expect(!relay.finished)
        var unreadable = ToolListRelay(filter: filter())
        #expect(throws: ToolListFilter.Refusal.self) { try unreadable.stream(self.bytes("data: {not json\n\n")) }
        var huge = ToolListRelay(filter: filter(max: 32))
        #expect(throws: ToolListFilter.Refusal.self) {
            try huge.stream(self.bytes("data: " + String(repeating: " ", count: 40)))
        }
        var malformed = ToolListRelay(filter: filter())
        #expect(throws: ToolListFilter.Refusal.self) {
            try malformed.stream(self.bytes("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"))
        }
    }

    @Test func theSameCheckJudgesACallAndFiltersTheList() throws {
        var rules = MCPRules()
        rules.tools["deploy"] = AuthorizationRequirement(scopes: ["mcp:deploy"])
        let token = VerifiedAccessToken(
            issuer: "one", claims: JSONObject(["scope": .string("mcp")]), expiresAt: 0, confirmation: nil)
        let stepped = VerifiedAccessToken(
            issuer: "one", claims: JSONObject(["scope": .string("mcp mcp:deploy")]), expiresAt: 0, confirmation: nil)
        #expect(rules.mayCallTool("echo", token: token))
        #expect(!rules.mayCallTool("deploy", token: token))
        #expect(rules.mayCallTool("deploy", token: stepped))
        #expect(!rules.mayCallTool("deploy", token: nil))
        rules.allowsUnlisted = false
        #expect(!rules.mayCallTool("echo", token: stepped))
        rules.methods["tools/call"] = AuthorizationRequirement(scopes: ["mcp:call"])
        #expect(!rules.mayCallTool("deploy", token: stepped))
    }
}
