import Foundation

/// A page template: HTML with `{{name}}` placeholders — no logic, no partials, no raw
/// output. Parsed once (at config load), so a template that names a variable its page does
/// not have, or leaves a `{{` open, is a config error rather than a broken page at request
/// time. A variable must stand in text or a quoted attribute value (`TemplateContext`):
/// never in `<script>`/`<style>`, an unquoted value, or an `on*`/`style` attribute. Every value is HTML-escaped when it is substituted (text and quoted attributes:
/// `&`, `<`, `>`, `"`, `'`), except values the gateway marks as already-escaped markup
/// (`PageTemplate.Markup`: built only from other templates' escaped renders).
struct PageTemplate: Sendable {
    enum Part: Sendable, Equatable {
        case text(String)
        case variable(String)
    }

    let parts: [Part]

    struct ParseError: Error, CustomStringConvertible {
        let description: String
    }

    /// A value substituted as is: only for markup the gateway itself rendered from templates.
    struct Markup: Sendable { let html: String }

    /// `text` parsed; every variable must be in `allowed` (names: letters, digits, `_`).
    init(_ text: String, allowed: Set<String>) throws {
        var parts: [Part] = []
        var rest = Substring(text)
        var line = 1
        var context = TemplateContext()
        while let open = rest.range(of: "{{") {
            let before = rest[..<open.lowerBound]
            line += before.filter { $0 == "\n" }.count
            context.feed(String(before))
            if !before.isEmpty { parts.append(.text(String(before))) }
            let after = rest[open.upperBound...]
            guard let close = after.range(of: "}}") else {
                throw ParseError(description: "line \(line): {{ is never closed with }}")
            }
            let name = after[..<close.lowerBound].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty,
                name.utf8.allSatisfy({
                    $0 == 0x5f || ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7a)
                })
            else {
                throw ParseError(
                    description:
                        "line \(line): {{\(after[..<close.lowerBound])}} is not a variable (only {{name}}, no logic)")
            }
            guard allowed.contains(name) else {
                throw ParseError(
                    description:
                        "line \(line): unknown variable {{\(name)}}; this page has \(allowed.sorted().map { "{{\($0)}}" }.joined(separator: ", "))"
                )
            }
            if let why = context.refusal() {
                throw ParseError(description: "line \(line): {{\(name)}}: \(why)")
            }
            context.substituted()
            parts.append(.variable(name))
            rest = after[close.upperBound...]
        }
        if !rest.isEmpty { parts.append(.text(String(rest))) }
        self.parts = parts
    }

    var variables: Set<String> {
        Set(parts.compactMap { if case .variable(let n) = $0 { return n } else { return nil } })
    }

    /// The page, each value escaped (a variable without a value renders empty).
    func render(_ values: [String: String], markup: [String: Markup] = [:]) -> String {
        var out = ""
        for part in parts {
            switch part {
            case .text(let t): out += t
            case .variable(let name):
                if let m = markup[name] { out += m.html } else { out += LoginPages.escape(values[name] ?? "") }
            }
        }
        return out
    }
}
