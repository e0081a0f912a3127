import Yams

/// `pages_dir:` — a directory of page templates (docs/login.md, "Pages"): each file there replaces the
/// built-in page of its name; one that cannot be read or parsed is a config error.
extension ConfigParser {
    static func pages(_ node: Node, _ r: ConfigReader) -> Pages {
        guard let dir = r.string(node, path: "pages_dir") else { return Pages() }
        let full = dir.hasPrefix("/") ? dir : "\(r.baseDirectory)/\(dir)"
        let (pages, problems) = Pages.load(dir: full)
        for p in problems { r.problem("pages_dir", node, p) }
        return pages
    }
}
