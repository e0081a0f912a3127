import Foundation
import JOSE
import MessageSignatures
import Yams

/// How the gateway signs messages it sends (`upstreams.NAME.sign`): its private key, the
/// `keyid` it is published under (the gateway's `/.well-known/jwks.json` lists its public
/// half), the components covered, and the tag. The label is always `tokengate`, so that a
/// client's own signature, passed on beside it, keeps its label.
struct MessageSigningConfig: Sendable {
    var key: JWK
    var keyid: String
    var algorithm: SignatureAlgorithm
    var components: [ComponentIdentifier]
    /// An upstream's signature with the default components also covers every identity
    /// header the route sets (`UpstreamSigning`): those are what the upstream trusts. A
    /// `components` list is signed as written.
    var coversIdentityHeaders = false
    var tag: String?
    /// `profile: fapi2` on a `sign_response` (or the route's request policy's): FAPI 2.0
    /// Message Signing's rules for answers (SignaturePolicy+FAPI2).
    var profile: SecurityProfile?

    static let label = "tokengate"
    static let defaultComponents = ["@method", "@target-uri", "content-digest"].map {
        try! ComponentIdentifier(config: $0)
    }
    /// FAPI 2.0 Message Signing §5.5's: the status, the content, and the request it answers.
    static let defaultResponseComponents = [
        "@status", "content-type", "content-digest", #""@method";req"#, #""@target-uri";req"#
    ].map { try! ComponentIdentifier(config: $0) }

    /// The key as published: its public half, under `keyid`.
    var publicJWK: JSONObject {
        var o = key.publicJWK()
        o["kid"] = .string(keyid)
        if let name = algorithm.name { o["alg"] = .string(name) }
        return o
    }
}

extension ConfigParser {
    /// `upstreams.NAME.sign` (or any `sign` mapping): `key_file` (a PEM private key or a
    /// private JWK), `keyid`, `components`, `tag`.
    /// `forResponse`: a route's `sign_response`, whose components are a response's.
    static func messageSigning(_ node: Node, path p: String, forResponse: Bool = false, _ r: ConfigReader)
        -> MessageSigningConfig?
    {
        guard let f = r.mapping(node, path: p, section: forResponse ? .responseSign : .upstreamSign) else {
            return nil
        }
        guard let kn = f["key_file"], let file = r.string(kn, path: "\(p).key_file") else {
            r.problem("\(p).key_file", nil, "is required: the signing key (PEM or JWK)")
            return nil
        }
        let full = file.hasPrefix("/") ? file : "\(r.baseDirectory)/\(file)"
        guard let data = FileManager.default.contents(atPath: full) else {
            r.problem("\(p).key_file", kn, "cannot read \(full)")
            return nil
        }
        let text = String(decoding: data, as: UTF8.self)
        let key: JWK
        do {
            key = text.first == "{" ? try JWK(json: text) : try JWK(pem: text)
        } catch {
            r.problem("\(p).key_file", kn, "is not a private key (PEM or JWK): \(error)")
            return nil
        }
        guard key.isPrivate, key.kty != "oct", let algorithm = SignatureAlgorithm.of(key) else {
            r.problem("\(p).key_file", kn, "must be an EC, Ed25519 or RSA private key")
            return nil
        }
        var keyid = key.kid ?? ""
        if let n = f["keyid"], let s = r.string(n, path: "\(p).keyid") { keyid = s }
        guard !keyid.isEmpty, keyid.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != 0x22 && $0 != 0x5C }) else {
            r.problem("\(p).keyid", f["keyid"], "is required (or a kid in the key file): printable, no quotes")
            return nil
        }
        var components =
            forResponse ? MessageSigningConfig.defaultResponseComponents : MessageSigningConfig.defaultComponents
        if let n = f["components"], let list = r.sequence(n, path: "\(p).components") {
            components = []
            for (i, item) in list.enumerated() {
                guard let s = r.string(item, path: "\(p).components[\(i)]") else { continue }
                do {
                    let c = try ComponentIdentifier(config: s)
                    if !forResponse, c.has("req") || c.name == "@status" {
                        r.problem("\(p).components[\(i)]", item, "\(s) belongs to a response")
                    } else if forResponse, c.isDerived, !c.has("req"), c.name != "@status" {
                        r.problem("\(p).components[\(i)]", item, "\(s) is a request's: add ;req")
                    } else if !components.contains(c) {
                        components.append(c)
                    }
                } catch let e as MessageSignatureError {
                    r.problem("\(p).components[\(i)]", item, e.detail)
                } catch {}
            }
            if components.isEmpty { r.problem("\(p).components", n, "must not be empty") }
        }
        var tag: String?
        if let n = f["tag"], let s = r.string(n, path: "\(p).tag") {
            if s.isEmpty || !s.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) {
                r.problem("\(p).tag", n, "must be printable ASCII, not empty")
            } else {
                tag = s
            }
        }
        var signing = MessageSigningConfig(
            key: key, keyid: keyid, algorithm: algorithm, components: components, tag: tag)
        signing.coversIdentityHeaders = !forResponse && f["components"] == nil
        if forResponse, let profile = securityProfile(f, path: p, r) {
            signing.profile = profile
            fapi2ResponseSigning(&signing, node: node, path: p, r)
        }
        return signing
    }
}

extension MessageSigningConfig {
    /// `upstreams.NAME.sign`'s keys (read by `ConfigParser.messageSigning`).
    static let keyTable = ConfigKeyTable<MessageSigningConfig, ConfigReader>([
        .init(
            "key_file", type: "path of a PEM private key or private JWK (EC, Ed25519, RSA)",
            default: "none: required", by: "ConfigParser.messageSigning"),
        .init("keyid", type: "string", default: "the key's `kid`", by: "ConfigParser.messageSigning"),
        .init(
            "components", type: "list of component identifiers",
            default: "`[\"@method\", \"@target-uri\", \"content-digest\"]`", by: "ConfigParser.messageSigning"),
        .init("tag", type: "string", default: "none", by: "ConfigParser.messageSigning")
    ])

    /// `routes[].sign_response`'s keys.
    static let responseKeyTable = ConfigKeyTable<MessageSigningConfig, ConfigReader>([
        .init(
            "key_file", type: "path of a PEM private key or private JWK (EC, Ed25519, RSA)",
            default: "none: required", by: "ConfigParser.messageSigning"),
        .init("keyid", type: "string", default: "the key's `kid`", by: "ConfigParser.messageSigning"),
        .init(
            "components", type: "list of component identifiers",
            default:
                "`@status`, `content-type`, `content-digest`, and the request's `@method` and `@target-uri` (`;req`)",
            by: "ConfigParser.messageSigning"),
        .init("tag", type: "string", default: "none", by: "ConfigParser.messageSigning"),
        .init(
            "profile", type: "`fapi2`", default: "the route's `verify_signature` policy's",
            by: "ConfigParser.messageSigning")
    ])
}
