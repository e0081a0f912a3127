import Testing

@testable import Gateway
@testable import OAuth
@testable import Reactor

/// Methods MCP 2026-07-28 removed (`initialize`, `ping`, the `resources/subscribe` pair, …):
/// in a request at that revision they need no `Mcp-Name`, and one that names nothing is not
/// refused for it: it reaches the server, whose `-32601` is the answer. One that still names a
/// resource is judged by it; a `methods` entry that names one still holds. At a 2025 revision
/// nothing changes.
@Suite("MCP: methods the 2026-07-28 revision removed")
struct MCPRemovedMethodsTests {
    static let meta2026 = #""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#

    func parse(_ body: String, header: String? = nil) -> Result<MCPMessage, JSONRPCError> {
        MCPMessage.parse(Array(body.utf8), headerVersion: header)
    }

    func mismatch(_ message: MCPMessage, _ headers: [(String, String)]) -> MCPHeaderMismatch? {
        var fields = HTTP1Fields()
        for (name, value) in headers { fields.append(name, value) }
        switch MCPMirroredHeaders.read(fields) {
        case .failure(let mismatch): return mismatch
        case .success(let read): return read.mismatch(with: message)
        }
    }

    @Test func theRevisionSaysWhichMethodsAreGone() {
        for method in [
            "initialize", "notifications/initialized", "ping", "logging/setLevel", "resources/subscribe",
            "resources/unsubscribe", "notifications/progress", "notifications/roots/list_changed", "tasks/get",
            "tasks/result", "tasks/list", "tasks/cancel"
        ] {
            #expect(MCPProtocolVersion.isRemoved(method, at: "2026-07-28"))
            #expect(!MCPProtocolVersion.isRemoved(method, at: "2025-11-25"))
            #expect(!MCPProtocolVersion.isRemoved(method, at: nil))
        }
        // Same lengths as removed ones (the switch looks at the length first), and a case apart.
        for method in [
            "tools/call", "resources/read", "server/discover", "subscriptions/listen", "tools/list", "Initialize",
            "tasks/lisT", "pong", "tasks/got"
        ] {
            #expect(!MCPProtocolVersion.isRemoved(method, at: "2026-07-28"))
        }
    }

    /// A 2026-07-28 `resources/subscribe` without a `uri` names nothing: it is not refused
    /// for the missing member, and its headers need no `Mcp-Name`. One that names a resource
    /// is judged by it all the same (a server that speaks 2025 too may honour it).
    @Test func aSubscribeAt2026IsJudgedOnlyByWhatItNames() throws {
        let bare = try parse(#"{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{\#(Self.meta2026)}}"#)
            .get()
        #expect(bare.removed && bare.target == nil)
        #expect(mismatch(bare, [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "resources/subscribe")]) == nil)
        // The header alone says the revision.
        let named = try parse(
            #"{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///etc/passwd"}}"#,
            header: "2026-07-28"
        ).get()
        #expect(named.removed && named.target == .resource("file:///etc/passwd"))
        #expect(mismatch(named, [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "resources/subscribe")]) == nil)
        // A present Mcp-Name must still say what the body says.
        #expect(
            mismatch(
                named,
                [
                    ("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "resources/subscribe"),
                    ("Mcp-Name", "file:///public")
                ]) != nil)
        // A member that is there but no string is refused as ever.
        guard
            case .failure(let error) = parse(
                #"{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":7}}"#, header: "2026-07-28")
        else {
            Issue.record("a uri that is no string was read")
            return
        }
        #expect(error.code == .invalidParams)
    }

    /// At a 2025 revision the same message is what it always was: a subscription to a resource,
    /// judged by that resource's rule, and refused without its `uri`.
    @Test func aSubscribeAt2025IsStillJudged() throws {
        let subscribe = try parse(
            #"{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///etc/passwd"}}"#,
            header: "2025-11-25"
        ).get()
        #expect(!subscribe.removed && subscribe.target == .resource("file:///etc/passwd"))
        guard case .failure(let error) = parse(#"{"jsonrpc":"2.0","id":1,"method":"resources/subscribe"}"#) else {
            Issue.record("a 2025 subscribe without a uri was read")
            return
        }
        #expect(error.code == .invalidParams)
    }

    @Test func rulesJudgeOnlyWhatTheRevisionHas() throws {
        var rules = MCPRules()
        rules.allowsUnlisted = false
        rules.methods["initialize"] = AuthorizationRequirement(scopes: ["mcp:init"])
        let bare2026 = try parse(
            #"{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{\#(Self.meta2026)}}"#
        ).get()
        let named2026 = try parse(
            #"{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///x",\#(Self.meta2026)}}"#
        ).get()
        let at2025 = try parse(#"{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///x"}}"#)
            .get()
        // `default: deny` hides an unnamed resource from a subscription that names it, at any
        // revision; one that names nothing reaches the server, which answers the unknown method.
        #expect(rules.verdict(for: bare2026) == .check(method: nil, target: nil))
        #expect(rules.verdict(for: named2026) == .notAllowed(.resource("file:///x")))
        #expect(rules.verdict(for: at2025) == .notAllowed(.resource("file:///x")))
        // A `methods` entry is the operator's word, at any revision.
        let initialize = try parse(#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#, header: "2026-07-28")
            .get()
        #expect(initialize.removed)
        #expect(
            rules.verdict(for: initialize)
                == .check(method: AuthorizationRequirement(scopes: ["mcp:init"]), target: nil))
    }
}

/// What the access log and the server span keep of a call's name.
@Suite("MCP: the call as the log names it")
struct MCPLoggedCallTests {
    @Test func aResourcesQueryFragmentAndUserinfoStayOut() {
        let read = MCPMessage.loggedCall(
            method: "resources/read", named: "https://bob:s3cret@files.example/a/b.txt?token=abc#frag")
        #expect(read.method == "resources/read" && read.name == "https://files.example/a/b.txt")
        #expect(
            MCPMessage.loggedCall(method: "resources/read", named: "file:///srv/x.txt?raw=1").name
                == "file:///srv/x.txt")
        // A user part in the path is no userinfo.
        #expect(MCPMessage.loggedCall(method: "resources/read", named: "mail://host/a@b").name == "mail://host/a@b")
        // A tool's name is kept as sent, cut short.
        #expect(MCPMessage.loggedCall(method: "tools/call", named: "deploy?x").name == "deploy?x")
        #expect(
            MCPMessage.loggedCall(method: "tools/call", named: String(repeating: "a", count: 500)).name?.count == 200)
    }
}
