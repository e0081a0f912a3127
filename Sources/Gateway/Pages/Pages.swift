import Foundation

/// The HTML pages the gateway shows browsers: the built-in ones, or those of `pages_dir:`
/// (a file there replaces the built-in page of its name). Each page has a fixed, documented
/// set of variables (docs/login.md, "Pages"); every one is HTML-escaped.
struct Pages: Sendable {
    /// One kind of page: its file name, the variables it may use, those it must use.
    struct Kind: Sendable {
        let file: String
        let variables: Set<String>
        /// Without these the page cannot do its job (the logout form must post its token).
        let required: Set<String>
    }

    static let error = Kind(
        file: "error.html",
        variables: [
            "status", "title", "message", "error", "error_description", "request_id",
            "link_href", "link_text"
        ], required: [])
    static let forbidden = Kind(
        file: "forbidden.html",
        variables: [
            "status", "error", "error_description", "request_id",
            "logout_action", "csrf_token"
        ], required: [])
    static let logout = Kind(
        file: "logout.html", variables: ["logout_action", "csrf_token", "request_id"],
        required: ["logout_action", "csrf_token"])
    static let choose = Kind(file: "choose.html", variables: ["choices", "request_id"], required: ["choices"])
    static let choice = Kind(file: "choice.html", variables: ["client", "href"], required: ["href"])
    static let kinds = [error, forbidden, logout, choose, choice]

    var templates: [String: PageTemplate]

    /// The built-in pages (they parse: a unit test says so).
    init() {
        templates = [:]
        for kind in Self.kinds {
            templates[kind.file] = try! PageTemplate(Self.builtIn[kind.file]!, allowed: kind.variables)
        }
    }

    func template(_ kind: Kind) -> PageTemplate { templates[kind.file]! }

    /// The pages of `dir`: every problem found, each naming its file and the fix.
    static func load(dir: String) -> (Pages, [String]) {
        var pages = Pages()
        var problems: [String] = []
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else {
            return (
                pages,
                [
                    "cannot read the directory \(dir) (it must exist and hold page templates: \(kinds.map(\.file).joined(separator: ", ")))"
                ]
            )
        }
        let known = Set(kinds.map(\.file))
        for name in names.sorted() where name.hasSuffix(".html") && !known.contains(name) {
            problems.append("\(name) is not a page (typo?); the pages are \(kinds.map(\.file).joined(separator: ", "))")
        }
        for kind in kinds where names.contains(kind.file) {
            let path = (dir as NSString).appendingPathComponent(kind.file)
            guard let data = FileManager.default.contents(atPath: path) else {
                problems.append("\(kind.file): cannot read \(path)")
                continue
            }
            guard data.count <= 64 << 10 else {
                problems.append("\(kind.file): larger than 64 KB")
                continue
            }
            guard let text = String(data: data, encoding: .utf8) else {
                problems.append("\(kind.file): not UTF-8 text")
                continue
            }
            do {
                let t = try PageTemplate(text, allowed: kind.variables)
                let missing = kind.required.subtracting(t.variables)
                guard missing.isEmpty else {
                    problems.append(
                        "\(kind.file): must use \(missing.sorted().map { "{{\($0)}}" }.joined(separator: " and ")) (the page cannot work without it)"
                    )
                    continue
                }
                pages.templates[kind.file] = t
            } catch {
                problems.append("\(kind.file): \(error)")
            }
        }
        if names.allSatisfy({ !known.contains($0) }) && problems.isEmpty {
            problems.append("holds none of the page templates \(kinds.map(\.file).joined(separator: ", "))")
        }
        return (pages, problems)
    }

    static let head = """
        <!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
        <style>body{font-family:sans-serif;max-width:36em;margin:4em auto;padding:0 1em}</style>
        """

    static let builtIn: [String: String] = [
        "error.html": head + """
            <title>{{title}}</title></head>
            <body><h1>{{title}}</h1><p>{{message}}</p><p><a href="{{link_href}}">{{link_text}}</a></p>
            <p><small>Request {{request_id}}</small></p></body></html>
            """,
        "forbidden.html": head + """
            <title>Access denied</title></head>
            <body><h1>Access denied</h1><p>This account may not use this page.</p>
            <form method="post" action="{{logout_action}}"><input type="hidden" name="token" value="{{csrf_token}}">
            <button type="submit" id="logout">Log out and sign in as someone else</button></form>
            <p><small>{{error}} · Request {{request_id}}</small></p></body></html>
            """,
        "logout.html": head + """
            <title>Log out</title></head>
            <body><h1>Log out</h1><p>Do you want to log out?</p>
            <form method="post" action="{{logout_action}}"><input type="hidden" name="token" value="{{csrf_token}}">
            <button type="submit" id="logout">Log out</button></form></body></html>
            """,
        "choose.html": head + """
            <title>Sign in</title></head>
            <body><h1>Sign in</h1><p>Choose how to sign in:</p><ul>{{choices}}</ul></body></html>
            """,
        "choice.html": """
        <li><a href="{{href}}" id="client-{{client}}">{{client}}</a></li>
        """
    ]
}
