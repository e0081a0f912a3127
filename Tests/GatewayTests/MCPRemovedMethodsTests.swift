import Testing

@testable import Gateway
@testable import OAuth
@testable import Reactor

/// Methods MCP 2026-07-28 removed (`initialize`, `ping`, the `resources/subscribe` pair, …):
/// in a request at that revision they are not judged by what they meant in 2025. They name no
/// resource, need no `Mcp-Name`, and reach the server, whose `-32601` is the answer; a
/// `methods` entry that names one still holds. At a 2025 revision nothing changes.
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
        for method in ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"] {
            #expect(MCPProtocolVersion.isRemoved(method, at: "2026-07-28"))
            #expect(!MCPProtocolVersion.isRemoved(method, at: "2025-11-25"))
            #expect(!MCPProtocolVersion.isRemoved(method, at: nil))
        }
        for method in ["tools/call", "resources/read", "server/discover", "subscriptions/listen", "tools/list"] {
            #expect(!MCPProtocolVersion.isRemoved(method, at: "2026-07-28"))
        }
    }

    /// A 2026-07-28 `resources/subscribe` is no read of a resource: no `params.uri` is asked
    /// for, none is judged, and its headers need no `Mcp-Name`.
    @Test func aSubscribeAt2026NamesNoResource() throws {
        let bare = try parse(#"{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{\#(Self.meta2026)}}"#)
            .get()
        #expect(bare.removed && bare.target == nil)
        #expect(mismatch(bare, [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "resources/subscribe")]) == nil)
        // The header alone says the revision.
        let named = try parse(
            #"{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///etc/passwd"}}"#,
            header: "2026-07-28"
        ).get()
        #expect(named.removed && named.target == nil)
        // A present Mcp-Name must still say what the body says.
        #expect(
            mismatch(
                named,
                [
                    ("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "resources/subscribe"),
                    ("Mcp-Name", "file:///public")
                ]) != nil)
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
        let at2026 = try parse(
            #"{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///x",\#(Self.meta2026)}}"#
        ).get()
        let at2025 = try parse(#"{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///x"}}"#)
            .get()
        // `default: deny` hides an unnamed resource from a 2025 subscription; at 2026-07-28
        // there is no resource to hide, and the server answers the unknown method.
        #expect(rules.verdict(for: at2026) == .check([]))
        #expect(rules.verdict(for: at2025) == .notAllowed(.resource("file:///x")))
        // A `methods` entry is the operator's word, at any revision.
        let initialize = try parse(#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#, header: "2026-07-28")
            .get()
        #expect(initialize.removed)
        #expect(rules.verdict(for: initialize) == .check([AuthorizationRequirement(scopes: ["mcp:init"])]))
    }
}
