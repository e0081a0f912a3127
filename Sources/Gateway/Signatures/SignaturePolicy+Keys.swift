import Foundation
import JOSE
import MessageSignatures
import Yams

extension SignaturePolicy {
    /// The keys of a `signatures.NAME` entry, each said once: its reference row (checked by
    /// ConfigReferenceTests) and its reader.
    static let keyTable = ConfigKeyTable<SignaturePolicy, ConfigReader>([
        .init(
            "keys", type: "`{ issuer: NAME }`, `{ jwks_file: PATH }` or `{ client_jwks: PATH }`",
            default: "none: required",
            by: "ConfigParser.signatures"),
        .init(
            "components", type: "list of component identifiers", default: "`[\"@method\", \"@target-uri\"]`",
            by: "ConfigParser.signatures"),
        .init("also_cover_if_present", type: "list of field names", default: "none", by: "ConfigParser.signatures"),
        .init("tag", type: "string", default: "none: any tag", by: "ConfigParser.signatures"),
        .init("max_age", type: "duration", default: "`60s`", by: "ConfigParser.signatures"),
        .init("leeway", type: "duration (at most `60s`)", default: "`5s`", by: "ConfigParser.signatures"),
        .init("nonce", type: "`optional` or `required`", default: "`optional`", by: "ConfigParser.signatures"),
        .init(
            "rsa_algorithm", type: "`rsa-pss-sha512` or `rsa-v1_5-sha256`", default: "`rsa-pss-sha512`",
            checkedBy: ConfigDefault.text("rsa-pss-sha512")
        ) { x, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if let a = SignatureAlgorithm(name: s), a.jws.keyType == "RSA" {
                x.rsaAlgorithm = a
            } else {
                r.problem(p, n, "must be rsa-pss-sha512 or rsa-v1_5-sha256")
            }
        },
        .init(
            "headers", type: "`{ keyid: HEADER, tag: HEADER }`", default: "none", by: "ConfigParser.signatures"),
        .init("profile", type: "`fapi2`", default: "none", by: "ConfigParser.signatures")
    ])

    /// `signatures.NAME.keys`.
    static let keysKeyTable = ConfigKeyTable<SignaturePolicy, ConfigReader>([
        .init("issuer", type: "name of an `issuers` entry", default: "none", by: "ConfigParser.signatures"),
        .init("jwks_file", type: "path of a JWK Set file", default: "none") { x, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            let full = s.hasPrefix("/") ? s : "\(r.baseDirectory)/\(s)"
            guard let data = FileManager.default.contents(atPath: full) else {
                r.problem(p, n, "cannot read \(full)")
                return
            }
            do {
                x.keys = .jwksFile(full, try JWKSet(bytes: Array(data)))
            } catch {
                r.problem(p, n, "is not a JWK Set: \(error)")
            }
        },
        .init("client_jwks", type: "path of a JSON object: client id → JWK Set", default: "none") { x, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            let full = s.hasPrefix("/") ? s : "\(r.baseDirectory)/\(s)"
            guard let data = FileManager.default.contents(atPath: full) else {
                r.problem(p, n, "cannot read \(full)")
                return
            }
            do {
                x.keys = .clientJWKS(full, try ConfigParser.clientKeyRegistry(Array(data)))
            } catch {
                r.problem(p, n, "is not a JSON object of JWK Sets by client id: \(error)")
            }
        }
    ])

    /// `signatures.NAME.headers`.
    static let headersKeyTable = ConfigKeyTable<SignaturePolicy, ConfigReader>([
        .init("keyid", type: "header name", default: "none") { x, n, p, r in
            x.keyidHeader = ConfigParser.signatureHeader(n, p, r)
        },
        .init("tag", type: "header name", default: "none") { x, n, p, r in
            x.tagHeader = ConfigParser.signatureHeader(n, p, r)
        }
    ])
}

extension ConfigParser {
    /// `signatures:`: named signature verifiers, by name.
    static func signatures(_ node: Node?, issuers: [String: IssuerConfig], _ r: ConfigReader) -> [String:
        SignaturePolicy]
    {
        guard let node, let m = r.mapping(node, path: "signatures", section: nil) else { return [:] }
        var all: [String: SignaturePolicy] = [:]
        for (name, entry) in m {
            let p = "signatures.\(name)"
            guard !name.isEmpty, name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != 0x22 && $0 != 0x5C }) else {
                r.problem(p, entry, "a signature policy's name must be printable characters without spaces or quotes")
                continue
            }
            guard let fields = r.mapping(entry, path: p, section: .signature) else { continue }
            var policy = SignaturePolicy(name: name)
            SignaturePolicy.keyTable.read(fields, into: &policy, path: p, r)
            signatureKeys(fields["keys"], into: &policy, issuers: issuers, path: "\(p).keys", r)
            if let h = fields["headers"], let f = r.mapping(h, path: "\(p).headers", section: .signatureHeaders) {
                SignaturePolicy.headersKeyTable.read(f, into: &policy, path: "\(p).headers", r)
            }
            policy.requirements = signatureRequirements(fields, path: p, r)
            if let profile = securityProfile(fields, path: p, r) {
                policy.profile = profile
                fapi2Signatures(&policy, fields, path: p, r)
            }
            all[name] = policy
        }
        return all
    }

    private static func signatureKeys(
        _ node: Node?, into policy: inout SignaturePolicy, issuers: [String: IssuerConfig], path p: String,
        _ r: ConfigReader
    ) {
        guard let node else {
            r.problem(p, nil, "is required: { issuer: NAME }, { jwks_file: PATH } or { client_jwks: PATH }")
            return
        }
        guard let f = r.mapping(node, path: p, section: .signatureKeys) else { return }
        guard f.count == 1 else {
            r.problem(p, node, "must name one source: issuer, jwks_file or client_jwks")
            return
        }
        SignaturePolicy.keysKeyTable.read(f, into: &policy, path: p, r)
        if let n = f["issuer"], let issuer = r.string(n, path: "\(p).issuer") {
            if issuers[issuer] == nil {
                let defined = issuers.keys.sorted().joined(separator: ", ")
                r.problem(
                    "\(p).issuer", n,
                    "\"\(issuer)\" is not defined under issuers; defined: \(defined.isEmpty ? "none" : defined)")
            } else {
                policy.keys = .issuer(issuer)
            }
        }
    }

    private static func signatureRequirements(_ fields: [String: Node], path p: String, _ r: ConfigReader)
        -> SignatureRequirements
    {
        func components(_ key: String) -> [ComponentIdentifier]? {
            guard let n = fields[key], let list = r.sequence(n, path: "\(p).\(key)") else { return nil }
            var out: [ComponentIdentifier] = []
            for (i, item) in list.enumerated() {
                guard let s = r.string(item, path: "\(p).\(key)[\(i)]") else { continue }
                do {
                    let c = try ComponentIdentifier(config: s)
                    if out.contains(c) {
                        r.problem("\(p).\(key)[\(i)]", item, "\(s) is listed twice")
                    } else {
                        out.append(c)
                    }
                } catch let e as MessageSignatureError {
                    r.problem("\(p).\(key)[\(i)]", item, e.detail)
                } catch {}
            }
            return out
        }
        let required = components("components") ?? SignaturePolicy.defaultComponents
        if required.isEmpty {
            // RFC 9421 §7.2.1: a signature that covers nothing can be moved to any message.
            r.problem("\(p).components", fields["components"], "must not be empty: a signature must cover the request")
        }
        let ifPresent = components("also_cover_if_present") ?? []
        for c in ifPresent where c.isDerived {
            r.problem("\(p).also_cover_if_present", fields["also_cover_if_present"], "lists fields, not \(c.name)")
        }
        var tag: String?
        if let n = fields["tag"], let s = r.string(n, path: "\(p).tag") {
            if s.isEmpty || !s.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) {
                r.problem("\(p).tag", n, "must be printable ASCII, not empty")
            } else {
                tag = s
            }
        }
        var maxAge: Int64 = 60
        if let n = fields["max_age"], let v = r.duration(n, path: "\(p).max_age") {
            if v >= 1 { maxAge = Int64(v) } else { r.problem("\(p).max_age", n, "must be at least 1s") }
        }
        var leeway: Int64 = 5
        if let n = fields["leeway"], let v = r.duration(n, path: "\(p).leeway") {
            if v >= 0 && v <= 60 { leeway = Int64(v) } else { r.problem("\(p).leeway", n, "must be 0 to 60s") }
        }
        var nonce = false
        if let n = fields["nonce"], let s = r.string(n, path: "\(p).nonce") {
            switch s {
            case "optional": nonce = false
            case "required": nonce = true
            default: r.problem("\(p).nonce", n, "must be optional or required")
            }
        }
        return SignaturePolicy.requirements(
            components: required, coverIfPresent: ifPresent, tag: tag, maxAge: maxAge, leeway: leeway,
            nonceRequired: nonce)
    }

    static func signatureHeader(_ n: Node, _ p: String, _ r: ConfigReader) -> String? {
        guard let s = r.string(n, path: p) else { return nil }
        guard !s.isEmpty, s.utf8.allSatisfy({ HeaderRules.isTokenChar($0) }) else {
            r.problem(p, n, "must be a header name")
            return nil
        }
        return s
    }
}

extension ConfigParser {
    /// `keys.client_jwks`'s file: `{ "CLIENT_ID": { "keys": [...] }, ... }`, each client's
    /// JWK Set as the AS registered it. A client id twice is refused by the JSON parser.
    static func clientKeyRegistry(_ bytes: [UInt8]) throws -> [String: JWKSet] {
        let registry = try JSONParser.parseObject(bytes, what: "a registry of clients' JWK Sets")
        var out: [String: JWKSet] = [:]
        for id in registry.names {
            guard let set = registry[id]?.object else {
                throw JOSEError(.malformed, claim: id, "\(id)'s entry is not a JWK Set")
            }
            out[id] = try JWKSet(object: set)
        }
        return out
    }
}
