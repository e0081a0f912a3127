import Foundation
import JOSE
import Testing

@testable import Gateway

@Suite("Pages: {{name}} templates, escaping, pages_dir loading")
struct PagesTests {
    @Test func substitutesAndEscapesEveryValue() throws {
        let t = try PageTemplate("<p title=\"{{a}}\">{{ a }}</p>{{b}}", allowed: ["a", "b"])
        #expect(
            t.render(["a": "<script>\"x\"&'y'</script>"])
                == "<p title=\"&lt;script&gt;&quot;x&quot;&amp;&#39;y&#39;&lt;/script&gt;\">&lt;script&gt;&quot;x&quot;&amp;&#39;y&#39;&lt;/script&gt;</p>"
        )
        // Markup is only ever the gateway's own render.
        #expect(t.render([:], markup: ["b": .init(html: "<li>x</li>")]) == "<p title=\"\"></p><li>x</li>")
    }

    @Test func refusesUnknownVariablesLogicAndUnclosedBraces() {
        #expect(throws: PageTemplate.ParseError.self) { try PageTemplate("{{nope}}", allowed: ["a"]) }
        #expect(throws: PageTemplate.ParseError.self) { try PageTemplate("{{#a}}x{{/a}}", allowed: ["a"]) }
        #expect(throws: PageTemplate.ParseError.self) { try PageTemplate("x\n{{a", allowed: ["a"]) }
        #expect(throws: PageTemplate.ParseError.self) { try PageTemplate("{{}}", allowed: ["a"]) }
        do {
            _ = try PageTemplate("a\nb\n{{zz}}", allowed: ["a"])
            Issue.record("parsed")
        } catch {
            #expect("\(error)".hasPrefix("line 3: unknown variable {{zz}}"))
        }
    }

    /// Finding 11: HTML escaping protects text and quoted attribute values only.
    @Test func refusesVariablesWhereEscapingDoesNotProtect() {
        func why(_ t: String) -> String? {
            do {
                _ = try PageTemplate(t, allowed: ["m"])
                return nil
            } catch { return "\(error)" }
        }
        #expect(
            why("<p>\n<script>var m = \"{{m}}\";</script>")?.hasPrefix("line 2: {{m}}: a variable inside <script>")
                == true)
        #expect(why("<STYLE>p { content: '{{m}}' }</STYLE>")?.contains("inside <style>") == true)
        #expect(why("<script type=\"x\">\n</scriptx>{{m}}</script>")?.contains("inside <script>") == true)
        #expect(why("<div title={{m}}>x</div>")?.contains("unquoted attribute value") == true)
        #expect(why("<div title=a{{m}}>x</div>")?.contains("unquoted attribute value") == true)
        #expect(why("<div {{m}}>x</div>")?.contains("inside a tag") == true)
        #expect(why("<div title=\"a\" {{m}}>x</div>")?.contains("inside a tag") == true)
        #expect(why("<{{m}}>")?.contains("right after <") == true)
        #expect(why("<a onclick=\"go('{{m}}')\">x</a>")?.contains("onclick attribute runs as script") == true)
        #expect(why("<p style='color: {{m}}'>x</p>")?.contains("style attribute runs as CSS") == true)
        #expect(
            why("<iframe srcdoc=\"<p>{{m}}</p>\"></iframe>")?.contains("srcdoc attribute is parsed as HTML") == true)
        // Text, quoted values, comments, and after a closed script/style are fine.
        #expect(
            why(
                "<p title=\"{{m}}\" data-x='{{m}}'>{{m}}</p><!-- {{m}} --><script>1</script>{{m}}<style>p{}</style > {{m}}"
            ) == nil)
        #expect(why("<p>a < b {{m}} x > y</p>") == nil)
    }

    @Test func builtInPagesParseAndRender() {
        let pages = Pages()
        let choose = pages.choosePage(
            clients: ["corp", "<x>"], href: { "/oauth2/start?client=\($0)&rd=/" }, requestID: "r1")
        #expect(choose.contains("<a href=\"/oauth2/start?client=corp&amp;rd=/\" id=\"client-corp\">corp</a>"))
        #expect(choose.contains("&lt;x&gt;") && !choose.contains("<x>"))
        let r = pages.finish(GatewayResponse.page(400, title: "T<", message: "M&"), requestID: "req-1")
        #expect(r.body.contains("<h1>T&lt;</h1>") && r.body.contains("M&amp;") && r.body.contains("req-1"))
    }

    @Test func loadsADirectoryAndReportsEachProblem() throws {
        let dir = NSTemporaryDirectory() + "tg-pages-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "<b>{{request_id}}</b>".write(toFile: dir + "/error.html", atomically: true, encoding: .utf8)
        var (pages, problems) = Pages.load(dir: dir)
        #expect(problems.isEmpty)
        #expect(pages.finish(.page(500, title: "t", message: "m"), requestID: "abc").body == "<b>abc</b>")
        try "<p>no form</p>".write(toFile: dir + "/logout.html", atomically: true, encoding: .utf8)
        try "x".write(toFile: dir + "/eror.html", atomically: true, encoding: .utf8)
        (pages, problems) = Pages.load(dir: dir)
        #expect(problems.count == 2)
        #expect(problems.contains { $0.hasPrefix("eror.html is not a page") })
        #expect(problems.contains { $0.hasPrefix("logout.html: must use {{csrf_token}} and {{logout_action}}") })
    }
}

@Suite("Userinfo: sub check, merge, bounds (OIDC Core §5.3.2)")
struct UserinfoMergeTests {
    let id: JSONObject = try! JSONParser.parseObject(
        Array(#"{"sub":"u1","email":"a@x","email_verified":true,"iss":"https://as"}"#.utf8), what: "t")

    func info(_ json: String) -> JSONObject { try! JSONParser.parseObject(Array(json.utf8), what: "t") }

    @Test func anotherSubIsRefused() {
        guard
            case .subjectMismatch = ClaimsSources.merge(
                info(#"{"sub":"u2","groups":["a"]}"#), into: id, subject: "u1", kept: ["groups"])
        else {
            Issue.record("merged")
            return
        }
        guard
            case .subjectMismatch = ClaimsSources.merge(
                info(#"{"groups":["a"]}"#), into: id, subject: "u1", kept: ["groups"])
        else {
            Issue.record("merged without sub")
            return
        }
    }

    @Test func claimsMergeButTokenClaimsDoNot() {
        guard
            case .claims(let c) = ClaimsSources.merge(
                info(#"{"sub":"u1","groups":["a"],"iss":"https://evil","aud":"x"}"#),
                into: id, subject: "u1", kept: ["groups"])
        else {
            Issue.record("refused")
            return
        }
        #expect(c["groups"] == .array([.string("a")]))
        #expect(c["iss"] == .string("https://as") && c["aud"] == nil)
    }

    @Test func aChangedEmailWithoutVerificationLosesItsVerifiedFlag() {
        guard
            case .claims(let c) = ClaimsSources.merge(
                info(#"{"sub":"u1","email":"b@x"}"#), into: id, subject: "u1", kept: ["email"])
        else {
            Issue.record("refused")
            return
        }
        #expect(c["email"] == .string("b@x") && c["email_verified"] == nil)
    }

    @Test func sizeAndCountAreBounded() {
        let big = "[" + (0..<300).map { "\"group-\($0)-xxxxxxxx\"" }.joined(separator: ",") + "]"
        guard
            case .failed = ClaimsSources.merge(
                info(#"{"sub":"u1","groups":\#(big)}"#), into: id, subject: "u1", kept: ["groups"])
        else {
            Issue.record("kept")
            return
        }
        // Not kept (no route uses it): not counted against the session's bound.
        guard
            case .claims = ClaimsSources.merge(
                info(#"{"sub":"u1","groups":\#(big)}"#), into: id, subject: "u1", kept: [])
        else {
            Issue.record("refused")
            return
        }
        let many = "{\"sub\":\"u1\"," + (0..<120).map { "\"c\($0)\":1" }.joined(separator: ",") + "}"
        guard case .failed = ClaimsSources.merge(info(many), into: id, subject: "u1", kept: []) else {
            Issue.record("kept")
            return
        }
    }
}
