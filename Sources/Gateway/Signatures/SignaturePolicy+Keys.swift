import Foundation
import JOSE
import MessageSignatures
import Yams

/// A `signatures.NAME` entry as its keys say it (`SignaturePolicy.keyTable`): the policy its
/// plain keys fill in, and what the signature must cover and say, which
/// `SignaturePolicyKeys.requirements` makes one `SignatureRequirements` of.
struct SignaturePolicyKeys {
    var policy: SignaturePolicy
    /// `components:` (nil inside: not a list).
    var components: GivenKey<[ComponentIdentifier]>?
    var coverIfPresent: [ComponentIdentifier]?
    var tag: String?
    var maxAge: Int64 = 60
    var leeway: Int64 = 5
    var nonceRequired = false
    // Kept for the checks of profile fapi2 that point at them.
    var keysNode: Node?
    var tagNode: Node?
    var rsaAlgorithmNode: Node?

    /// The requirements; a `components` list left empty is refused (RFC 9421 §7.2.1: a
    /// signature that covers nothing can be moved to any message).
    func requirements(path p: String, _ r: ConfigReader) -> SignatureRequirements {
        let required = components?.value ?? SignaturePolicy.defaultComponents
        if required.isEmpty {
            r.problem("\(p).components", components?.node, "must not be empty: a signature must cover the request")
        }
        return SignaturePolicy.requirements(
            components: required, coverIfPresent: coverIfPresent ?? [], tag: tag, maxAge: maxAge, leeway: leeway,
            nonceRequired: nonceRequired)
    }
}

extension SignaturePolicy {
    /// The keys of a `signatures.NAME` entry, each said once: its reference row (checked by
    /// ConfigReferenceTests) and its reader.
    static let keyTable = ConfigKeyTable<SignaturePolicyKeys, ConfigContext>([
        .init(
            "keys", type: "`{ issuer: NAME }`, `{ jwks_file: PATH }` or `{ client_jwks: PATH }`",
            default: "none: required",
            reader: .always { x, n, p, c in
                x.keysNode = n
                ConfigParser.signatureKeys(n, into: &x.policy, path: p, c)
            }),
        .init(
            "components", type: "list of component identifiers", default: "`[\"@method\", \"@target-uri\"]`"
        ) { x, n, p, c in
            x.components = GivenKey(value: ConfigParser.signatureComponents(n, path: p, c.r), node: n)
        },
        .init("also_cover_if_present", type: "list of field names", default: "none") { x, n, p, c in
            guard let listed = ConfigParser.signatureComponents(n, path: p, c.r) else { return }
            for component in listed where component.isDerived {
                c.r.problem(p, n, "lists fields, not \(component.name)")
            }
            x.coverIfPresent = listed
        },
        .init("tag", type: "string", default: "none: any tag") { x, n, p, c in
            x.tagNode = n
            guard let s = c.r.string(n, path: p) else { return }
            if s.isEmpty || !s.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) {
                c.r.problem(p, n, "must be printable ASCII, not empty")
            } else {
                x.tag = s
            }
        },
        .init("max_age", type: "duration", default: "`60s`") { x, n, p, c in
            guard let v = c.r.duration(n, path: p) else { return }
            if v >= 1 { x.maxAge = Int64(v) } else { c.r.problem(p, n, "must be at least 1s") }
        },
        .init("leeway", type: "duration (at most `60s`)", default: "`5s`") { x, n, p, c in
            guard let v = c.r.duration(n, path: p) else { return }
            if v >= 0 && v <= 60 { x.leeway = Int64(v) } else { c.r.problem(p, n, "must be 0 to 60s") }
        },
        .init("nonce", type: "`optional` or `required`", default: "`optional`") { x, n, p, c in
            guard let s = c.r.string(n, path: p) else { return }
            switch s {
            case "optional": x.nonceRequired = false
            case "required": x.nonceRequired = true
            default: c.r.problem(p, n, "must be optional or required")
            }
        },
        .init(
            "rsa_algorithm", type: "`rsa-pss-sha512` or `rsa-v1_5-sha256`", default: "`rsa-pss-sha512`",
            checkedBy: ConfigDefault.text("rsa-pss-sha512")
        ) { x, n, p, c in
            x.rsaAlgorithmNode = n
            guard let s = c.r.string(n, path: p) else { return }
            if let a = SignatureAlgorithm(name: s), a.jws.keyType == "RSA" {
                x.policy.rsaAlgorithm = a
            } else {
                c.r.problem(p, n, "must be rsa-pss-sha512 or rsa-v1_5-sha256")
            }
        },
        .init("headers", type: "`{ keyid: HEADER, tag: HEADER }`", default: "none") { x, n, p, c in
            guard let f = c.r.mapping(n, path: p, section: .signatureHeaders) else { return }
            headersKeyTable.read(f, into: &x.policy, path: p, c.r)
        },
        .init("profile", type: "`fapi2`", default: "none") { x, n, p, c in
            x.policy.profile = ConfigParser.securityProfile(n, path: p, c.r)
        }
    ])

    /// `signatures.NAME.keys`.
    static let keysKeyTable = ConfigKeyTable<SignaturePolicy, ConfigContext>([
        .init("issuer", type: "name of an `issuers` entry", default: "none") { x, n, p, c in
            guard let issuer = c.r.string(n, path: p) else { return }
            if c.cfg.issuers[issuer] == nil {
                let defined = c.cfg.issuers.keys.sorted().joined(separator: ", ")
                c.r.problem(
                    p, n, "\"\(issuer)\" is not defined under issuers; defined: \(defined.isEmpty ? "none" : defined)")
            } else {
                x.keys = .issuer(issuer)
            }
        },
        .init("jwks_file", type: "path of a JWK Set file", default: "none") { x, n, p, c in
            guard let s = c.r.string(n, path: p) else { return }
            let full = s.hasPrefix("/") ? s : "\(c.r.baseDirectory)/\(s)"
            guard let data = FileManager.default.contents(atPath: full) else {
                c.r.problem(p, n, "cannot read \(full)")
                return
            }
            do {
                x.keys = .jwksFile(full, try JWKSet(bytes: Array(data)))
            } catch {
                c.r.problem(p, n, "is not a JWK Set: \(error)")
            }
        },
        .init("client_jwks", type: "path of a JSON object: client id → JWK Set", default: "none") { x, n, p, c in
            guard let s = c.r.string(n, path: p) else { return }
            let full = s.hasPrefix("/") ? s : "\(c.r.baseDirectory)/\(s)"
            guard let data = FileManager.default.contents(atPath: full) else {
                c.r.problem(p, n, "cannot read \(full)")
                return
            }
            do {
                x.keys = .clientJWKS(full, try ConfigParser.clientKeyRegistry(Array(data)))
            } catch {
                c.r.problem(p, n, "is not a JSON object of JWK Sets by client id: \(error)")
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
    static func signatures(_ node: Node?, _ cfg: GatewayConfig, _ r: ConfigReader) -> [String: SignaturePolicy] {
        guard let node, let m = r.mapping(node, path: "signatures", section: nil) else { return [:] }
        let context = ConfigContext(cfg: cfg, r: r)
        var all: [String: SignaturePolicy] = [:]
        for (name, entry) in m {
            let p = "signatures.\(name)"
            guard !name.isEmpty, name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != 0x22 && $0 != 0x5C }) else {
                r.problem(p, entry, "a signature policy's name must be printable characters without spaces or quotes")
                continue
            }
            guard let fields = r.mapping(entry, path: p, section: .signature) else { continue }
            var keys = SignaturePolicyKeys(policy: SignaturePolicy(name: name))
            SignaturePolicy.keyTable.read(fields, into: &keys, path: p, context)
            var policy = keys.policy
            policy.requirements = keys.requirements(path: p, r)
            if policy.profile != nil { fapi2Signatures(&policy, keys, path: p, r) }
            all[name] = policy
        }
        return all
    }

    /// `keys:`: exactly one source (`SignaturePolicy.keysKeyTable`).
    static func signatureKeys(_ node: Node?, into policy: inout SignaturePolicy, path p: String, _ c: ConfigContext) {
        guard let node else {
            c.r.problem(p, nil, "is required: { issuer: NAME }, { jwks_file: PATH } or { client_jwks: PATH }")
            return
        }
        guard let f = c.r.mapping(node, path: p, section: .signatureKeys) else { return }
        guard f.count == 1 else {
            c.r.problem(p, node, "must name one source: issuer, jwks_file or client_jwks")
            return
        }
        SignaturePolicy.keysKeyTable.read(f, into: &policy, path: p, c)
    }

    /// A list of component identifiers, each once; nil when the value is not a list.
    static func signatureComponents(_ n: Node, path p: String, _ r: ConfigReader) -> [ComponentIdentifier]? {
        guard let list = r.sequence(n, path: p) else { return nil }
        var out: [ComponentIdentifier] = []
        for (i, item) in list.enumerated() {
            guard let s = r.string(item, path: "\(p)[\(i)]") else { continue }
            do {
                let c = try ComponentIdentifier(config: s)
                if out.contains(c) {
                    r.problem("\(p)[\(i)]", item, "\(s) is listed twice")
                } else {
                    out.append(c)
                }
            } catch let e as MessageSignatureError {
                r.problem("\(p)[\(i)]", item, e.detail)
            } catch {}
        }
        return out
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
