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

/// A `sign` or `sign_response` mapping as its keys say it, each read by its row
/// (`MessageSigningConfig.keyTable`, `.responseKeyTable`); ConfigParser.messageSigning makes
/// the config: the key is required, and `keyid`'s default is the key's `kid`.
struct MessageSigningKeys {
    /// `key_file:`, the key it holds and the algorithm it signs with (nil inside: refused).
    var key: GivenKey<(JWK, SignatureAlgorithm)>?
    var keyid: GivenKey<String>?
    /// `components:` as listed (nil: the defaults, and an upstream's signature then also
    /// covers its identity headers).
    var components: [ComponentIdentifier]?
    var tag: String?
    var profile: SecurityProfile?
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
        var keys = MessageSigningKeys()
        (forResponse ? MessageSigningConfig.responseKeyTable : MessageSigningConfig.keyTable).read(
            f, into: &keys, path: p, r)
        guard let given = keys.key else {
            r.problem("\(p).key_file", nil, "is required: the signing key (PEM or JWK)")
            return nil
        }
        guard let (key, algorithm) = given.value else { return nil }
        let keyid = keys.keyid?.value ?? key.kid ?? ""
        guard !keyid.isEmpty, keyid.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != 0x22 && $0 != 0x5C }) else {
            r.problem("\(p).keyid", keys.keyid?.node, "is required (or a kid in the key file): printable, no quotes")
            return nil
        }
        let defaults =
            forResponse ? MessageSigningConfig.defaultResponseComponents : MessageSigningConfig.defaultComponents
        var signing = MessageSigningConfig(
            key: key, keyid: keyid, algorithm: algorithm, components: keys.components ?? defaults, tag: keys.tag)
        signing.coversIdentityHeaders = !forResponse && keys.components == nil
        if forResponse, let profile = keys.profile {
            signing.profile = profile
            fapi2ResponseSigning(&signing, node: node, path: p, r)
        }
        return signing
    }
}

extension MessageSigningConfig {
    /// `upstreams.NAME.sign`'s keys.
    static let keyTable = ConfigKeyTable<MessageSigningKeys, ConfigReader>([
        .init(
            "key_file", type: "path of a PEM private key or private JWK (EC, Ed25519, RSA)",
            default: "none: required", read: readKey),
        .init("keyid", type: "string", default: "the key's `kid`", read: readKeyID),
        .init(
            "components", type: "list of component identifiers",
            default: "`[\"@method\", \"@target-uri\", \"content-digest\"]`"
        ) { k, n, p, r in readComponents(&k, n, p, forResponse: false, r) },
        .init("tag", type: "string", default: "none", read: readTag)
    ])

    /// `routes[].sign_response`'s keys.
    static let responseKeyTable = ConfigKeyTable<MessageSigningKeys, ConfigReader>([
        .init(
            "key_file", type: "path of a PEM private key or private JWK (EC, Ed25519, RSA)",
            default: "none: required", read: readKey),
        .init("keyid", type: "string", default: "the key's `kid`", read: readKeyID),
        .init(
            "components", type: "list of component identifiers",
            default:
                "`@status`, `content-type`, `content-digest`, and the request's `@method` and `@target-uri` (`;req`)"
        ) { k, n, p, r in readComponents(&k, n, p, forResponse: true, r) },
        .init("tag", type: "string", default: "none", read: readTag),
        .init("profile", type: "`fapi2`", default: "the route's `verify_signature` policy's") { k, n, p, r in
            k.profile = ConfigParser.securityProfile(n, path: p, r)
        }
    ])

    /// `key_file`: a PEM private key or a private JWK, EC, Ed25519 or RSA.
    private static func readKey(_ k: inout MessageSigningKeys, _ n: Node, _ p: String, _ r: ConfigReader) {
        k.key = GivenKey(value: signingKey(n, path: p, r), node: n)
    }

    private static func signingKey(_ n: Node, path p: String, _ r: ConfigReader) -> (JWK, SignatureAlgorithm)? {
        guard let file = r.string(n, path: p) else { return nil }
        let full = file.hasPrefix("/") ? file : "\(r.baseDirectory)/\(file)"
        guard let data = FileManager.default.contents(atPath: full) else {
            r.problem(p, n, "cannot read \(full)")
            return nil
        }
        let text = String(decoding: data, as: UTF8.self)
        let key: JWK
        do {
            key = text.first == "{" ? try JWK(json: text) : try JWK(pem: text)
        } catch {
            r.problem(p, n, "is not a private key (PEM or JWK): \(error)")
            return nil
        }
        guard key.isPrivate, key.kty != "oct", let algorithm = SignatureAlgorithm.of(key) else {
            r.problem(p, n, "must be an EC, Ed25519 or RSA private key")
            return nil
        }
        return (key, algorithm)
    }

    private static func readKeyID(_ k: inout MessageSigningKeys, _ n: Node, _ p: String, _ r: ConfigReader) {
        k.keyid = GivenKey(value: r.string(n, path: p), node: n)
    }

    /// `components`: a request's, or (`forResponse`) a response's, each once.
    private static func readComponents(
        _ k: inout MessageSigningKeys, _ n: Node, _ p: String, forResponse: Bool, _ r: ConfigReader
    ) {
        guard let list = r.sequence(n, path: p) else { return }
        var components: [ComponentIdentifier] = []
        for (i, item) in list.enumerated() {
            guard let s = r.string(item, path: "\(p)[\(i)]") else { continue }
            do {
                let c = try ComponentIdentifier(config: s)
                if !forResponse, c.has("req") || c.name == "@status" {
                    r.problem("\(p)[\(i)]", item, "\(s) belongs to a response")
                } else if forResponse, c.isDerived, !c.has("req"), c.name != "@status" {
                    r.problem("\(p)[\(i)]", item, "\(s) is a request's: add ;req")
                } else if !components.contains(c) {
                    components.append(c)
                }
            } catch let e as MessageSignatureError {
                r.problem("\(p)[\(i)]", item, e.detail)
            } catch {}
        }
        if components.isEmpty { r.problem(p, n, "must not be empty") }
        k.components = components
    }

    private static func readTag(_ k: inout MessageSigningKeys, _ n: Node, _ p: String, _ r: ConfigReader) {
        guard let s = r.string(n, path: p) else { return }
        if s.isEmpty || !s.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) {
            r.problem(p, n, "must be printable ASCII, not empty")
        } else {
            k.tag = s
        }
    }
}
