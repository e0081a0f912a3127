/// Where in the HTML a template's `{{variable}}` sits (HTML Living Standard §13.2.5, the
/// tokenizer's states, much simplified). `PageTemplate` escapes `& < > " '`, which is safe
/// only in text and in quoted attribute values: in `<script>`/`<style>` content, an unquoted
/// attribute value, a tag's attribute list, or an event-handler / `style` attribute (whose
/// value the browser decodes, then runs as script or CSS), escaped text can still be code.
/// A custom template that puts a variable there is refused at config load.
struct TemplateContext {
    private enum State {
        case data, comment, tagName, inTag, attributeName, afterAttributeName, beforeValue
        case quoted(UInt8)
        case unquoted
        /// Inside `<script>` or `<style>` until its end tag.
        case rawText(String)
    }

    private var state = State.data
    private var tagName: [UInt8] = []
    private var closing = false
    private var attribute: [UInt8] = []
    /// The bytes seen so far in data (to find `<!--`) or raw text (to find the end tag).
    private var recent: [UInt8] = []

    /// Feeds template text (between variables).
    mutating func feed(_ text: String) {
        for c in text.utf8 { step(c) }
    }

    /// A value was substituted: escaped, it holds no `< > " '`, so it reads as plain text.
    mutating func substituted() {
        if case .data = state { recent = [UInt8(ascii: "x")] }
    }

    /// Why a variable may not stand here (nil: text or a quoted ordinary attribute value).
    func refusal() -> String? {
        switch state {
        case .data where recent.last == UInt8(ascii: "<"):
            return
                "a variable right after < would name a tag (escaping leaves letters, spaces and = alone); put text between them"
        case .data, .comment: return nil
        case .quoted:
            let name = String(decoding: attribute, as: UTF8.self).lowercased()
            if name == "srcdoc" {
                return
                    "a variable inside the srcdoc attribute is parsed as HTML after the browser decodes it; put it in text or an ordinary quoted attribute"
            }
            if name.hasPrefix("on") || name == "style" {
                return
                    "a variable inside the \(name) attribute runs as \(name == "style" ? "CSS" : "script") after the browser decodes it; put it in text or an ordinary quoted attribute"
            }
            return nil
        case .beforeValue, .unquoted:
            return
                "a variable in an unquoted attribute value can add attributes (onmouseover=…); quote the value: attr=\"{{name}}\""
        case .tagName, .inTag, .attributeName, .afterAttributeName:
            return
                "a variable inside a tag, outside a quoted attribute value, can add attributes; put it in a quoted value: attr=\"{{name}}\""
        case .rawText(let tag):
            return
                "a variable inside <\(tag)> is not escaped for \(tag == "script" ? "JavaScript" : "CSS") (HTML escaping does not apply there); move it out of the <\(tag)> element (e.g. into a data-* attribute in quotes)"
        }
    }

    private static func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0c || c == 0x0d }
    private static func isLetter(_ c: UInt8) -> Bool { (c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a }

    private mutating func endTag() {
        let name = String(decoding: tagName, as: UTF8.self).lowercased()
        if !closing && (name == "script" || name == "style") {
            state = .rawText(name)
            recent = []
        } else {
            state = .data
            recent = []
        }
    }

    private mutating func step(_ c: UInt8) {
        switch state {
        case .data:
            recent.append(c)
            if recent.count > 4 { recent.removeFirst(recent.count - 4) }
            if recent == Array("<!--".utf8) {
                state = .comment
                recent = []
                return
            }
            if recent.count >= 2 && recent[recent.count - 2] == UInt8(ascii: "<") {
                if Self.isLetter(c) {
                    state = .tagName
                    tagName = [c]
                    closing = false
                } else if c == UInt8(ascii: "/") {
                    state = .tagName
                    tagName = []
                    closing = true
                }
            }
        case .comment:
            recent.append(c)
            if recent.count > 3 { recent.removeFirst() }
            if recent == Array("-->".utf8) {
                state = .data
                recent = []
            }
        case .tagName:
            if Self.isSpace(c) {
                state = .inTag
            } else if c == UInt8(ascii: ">") {
                endTag()
            } else if c == UInt8(ascii: "/") {
                state = .inTag
            } else {
                tagName.append(c)
            }
        case .inTag:
            if c == UInt8(ascii: ">") {
                endTag()
            } else if !Self.isSpace(c) && c != UInt8(ascii: "/") {
                state = .attributeName
                attribute = [c]
            }
        case .attributeName:
            if c == UInt8(ascii: "=") {
                state = .beforeValue
            } else if c == UInt8(ascii: ">") {
                endTag()
            } else if Self.isSpace(c) {
                state = .afterAttributeName
            } else if c == UInt8(ascii: "/") {
                state = .inTag
            } else {
                attribute.append(c)
            }
        case .afterAttributeName:
            if c == UInt8(ascii: "=") {
                state = .beforeValue
            } else if c == UInt8(ascii: ">") {
                endTag()
            } else if !Self.isSpace(c) && c != UInt8(ascii: "/") {
                state = .attributeName
                attribute = [c]
            }
        case .beforeValue:
            if c == UInt8(ascii: "\"") || c == UInt8(ascii: "'") {
                state = .quoted(c)
            } else if c == UInt8(ascii: ">") {
                endTag()
            } else if !Self.isSpace(c) {
                state = .unquoted
            }
        case .quoted(let q):
            if c == q { state = .inTag }
        case .unquoted:
            if Self.isSpace(c) { state = .inTag } else if c == UInt8(ascii: ">") { endTag() }
        case .rawText(let tag):
            // Ends at `</tag` (case-insensitive) followed by space, `/` or `>`.
            recent.append(c | (Self.isLetter(c) ? 0x20 : 0))
            let end = Array("</\(tag)".utf8)
            if recent.count > end.count + 1 { recent.removeFirst(recent.count - end.count - 1) }
            if recent.count == end.count + 1, Array(recent.prefix(end.count)) == end,
                Self.isSpace(c) || c == UInt8(ascii: ">") || c == UInt8(ascii: "/")
            {
                tagName = Array(tag.utf8)
                closing = true
                if c == UInt8(ascii: ">") { endTag() } else { state = .inTag }
            }
        }
    }
}
